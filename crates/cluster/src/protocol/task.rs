//! A Task's progress, as pure functions: which item runs next, how an
//! item's outcome is recorded, what a take-over resumes, and whether a
//! submitted Task is acceptable. Items run in list order, whatever their
//! `task_id`s; `in_progressing_id` is the position of the item running.

use crawlkeeper_model::cluster::{ResultDetail, RunningResult, Task, TaskState};

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

/// The position of the next item to run, or `None` when every item has a
/// recorded result (results are recorded in order, one per item).
pub fn next_item(task: &Task) -> Option<usize> {
    let done = task.result_detail.len();
    (done < task.running_content.len()).then_some(done)
}

/// Marks the item at `position` as running.
pub fn start_item(task: &mut Task, position: usize) {
    task.in_progressing_id = position as i64;
    task.running_status = TaskState::Processing;
}

/// Records the outcome of the item at `position`, once: an outcome for an
/// item already recorded (a replay) changes nothing and returns `false`.
pub fn record(task: &mut Task, position: usize, detail: ResultDetail) -> bool {
    if position != task.result_detail.len() || position >= task.running_content.len() {
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
    use crawlkeeper_model::cluster::{RunningContent, TaskId};

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
}
