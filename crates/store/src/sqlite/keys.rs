//! How a job's URL keys find their rows of `urls` in a SQLite file,
//! without writing a random index page for every new URL.
//!
//! Keys are 128-bit hashes, random after their host's 32 bits: in a unique
//! index maintained row by row, each new URL of another host lands on a
//! page of its own, and a commit of a few hundred new
//! URLs (a fresh site, where every page brings tens of new links) writes a
//! few hundred pages to the log. Here the keys of a job's rows up to
//! `merged.upto` are in `url_keys`, and those of its newer rows (the tail)
//! are held in memory by the connection that writes them, as a map from
//! key to row id. When the tail holds [`DEFAULT_MERGE_AT`] keys it is
//! merged into `url_keys` in key order, in the transaction at hand: each
//! page of `url_keys` is then written once per merge, not once per commit.
//!
//! Nothing is lost in a crash: the tail is rebuilt on open from the rows
//! past `merged.upto` (each row keeps its key), and a merge moves `upto`
//! in the transaction that writes its keys. Another connection writing the
//! same file (another job, or this one) is seen through `PRAGMA
//! data_version`: the rows it appended are read into the tail, and a merge
//! it made drops the merged keys from it. Row ids are given out by
//! [`RowIds`] (past the largest id in `urls`, read under the write lock),
//! so that an admitted row's id is known without asking.

use std::sync::LazyLock;
use std::time::Instant;

use crawlkeeper_model::key::{KeyMap, KeySet};
use rusqlite::types::ToSql;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use tracing::debug;

use super::err;
use super::rows::{CHUNK, MultiRow};
use crate::StoreError;
use crate::codec::{key_bytes, key_from};

/// Keys held in memory before they are merged into `url_keys`: about
/// 2 MB of memory, and a merge every this many new URLs that rewrites the
/// pages of `url_keys` it touches (at a million URLs, ~60 % of them).
pub const DEFAULT_MERGE_AT: usize = 65_536;

/// The statement looking up `n` keys in `url_keys`.
fn lookup_sql(n: usize) -> String {
    format!(
        "SELECT key FROM url_keys WHERE job = ?1 AND key IN ({})",
        vec!["?"; n].join(", ")
    )
}

static LOOKUP_ONE: LazyLock<String> = LazyLock::new(|| lookup_sql(1));
static LOOKUP_CHUNK: LazyLock<String> = LazyLock::new(|| lookup_sql(CHUNK));

/// The statement merging keys.
static MERGE: LazyLock<MultiRow> =
    LazyLock::new(|| MultiRow::new("INSERT OR IGNORE INTO url_keys (job, key, id)", "(?, ?, ?)"));

/// Where one job's keys are, as this connection knows it.
#[derive(Debug)]
pub struct Keys {
    /// The job's rows up to this id have their keys in `url_keys`.
    upto: i64,
    /// Every row of the job up to this id is merged or in the tail.
    scanned: i64,
    /// Key → row id of the job's rows past `upto`.
    tail: KeyMap<i64>,
    /// The file's data version when this was brought up to date.
    version: i64,
}

impl Keys {
    /// Reads where `job`'s keys are, inside a transaction that holds the
    /// write lock; `version` is the file's data version, `ids` its row ids.
    pub fn load(tx: &Connection, job: i64, version: i64, ids: &RowIds) -> Result<Self, StoreError> {
        let mut keys = Self {
            upto: 0,
            scanned: 0,
            tail: KeyMap::default(),
            version,
        };
        keys.catch_up(tx, job, ids)?;
        Ok(keys)
    }

    /// Brings this up to date with what other connections committed, if
    /// any did since: inside a transaction that holds the write lock.
    pub fn refresh(
        &mut self,
        tx: &Connection,
        job: i64,
        version: i64,
        ids: &RowIds,
    ) -> Result<(), StoreError> {
        if version != self.version {
            self.catch_up(tx, job, ids)?;
            self.version = version;
        }
        Ok(())
    }

    fn catch_up(&mut self, tx: &Connection, job: i64, ids: &RowIds) -> Result<(), StoreError> {
        let upto = merged_upto(tx, job)?;
        if upto > self.upto {
            self.tail.retain(|_, id| *id > upto);
            self.upto = upto;
        }
        self.scanned = self.scanned.max(self.upto);
        let mut stmt = tx
            .prepare_cached("SELECT key, id FROM urls WHERE id > ?1 AND job = ?2")
            .map_err(err)?;
        let mut rows = stmt.query(params![self.scanned, job]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let key = key_from(&row.get::<_, Vec<u8>>(0).map_err(err)?)?;
            self.tail.insert(key, row.get(1).map_err(err)?);
        }
        self.scanned = ids.last.max(self.scanned);
        Ok(())
    }

