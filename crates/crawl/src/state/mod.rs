//! Durable crawl state, as the engine needs it: the port a store
//! implements ([`CrawlState`]), an in-memory implementation, and the worker
//! thread that owns the state and the sink, commits in groups and answers
//! the engine.
//!
//! The engine never waits on the store inline: it sends commands and
//! handles the replies as events, so a slow disk or database delays
//! commits, not dispatch.

use std::time::Duration;

use crawlkeeper_model::Partition;

mod group;
mod memory;
mod worker;

pub use crawlkeeper_model::state::{Batch, Resumed};

pub use group::{BUSY_GROUP, GroupPolicy};
pub use memory::MemoryState;
pub use worker::{
    AdmitItem, Command, CommitStats, Polled, Reply, StateHandle, entry_of, request_of, spawn_worker,
};

/// Durable state of one crawl job. Implemented for the stores (SQLite and
/// PostgreSQL) by `StoreState` of the job crate (`crates/job/src/state.rs`),
/// and by [`MemoryState`].
pub trait CrawlState: Send + 'static {
    /// What earlier runs left. Every URL that was loaded into memory by a
    /// run that is gone counts as queued again.
    fn resume(&mut self) -> Result<Resumed, StateError>;

    /// Applies `batch` in one transaction, filling its outputs. When it
    /// returns `Ok` the changes are durable; on `Err` none are applied.
    fn apply(&mut self, batch: &mut Batch) -> Result<(), StateError>;

    /// How long the worker may hold a commit back to gather more finished
    /// URLs into it, sharing the transaction's fixed cost (see
    /// [`GroupPolicy`]). Zero, the default, commits as soon as the worker
    /// is free: right for state kept in memory.
    fn commit_wait(&self) -> Duration {
        Duration::ZERO
    }

    /// Whether applied batches outlive the process. Then a request keeps
    /// its place among its authority's `per_host` until its record is
    /// applied, so a `kill -9` costs at most the requests in flight. False,
    /// the default, for state kept in memory, which a kill loses anyway.
    fn survives_crash(&self) -> bool {
        false
    }

    /// How the job is shared with other processes, when it is: which
    /// shards this process crawls, and how it keeps in step. `None`, the
    /// default, for a job crawled whole by this process.
    fn sharing(&self) -> Option<Sharing> {
        None
    }

    /// With sharing: a channel that says "poll now" when other processes
    /// leave work for this one or find the job complete (taken once).
    /// `None`, the default: the polls' interval alone.
    fn wakeups(&mut self) -> Option<tokio::sync::mpsc::UnboundedReceiver<()>> {
        None
    }

    /// With sharing: takes `shards` of the job as well (their holder is
    /// gone) and returns what it left in them. The default cannot.
    fn take_shards(&mut self, shards: &[u32]) -> Result<Resumed, StateError> {
        Err(StateError::Fatal(format!(
            "this state cannot take shards {shards:?}"
        )))
    }
}

/// A job crawled by several processes, each holding shards of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sharing {
    /// The shards this process holds: it fetches only their hosts' URLs,
    /// and admits every other URL for its shard's holder.
    pub partition: Partition,
    /// How often the state is asked for URLs other processes added to the
    /// held shards, and whether the whole job is complete.
    pub poll_every: Duration,
    /// No request is sent when the shards were last confirmed as this
    /// process's longer ago than this (a pause, a stall, a partition):
    /// the lease is checked again first.
    pub lease_bound: Duration,
}

/// How often a crawl sharing its job polls the store, by default.
pub const POLL_EVERY: Duration = Duration::from_secs(1);

/// How recently the lease must have been confirmed for a request to go
/// out, by default.
pub const LEASE_BOUND: Duration = Duration::from_secs(1);

impl Sharing {
    /// Sharing of `partition` with the default intervals ([`POLL_EVERY`],
    /// [`LEASE_BOUND`]).
    pub fn new(partition: Partition) -> Self {
        Self {
            partition,
            poll_every: POLL_EVERY,
            lease_bound: LEASE_BOUND,
        }
    }
}

/// The state could not be read or written.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The store cannot be reached now (connection lost); retrying may work.
    #[error("state store unavailable: {0}")]
    Unavailable(String),
    /// Anything else: the crawl cannot go on safely.
    #[error("state store failed: {0}")]
    Fatal(String),
    /// A shard this process held was taken over by another process: it
    /// must stop at once, writing and fetching nothing more.
    #[error("{0}")]
    Fenced(crawlkeeper_model::Fence),
}
