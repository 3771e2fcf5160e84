//! A Task's progress, as pure functions: which items are still to run, how
//! an item's outcome is recorded, what a take-over resumes, how new work
//! joins a Runner's task, and whether a submitted Task is acceptable.
//!
//! An item is done when `result_detail` holds its outcome: each detail is
//! matched to the first item of its `task_id` not matched yet, so items
//! sharing a `task_id` are recorded in list order. Sequential Runners run
//! items in list order; concurrent Runners run every pending item at once
//! (items with distinct `task_id`s, such as a job's shards) and record them
//! as they end. `in_progressing_id` is the position of the item started or
//! recorded last.

use std::collections::{HashMap, VecDeque};

use crawlkeeper_model::cluster::{
    ResultDetail, RunningContent, RunningResult, Task, TaskId, TaskState,
};

use crate::path::MAX_VALUE_BYTES;

/// The outcome of one item, as its runner reports it.
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

/// Why a submitted Task was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// No items.
    #[error("a task needs at least one item in running_content")]
    Empty,
    /// An item whose URL is not an absolute http(s) URL.
    #[error("item {position} (task_id {task_id}): {url:?} is not an absolute http or https URL")]
    BadUrl {
        /// Its position.
        position: usize,
        /// Its id.
        task_id: String,
        /// The URL.
        url: String,
    },
    /// An item whose method is not an HTTP method token.
    #[error("item {position} (task_id {task_id}): {method:?} is not an HTTP method")]
    BadMethod {
        /// Its position.
        position: usize,
        /// Its id.
        task_id: String,
        /// The method.
        method: String,
    },
    /// A task whose JSON leaves too little room for its results.
    #[error(
        "the task is {size} bytes; at most {max} are accepted (control state only: put bulk data in the store)"
    )]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
}

/// A submitted task may take at most this share of a node's value, so its
/// results fit beside it.
pub const MAX_TASK_BYTES: usize = MAX_VALUE_BYTES / 4;

/// Checks a submitted Task and returns it ready to run: progress cleared,
/// state `nothing`.
pub fn accept(mut task: Task) -> Result<Task, TaskError> {
    if task.running_content.is_empty() {
        return Err(TaskError::Empty);
    }
    for (position, item) in task.running_content.iter().enumerate() {
        let ok = url::Url::parse(&item.url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if !ok {
            return Err(TaskError::BadUrl {
                position,
                task_id: item.task_id.to_string(),
                url: item.url.clone(),
            });
        }
        let token = !item.method.is_empty()
            && item
                .method
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b == b'-');
        if !token {
            return Err(TaskError::BadMethod {
                position,
                task_id: item.task_id.to_string(),
                method: item.method.clone(),
            });
        }
    }
    task.in_progressing_id = -1;
    task.owner = None;
    task.epoch = 0;
    task.running_result = RunningResult::default();
    task.running_status = TaskState::Nothing;
    task.result_detail.clear();
    let size = serde_json::to_vec(&task)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > MAX_TASK_BYTES {
        return Err(TaskError::TooLarge {
            size,
            max: MAX_TASK_BYTES,
        });
    }
    Ok(task)
}

/// The positions of the items without a recorded outcome, in list order.
pub fn pending(task: &Task) -> Vec<usize> {
    let mut by_id: HashMap<&TaskId, VecDeque<usize>> = HashMap::new();
    for (position, item) in task.running_content.iter().enumerate() {
        by_id.entry(&item.task_id).or_default().push_back(position);
    }
    let mut done = vec![false; task.running_content.len()];
    for detail in &task.result_detail {
        if let Some(position) = by_id.get_mut(&detail.task_id).and_then(VecDeque::pop_front) {
            done[position] = true;
        }
    }
    (0..done.len()).filter(|&p| !done[p]).collect()
}

/// The position of the next item to run in list order, or `None` when
/// every item has a recorded outcome.
pub fn next_item(task: &Task) -> Option<usize> {
    pending(task).first().copied()
}

/// Marks the item at `position` as running.
pub fn start_item(task: &mut Task, position: usize) {
    task.in_progressing_id = position as i64;
    task.running_status = TaskState::Processing;
}

/// Records the outcome of the item at `position`, once: an outcome for an
/// item already recorded (a replay), or for an item whose `task_id` an
/// earlier pending item shares (those are recorded in list order), changes
/// nothing and returns `false`.
pub fn record(task: &mut Task, position: usize, detail: ResultDetail) -> bool {
    let Some(item) = task.running_content.get(position) else {
        return false;
    };
    let pending = pending(task);
    let first_of_its_id = pending
        .iter()
        .find(|&&p| task.running_content[p].task_id == item.task_id);
    if first_of_its_id != Some(&position) || detail.task_id != item.task_id {
        return false;
    }
    match detail.state {
        TaskState::Error => task.running_result.fail_count += 1,
        _ => task.running_result.success_count += 1,
    }
    task.result_detail.push(detail);
    task.in_progressing_id = position as i64;
    if next_item(task).is_none() {
        task.running_status = TaskState::Done;
        task.in_progressing_id = -1;
    }
    true
}

