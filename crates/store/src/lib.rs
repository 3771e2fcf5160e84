//! Durable crawl state for crawlkeeper: everything that must outlive a
//! process, behind one [`Store`] trait with two backends that pass one
//! conformance suite.
//!
//! | module | job |
//! |---|---|
//! | [`sqlite`] | [`SqliteStore`]: one file, WAL, the embedded default; [`sqlite::keys`]: its URL keys, merged in bulk |
//! | [`checkpoint`] | SQLite checkpoints on their own thread, off the commit path |
//! | [`postgres`] | [`PgStore`]: PostgreSQL, for clusters |
//! | [`location`] | a store's location as shown to people: passwords hidden |
//! | [`codec`] | how keys, chains and records are written in rows |
//! | [`schema`] | the tables, created or migrated on connect |
//!
//! One table holds a job's URLs: a row is admitted (the seen set), queued
//! or loaded (the frontier), or done with its record (the results, in a
//! table of their own; [`schema`] says how each backend links the two). A
//! result is written once per job and URL key, so a replay after a crash
//! never makes a second row.

pub mod checkpoint;
pub mod codec;
pub mod location;
pub mod postgres;
pub mod schema;
pub mod sqlite;

use crawlkeeper_model::JobCounts;
use crawlkeeper_model::state::{Batch, Resumed};
use serde::{Deserialize, Serialize};

pub use crate::postgres::PgStore;
pub use crate::sqlite::SqliteStore;

/// A job's row id in its store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JobId(pub i64);

/// What identifies and describes a job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The job's name: a short hash of its seeds and scope options, so the
    /// same command finds the same job.
    pub name: String,
    /// The seeds, as given.
    pub seeds: Vec<String>,
    /// The crawl options, as JSON.
    pub options: String,
}

/// A job and its counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobInfo {
    /// Its row id.
    pub id: JobId,
    /// Its name.
    pub name: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// Its seeds.
    pub seeds: Vec<String>,
    /// Its options, as JSON.
    pub options: String,
    /// Its counts.
    pub counts: JobCounts,
}

/// A store operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or is busy; retrying may work.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Another process is running this job.
    #[error("job '{0}' is being crawled by another process")]
    Locked(String),
    /// The database holds something this version cannot read.
    #[error("database content is invalid: {0}")]
    Corrupt(String),
    /// Any other database error.
    #[error("database error: {0}")]
    Backend(String),
}

impl StoreError {
    /// True when the operation may succeed if tried again later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

/// Everything about crawl jobs that must outlive a process.
pub trait Store: Send {
    /// Finds the job named `spec.name`, or creates it.
    fn open_job(&mut self, spec: &JobSpec) -> Result<JobInfo, StoreError>;

    /// The job called `name`, if any.
    fn find_job(&mut self, name: &str) -> Result<Option<JobInfo>, StoreError>;

    /// Deletes a job and everything it stored; false if there was none.
    fn delete_job(&mut self, name: &str) -> Result<bool, StoreError>;

    /// Every job, oldest first, with counts.
    fn jobs(&mut self) -> Result<Vec<JobInfo>, StoreError>;

    /// Makes sure no other process runs `job` while this store lives.
    fn lock_job(&mut self, job: &JobInfo) -> Result<(), StoreError>;

    /// What earlier runs of `job` left; URLs that were loaded in memory by
    /// a run that is gone are queued again.
    fn resume(&mut self, job: JobId) -> Result<Resumed, StoreError>;

    /// Applies `batch` to `job` in one transaction, filling its outputs.
    fn apply(&mut self, job: JobId, batch: &mut Batch) -> Result<(), StoreError>;

    /// Up to `limit` results of `job` in the order they finished, after
    /// position `after` (0 for the first): (position, record as JSON).
    fn results(
        &mut self,
        job: JobId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>, StoreError>;
}

/// Opens the store `location` names: a `postgres://` or `postgresql://`
/// URL, or else the path of a SQLite file.
pub fn open(location: &str) -> Result<Box<dyn Store>, StoreError> {
    if location.starts_with("postgres://") || location.starts_with("postgresql://") {
        Ok(Box::new(PgStore::connect(location)?))
    } else {
        Ok(Box::new(SqliteStore::open(location)?))
    }
}
