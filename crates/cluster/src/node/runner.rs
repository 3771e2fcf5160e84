//! The work a Runner does with each item of its task: the seed's
//! `crawler_process_callback`. The crawl engine implements it in `cli`;
//! tests use a fake.

use std::future::Future;

use crawlkeeper_model::cluster::RunningContent;

/// The outcome of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemOutcome {
    /// The HTTP status, when there was a response.
    pub status_code: Option<u16>,
    /// A short description of the response (the result itself belongs in
    /// the store, keyed by task and item, so a replay writes it once).
    pub response: Option<String>,
    /// Why the item failed; `None` when it succeeded.
    pub error: Option<String>,
}

/// Runs the items of tasks.
pub trait TaskRunner: Send + Sync + 'static {
    /// Runs one item. Cancelled (dropped) when its node loses the task.
    fn run(&self, item: &RunningContent) -> impl Future<Output = ItemOutcome> + Send;
}