/// `own` (a concurrent Runner's task) with the pending items of `new`
/// added: appended, so the positions of items running keep their meaning,
/// and without an item whose `task_id` `own` already has pending (work
/// handed out twice runs once). A task with nothing pending is replaced,
/// as SmoothCrawler-Cluster gives a new task to an idle Runner. `None` when `new`
/// brings nothing. The owner and the higher epoch are kept; cookies and
/// credentials are those of the task the items join.
pub fn merge(own: &Task, new: &Task) -> Option<Task> {
    let own_pending = pending(own);
    let mut added: Vec<RunningContent> = Vec::new();
    for p in pending(new) {
        let item = &new.running_content[p];
        let known = own_pending
            .iter()
            .any(|&q| own.running_content[q].task_id == item.task_id)
            || added.iter().any(|a| a.task_id == item.task_id);
        if !known {
            added.push(item.clone());
        }
    }
    if added.is_empty() {
        return None;
    }
    let epoch = own.epoch.max(new.epoch);
    if own_pending.is_empty() {
        return Some(Task {
            running_content: added,
            owner: own.owner.clone(),
            epoch,
            in_progressing_id: -1,
            running_result: RunningResult::default(),
            running_status: TaskState::Nothing,
            result_detail: Vec::new(),
            ..new.clone()
        });
    }
    let mut merged = own.clone();
    merged.running_content.extend(added);
    merged.epoch = epoch;
    merged.running_status = TaskState::Processing;
    Some(merged)
}

