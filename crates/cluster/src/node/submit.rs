//! Task submission (used by `crawlkeeper submit`): a Task is checked, then
//! given to an idle Runner (smallest index first) or queued for the first
//! Runner that becomes idle. A Task that fails the check changes nothing.

use crawlkeeper_model::cluster::{GroupState, NodeName, Task};

use crate::coordinator::{Coordinator, CreateMode};
use crate::error::CoordError;
use crate::metadata::{self, MetaError};
use crate::path::{self, Layout};
use crate::protocol::task::{self as progress, TaskError};

/// Where a submitted task went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// An idle Runner holds it.
    Runner(NodeName),
    /// It waits in the queue, at this node.
    Queued(String),
}

/// Why a submission was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitError {
    /// The task is not valid.
    #[error("task refused: {0}")]
    Invalid(#[from] TaskError),
    /// No group of this name has formed.
    #[error("no group {0:?} (start its nodes first)")]
    NoGroup(String),
    /// Meta-data could not be read or written.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The coordinator failed.
    #[error(transparent)]
    Coord(#[from] CoordError),
}

/// Submits a task to `group`.
pub async fn submit(
    c: &impl Coordinator,
    group: &str,
    task: Task,
) -> Result<Placement, SubmitError> {
    let task = progress::accept(task)?;
    let layout = Layout::new(group)?;
    let (g, _) = metadata::read::<GroupState>(c, &layout.group_state())
        .await?
        .ok_or_else(|| SubmitError::NoGroup(group.to_owned()))?;
    let mut runners = g.current_runner.clone();
    runners.sort_by_key(NodeName::index);
    for r in runners {
        let Some((held, version)) = metadata::read::<Task>(c, &layout.task(&r)).await? else {
            continue;
        };
        let idle =
            progress::next_item(&held).is_none() && held.owner.as_ref().is_none_or(|o| *o == r);
        if !idle {
            continue;
        }
        let given = Task {
            owner: Some(r.clone()),
            epoch: held.epoch,
            ..task.clone()
        };
        match metadata::write(c, &layout.task(&r), &given, Some(version)).await {
            Ok(_) => return Ok(Placement::Runner(r)),
            Err(MetaError::Coord(CoordError::BadVersion(_))) => continue, // it just got work
            Err(e) => return Err(e.into()),
        }
    }
    let queue = layout.queue();
    c.create_all(&queue).await?;
    let at = metadata::create(
        c,
        &path::join(&queue, "task-"),
        &task,
        CreateMode::PersistentSequential,
    )
    .await?;
    Ok(Placement::Queued(at))
}

/// Where [`spread`] put each item, by `task_id`.
pub type Spread = Vec<(crawlkeeper_model::cluster::TaskId, Placement)>;

/// How often a Runner's task is read again when a write to it conflicts.
const SPREAD_TRIES: usize = 20;

/// Submits the items of `task` to the concurrent Runners of `group` (see
/// [`crate::node::ItemMode::Concurrent`]): item `i` goes to the `i`-th
/// live Runner by index, round robin, added to its task beside what it
/// runs ([`progress::merge`], compare-and-set); items no live Runner took
/// wait in the queue, as one task, for the first Runner to claim them.
/// Items some Runner already has pending are not given twice. A task that
/// fails the check changes nothing.
pub async fn spread(c: &impl Coordinator, group: &str, task: Task) -> Result<Spread, SubmitError> {
    spread_among(c, group, task, |_| true).await
}

/// [`spread`], giving items only to the live Runners `eligible` accepts
/// (those that run what the items need); the others' share waits in the
/// queue.
pub async fn spread_among(
    c: &impl Coordinator,
    group: &str,
    task: Task,
    eligible: impl Fn(&NodeName) -> bool,
) -> Result<Spread, SubmitError> {
    let task = progress::accept(task)?;
    let layout = Layout::new(group)?;
    let (g, _) = metadata::read::<GroupState>(c, &layout.group_state())
        .await?
        .ok_or_else(|| SubmitError::NoGroup(group.to_owned()))?;
    let mut runners = Vec::new();
    let mut sorted = g.current_runner.clone();
    sorted.sort_by_key(NodeName::index);
    for r in sorted {
        if eligible(&r) && c.exists(&layout.session(&r)).await?.is_some() {
            runners.push(r);
        }
    }
    let mut placed = Vec::new();
    let mut left = Vec::new();
    let mut shares: Vec<Vec<_>> = vec![Vec::new(); runners.len()];
    for (i, item) in task.running_content.iter().enumerate() {
        match runners.len() {
            0 => left.push(item.clone()),
            n => shares[i % n].push(item.clone()),
        }
    }
    for (r, share) in runners.iter().zip(shares) {
        if share.is_empty() {
            continue;
        }
        let ids: Vec<_> = share.iter().map(|i| i.task_id.clone()).collect();
        let given = Task {
            running_content: share.clone(),
            ..task.clone()
        };
        if give(c, &layout, r, &given).await? {
            placed.extend(ids.into_iter().map(|id| (id, Placement::Runner(r.clone()))));
        } else {
            left.extend(share);
        }
    }
    if !left.is_empty() {
        let ids: Vec<_> = left.iter().map(|i| i.task_id.clone()).collect();
        let queued = Task {
            running_content: left,
            ..task
        };
        let queue = layout.queue();
        c.create_all(&queue).await?;
        let at = metadata::create(
            c,
            &path::join(&queue, "task-"),
            &queued,
            CreateMode::PersistentSequential,
        )
        .await?;
        placed.extend(
            ids.into_iter()
                .map(|id| (id, Placement::Queued(at.clone()))),
        );
    }
    Ok(placed)
}

/// Adds `task`'s items to Runner `r`'s task; false when `r` no longer
/// owns its task node (taken over), or its task would grow too large.
async fn give(
    c: &impl Coordinator,
    layout: &Layout,
    r: &NodeName,
    task: &Task,
) -> Result<bool, SubmitError> {
    for _ in 0..SPREAD_TRIES {
        let Some((held, version)) = metadata::read::<Task>(c, &layout.task(r)).await? else {
            return Ok(false);
        };
        if held.owner.as_ref().is_some_and(|o| o != r) {
            return Ok(false);
        }
        let Some(mut merged) = progress::merge(&held, task) else {
            return Ok(true); // it has them all pending already
        };
        merged.owner = Some(r.clone());
        if serde_json::to_vec(&merged).map_or(usize::MAX, |v| v.len()) > progress::MAX_TASK_BYTES {
            return Ok(false);
        }
        match metadata::write(c, &layout.task(r), &merged, Some(version)).await {
            Ok(_) => return Ok(true),
            Err(MetaError::Coord(CoordError::BadVersion(_))) => continue, // it wrote meanwhile
            Err(e) => return Err(e.into()),
        }
    }
    Ok(false)
}
