//! Durable crawl state for crawlkeeper: everything that must outlive a
//! process, behind one [`Store`] trait with two backends that pass one
//! conformance suite.
//!
//! | module | what it does |
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

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

pub mod checkpoint;
pub mod codec;
pub mod holder;
pub mod location;
pub mod postgres;
mod rekey;
pub mod schema;
pub mod sqlite;
pub mod tally;
#[cfg(test)]
mod test_record;

use crawlkeeper_model::JobCounts;
use crawlkeeper_model::state::{Batch, Resumed};
use serde::{Deserialize, Serialize};

pub use crate::holder::Holder;
pub use crate::postgres::{PgStore, this_process};
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
    /// How many shards the job's hosts are split into (1: one process).
    pub shards: u32,
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
    /// How many shards its hosts are split into.
    pub shards: u32,
    /// Its counts.
    pub counts: JobCounts,
    /// How many times it was asked to stop (`crawlkeeper stop`).
    pub stops: u64,
}

/// What a claim took: the shards it took from a live process (fenced off
/// now, but perhaps still sending what it had let through its lease gate
/// until the gate's bound passes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claimed {
    /// Shards whose holder was alive (held the shard's lock) when taken.
    pub displaced: Vec<u32>,
}

/// A process's claim on shards of a job: it crawls them, alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The shards, each below the job's count.
    pub shards: Vec<u32>,
    /// Who claims them, as shown to others.
    pub holder: Holder,
    /// Take the shards even from a live holder, which is fenced off: its
    /// next transaction fails with [`StoreError::Fenced`].
    pub take_over: bool,
}

impl Claim {
    /// Every shard of `job`, for `holder`, not taken from a live holder.
    pub fn whole(job: &JobInfo, holder: &Holder) -> Self {
        Self {
            shards: (0..job.shards).collect(),
            holder: holder.clone(),
            take_over: false,
        }
    }
}

/// Who stored a result: the holder of its shard's lease, and the lease's
/// generation (how many times the shard had been taken by then). Known in
/// stores whose jobs are shared by leases (PostgreSQL); a SQLite file is
/// written by one process at a time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Writer {
    /// The process that held the shard (`<name>@<host>:<pid>`).
    pub holder: String,
    /// The result's shard.
    pub shard: u32,
    /// The lease's generation.
    pub generation: u64,
}

/// One shard of a job: its holder and its counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardInfo {
    /// The shard's number.
    pub shard: u32,
    /// Who took it last, if anyone did.
    pub holder: Option<String>,
    /// How many times it was taken.
    pub generation: u64,
    /// Whether its holder's process is alive (holds the shard's lock).
    pub live: bool,
    /// The shard's counts: URLs of its hosts admitted, finished, failed.
    pub counts: JobCounts,
}

/// A store operation failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
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
    /// Another transaction got in the way (a deadlock was broken, a lock
    /// was not granted in time); retrying may work.
    #[error("database conflict: {0}")]
    Conflict(String),
    /// A shard of the job is held by a live process.
    #[error("shard {shard} of job '{job}' is held by {holder}")]
    Held {
        /// The job's name.
        job: String,
        /// The shard.
        shard: u32,
        /// Its holder.
        holder: String,
    },
    /// A shard this process held was taken over: it must stop writing.
    #[error("shard {shard} of job '{job}' was taken over by {by}")]
    Fenced {
        /// The job's name.
        job: String,
        /// The shard.
        shard: u32,
        /// Who holds it now.
        by: String,
    },
}

impl StoreError {
    /// True when the operation may succeed if tried again later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Conflict(_))
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

    /// Whether `job` is complete: some URL admitted and none queued or
    /// held; `None` when there is no such job. Asked again and again while
    /// a job is waited for, so a store answers it without counting the
    /// job's URLs where it can.
    fn is_complete(&mut self, job: JobId) -> Result<Option<bool>, StoreError>;

    /// Makes sure no other process runs `job` while this store lives:
    /// claims all of its shards, refusing a live holder.
    fn lock_job(&mut self, job: &JobInfo) -> Result<(), StoreError>;

    /// Claims shards of `job` for this store's process: later
    /// [`Store::resume`] and [`Store::apply`] calls work on them, and each
    /// transaction first checks that they are still this process's. A
    /// shard held by a live process is refused ([`StoreError::Held`])
    /// unless `claim.take_over`. The default takes a one-shard job whole.
    fn claim(&mut self, job: &JobInfo, claim: &Claim) -> Result<Claimed, StoreError> {
        if job.shards == 1 && claim.shards == [0] {
            self.lock_job(job).map(|()| Claimed::default())
        } else {
            Err(StoreError::Backend(format!(
                "this store keeps jobs of one shard; job '{}' has {}",
                job.name, job.shards
            )))
        }
    }

