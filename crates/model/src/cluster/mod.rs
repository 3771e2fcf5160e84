//! The cluster's meta-data, as SmoothCrawler-Cluster writes it: the same
//! objects, JSON field names and wire strings, so a status dump reads like
//! SmoothCrawler-Cluster's documents. Values are typed and checked when read: a bad
//! duration, state or name is a clear error, never a panic.
//!
//! | module | object | stored at |
//! |---|---|---|
//! | [`group`] | [`GroupState`]: who is in the group and in which role | `group/state` |
//! | [`node`] | [`NodeState`]: one node's group and role | `node/<name>/state` |
//! | [`task`] | [`Task`]: the work a Runner holds and its progress | `node/<name>/task` |
//! | [`heartbeat`] | [`Heartbeat`]: a node's pulse and how to judge it | `node/<name>/heartbeat` |
//! | [`name`] | [`NodeName`]: `<base><sep><index>` | |
//! | `wire` | serde helpers: integers SmoothCrawler-Cluster writes as strings (`"3"`) | |

pub mod group;
pub mod heartbeat;
pub mod name;
pub mod node;
pub mod task;
mod wire;

pub use group::GroupState;
pub use heartbeat::{HeartState, Heartbeat, HeartbeatError, TimeFormat};
pub use name::{MAX_NAME_BYTES, NameError, NodeName, name_problem};
pub use node::{CrawlerRole, NodeState};
pub use task::{ResultDetail, RunningContent, RunningResult, Task, TaskId, TaskState};
