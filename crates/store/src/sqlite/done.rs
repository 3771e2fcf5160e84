//! Which rows of a job's `urls` have a result, in a SQLite file, without
//! writing a random index page for every finished URL.
//!
//! A crawl finishes its pages in another order than it admitted them: a
//! host's next pages, from hosts all over the frontier. An index of
//! `results` by row (version 5's `results_url`), maintained row by row,
//! then lands each finished page on a page of its own once the job is
//! larger than a commit: at 50 million URLs, a commit of 256 finished
//! pages wrote ~256 pages of it to the log. Here the results of a job up
//! to `done_upto.seq` are named in `done_urls`, a table ordered by (job,
//! row), and those past it (the tail) are held in memory by the
//! connection that writes them, as a map from row id to result position.
//! When the tail holds as many rows as the store's merge threshold it is
//! merged into `done_urls` in row order, in the transaction at hand: each
//! page of `done_urls` is then written once per merge, not once per
//! commit. The same scheme as [`super::keys`].
//!
//! Nothing is lost in a crash: the tail is rebuilt from the results past
//! `done_upto.seq` (each names its row), and a merge moves `seq` in the
//! transaction that writes its rows. Another connection's results are
//! seen through `PRAGMA data_version`, as for the keys. A job's results
//! are deleted only under its lock (a re-crawl, a deletion), which
//! forgets this connection's tail; another connection's is dropped when
//! it sees `done_upto` move back or the job's results end before its
//! tail.

use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Instant;

use rusqlite::{Connection, OptionalExtension, params};
use tracing::debug;

use super::err;
use super::rows::{MultiRow, merge_rows};
use crate::StoreError;

/// The statement merging rows.
static MERGE: LazyLock<MultiRow> = LazyLock::new(|| {
    MultiRow::new(
        "INSERT OR IGNORE INTO done_urls (job, url, seq)",
        "(?, ?, ?)",
    )
});

/// Which of one job's rows have a result, as this connection knows it.
#[derive(Debug)]
pub struct Done {
    /// The job's results up to this position name their rows in
    /// `done_urls`.
    upto: i64,
    /// Every result of the job up to this position is merged or in the
    /// tail.
    scanned: i64,
    /// Row id → result position of the job's results past `upto`.
    tail: HashMap<i64, i64>,
    /// The file's data version when this was brought up to date.
    version: i64,
}

impl Done {
    /// Reads which of `job`'s rows have a result, inside a transaction
    /// that holds the write lock; `version` is the file's data version.
    pub fn load(tx: &Connection, job: i64, version: i64) -> Result<Self, StoreError> {
        let mut done = Self {
            upto: 0,
            scanned: 0,
            tail: HashMap::new(),
            version,
        };
        done.catch_up(tx, job)?;
        Ok(done)
    }

    /// Brings this up to date with what other connections committed, if
    /// any did since: inside a transaction that holds the write lock.
    pub fn refresh(&mut self, tx: &Connection, job: i64, version: i64) -> Result<(), StoreError> {
        if version != self.version {
            self.catch_up(tx, job)?;
            self.version = version;
        }
        Ok(())
    }

    fn catch_up(&mut self, tx: &Connection, job: i64) -> Result<(), StoreError> {
        let upto = done_upto(tx, job)?;
        let last: i64 = tx
            .prepare_cached("SELECT coalesce(max(seq), 0) FROM results WHERE job = ?1")
            .map_err(err)?
            .query_row([job], |r| r.get(0))
            .map_err(err)?;
        if upto < self.upto || last < self.scanned {
            // The job's results were deleted (and perhaps written again).
            self.tail.clear();
            self.upto = 0;
            self.scanned = 0;
        }
        if upto > self.upto {
            self.tail.retain(|_, seq| *seq > upto);
            self.upto = upto;
        }
        self.scanned = self.scanned.max(self.upto);
        let mut stmt = tx
            .prepare_cached(
                "SELECT url, seq FROM results WHERE job = ?1 AND seq > ?2 AND url IS NOT NULL",
            )
            .map_err(err)?;
        let mut rows = stmt.query(params![job, self.scanned]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            self.tail
                .insert(row.get(0).map_err(err)?, row.get(1).map_err(err)?);
        }
        self.scanned = last.max(self.scanned);
        Ok(())
    }

    /// The position of the result of row `url`, if it has one.
    pub fn find(&self, tx: &Connection, job: i64, url: i64) -> Result<Option<i64>, StoreError> {
        if let Some(seq) = self.tail.get(&url) {
            return Ok(Some(*seq));
        }
        if self.upto == 0 {
            return Ok(None);
        }
        tx.prepare_cached("SELECT seq FROM done_urls WHERE job = ?1 AND url = ?2")
            .map_err(err)?
            .query_row(params![job, url], |r| r.get(0))
            .optional()
            .map_err(err)
    }

    /// Notes that row `url` has the result at position `seq`, written in
    /// the transaction at hand.
    pub fn add(&mut self, url: i64, seq: i64) {
        self.tail.insert(url, seq);
        self.scanned = self.scanned.max(seq);
    }

    /// Merges the tail into `done_urls` when it holds at least `at` rows;
    /// inside the transaction that wrote their results.
    pub fn merge_if_due(&mut self, tx: &Connection, job: i64, at: usize) -> Result<(), StoreError> {
        if self.tail.len() < at.max(1) {
            return Ok(());
        }
        let started = Instant::now();
        let rows: Vec<(i64, i64)> = self.tail.iter().map(|(u, s)| (*u, *s)).collect();
        // Every result of the job up to `scanned` is in the tail or merged.
        let merged = merge_rows(
            tx,
            &MERGE,
            rows,
            "INSERT INTO done_upto (job, seq) VALUES (?1, ?2)
             ON CONFLICT (job) DO UPDATE SET seq = excluded.seq",
            job,
            self.scanned,
        )?;
        self.upto = self.scanned;
        debug!(
            job,
            rows = merged,
            upto = self.upto,
            took = ?started.elapsed(),
            "newest finished rows merged"
        );
        self.tail.clear();
        Ok(())
    }
}

/// The job's results up to this position name their rows in `done_urls`.
fn done_upto(tx: &Connection, job: i64) -> Result<i64, StoreError> {
    Ok(tx
        .prepare_cached("SELECT seq FROM done_upto WHERE job = ?1")
        .map_err(err)?
        .query_row([job], |r| r.get(0))
        .optional()
        .map_err(err)?
        .unwrap_or(0))
}
