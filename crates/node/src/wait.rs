//! Waiting for a submitted job's end: complete in the store, or a shard
//! failed on its Runner (what `submit --wait` reports).

use std::time::Duration;

use crawlkeeper_cluster::{Coordinator, Layout, MetaError};
use crawlkeeper_model::cluster::TaskState;
use crawlkeeper_store::{JobInfo, Store, StoreError};

use crate::item::ShardItem;
use crate::tasks::{complete, tasks_of};

/// How often the job is looked at.
pub const WAIT_EVERY: Duration = Duration::from_millis(500);

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobEnd {
    /// Every URL is done (the job as the store holds it at the end).
    Complete(JobInfo),
    /// A shard of it failed on its Runner: `<job>/<shard>: why`.
    ShardFailed(String),
}

/// Why the job could not be waited for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WaitError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// ZooKeeper failed.
    #[error("ZooKeeper")]
    Coordinator(#[from] MetaError),
    /// The job is not in the store any more.
    #[error("job {0} left the store")]
    Gone(String),
    /// The store's thread ended without an answer.
    #[error("the store's thread ended: {0}")]
    Thread(String),
}

/// Waits until job `name` is complete in `store` or one of its shards
/// failed on its Runner, looking every [`WAIT_EVERY`]. The store is put
/// back in `store` after each look (to be let go of off the async threads).
pub async fn wait_for_job(
    zk: &impl Coordinator,
    layout: &Layout,
    store: &mut Option<Box<dyn Store>>,
    name: &str,
) -> Result<JobEnd, WaitError> {
    let mut id = None;
    loop {
        let Some(mut s) = store.take() else {
            return Err(WaitError::Thread("no store to look in".into()));
        };
        let owned = name.to_owned();
        // The job is found once; then only whether it is complete is
        // asked (counting a large job's URLs every look would cost the
        // store more than the crawl), and its counts once it is.
        let (job, s) = tokio::task::spawn_blocking(move || {
            let look = match id.map(|id| s.is_complete(id)) {
                Some(Ok(Some(false))) => Ok(Look::Open),
                Some(Err(e)) => Err(e),
                // First, complete, or gone: the job as it is now.
                _ => s
                    .find_job(&owned)
                    .map(|j| j.map_or(Look::Gone, Look::Found)),
            };
            (look, s)
        })
        .await
        .map_err(|e| WaitError::Thread(e.to_string()))?;
        *store = Some(s);
        match job? {
            Look::Found(job) if complete(&job) => return Ok(JobEnd::Complete(job)),
            Look::Found(job) => id = Some(job.id),
            Look::Gone => return Err(WaitError::Gone(name.to_owned())),
            Look::Open => {}
        }
        if let Some(why) = failed_shard(zk, layout, name).await? {
            return Ok(JobEnd::ShardFailed(why));
        }
        tokio::time::sleep(WAIT_EVERY).await;
    }
}

/// What a look at the store found.
enum Look {
    /// The job, with its counts.
    Found(JobInfo),
    /// The job, not complete yet.
    Open,
    /// No such job.
    Gone,
}

/// A shard of job `name` recorded as failed on a Runner, if any.
async fn failed_shard(
    zk: &impl Coordinator,
    layout: &Layout,
    name: &str,
) -> Result<Option<String>, MetaError> {
    for (_, task) in tasks_of(zk, layout).await? {
        for d in &task.result_detail {
            let Some(item) = task.running_content.iter().find(|i| i.task_id == d.task_id) else {
                continue;
            };
            if d.state == TaskState::Error && ShardItem::of(item).is_ok_and(|s| s.job == name) {
                return Ok(Some(format!(
                    "shard {}: {}",
                    d.task_id,
                    d.error_msg.as_deref().unwrap_or("error")
                )));
            }
        }
    }
    Ok(None)
}
