//! A cluster node: the thin async runtime that applies the protocol's pure
//! decisions ([`crate::protocol`]) on a [`Coordinator`].
//!
//! Life: register the node's meta-data and an ephemeral `session` node;
//! join GroupState under the group lock (by name, never twice); take part
//! in the election; then, every `update_time`: beat, and act on its duty —
//! a Runner runs its task's items (woken by a watch on its task node, not
//! by polling) and claims queued tasks when idle; the judge (primary
//! backup, or the smallest Runner when no backup is left) judges Runners'
//! hearts and fails dead ones over; secondary backups watch the primary.
//!
//! Every write of a task is a compare-and-set on the version its writer
//! last saw, and a take-over bumps the task's epoch and rewrites the dead
//! Runner's task node in the same transaction, so a Runner declared dead
//! that is still alive fails its next write, stops, and rejoins as a backup.
//!
//! | file | job |
//! |---|---|
//! | `mod.rs` | the node, its start and its event loop |
//! | `membership.rs` | registering, joining, the election, roles, a new session after expiry |
//! | `tick.rs` | what every `update_time` does: beat, refresh, act on the duty |
//! | `work.rs` | the Runner's task and items, queued tasks, being fenced |
//! | `judge.rs` | hearts, fail-over with fencing, dead backups |
//! | `leave.rs` | graceful leave |
//! | `submit.rs` | task submission |

mod config;
mod judge;
mod leave;
mod membership;
mod runner;
mod submit;
mod tick;
mod work;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crawlkeeper_model::cluster::{
    CrawlerRole, GroupState, HeartState, Heartbeat, NodeName, NodeState, ResultDetail, Task,
    TaskState,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use self::config::NodeConfig;
pub use self::runner::{ItemOutcome, TaskRunner};
pub use self::submit::{Placement, SubmitError, submit};
use crate::coordinator::{Coordinator, CreateMode, Op, SessionState, Version, Watch};
use crate::error::CoordError;
use crate::lock::Lock;
use crate::metadata::{self, MetaError};
use crate::path::Layout;
use crate::protocol::heart::{HeartMonitor, Verdict};
use crate::protocol::roles::{self, Duty};
use crate::protocol::{group, task as progress};

/// Opens a new session (at start, and after the session expired).
pub type Connect<C> =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<C, CoordError>> + Send>> + Send + Sync>;

/// Why a node stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Meta-data could not be read or written.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The coordinator failed for good.
    #[error(transparent)]
    Coord(#[from] CoordError),
    /// The node's settings are not valid.
    #[error("invalid node settings: {0}")]
    Config(#[from] crawlkeeper_model::cluster::HeartbeatError),
}

/// How a node's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It left on request, its task handed over.
    Left,
}

type Result<T, E = NodeError> = std::result::Result<T, E>;

fn encode<T: serde::Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("meta-data objects always serialize")
}

/// A running item: its position and the runner's future.
struct Running {
    position: usize,
    handle: JoinHandle<ItemOutcome>,
}

/// One member of a group.
pub struct ClusterNode<C: Coordinator, R: TaskRunner> {
    connect: Connect<C>,
    coord: C,
    cfg: NodeConfig,
    layout: Layout,
    runner: Arc<R>,
    group: GroupState,
    task: Task,
    task_version: Version,
    beat_version: Version,
    monitor: HeartMonitor,
    /// Session evidence is ignored until then (after a (re)join).
    grace_until: Instant,
    joined_at: Instant,
    running: Option<Running>,
    /// An outcome whose recording failed (connection lost): recorded later.
    unrecorded: Option<(usize, ItemOutcome)>,
    state_rx: watch::Receiver<SessionState>,
}

impl<C: Coordinator, R: TaskRunner> ClusterNode<C, R> {
    /// Connects, registers and joins the group.
    pub async fn start(connect: Connect<C>, cfg: NodeConfig, runner: R) -> Result<Self> {
        cfg.heartbeat.validate()?;
        let coord = connect().await?;
        let layout = Layout::new(&cfg.group)?;
        let monitor = HeartMonitor::new(
            cfg.heartbeat.update_timeout,
            cfg.heartbeat.heart_rhythm_timeout,
        );
        let state_rx = coord.session_state();
        let mut node = ClusterNode {
            connect,
            coord,
            layout,
            runner: Arc::new(runner),
            group: GroupState::default(),
            task: Task::default(),
            task_version: 0,
            beat_version: 0,
            monitor,
            grace_until: Instant::now(),
            joined_at: Instant::now(),
            running: None,
            unrecorded: None,
            state_rx,
            cfg,
        };
        node.register().await?;
        node.join().await?;
        Ok(node)
    }

    /// This node's name.
    pub fn name(&self) -> &NodeName {
        &self.cfg.name
    }

    /// The coordinator session in use.
    pub fn coordinator(&self) -> &C {
        &self.coord
    }

    /// Runs until `stop` turns true, then leaves the group gracefully.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) -> Result<Exit> {
        let mut tick = tokio::time::interval(self.cfg.heartbeat.update_time);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut task_watch: Option<Watch> = None;
        loop {
            if *stop.borrow() {
                return self.leave().await;
            }
            if task_watch.is_none() {
                task_watch = self.arm_task_watch().await;
            }
            let running = async {
                match self.running.as_mut() {
                    Some(r) => (&mut r.handle).await.ok(),
                    None => std::future::pending().await,
                }
            };
            let watch_fired = async {
                match task_watch.take() {
                    Some(w) => {
                        w.changed().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let outcome = tokio::select! {
                _ = tick.tick() => Step::Tick,
                o = running => Step::Item(o),
                () = watch_fired => Step::TaskChanged,
                _ = stop.changed() => Step::Stop,
            };
            let result = match outcome {
                Step::Tick => self.on_tick().await,
                Step::Item(o) => self.on_item(o).await,
                Step::TaskChanged => self.reload_task().await,
                Step::Stop => Ok(()),
            };
            if let Err(e) = result {
                self.on_error(e).await?;
                task_watch = None;
            }
            if let Err(e) = self.advance().await {
                self.on_error(e).await?;
                task_watch = None;
            }
        }
    }
}

enum Step {
    Tick,
    Item(Option<ItemOutcome>),
    TaskChanged,
    Stop,
}

/// Writes a value whether or not the node exists.
async fn put<T: serde::Serialize>(c: &impl Coordinator, path: &str, v: &T) -> Result<Version> {
    match metadata::write(c, path, v, None).await {
        Ok(version) => Ok(version),
        Err(MetaError::Coord(CoordError::NoNode(_))) => {
            metadata::create(c, path, v, CreateMode::Persistent).await?;
            Ok(0)
        }
        Err(e) => Err(e.into()),
    }
}

fn chrono_now() -> chrono::NaiveDateTime {
    chrono::Utc::now().naive_utc()
}