    /// The row of `key` among the job's newest rows, held in memory.
    pub fn in_tail(&self, key: u128) -> Option<i64> {
        self.tail.get(&key).copied()
    }

    /// The row of `key`, if the job has one.
    pub fn find(&self, tx: &Connection, job: i64, key: u128) -> Result<Option<i64>, StoreError> {
        if let Some(id) = self.in_tail(key) {
            return Ok(Some(id));
        }
        if self.upto == 0 {
            return Ok(None);
        }
        tx.prepare_cached("SELECT id FROM url_keys WHERE job = ?1 AND key = ?2")
            .map_err(err)?
            .query_row(params![job, key_bytes(key)], |r| r.get(0))
            .optional()
            .map_err(err)
    }

    /// Which of `keys` (none of them in the tail) have a merged row.
    pub fn merged_among(
        &self,
        tx: &Connection,
        job: i64,
        keys: &[u128],
    ) -> Result<KeySet, StoreError> {
        let mut known = KeySet::default();
        if self.upto == 0 || keys.is_empty() {
            return Ok(known);
        }
        let mut one = tx.prepare_cached(&LOOKUP_ONE).map_err(err)?;
        let mut chunk = tx.prepare_cached(&LOOKUP_CHUNK).map_err(err)?;
        let mut look = |stmt: &mut rusqlite::CachedStatement<'_>, group: &[u128]| {
            let bytes: Vec<[u8; 16]> = group.iter().map(|k| key_bytes(*k)).collect();
            let values =
                std::iter::once(&job as &dyn ToSql).chain(bytes.iter().map(|b| b as &dyn ToSql));
            let mut rows = stmt.query(params_from_iter(values)).map_err(err)?;
            while let Some(row) = rows.next().map_err(err)? {
                known.insert(key_from(&row.get::<_, Vec<u8>>(0).map_err(err)?)?);
            }
            Ok::<_, StoreError>(())
        };
        for part in keys.chunks(CHUNK) {
            if part.len() == CHUNK {
                look(&mut chunk, part)?;
            } else {
                for key in part {
                    look(&mut one, std::slice::from_ref(key))?;
                }
            }
        }
        Ok(known)
    }

    /// Gives `key` the next row id of `ids`, unless the tail has it.
    pub fn add(&mut self, key: u128, ids: &mut RowIds) -> Option<i64> {
        if self.tail.contains_key(&key) {
            return None;
        }
        let id = ids.take();
        self.tail.insert(key, id);
        // Rows between were given to other jobs by this connection.
        self.scanned = id;
        Some(id)
    }

    /// Merges the tail into `url_keys`, in key order, when it holds at
    /// least `at` keys; inside the transaction that wrote its rows.
    pub fn merge_if_due(&mut self, tx: &Connection, job: i64, at: usize) -> Result<(), StoreError> {
        if self.tail.len() < at.max(1) {
            return Ok(());
        }
        let started = Instant::now();
        let mut rows: Vec<([u8; 16], i64)> = self
            .tail
            .iter()
            .map(|(k, id)| (key_bytes(*k), *id))
            .collect();
        rows.sort_unstable();
        MERGE.execute(tx, &rows, |(key, id), v| {
            v.extend([&job as &dyn ToSql, key, id]);
        })?;
        // Every row of the job up to `scanned` is in the tail or merged.
        tx.prepare_cached(
            "INSERT INTO merged (job, upto) VALUES (?1, ?2)
             ON CONFLICT (job) DO UPDATE SET upto = excluded.upto",
        )
        .map_err(err)?
        .execute(params![job, self.scanned])
        .map_err(err)?;
        self.upto = self.scanned;
        debug!(
            job,
            keys = rows.len(),
            upto = self.upto,
            took = ?started.elapsed(),
            "newest URL keys merged"
        );
        self.tail.clear();
        Ok(())
    }
}

/// The ids of new rows of `urls`: past every row of the file, read
/// inside a transaction that holds the write lock.
#[derive(Debug)]
pub struct RowIds {
    last: i64,
}

impl RowIds {
    /// Reads the largest id in use.
    pub fn read(tx: &Connection) -> Result<Self, StoreError> {
        let last = tx
            .prepare_cached("SELECT coalesce(max(id), 0) FROM urls")
            .map_err(err)?
            .query_row([], |r| r.get(0))
            .map_err(err)?;
        Ok(Self { last })
    }

    /// The next id.
    pub fn take(&mut self) -> i64 {
        self.last += 1;
        self.last
    }
}

/// The job's rows up to this id have their keys in `url_keys`.
fn merged_upto(tx: &Connection, job: i64) -> Result<i64, StoreError> {
    Ok(tx
        .prepare_cached("SELECT upto FROM merged WHERE job = ?1")
        .map_err(err)?
        .query_row([job], |r| r.get(0))
        .optional()
        .map_err(err)?
        .unwrap_or(0))
}
