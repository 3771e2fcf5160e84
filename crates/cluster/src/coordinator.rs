//! The `Coordinator` trait: what the cluster protocol needs from a
//! coordination service, in ZooKeeper's terms (a tree of versioned values,
//! sessions, ephemeral and sequential nodes, one-shot watches, atomic
//! multi-operations), so that ZooKeeper implements it directly and the
//! in-memory backend behaves the same.
//!
//! A `Coordinator` value is one session. Clones share it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use tokio::sync::watch;

use crate::error::Result;

/// A node's data version, bumped by every write; compare-and-set compares it.
pub type Version = i32;

/// A node's value and its version.
pub type Value = (Vec<u8>, Version);

/// How a node is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    /// Stays until deleted.
    Persistent,
    /// Deleted when the creating session ends.
    Ephemeral,
    /// Persistent, with a 10-digit increasing counter appended to the name.
    PersistentSequential,
    /// Ephemeral, with a 10-digit increasing counter appended to the name.
    EphemeralSequential,
}

impl CreateMode {
    /// Whether the node dies with its session.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    /// Whether a counter is appended to the name.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        )
    }
}

/// One operation of a [`Coordinator::multi`] transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Fails the transaction unless the node has this version.
    Check {
        /// The node.
        path: String,
        /// Its expected version.
        version: Version,
    },
    /// Creates a node.
    Create {
        /// The node.
        path: String,
        /// Its value.
        data: Vec<u8>,
        /// Its mode.
        mode: CreateMode,
    },
    /// Sets a value, if the version matches (any version when `None`).
    Set {
        /// The node.
        path: String,
        /// Its new value.
        data: Vec<u8>,
        /// The expected version.
        version: Option<Version>,
    },
    /// Deletes a node, if the version matches (any version when `None`).
    Delete {
        /// The node.
        path: String,
        /// The expected version.
        version: Option<Version>,
    },
}

impl Op {
    /// The node the operation is about.
    pub fn path(&self) -> &str {
        match self {
            Op::Check { path, .. }
            | Op::Create { path, .. }
            | Op::Set { path, .. }
            | Op::Delete { path, .. } => path,
        }
    }
}

/// What one operation of a committed transaction returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// The check passed.
    Check,
    /// The node was created at this path (with its counter, if sequential).
    Create(String),
    /// The value was set; its new version.
    Set(Version),
    /// The node was deleted.
    Delete,
}

/// A session's state, as its owner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Connected; operations go through.
    Connected,
    /// Disconnected; the session may still be alive and reconnecting.
    Suspended,
    /// The session expired: its ephemeral nodes and watches are gone.
    Expired,
    /// The owner closed the session.
    Closed,
}

impl SessionState {
    /// Whether the session can never work again.
    pub fn is_terminal(self) -> bool {
        matches!(self, SessionState::Expired | SessionState::Closed)
    }
}

/// What ended a watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchEvent {
    /// The watched node was created.
    Created,
    /// The watched node's value changed.
    DataChanged,
    /// The watched node was deleted.
    Deleted,
    /// A child was created or deleted.
    ChildrenChanged,
    /// The session ended (expired or closed): no event will come.
    Session(SessionState),
}

/// A one-shot watch: resolves once, at the first change after it was set.
pub struct Watch(Pin<Box<dyn Future<Output = WatchEvent> + Send>>);

impl Watch {
    /// Wraps a future.
    pub fn new(f: impl Future<Output = WatchEvent> + Send + 'static) -> Self {
        Watch(Box::pin(f))
    }

    /// Waits for the change.
    pub async fn changed(self) -> WatchEvent {
        self.0.await
    }
}

/// Polled in place (a `select!` loop keeps it across iterations).
impl Future for Watch {
    type Output = WatchEvent;

    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<WatchEvent> {
        self.0.as_mut().poll(cx)
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Watch")
    }
}

/// A coordination service session.
///
/// Writes take an expected version (`Some(v)`: compare-and-set; `None`:
/// unconditional). Values above [`crate::path::MAX_VALUE_BYTES`] are
/// refused with [`crate::CoordError::TooLarge`]. Children are listed in
/// name order.
pub trait Coordinator: Clone + Send + Sync + 'static {
    /// Creates a node; returns its path (with the counter, if sequential).
    /// Errors name the requested path, as ZooKeeper does.
    fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> impl Future<Output = Result<String>> + Send;

    /// Reads a node's value and version.
    fn get(&self, path: &str) -> impl Future<Output = Result<Value>> + Send;

    /// A node's version, or `None` when it does not exist.
    fn exists(&self, path: &str) -> impl Future<Output = Result<Option<Version>>> + Send;

    /// Sets a value; returns the new version.
    fn set(
        &self,
        path: &str,
        data: &[u8],
        expected: Option<Version>,
    ) -> impl Future<Output = Result<Version>> + Send;

    /// Deletes a node (it must have no children).
    fn delete(
        &self,
        path: &str,
        expected: Option<Version>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The names of a node's children, sorted.
    fn children(&self, path: &str) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Runs operations as one transaction: all are applied or none.
    fn multi(&self, ops: &[Op]) -> impl Future<Output = Result<Vec<OpResult>>> + Send;

    /// Reads a node (or learns it is absent) and watches it: the watch
    /// fires once, at its creation, next change or deletion.
    fn get_and_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Value>, Watch)>> + Send;

    /// Lists a node's children and watches them: the watch fires once, at
    /// the next child created or deleted, or when the node is deleted.
    fn children_and_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Watch)>> + Send;

    /// The session's state, and its changes.
    fn session_state(&self) -> watch::Receiver<SessionState>;

    /// Ends the session: its ephemeral nodes are deleted.
    fn close(&self) -> impl Future<Output = Result<()>> + Send;

    /// Creates every missing node on the way to `path` (persistent, empty).
    fn create_all(&self, path: &str) -> impl Future<Output = Result<()>> + Send {
        async move {
            crate::path::check(path)?;
            if path == "/" {
                return Ok(());
            }
            let mut at = 0;
            while let Some(next) = path[at + 1..]
                .find('/')
                .map(|i| at + 1 + i)
                .or_else(|| (at < path.len()).then_some(path.len()))
            {
                match self
                    .create(&path[..next], b"", CreateMode::Persistent)
                    .await
                {
                    Ok(_) | Err(crate::CoordError::NodeExists(_)) => {}
                    Err(e) => return Err(e),
                }
                if next == path.len() {
                    break;
                }
                at = next;
            }
            Ok(())
        }
    }
}
