//! What a node shows its operator: the live snapshot of each job's engine
//! here, and counts of what happened to its shards.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crawlkeeper_crawl::live::LiveCrawl;
use tokio::sync::watch;

/// The engines followed, by job, each with the order it started in.
#[derive(Debug, Default)]
struct Lives {
    started: u64,
    by_job: BTreeMap<String, (u64, watch::Receiver<Arc<LiveCrawl>>)>,
}

/// A node's engines and events, shared with its status page and metrics.
#[derive(Debug, Default)]
pub struct NodeView {
    lives: Mutex<Lives>,
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
        let mut lives = self.lock();
        lives.started += 1;
        let n = lives.started;
        lives.by_job.insert(job.to_owned(), (n, live));
    }

    /// Each job crawled here (now or last), with its latest snapshot: the
    /// running ones first, then the others, the most recently started
    /// first in each.
    pub fn crawls(&self) -> Vec<(String, Arc<LiveCrawl>)> {
        let mut all: Vec<(u64, String, Arc<LiveCrawl>)> = self
            .lock()
            .by_job
            .iter()
            .map(|(job, (n, rx))| (*n, job.clone(), rx.borrow().clone()))
            .collect();
        all.sort_by_key(|(n, _, live)| (!live.running, std::cmp::Reverse(*n)));
        all.into_iter().map(|(_, job, live)| (job, live)).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lives> {
        // Single inserts and reads: a panic leaves the map whole.
        self.lives.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(running: bool) -> watch::Receiver<Arc<LiveCrawl>> {
        let (tx, rx) = watch::channel(Arc::new(LiveCrawl {
            running,
            ..LiveCrawl::default()
        }));
        // The receiver keeps the last value once the sender is gone.
        drop(tx);
        rx
    }

    #[test]
    fn running_engines_come_first_then_the_most_recent() {
        let view = NodeView::default();
        view.watch("a", live(false));
        view.watch("z", live(true));
        view.watch("b", live(false));
        view.watch("c", live(true));
        let order: Vec<_> = view.crawls().into_iter().map(|(j, _)| j).collect();
        assert_eq!(order, ["c", "z", "b", "a"]);
        // A job run again is as recent as its new run.
        view.watch("a", live(false));
        let order: Vec<_> = view.crawls().into_iter().map(|(j, _)| j).collect();
        assert_eq!(order, ["c", "z", "a", "b"]);
    }
}
