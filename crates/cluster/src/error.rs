//! What a coordinator operation can fail with, one enum for every backend.
//!
//! Three kinds, kept apart by [`CoordError::class`]:
//! - outcomes of the operation itself (`NoNode`, `NodeExists`,
//!   `BadVersion`, …): the caller decides, retrying changes nothing;
//! - retryable trouble (`ConnectionLoss`, `LockTimeout`): the session may
//!   still be alive, try again;
//! - fatal for the session (`SessionExpired`, `Closed`): its ephemeral
//!   nodes and watches are gone; only a new session can go on.

use std::time::Duration;

/// How a caller should treat an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The operation's own answer (a conflict, a missing node, bad input).
    Outcome,
    /// Try again: the connection or a wait failed, the session may be fine.
    Retryable,
    /// The session is gone: open a new one.
    Fatal,
}

/// A coordinator error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CoordError {
    /// The node (or the parent of a node to create) does not exist.
    #[error("no node {0}")]
    NoNode(String),
    /// A node already exists at the path.
    #[error("node {0} already exists")]
    NodeExists(String),
    /// Compare-and-set failed: the node's version is not the expected one.
    #[error("node {0} has changed (version mismatch)")]
    BadVersion(String),
    /// A node with children cannot be deleted.
    #[error("node {0} has children")]
    NotEmpty(String),
    /// Ephemeral nodes cannot have children.
    #[error("node {0} is ephemeral and cannot have children")]
    NoChildrenForEphemerals(String),
    /// A value above the coordinator's limit: control state only.
    #[error(
        "value for {path} is {size} bytes; the limit is {max} (the coordinator holds control state only)"
    )]
    TooLarge {
        /// Where it was to be written.
        path: String,
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A path that is not absolute, has empty or relative segments, or a
    /// character the coordinator refuses.
    #[error("invalid coordinator path {path:?}: {reason}")]
    InvalidPath {
        /// The path.
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// The connection to the coordinator was lost; the session may survive.
    #[error("connection to the coordinator lost")]
    ConnectionLoss,
    /// The session expired: its ephemeral nodes are gone.
    #[error("coordinator session expired")]
    SessionExpired,
    /// The session was closed by its owner.
    #[error("coordinator session closed")]
    Closed,
    /// A lock was not acquired in time.
    #[error("lock {path} not acquired within {waited:?}")]
    LockTimeout {
        /// The lock's directory.
        path: String,
        /// How long it was waited for.
        waited: Duration,
    },
    /// Anything else the backend reported.
    #[error("coordinator error: {0}")]
    Backend(String),
}

impl CoordError {
    /// Whether this is an answer, a retryable failure or the end of the session.
    pub fn class(&self) -> ErrorClass {
        match self {
            CoordError::ConnectionLoss | CoordError::LockTimeout { .. } => ErrorClass::Retryable,
            CoordError::SessionExpired | CoordError::Closed | CoordError::Backend(_) => {
                ErrorClass::Fatal
            }
            _ => ErrorClass::Outcome,
        }
    }

    /// Whether trying again may succeed.
    pub fn is_retryable(&self) -> bool {
        self.class() == ErrorClass::Retryable
    }

    /// Whether the session is gone (or the backend failed for good).
    pub fn is_fatal(&self) -> bool {
        self.class() == ErrorClass::Fatal
    }
}

/// The result of a coordinator operation.
pub type Result<T, E = CoordError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_keep_retryable_and_fatal_apart() {
        assert!(CoordError::ConnectionLoss.is_retryable());
        assert!(!CoordError::ConnectionLoss.is_fatal());
        assert!(CoordError::SessionExpired.is_fatal());
        assert!(CoordError::Closed.is_fatal());
        assert_eq!(
            CoordError::BadVersion("/a".into()).class(),
            ErrorClass::Outcome
        );
        assert_eq!(CoordError::NoNode("/a".into()).class(), ErrorClass::Outcome);
    }
}