    /// What earlier runs of `job` left in the claimed shards (all of them
    /// when nothing was claimed); URLs that were loaded in memory by a run
    /// that is gone are queued again.
    fn resume(&mut self, job: JobId) -> Result<Resumed, StoreError>;

    /// What earlier runs left in `shards` of `job`, claimed since the
    /// job was resumed (a process taking over more shards while it runs):
    /// like [`Store::resume`], for those shards only. The default: such
    /// a store holds jobs of one shard, never claimed later.
    fn resume_shards(&mut self, job: JobId, shards: &[u32]) -> Result<Resumed, StoreError> {
        let _ = job;
        Err(StoreError::Backend(format!(
            "this store keeps jobs of one shard; it cannot add shards {shards:?}"
        )))
    }

    /// Starts a new pass over `job` (a re-crawl), in one transaction:
    /// every URL it admitted is queued again, with what its record tells
    /// the next request (an earlier copy's validators and date, a
    /// sitemap's `lastmod`), and the records are removed; the authorities'
    /// saved state is forgotten (robots.txt is fetched again). Claims the
    /// whole job first. Returns how many URLs are queued.
    fn recrawl(&mut self, job: &JobInfo) -> Result<u64, StoreError>;

    /// Asks the processes crawling `job` now to stop it (they see it at
    /// their next poll, a second or so): counts one more request, so that
    /// a run begun later is not stopped by it. Writes nothing else.
    fn request_stop(&mut self, job: JobId) -> Result<(), StoreError>;

    /// How many times `job` was asked to stop: one row's column, cheap
    /// enough to ask every second (a cluster's `submit --wait`).
    fn stops(&mut self, job: JobId) -> Result<u64, StoreError>;

    /// A continuous job's rate histogram: pages by estimated change rate
    /// (`(bucket, pages)`, buckets of
    /// [`crawlkeeper_model::revisit::rate_bucket`]), over every shard.
    fn revisit_rates(&mut self, job: JobId) -> Result<Vec<(i16, u64)>, StoreError>;

    /// Applies `batch` to `job` in one transaction, filling its outputs.
    fn apply(&mut self, job: JobId, batch: &mut Batch) -> Result<(), StoreError>;

    /// Up to `limit` results of `job` (of its shards `shards` only, if
    /// given) in the order they finished, after position `after` (0 for
    /// the first): (position, record as JSON). Positions grow but may
    /// skip numbers.
    fn results(
        &mut self,
        job: JobId,
        shards: Option<&[u32]>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>, StoreError>;

    /// How many results of `job` (of its shards `shards` only, if given)
    /// are stored: its URLs done, or, for a continuous crawl, whose URLs
    /// keep a result per fetch, every fetch. Counts them: once per run,
    /// not per page.
    fn results_count(&mut self, job: JobId, shards: Option<&[u32]>) -> Result<u64, StoreError>;

    /// Like [`Store::results`] (of every shard), with who stored each
    /// result, where the store knows it.
    fn results_by(
        &mut self,
        job: JobId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String, Option<Writer>)>, StoreError> {
        Ok(self
            .results(job, None, after, limit)?
            .into_iter()
            .map(|(position, record)| (position, record, None))
            .collect())
    }

    /// Up to `limit` of `job`'s stored WARC records (kept for jobs crawled
    /// with `--store-bodies`), each result's in one piece, in the order
    /// the results finished, after position `after`: (position, bytes).
    fn archives(
        &mut self,
        job: JobId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError>;

    /// Calls `wake` (from another thread) whenever other processes leave
    /// work for the claimed shards of `job` or find it complete, so that
    /// a poll need not wait for its interval. The default never calls it:
    /// polls alone find everything, only later.
    fn subscribe(&mut self, job: JobId, wake: Box<dyn Fn() + Send>) -> Result<(), StoreError> {
        let _ = (job, wake);
        Ok(())
    }

    /// The shards of `job`, with holders and counts. The default: one
    /// shard holding the whole job.
    fn shards(&mut self, job: &JobInfo) -> Result<Vec<ShardInfo>, StoreError> {
        Ok(vec![ShardInfo {
            shard: 0,
            holder: None,
            generation: 0,
            live: false,
            counts: job.counts.clone(),
        }])
    }
}

/// Opens the store `location` names: a PostgreSQL database (a
/// `postgres://` or `postgresql://` URL, or a libpq key=value string, see
/// [`location::is_postgres`]), or else the path of a SQLite file.
pub fn open(location: &str) -> Result<Box<dyn Store>, StoreError> {
    if location::is_postgres(location) {
        Ok(Box::new(PgStore::connect(location)?))
    } else {
        Ok(Box::new(SqliteStore::open(location)?))
    }
}
