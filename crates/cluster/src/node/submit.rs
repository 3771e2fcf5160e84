//! Task submission (used by `crawlkeeper submit`): a Task is checked, then
//! given to an idle Runner (smallest index first) or queued for the first
//! Runner that becomes idle. A Task that fails the check changes nothing.

use crawlkeeper_model::cluster::{GroupState, NodeName, RunningContent, Task};

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
    spread_among(c, group, task, |_| true, |_| 1).await
}

/// [`spread`], giving items only to the live Runners `eligible` accepts
/// (those that run what the items need; the others' share waits in the
/// queue), and balancing the items' `weight` (the work each stands for)
/// rather than their number: the heaviest first, each to the Runner with
/// the least weight so far ([`share_out`]). Equal weights give round robin.
pub async fn spread_among(
    c: &impl Coordinator,
    group: &str,
    task: Task,
    eligible: impl Fn(&NodeName) -> bool,
    weight: impl Fn(&RunningContent) -> u64,
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
    let weights: Vec<u64> = task.running_content.iter().map(&weight).collect();
    match share_out(&weights, runners.len()) {
        None => left.extend(task.running_content.iter().cloned()),
        Some(to) => {
            for (item, r) in task.running_content.iter().zip(to) {
                shares[r].push(item.clone());
            }
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

/// Which of `runners` takes each item of `weights` (in their order), so
/// that the Runners' total weights are as even as the greedy rule makes
/// them: the heaviest item first (ties in item order), each to the Runner
/// with the least weight, then the fewest items, then the lowest index.
/// Equal weights give item `i` to Runner `i mod runners`. `None` without
/// Runners.
pub fn share_out(weights: &[u64], runners: usize) -> Option<Vec<usize>> {
    if runners == 0 {
        return None;
    }
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(weights[i]));
    // (weight so far, items so far) of each Runner.
    let mut load = vec![(0u64, 0usize); runners];
    let mut to = vec![0; weights.len()];
    for i in order {
        let r = (0..runners).min_by_key(|&r| (load[r], r)).unwrap_or(0);
        load[r].0 = load[r].0.saturating_add(weights[i]);
        load[r].1 += 1;
        to[i] = r;
    }
    Some(to)
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

#[cfg(test)]
mod tests {
    //! [`spread_among`] with weights is tested through its user, a job's
    //! submission (`crawlkeeper-node`'s `submit`).
    use super::share_out;

    #[test]
    fn equal_weights_go_round_robin() {
        assert_eq!(share_out(&[1; 7], 3), Some(vec![0, 1, 2, 0, 1, 2, 0]));
        assert_eq!(share_out(&[0; 4], 2), Some(vec![0, 1, 0, 1]));
        assert_eq!(share_out(&[5, 5], 4), Some(vec![0, 1]));
        assert_eq!(share_out(&[1, 2], 0), None);
    }

    #[test]
    fn uneven_weights_are_balanced_heaviest_first() {
        // Round robin would give Runner 0 weights 9, 1 and 1 (11 of 20).
        let weights = [9, 5, 4, 1, 1];
        let to = share_out(&weights, 2).unwrap();
        let load = |r| {
            (0..5)
                .filter(|&i| to[i] == r)
                .map(|i| weights[i])
                .sum::<u64>()
        };
        assert_eq!((load(0), load(1)), (10, 10), "{to:?}");
        // Twelve shards of 400 hosts split by a hash, on three Runners:
        // the largest Runner gets 134 hosts, where round robin gives 144.
        let hosts = [35, 31, 40, 29, 33, 37, 30, 36, 32, 34, 28, 35];
        let to = share_out(&hosts, 3).unwrap();
        let most = (0..3)
            .map(|r| {
                (0..12)
                    .filter(|&i| to[i] == r)
                    .map(|i| hosts[i])
                    .sum::<u64>()
            })
            .max();
        assert_eq!(most, Some(134), "{to:?}");
        let robin = (0..3)
            .map(|r| {
                (0..12)
                    .filter(|&i| i % 3 == r)
                    .map(|i| hosts[i])
                    .sum::<u64>()
            })
            .max();
        assert_eq!(robin, Some(144));
    }
}
