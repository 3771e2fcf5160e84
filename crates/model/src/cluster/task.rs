//! `Task`: the work a Runner holds and its progress (SmoothCrawler-Cluster's path
//! `node/<name>/task`). It carries control state only: page results live
//! in the crawl store, never in the coordinator.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::wire;

/// A task's state, with SmoothCrawler-Cluster's wire strings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// No task, or not started.
    #[default]
    Nothing,
    /// Items are being run.
    Processing,
    /// Every item ran.
    Done,
    /// Stopped before the end without an error (a stop request).
    Terminate,
    /// Stopped by an error.
    Error,
}

impl TaskState {
    /// The wire string (`processing`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Nothing => "nothing",
            TaskState::Processing => "processing",
            TaskState::Done => "done",
            TaskState::Terminate => "terminate",
            TaskState::Error => "error",
        }
    }
}

/// An item's identifier as the submitter wrote it: SmoothCrawler-Cluster's examples
/// use integers (`0`) and its documentation strings; both are kept as
/// written. It identifies; it does not order (items run in list order).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TaskId {
    /// `"task_id": 0`
    Int(i64),
    /// `"task_id": "a-1"`
    Text(String),
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskId::Int(i) => write!(f, "{i}"),
            TaskId::Text(s) => f.write_str(s),
        }
    }
}

/// One item of a task: a request to make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningContent {
    /// The item's identifier.
    pub task_id: TaskId,
    /// The URL to fetch.
    pub url: String,
    /// The HTTP method (`GET`).
    pub method: String,
    /// Query parameters.
    pub parameters: Option<BTreeMap<String, String>>,
    /// Request headers.
    pub header: Option<BTreeMap<String, String>>,
    /// Request body.
    pub body: Option<String>,
}

impl RunningContent {
    /// A plain `GET` of `url`, with no parameters, headers or body.
    pub fn get(task_id: TaskId, url: impl Into<String>) -> Self {
        RunningContent {
            task_id,
            url: url.into(),
            method: "GET".into(),
            parameters: None,
            header: None,
            body: None,
        }
    }
}

/// How many items succeeded and failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningResult {
    /// Items that ran to a result.
    pub success_count: u64,
    /// Items that failed.
    pub fail_count: u64,
}

/// The outcome of one item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultDetail {
    /// The item's identifier.
    pub task_id: TaskId,
    /// `done` or `error`.
    pub state: TaskState,
    /// The HTTP status of the response, when there was one.
    pub status_code: Option<u16>,
    /// A short description of the response (the result itself is in the store).
    pub response: Option<String>,
    /// Why the item failed.
    pub error_msg: Option<String>,
}

/// The work a Runner holds, and how far it got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The items, run in order.
    pub running_content: Vec<RunningContent>,
    /// Cookies sent with every item.
    #[serde(default, alias = "cookies")]
    pub cookie: BTreeMap<String, String>,
    /// Credentials sent with every item.
    #[serde(default)]
    pub authorization: BTreeMap<String, String>,
    /// The position of the item being run, or `-1` when none (written as a
    /// string, like SmoothCrawler-Cluster).
    #[serde(with = "wire::int_text")]
    pub in_progressing_id: i64,
    /// Counts of items done.
    pub running_result: RunningResult,
    /// The task's state.
    pub running_status: TaskState,
    /// One entry per item that ran.
    pub result_detail: Vec<ResultDetail>,
    /// crawlkeeper's fencing (not in SmoothCrawler-Cluster, written only when set): the
    /// node that owns the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<super::NodeName>,
    /// crawlkeeper's fencing: bumped by every take-over, so that a writer
    /// holding an older epoch knows it lost the task.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub epoch: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Default for Task {
    fn default() -> Self {
        Task {
            running_content: Vec::new(),
            cookie: BTreeMap::new(),
            authorization: BTreeMap::new(),
            in_progressing_id: -1,
            running_result: RunningResult::default(),
            running_status: TaskState::Nothing,
            result_detail: Vec::new(),
            owner: None,
            epoch: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SmoothCrawler-Cluster's Task example (its `None` written as JSON `null`), with a
    /// result detail as SmoothCrawler-Cluster's Runner writes one.
    const SEED_EXAMPLE: &str = r#"{
        "running_content": [
            {"task_id": 0, "url": "https://www.example.com", "method": "GET",
             "parameters": null, "header": null, "body": null}
        ],
        "cookie": {},
        "authorization": {},
        "in_progressing_id": "0",
        "running_result": {"success_count": 1, "fail_count": 0},
        "running_status": "done",
        "result_detail": [
            {"task_id": 0, "state": "done", "status_code": 200,
             "response": "Example Domain", "error_msg": null}
        ]
    }"#;

    #[test]
    fn round_trips_smoothcrawler_clusters_example() {
        let t: Task = serde_json::from_str(SEED_EXAMPLE).unwrap();
        assert_eq!(t.running_content[0].task_id, TaskId::Int(0));
        assert_eq!(t.in_progressing_id, 0);
        assert_eq!(t.running_status, TaskState::Done);
        assert_eq!(t.result_detail[0].status_code, Some(200));
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            serde_json::from_str::<serde_json::Value>(SEED_EXAMPLE).unwrap()
        );
    }

    #[test]
    fn an_idle_task_is_written_like_smoothcrawler_clusters() {
        let v = serde_json::to_value(Task::default()).unwrap();
        assert_eq!(v["in_progressing_id"], "-1");
        assert_eq!(v["running_status"], "nothing");
        for (state, text) in [
            (TaskState::Nothing, "nothing"),
            (TaskState::Processing, "processing"),
            (TaskState::Done, "done"),
            (TaskState::Terminate, "terminate"),
            (TaskState::Error, "error"),
        ] {
            assert_eq!(serde_json::to_value(state).unwrap(), text);
            assert_eq!(state.as_str(), text);
        }
    }

    #[test]
    fn string_task_ids_and_numeric_progress_are_accepted() {
        let text = SEED_EXAMPLE
            .replace(r#""task_id": 0, "url""#, r#""task_id": "a-7", "url""#)
            .replace(r#""in_progressing_id": "0""#, r#""in_progressing_id": 0"#);
        let t: Task = serde_json::from_str(&text).unwrap();
        assert_eq!(t.running_content[0].task_id, TaskId::Text("a-7".into()));
        assert_eq!(t.running_content[0].task_id.to_string(), "a-7");
        assert_eq!(t.in_progressing_id, 0);
    }

    #[test]
    fn fencing_fields_are_written_only_when_set() {
        let mut t: Task = serde_json::from_str(SEED_EXAMPLE).unwrap();
        assert_eq!((t.owner.as_ref(), t.epoch), (None, 0));
        t.owner = Some("crawler-2".parse().unwrap());
        t.epoch = 3;
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(
            (v["owner"].as_str(), v["epoch"].as_u64()),
            (Some("crawler-2"), Some(3))
        );
        assert_eq!(serde_json::from_value::<Task>(v).unwrap(), t);
    }

    #[test]
    fn bad_values_are_clear_errors() {
        let bad = SEED_EXAMPLE.replace(
            r#""running_status": "done""#,
            r#""running_status": "finished""#,
        );
        let err = serde_json::from_str::<Task>(&bad).unwrap_err().to_string();
        assert!(err.contains("unknown variant `finished`"), "{err}");
        let bad = SEED_EXAMPLE.replace(
            r#""in_progressing_id": "0""#,
            r#""in_progressing_id": "first""#,
        );
        let err = serde_json::from_str::<Task>(&bad).unwrap_err().to_string();
        assert!(err.contains("must be an integer"), "{err}");
    }
}
