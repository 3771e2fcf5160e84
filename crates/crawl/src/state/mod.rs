//! Durable crawl state, as the engine needs it: the port a store
//! implements ([`CrawlState`]), an in-memory implementation, and the worker
//! thread that owns the state and the sink, commits in groups and answers
//! the engine.
//!
//! The engine never waits on the store inline: it sends commands and
//! handles the replies as events, so a slow disk or database delays
//! commits, not dispatch.

mod memory;
mod worker;

use crawlkeeper_model::{Authority, AuthorityState, FinishedUrl, FrontierEntry, JobCounts};

pub use memory::MemoryState;
pub use worker::{AdmitItem, Command, Reply, StateHandle, entry_of, job_of, spawn_worker};

/// Durable state of one crawl job. Implemented by the store crate for
/// SQLite and PostgreSQL, and by [`MemoryState`].
pub trait CrawlState: Send + 'static {
    /// What earlier runs left. Every URL that was loaded into memory by a
    /// run that is gone counts as queued again.
    fn resume(&mut self) -> Result<Resumed, StateError>;

    /// Applies `batch` in one transaction, filling its outputs. When it
    /// returns `Ok` the changes are durable; on `Err` none are applied.
    fn apply(&mut self, batch: &mut Batch) -> Result<(), StateError>;
}

/// What earlier runs of the job left.
#[derive(Debug, Clone, Default)]
pub struct Resumed {
    /// Counts of the job.
    pub counts: JobCounts,
    /// Saved per-authority state.
    pub authorities: Vec<AuthorityState>,
    /// Authorities with queued URLs, and how many.
    pub queued: Vec<(Authority, u64)>,
}

/// One transaction's worth of changes.
#[derive(Debug, Default)]
pub struct Batch {
    /// In: records of finished URLs. Idempotent: a key already finished
    /// keeps its first record.
    pub finished: Vec<FinishedUrl>,
    /// Out: for each finished URL, true if its record was stored now (false
    /// if it had one already, so it must not be written out again).
    pub recorded: Vec<bool>,
    /// In: candidate URLs with their authority and whether the engine keeps
    /// them in memory (loaded) or leaves them in the store (queued).
    pub admit: Vec<(FrontierEntry, Authority, bool)>,
    /// Out: for each candidate, true if it was new to the job.
    pub admitted: Vec<bool>,
    /// In: load up to `limit` queued URLs of an authority, shallowest first.
    pub load: Vec<(Authority, usize)>,
    /// Out: for each load, the entries now marked loaded.
    pub loaded: Vec<Vec<FrontierEntry>>,
    /// In: per-authority state to save.
    pub authorities: Vec<AuthorityState>,
}

impl Batch {
    /// True when the batch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.finished.is_empty()
            && self.admit.is_empty()
            && self.load.is_empty()
            && self.authorities.is_empty()
    }
}

/// The state could not be read or written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StateError {
    /// The store cannot be reached now (connection lost); retrying may work.
    #[error("state store unavailable: {0}")]
    Unavailable(String),
    /// Anything else: the crawl cannot go on safely.
    #[error("state store failed: {0}")]
    Fatal(String),
}
