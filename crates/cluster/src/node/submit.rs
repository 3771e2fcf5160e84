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
