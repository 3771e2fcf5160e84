//! The machine's interface: what goes in ([`Event`], with [`Now`]), what
//! comes out ([`Command`]), the coordinator calls a command carries and
//! their replies, and how a node's life ends.

use std::time::Duration;

use crawlkeeper_model::cluster::{HeartbeatError, RunningContent};
use tokio::time::Instant;

use crate::coordinator::{Op, OpResult, SessionState, Version};
use crate::error::CoordError;
use crate::metadata::MetaError;
use crate::protocol::task::ItemOutcome;

/// Why a node stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// Meta-data could not be read or written.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The coordinator failed for good.
    #[error(transparent)]
    Coord(#[from] CoordError),
    /// The node's settings are not valid.
    #[error("invalid node settings: {0}")]
    Config(#[from] HeartbeatError),
}

/// How a node's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It left on request, its task handed over.
    Left,
    /// It stopped on request without leaving: the coordinator could not
    /// be reached within [`crate::node::NodeConfig::leave_timeout`], or its
    /// session expired meanwhile. The group judges it dead and fails its
    /// task over, as for a crash.
    Abandoned,
}

/// The time an event happens: the monotonic instant every judgement uses,
/// and the wall-clock time written into heartbeats for people to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Monotonic: the only clock decisions depend on.
    pub mono: Instant,
    /// Wall clock (UTC): only written, never compared.
    pub wall: chrono::NaiveDateTime,
}

/// What happened, as the machine's input.
#[derive(Debug)]
pub enum Event {
    /// `update_time` passed: beat and act on the duty.
    Tick,
    /// The coordinator session changed state.
    Session(SessionState),
    /// The item at `position` finished (`None`: its runner panicked; it is
    /// recorded as an error, not run again). While halting, it ended early
    /// and is not recorded.
    ItemDone {
        /// Its position in the task.
        position: usize,
        /// Its outcome.
        outcome: Option<ItemOutcome>,
    },
    /// A watched node changed (see [`Call::GetAndWatch`]).
    Changed(String),
    /// Leave the group gracefully.
    Stop,
    /// The answer to the last [`Command::Io`]: one reply per call, or
    /// the first error.
    Replied(Result<Vec<Reply>, CoordError>),
    /// The answer to [`Command::Reconnect`].
    Reconnected(Result<(), CoordError>),
}

/// What to do, as the machine's output.
#[derive(Debug)]
pub enum Command {
    /// Perform these calls in order; answer with [`Event::Replied`].
    Io(Vec<Call>),
    /// Start running an item; report with [`Event::ItemDone`].
    Run {
        /// Its position in the task.
        position: usize,
        /// The item.
        item: RunningContent,
    },
    /// Cancel every running item (no [`Event::ItemDone`] follows).
    Abort,
    /// Ask every running item to end early and in order (a concurrent
    /// Runner leaving): each still reports [`Event::ItemDone`], and is
    /// handed over unfinished.
    Halt,
    /// Drop the session (and any lock and watch), wait `after`, open a new
    /// session; answer with [`Event::Reconnected`].
    Reconnect {
        /// How long to wait first.
        after: Duration,
    },
    /// Stop: the node's life is over.
    Exit(Result<Exit, NodeError>),
}

/// One call to the coordinator, answered by a [`Reply`].
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// Acquire the group lock (at `dir`, waiting at most `timeout`).
    Lock {
        /// The lock's node.
        dir: String,
        /// How long to wait.
        timeout: Duration,
    },
    /// Release the group lock.
    Unlock,
    /// Create a node and its missing parents, unless it exists.
    CreateAll(String),
    /// Read a node: [`Reply::Value`].
    Get(String),
    /// Read a node, creating it with `data` first if missing: [`Reply::Value`].
    GetOrCreate {
        /// The node.
        path: String,
        /// Its value if created.
        data: Vec<u8>,
    },
    /// Read a node and watch it: [`Reply::Value`], then [`Event::Changed`]
    /// once when it changes.
    GetAndWatch(String),
    /// A node's version, if it exists: [`Reply::Exists`].
    Exists(String),
    /// A node's children, sorted: [`Reply::Children`].
    Children(String),
    /// Compare-and-set (any version when `None`): [`Reply::Version`].
    Set {
        /// The node.
        path: String,
        /// Its new value.
        data: Vec<u8>,
        /// The version it must have.
        version: Option<Version>,
    },
    /// Write a node whether or not it exists: [`Reply::Version`].
    Put {
        /// The node.
        path: String,
        /// Its value.
        data: Vec<u8>,
    },
    /// Create this session's ephemeral node, replacing a stale one left by
    /// an earlier session of the same name.
    Ephemeral(String),
    /// An atomic transaction: [`Reply::Multi`].
    Multi(Vec<Op>),
    /// Close the session.
    Close,
}

/// The answer to one [`Call`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Done, nothing to report.
    Done,
    /// A node's value and version, or `None` when it does not exist.
    Value(Option<(Vec<u8>, Version)>),
    /// A node's version, or `None` when it does not exist.
    Exists(Option<Version>),
    /// Children names.
    Children(Vec<String>),
    /// A new version.
    Version(Version),
    /// A transaction's results.
    Multi(Vec<OpResult>),
}

impl Reply {
    pub(super) fn value(self) -> Option<(Vec<u8>, Version)> {
        match self {
            Reply::Value(v) => v,
            other => unreachable!("the runtime answered a read with {other:?}"),
        }
    }

    pub(super) fn exists(self) -> Option<Version> {
        match self {
            Reply::Exists(v) => v,
            other => unreachable!("the runtime answered an exists with {other:?}"),
        }
    }

    pub(super) fn version(self) -> Version {
        match self {
            Reply::Version(v) => v,
            other => unreachable!("the runtime answered a write with {other:?}"),
        }
    }
}
