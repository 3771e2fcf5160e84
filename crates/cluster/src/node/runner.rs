//! The work a Runner does with each item of its task: SmoothCrawler-Cluster's
//! `crawler_process_callback`. The crawl engine implements it as
//! `CrawlRunner` of the node crate (`crates/node/src/runner.rs`); tests use
//! a fake.

use std::future::Future;

use crawlkeeper_model::cluster::RunningContent;

pub use crate::protocol::task::ItemOutcome;

/// Runs the items of tasks.
pub trait TaskRunner: Send + Sync + 'static {
    /// Runs one item. Cancelled (dropped) when its node loses the task.
    fn run(&self, item: &RunningContent) -> impl Future<Output = ItemOutcome> + Send;

    /// Asks every item running to end early and in order, because its
    /// node leaves ([`crate::node::ItemMode::Concurrent`] only): their
    /// futures then complete, and their items are handed over unfinished.
    /// The default does nothing (sequential items are short).
    fn halt(&self) {}
}
