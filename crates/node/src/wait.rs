//! Waiting for a submitted job's end: complete (every URL finished, or a
//! continuous job stopped and its engines ended), or a shard failed on its
//! Runner (what `submit --wait` reports).

use std::time::Duration;

use crawlkeeper_cluster::{Coordinator, Layout, MetaError};
use crawlkeeper_job::identity::is_continuous;
use crawlkeeper_model::cluster::{Task, TaskState};
use crawlkeeper_store::{JobId, JobInfo, Store, StoreError};

use crate::item::ShardItem;
use crate::tasks::{TaskAt, complete, job_pending, tasks_of};

/// How often the job is looked at.
pub const WAIT_EVERY: Duration = Duration::from_millis(500);

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobEnd {
    /// Every URL is done, or a continuous job was stopped and every
    /// Runner crawling it ended (the job as the store holds it then).
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

/// Waits until job `name` is complete ([`complete`]) or one of its shards
/// failed on its Runner, looking every [`WAIT_EVERY`]. The store is put
/// back in `store` after each look (to be let go of off the async threads).
pub async fn wait_for_job(
    zk: &impl Coordinator,
    layout: &Layout,
    store: &mut Option<Box<dyn Store>>,
    name: &str,
) -> Result<JobEnd, WaitError> {
    let mut known: Option<Known> = None;
    loop {
        let Some(mut s) = store.take() else {
            return Err(WaitError::Thread("no store to look in".into()));
        };
        let owned = name.to_owned();
        // The job is found once; then only whether it may be over is
        // asked (counting a large job's URLs every look would cost the
        // store more than the crawl), and its counts once it may be.
        let (job, s) = tokio::task::spawn_blocking(move || {
            let look = match known {
                Some(Known::OneShot(id)) => s.is_complete(id).map(|c| c == Some(false)),
                Some(Known::Continuous(id)) => s.stops(id).map(|n| n == 0),
                None => Ok(false),
            };
            let look = match look {
                Ok(true) => Ok(Look::Open),
                Err(e) => Err(e),
                // First, perhaps over, or gone: the job as it is now.
                Ok(false) => s
                    .find_job(&owned)
                    .map(|j| j.map_or(Look::Gone, Look::Found)),
            };
            (look, s)
        })
        .await
        .map_err(|e| WaitError::Thread(e.to_string()))?;
        *store = Some(s);
        let tasks = tasks_of(zk, layout).await?;
        match job? {
            Look::Found(job) if complete(&job, job_pending(&tasks, name)) => {
                return Ok(JobEnd::Complete(job));
            }
            Look::Found(job) if is_continuous(&job) => known = Some(Known::Continuous(job.id)),
            Look::Found(job) => known = Some(Known::OneShot(job.id)),
            Look::Gone => return Err(WaitError::Gone(name.to_owned())),
            Look::Open => {}
        }
        if let Some(why) = failed_shard(&tasks, name) {
            return Ok(JobEnd::ShardFailed(why));
        }
        tokio::time::sleep(WAIT_EVERY).await;
    }
}

/// A job found in the store, and how its end is told.
#[derive(Clone, Copy)]
enum Known {
    /// Every URL finished.
    OneShot(JobId),
    /// Asked to stop (and its shards' engines ended).
    Continuous(JobId),
}

/// What a look at the store found.
enum Look {
    /// The job, with its counts.
    Found(JobInfo),
    /// The job, not over yet.
    Open,
    /// No such job.
    Gone,
}

/// A shard of job `name` recorded as failed on a Runner, if any.
fn failed_shard(tasks: &[(TaskAt, Task)], name: &str) -> Option<String> {
    for (_, task) in tasks {
        for d in &task.result_detail {
            let Some(item) = task.running_content.iter().find(|i| i.task_id == d.task_id) else {
                continue;
            };
            if d.state == TaskState::Error && ShardItem::of(item).is_ok_and(|s| s.job == name) {
                return Some(format!(
                    "shard {}: {}",
                    d.task_id,
                    d.error_msg.as_deref().unwrap_or("error")
                ));
            }
        }
    }
    None
}