/// What a new owner does with a task it takes over: a `processing` task
/// resumes after its last recorded item, an `error` task reruns from the
/// start, a task assigned but not started starts; a `done` or empty task
/// needs nothing (`None`).
pub fn take_over(task: &Task) -> Option<Task> {
    match task.running_status {
        TaskState::Done => None,
        _ if task.running_content.is_empty() => None,
        TaskState::Error => Some(Task {
            in_progressing_id: -1,
            running_result: RunningResult::default(),
            running_status: TaskState::Nothing,
            result_detail: Vec::new(),
            ..task.clone()
        }),
        TaskState::Processing | TaskState::Nothing | TaskState::Terminate => Some(task.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: TaskId, url: &str) -> RunningContent {
        RunningContent {
            task_id: id,
            url: url.into(),
            method: "GET".into(),
            parameters: None,
            header: None,
            body: None,
        }
    }

    fn task(n: usize) -> Task {
        Task {
            // Every item has the same task_id: all of them still run.
            running_content: (0..n)
                .map(|i| item(TaskId::Int(7), &format!("http://127.0.0.1/p/{i}")))
                .collect(),
            ..Task::default()
        }
    }

    fn ok(id: TaskId) -> ResultDetail {
        ResultDetail {
            task_id: id,
            state: TaskState::Done,
            status_code: Some(200),
            response: None,
            error_msg: None,
        }
    }

    #[test]
    fn every_item_runs_in_order_and_is_recorded_once() {
        let mut t = accept(task(3)).unwrap();
        let mut ran = Vec::new();
        while let Some(p) = next_item(&t) {
            start_item(&mut t, p);
            assert_eq!(t.in_progressing_id, p as i64);
            ran.push(p);
            assert!(record(&mut t, p, ok(TaskId::Int(7))));
            assert!(
                !record(&mut t, p, ok(TaskId::Int(7))),
                "a replay is not recorded twice"
            );
        }
        assert_eq!(ran, [0, 1, 2]);
        assert_eq!(
            t.running_result,
            RunningResult {
                success_count: 3,
                fail_count: 0
            }
        );
        assert_eq!(t.running_status, TaskState::Done);
        assert_eq!(t.in_progressing_id, -1);
        assert_eq!(t.result_detail.len(), 3);
    }

    #[test]
    fn a_take_over_resumes_after_the_last_recorded_item() {
        let mut t = accept(task(4)).unwrap();
        start_item(&mut t, 0);
        record(&mut t, 0, ok(TaskId::Int(7)));
        start_item(&mut t, 1); // in flight when its Runner died
        let resumed = take_over(&t).unwrap();
        assert_eq!(next_item(&resumed), Some(1));
        assert_eq!(resumed.running_result.success_count, 1);

        let mut failed = t.clone();
        failed.running_status = TaskState::Error;
        let rerun = take_over(&failed).unwrap();
        assert_eq!(next_item(&rerun), Some(0));
        assert!(rerun.result_detail.is_empty());

        let assigned = accept(task(2)).unwrap();
        assert_eq!(next_item(&take_over(&assigned).unwrap()), Some(0));

        let mut done = accept(task(1)).unwrap();
        record(&mut done, 0, ok(TaskId::Int(7)));
        assert_eq!(take_over(&done), None);
        assert_eq!(take_over(&Task::default()), None);
    }

    #[test]
    fn a_bad_task_is_refused_with_a_clear_error() {
        assert_eq!(accept(Task::default()), Err(TaskError::Empty));
        let mut t = task(2);
        t.running_content[1].url = "ftp://x/".into();
        let e = accept(t).unwrap_err();
        assert_eq!(
            e.to_string(),
            "item 1 (task_id 7): \"ftp://x/\" is not an absolute http or https URL"
        );
        let mut t = task(1);
        t.running_content[0].url = "/relative".into();
        assert!(matches!(accept(t), Err(TaskError::BadUrl { .. })));
        let mut t = task(1);
        t.running_content[0].method = "get me".into();
        assert!(matches!(accept(t), Err(TaskError::BadMethod { .. })));
        let mut t = task(1);
        t.running_content[0].body = Some("x".repeat(MAX_TASK_BYTES));
        assert!(matches!(accept(t), Err(TaskError::TooLarge { .. })));
    }

    fn shards(ids: &[&str]) -> Task {
        Task {
            running_content: ids
                .iter()
                .map(|id| item(TaskId::Text((*id).into()), "http://127.0.0.1/"))
                .collect(),
            ..Task::default()
        }
    }

    fn done(id: &str) -> ResultDetail {
        ok(TaskId::Text(id.into()))
    }

    #[test]
    fn concurrent_items_are_recorded_in_any_order_once() {
        let mut t = accept(shards(&["j/0", "j/1", "j/2"])).unwrap();
        assert_eq!(pending(&t), [0, 1, 2]);
        assert!(record(&mut t, 2, done("j/2")));
        assert!(!record(&mut t, 2, done("j/2")), "a replay");
        assert!(!record(&mut t, 1, done("j/0")), "another item's outcome");
        assert_eq!(pending(&t), [0, 1]);
        assert_eq!(t.running_status, TaskState::Nothing);
        assert!(record(&mut t, 0, done("j/0")));
        assert!(record(&mut t, 1, done("j/1")));
        assert!(pending(&t).is_empty());
        assert_eq!(t.running_status, TaskState::Done);
        assert_eq!(t.running_result.success_count, 3);
    }

    #[test]
    fn items_sharing_a_task_id_are_recorded_in_list_order() {
        let mut t = accept(task(2)).unwrap();
        assert!(!record(&mut t, 1, ok(TaskId::Int(7))), "item 0 goes first");
        assert!(record(&mut t, 0, ok(TaskId::Int(7))));
        assert_eq!(pending(&t), [1]);
    }

    #[test]
    fn merged_work_is_appended_once_and_an_idle_task_is_replaced() {
        let mut own = accept(shards(&["a/0", "a/1"])).unwrap();
        own.owner = Some("c_1".parse().unwrap());
        own.epoch = 2;
        record(&mut own, 0, done("a/0"));
        let mut new = accept(shards(&["a/1", "b/0", "b/0"])).unwrap();
        new.epoch = 5;
        let merged = merge(&own, &new).unwrap();
        let ids: Vec<String> = merged
            .running_content
            .iter()
            .map(|i| i.task_id.to_string())
            .collect();
        assert_eq!(ids, ["a/0", "a/1", "b/0"], "appended, a/1 not twice");
        assert_eq!(pending(&merged), [1, 2]);
        assert_eq!(merged.epoch, 5);
        assert_eq!(merged.owner, own.owner);
        assert_eq!(merge(&merged, &shards(&["b/0"])), None, "nothing new");

        let mut finished = merged.clone();
        record(&mut finished, 1, done("a/1"));
        record(&mut finished, 2, done("b/0"));
        let replaced = merge(&finished, &shards(&["c/0"])).unwrap();
        assert_eq!(
            replaced.running_content.len(),
            1,
            "an idle task is replaced"
        );
        assert!(replaced.result_detail.is_empty());
        assert_eq!(replaced.owner, own.owner);
        assert_eq!(take_over(&merged).map(|t| pending(&t)), Some(vec![1, 2]));
    }
}
