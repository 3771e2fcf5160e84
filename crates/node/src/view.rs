//! What a node shows its operator: the live snapshot of each job's engine
//! here, and counts of what happened to its shards.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crawlkeeper_crawl::live::LiveCrawl;
use tokio::sync::watch;

/// A node's engines and events, shared with its status page and metrics.
#[derive(Debug, Default)]
pub struct NodeView {
    lives: Mutex<BTreeMap<String, watch::Receiver<Arc<LiveCrawl>>>>,
    /// Shards this node began to crawl (its first ones, and those it took
    /// over from a dead or leaving Runner).
    pub shards_started: AtomicU64,
    /// Engines stopped because another node took their shards (fenced).
    pub fenced: AtomicU64,
    /// Engines that ended with a failure other than a fence.
    pub failed: AtomicU64,
}

impl NodeView {
    /// Follows the engine of `job` (the newest run replaces an older one).
    pub fn watch(&self, job: &str, live: watch::Receiver<Arc<LiveCrawl>>) {
        self.lock().insert(job.to_owned(), live);
    }

    /// Each job crawled here (now or last), with its latest snapshot.
    pub fn crawls(&self) -> Vec<(String, Arc<LiveCrawl>)> {
        self.lock()
            .iter()
            .map(|(job, rx)| (job.clone(), rx.borrow().clone()))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, watch::Receiver<Arc<LiveCrawl>>>> {
        // Single inserts and reads: a panic leaves the map whole.
        self.lives.lock().unwrap_or_else(|p| p.into_inner())
    }
}
