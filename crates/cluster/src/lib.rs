//! Cluster coordination for crawlkeeper: everything the cluster protocol
//! needs from a coordination service, behind one trait, with an embedded
//! and a ZooKeeper backend that pass one conformance suite. This crate
//! does not know the crawl engine.
//!
//! | module | what it does |
//! |---|---|
//! | [`coordinator`] | the [`Coordinator`] trait: versioned tree, sessions, watches, transactions |
//! | [`error`] | [`CoordError`], with retryable and fatal kept apart |
//! | [`path`] | path checks, the value limit, SmoothCrawler-Cluster's layout of a group's meta-data |
//! | [`metadata`] | SmoothCrawler-Cluster's meta-data objects as JSON at the layout's paths |
//! | [`protocol`] | the protocol's decisions as pure code: heart judgement, GroupState transitions |
//! | [`node`] | a cluster node: the runtime that plays a role on a coordinator, with a [`node::TaskRunner`] |
//! | [`lock`] | a distributed lock with a timeout, on any coordinator |
//! | [`memory`] | [`MemoryCoordinator`]: in one process, with fault injection |
//! | [`zk`] | [`ZkCoordinator`]: Apache ZooKeeper |

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

pub mod coordinator;
pub mod error;
pub mod lock;
pub mod memory;
pub mod metadata;
pub mod node;
pub mod path;
pub mod protocol;
pub mod zk;

pub use coordinator::{
    Coordinator, CreateMode, Op, OpResult, SessionState, Value, Version, Watch, WatchEvent,
};
pub use error::{CoordError, ErrorClass};
pub use lock::{Lock, LockGuard};
pub use memory::{MemoryCoordinator, MemoryEnsemble};
pub use metadata::MetaError;
pub use path::{BadGroupName, GroupName, Layout, MAX_VALUE_BYTES};
pub use zk::ZkCoordinator;
