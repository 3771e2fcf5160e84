//! The cluster's tasks as the coordinator holds them: every member's and
//! the queued ones ([`tasks_of`]), the shards a task has not finished
//! ([`pending_shards`]), and whether a job is done ([`complete`]). Both
//! [`crate::submit`] and [`crate::status`] read them; this module imports
//! neither.

use crawlkeeper_cluster::{Coordinator, Layout, MetaError, metadata};
use crawlkeeper_model::cluster::{NodeName, Task};
use crawlkeeper_store::JobInfo;

use crate::item::ShardItem;

/// Where a task is: a member's task node, or the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskAt {
    /// A member's task.
    Node(NodeName),
    /// Waiting in the queue, at this node.
    Queued(String),
}

/// Every task of the group: each member's, then the queued ones.
pub async fn tasks_of(
    c: &impl Coordinator,
    layout: &Layout,
) -> Result<Vec<(TaskAt, Task)>, MetaError> {
    let mut tasks = Vec::new();
    for name in members(c, layout).await? {
        if let Some((t, _)) = metadata::read::<Task>(c, &layout.task(&name)).await? {
            tasks.push((TaskAt::Node(name), t));
        }
    }
    let queue = layout.queue();
    for child in children(c, &queue).await? {
        let path = crawlkeeper_cluster::path::join(&queue, &child);
        if let Some((t, _)) = metadata::read::<Task>(c, &path).await? {
            tasks.push((TaskAt::Queued(path), t));
        }
    }
    Ok(tasks)
}

async fn children(c: &impl Coordinator, path: &str) -> Result<Vec<String>, MetaError> {
    match c.children(path).await {
        Ok(names) => Ok(names),
        Err(crawlkeeper_cluster::CoordError::NoNode(_)) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// The group's members, by base name and index.
pub(crate) async fn members(
    c: &impl Coordinator,
    layout: &Layout,
) -> Result<Vec<NodeName>, MetaError> {
    let mut names: Vec<NodeName> = children(c, &layout.nodes())
        .await?
        .into_iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    names.sort_by_key(|n: &NodeName| (n.base().to_owned(), n.index()));
    Ok(names)
}

/// Whether a job is over. A one-shot job: every URL of it is finished. A
/// continuous job, which never finishes: it was asked to stop, and none
/// of its shards is still pending on a Runner (`shards_pending`): every
/// engine crawling it ended, with its last records stored.
pub fn complete(job: &JobInfo, shards_pending: bool) -> bool {
    if crawlkeeper_job::identity::is_continuous(job) {
        return job.stops > 0 && !shards_pending;
    }
    job.counts.seen > 0 && job.counts.pending() == 0
}

/// Whether any shard of job `name` is pending on a Runner or queued.
pub fn job_pending(tasks: &[(TaskAt, Task)], name: &str) -> bool {
    tasks
        .iter()
        .flat_map(|(_, t)| pending_shards(t))
        .any(|s| s.job == name)
}

/// The shards a task has pending (not finished): held or waiting.
pub fn pending_shards(task: &Task) -> Vec<ShardItem> {
    crawlkeeper_cluster::protocol::task::pending(task)
        .into_iter()
        .filter_map(|p| ShardItem::of(&task.running_content[p]).ok())
        .collect()
}
