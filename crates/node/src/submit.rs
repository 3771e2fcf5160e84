//! A job submitted to a cluster: written to the store (its spec, seeds
//! and shard count), then each of its shards given to a Runner as a task
//! item ([`crawlkeeper_cluster::node::spread`]), under the group lock so
//! that two submissions of one job, or a fail-over, never give a shard
//! twice. Submitting a job again places only the shards no member holds
//! or waits for (a submission cut short is finished this way).

use std::collections::BTreeSet;
use std::time::Duration;

use crawlkeeper_cluster::node::{Placement, SubmitError, spread};
use crawlkeeper_cluster::{CoordError, Coordinator, Layout, Lock, MetaError};
use crawlkeeper_model::cluster::Task;
use crawlkeeper_store::{JobInfo, JobSpec, Store, StoreError};

use crate::item::ShardItem;
use crate::status::tasks_of;

/// How long a submission waits for the group lock.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// A submission refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum SubmitJobError {
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The coordinator refused the shards.
    #[error(transparent)]
    Submit(#[from] SubmitError),
    /// Meta-data could not be read.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The coordinator failed.
    #[error(transparent)]
    Coord(#[from] CoordError),
}

/// What a submission did.
#[derive(Debug)]
pub struct Submitted {
    /// The job as the store holds it.
    pub job: JobInfo,
    /// The shards placed now, and where.
    pub placed: Vec<(u32, Placement)>,
    /// Shards some member held or waited for already.
    pub already: Vec<u32>,
}

/// Whether a job's every URL is finished.
pub fn complete(job: &JobInfo) -> bool {
    job.counts.seen > 0 && job.counts.pending() == 0
}

/// Writes `spec` to `store` (or finds it there) and gives every shard no
/// member has to the Runners of `group`. Blocking store work runs on the
/// blocking pool.
pub async fn submit_job<C: Coordinator + Clone>(
    c: &C,
    group: &str,
    store: Box<dyn Store>,
    spec: JobSpec,
) -> Result<Submitted, SubmitJobError> {
    let job = tokio::task::spawn_blocking(move || {
        let mut store = store;
        store.open_job(&spec)
    })
    .await
    .map_err(|e| StoreError::Backend(e.to_string()))??;
    let layout = Layout::new(group)?;
    let lock = Lock::new(c.clone(), layout.group_lock());
    let guard = lock.acquire(LOCK_WAIT).await?;
    let result = place(c, group, &layout, &job).await;
    guard.release().await?;
    let (placed, already) = result?;
    Ok(Submitted {
        job,
        placed,
        already,
    })
}

async fn place(
    c: &impl Coordinator,
    group: &str,
    layout: &Layout,
    job: &JobInfo,
) -> Result<(Vec<(u32, Placement)>, Vec<u32>), SubmitJobError> {
    let held: BTreeSet<u32> = tasks_of(c, layout)
        .await?
        .iter()
        .flat_map(|(_, task)| pending_shards(task))
        .filter(|s| s.job == job.name)
        .map(|s| s.shard)
        .collect();
    let url = job.seeds.first().cloned().unwrap_or_default();
    let missing: Vec<u32> = (0..job.shards).filter(|s| !held.contains(s)).collect();
    if missing.is_empty() || complete(job) {
        return Ok((Vec::new(), held.into_iter().collect()));
    }
    let task = Task {
        running_content: missing
            .iter()
            .map(|&shard| {
                ShardItem {
                    job: job.name.clone(),
                    shard,
                }
                .to_item(&url)
            })
            .collect(),
        ..Task::default()
    };
    let placed = spread(c, group, task)
        .await?
        .into_iter()
        .filter_map(|(id, placement)| {
            let shard = id.to_string().rsplit_once('/')?.1.parse().ok()?;
            Some((shard, placement))
        })
        .collect();
    Ok((placed, held.into_iter().collect()))
}

/// The shards a task has pending (not finished): held or waiting.
pub fn pending_shards(task: &Task) -> Vec<ShardItem> {
    crawlkeeper_cluster::protocol::task::pending(task)
        .into_iter()
        .filter_map(|p| ShardItem::of(&task.running_content[p]).ok())
        .collect()
}
