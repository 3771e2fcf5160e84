//! [`SqliteStore`]: the embedded default. One file in WAL mode; every batch
//! is one transaction; several processes may share the file (each job is
//! locked by the process crawling it). Checkpoints run on their own thread
//! ([`crate::checkpoint`]); a batch is applied by `apply`; a key finds
//! its row through [`keys`].

mod admit;
mod apply;
pub mod done;
mod finish;
pub mod keys;
mod revisit;
mod rows;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crawlkeeper_model::JobCounts;
use crawlkeeper_model::state::{Batch, Resumed};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use tracing::info;

use self::apply::{Memo, apply_in, data_version, run_cached};
use self::keys::DEFAULT_MERGE_AT;
use crate::checkpoint::{Checkpointer, Thresholds};
use crate::codec::{now_text, parse_authority, requeued_chain, saved_state};
use crate::schema::{self, state};
use crate::{JobId, JobInfo, JobSpec, Store, StoreError};

/// A crawl state file.
pub struct SqliteStore {
    /// Started with the first batch; dropped (joined) before `conn` closes.
    checkpointer: Option<Checkpointer>,
    /// The file is in WAL mode (so checkpoints can run on their own thread).
    wal: bool,
    conn: Connection,
    path: PathBuf,
    /// What this connection remembers between batches.
    memo: Memo,
    /// A job's newest keys held in memory before they are merged.
    merge_at: usize,
    locks: Vec<(String, JobLock)>,
}

pub(crate) fn err(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Unavailable(e.to_string())
        }
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            StoreError::Corrupt(e.to_string())
        }
        _ => StoreError::Backend(e.to_string()),
    }
}

/// Refuses a SQLite database that holds tables of its own and not ours,
/// before anything is written to it (not even the journal mode).
fn refuse_foreign(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let not_ours = |why: String| {
        StoreError::Corrupt(format!(
            "{} is not a crawlkeeper state file: {why}; it was left untouched",
            path.display()
        ))
    };
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .map_err(|e| not_ours(e.to_string()))?;
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| not_ours(e.to_string()))?;
    if tables.is_empty() || tables.iter().any(|t| t == "crawlkeeper_version") {
        return Ok(());
    }
    let mut shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
    if tables.len() > 5 {
        shown.push("…");
    }
    Err(not_ours(format!(
        "a SQLite database of another program (tables: {})",
        shown.join(", ")
    )))
}

impl SqliteStore {
    /// Opens (or creates) the state file at `path`, creating or migrating
    /// its tables.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let conn = Connection::open(&path).map_err(|e| {
            StoreError::Backend(format!("cannot open state file {}: {e}", path.display()))
        })?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(err)?;
        refuse_foreign(&conn, &path)?;
        // Every statement of a batch stays prepared.
        conn.set_prepared_statement_cache_capacity(32);
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(|e| match err(e) {
                StoreError::Backend(m) => StoreError::Corrupt(format!(
                    "{} is not a crawlkeeper state file: {m}",
                    path.display()
                )),
                other => other,
            })?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        conn.pragma_update(None, "cache_size", -16_000)
            .map_err(err)?;
        let mut store = Self {
            checkpointer: None,
            // A file system without shared memory keeps another journal.
            wal: mode.eq_ignore_ascii_case("wal"),
            conn,
            path,
            memo: Memo::default(),
            merge_at: DEFAULT_MERGE_AT,
            locks: Vec::new(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Sets how many of a job's newest URL keys this connection holds in
    /// memory before merging them into the file's key table (default
    /// [`DEFAULT_MERGE_AT`]): more memory, fewer writes of that table.
    pub fn set_merge_at(&mut self, keys: usize) {
        self.merge_at = keys.max(1);
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err)?;
        for s in schema::sqlite() {
            tx.execute(&s, []).map_err(err)?;
        }
        let version: Option<i64> = tx
            .query_row("SELECT max(version) FROM crawlkeeper_version", [], |r| {
                r.get(0)
            })
            .map_err(err)?;
        match version {
            None => {
                tx.execute(
                    "INSERT INTO crawlkeeper_version (version) VALUES (?1)",
                    [schema::SQLITE_VERSION],
                )
                .map_err(err)?;
            }
            Some(v) if v > schema::SQLITE_VERSION => {
                return Err(StoreError::Corrupt(format!(
                    "state file {} has schema version {v}, newer than this crawlkeeper ({})",
                    self.path.display(),
                    schema::SQLITE_VERSION
                )));
            }
            Some(old) if old < schema::SQLITE_VERSION => {
                for (to, statements) in schema::SQLITE_STEPS {
                    if old < *to {
                        for s in *statements {
                            tx.execute(s, []).map_err(err)?;
                        }
                    }
                }
                if old < schema::SQLITE_REKEYED {
                    crate::rekey::sqlite(&tx).map_err(err)?;
                }
                if old < schema::SQLITE_STOPPING {
                    let has: i64 = tx
                        .query_row(
                            "SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'stops'",
                            [],
                            |r| r.get(0),
                        )
                        .map_err(err)?;
                    if has == 0 {
                        tx.execute(schema::SQLITE_TO_V7, []).map_err(err)?;
                    }
                }
                if old < schema::SQLITE_DONE_BITS {
                    // The bits from the results, in row order (through
                    // `results_url`, which goes after).
                    done::set_rows(&tx, done::RESULT_ROWS, [], true)?;
                    for s in schema::SQLITE_TO_V6 {
                        tx.execute(s, []).map_err(err)?;
                    }
                }
                tx.execute(
                    "UPDATE crawlkeeper_version SET version = ?1",
                    [schema::SQLITE_VERSION],
                )
                .map_err(err)?;
                info!(
                    path = %self.path.display(),
                    "state file migrated to schema version {}",
                    schema::SQLITE_VERSION
                );
            }
            Some(_) => {}
        }
        tx.commit().map_err(err)
    }

    fn info(&self, row: JobRow) -> Result<JobInfo, StoreError> {
        let (id, name, created_at, seeds, options, stops) = row;
        let seeds: Vec<String> = serde_json::from_str(&seeds)
            .map_err(|e| StoreError::Corrupt(format!("seeds of job {name}: {e}")))?;
        let counts = counts(&self.conn, id)?;
        Ok(JobInfo {
            id: JobId(id),
            name,
            created_at,
            seeds,
            options,
            shards: 1,
            counts,
            stops: stops.max(0) as u64,
        })
    }
}

fn counts(conn: &Connection, job: i64) -> Result<JobCounts, StoreError> {
    let counts = conn
        .prepare_cached(schema::READ_COUNTS)
        .map_err(err)?
        .query_row([job], |r| {
            let count = |i: usize| r.get::<_, i64>(i).map(|n| u64::try_from(n).unwrap_or(0));
            Ok(JobCounts {
                seen: count(0)?,
                done: count(1)?,
                errors: count(2)?,
                requisites: count(3)?,
            })
        })
        .map_err(err)?;
    Ok(counts)
}

const JOB_COLUMNS: &str = "id, name, created_at, seeds, options, stops";

/// A row of [`JOB_COLUMNS`].
type JobRow = (i64, String, String, String, String, i64);

fn job_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<JobRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
    ))
}

/// A job's lock: an exclusive `flock` on a file beside the state file
/// (`crawlkeeper.db.<job>.lock`), which is removed when the lock is let
/// go, so the files do not pile up in the user's directory (one left by a
/// process killed with `kill -9` goes at the end of the job's next run).
struct JobLock {
    path: PathBuf,
    _file: File,
}

impl JobLock {
    /// Takes the lock at `path`; `None` when another process holds it.
    /// A file removed by its holder between our open and our lock is
    /// another's now: opened again until the locked file is the one at
    /// the path.
    fn take(path: PathBuf) -> Result<Option<Self>, StoreError> {
        loop {
            let file = open_lock(&path).map_err(|e| {
                StoreError::Backend(format!("cannot create lock file {}: {e}", path.display()))
            })?;
            // SAFETY: flock on a descriptor we own; released when the file
            // closes, including when the process dies.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc != 0 {
                return Ok(None);
            }
            let ours = file.metadata().ok().map(|m| (m.dev(), m.ino()));
            let there = std::fs::metadata(&path).ok().map(|m| (m.dev(), m.ino()));
            if ours.is_some() && ours == there {
                return Ok(Some(Self { path, _file: file }));
            }
        }
    }
}

/// Opens (or creates) the lock file at `path`: never through a link, never
/// a pipe or a device (nothing is cut: a lock file is empty).
fn open_lock(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => std::io::Error::other("it is a symbolic link, not a regular file"),
            Some(libc::ENXIO) => std::io::Error::other("it is a pipe, not a regular file"),
            _ => e,
        })?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

impl Drop for JobLock {
    fn drop(&mut self) {
        // Removed while still locked: a process that opened it meanwhile
        // finds, once it has the lock, that it is no longer at the path.
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Store for SqliteStore {
    fn open_job(&mut self, spec: &JobSpec) -> Result<JobInfo, StoreError> {
        if spec.shards != 1 {
            return Err(StoreError::Backend(format!(
                "a SQLite state file is not shared between machines: it keeps jobs of one shard, \
                 not {} (use a postgres:// --store)",
                spec.shards
            )));
        }
        if let Some(job) = self.find_job(&spec.name)? {
            return Ok(job);
        }
        let seeds =
            serde_json::to_string(&spec.seeds).map_err(|e| StoreError::Backend(e.to_string()))?;
        self.conn
            .execute(
                "INSERT INTO jobs (name, created_at, seeds, options) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (name) DO NOTHING",
                params![spec.name, now_text(), seeds, spec.options],
            )
            .map_err(err)?;
        self.find_job(&spec.name)?
            .ok_or_else(|| StoreError::Backend(format!("job {} vanished", spec.name)))
    }

    fn find_job(&mut self, name: &str) -> Result<Option<JobInfo>, StoreError> {
        let row = self
            .conn
            .query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE name = ?1"),
                [name],
                job_row,
            )
            .optional()
            .map_err(err)?;
        row.map(|r| self.info(r)).transpose()
    }

    fn is_complete(&mut self, job: JobId) -> Result<Option<bool>, StoreError> {
        let exists: bool = self
            .conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?1)",
                [job.0],
                |r| r.get(0),
            )
            .map_err(err)?;
        if !exists {
            return Ok(None);
        }
        // A finished URL's row is left as it was (its result names it):
        // the counts tell.
        let counts = counts(&self.conn, job.0)?;
        Ok(Some(counts.seen > 0 && counts.pending() == 0))
    }

    fn delete_job(&mut self, name: &str) -> Result<bool, StoreError> {
        let Some(job) = self.find_job(name)? else {
            return Ok(false);
        };
        self.lock_job(&job)?;
        let tx = self.conn.transaction().map_err(err)?;
        // Row ids may be given again: their bits go with the rows.
        done::set_rows(&tx, done::JOB_RESULT_ROWS, [job.id.0], false)?;
        for table in [
            "urls",
            "url_keys",
            "merged",
            "results",
            "archives",
            "authorities",
            "job_counts",
            "loaded",
            "revisits",
            "revisit_rates",
        ] {
            tx.execute(&format!("DELETE FROM {table} WHERE job = ?1"), [job.id.0])
                .map_err(err)?;
        }
        tx.execute("DELETE FROM jobs WHERE id = ?1", [job.id.0])
            .map_err(err)?;
        tx.commit().map_err(err)?;
        self.memo.forget(job.id.0);
        Ok(true)
    }

    fn jobs(&mut self) -> Result<Vec<JobInfo>, StoreError> {
        let rows: Vec<_> = {
            let mut stmt = self
                .conn
                .prepare(&format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY id"))
                .map_err(err)?;
            stmt.query_map([], job_row)
                .map_err(err)?
                .collect::<Result<_, _>>()
                .map_err(err)?
        };
        rows.into_iter().map(|r| self.info(r)).collect()
    }

    fn lock_job(&mut self, job: &JobInfo) -> Result<(), StoreError> {
        if self.locks.iter().any(|(name, _)| *name == job.name) {
            return Ok(());
        }
        let lock_path = PathBuf::from(format!("{}.{}.lock", self.path.display(), job.name));
        let lock = JobLock::take(lock_path)?.ok_or_else(|| StoreError::Locked(job.name.clone()))?;
        self.locks.push((job.name.clone(), lock));
        Ok(())
    }

    fn resume(&mut self, job: JobId) -> Result<Resumed, StoreError> {
        let tx = self.conn.transaction().map_err(err)?;
        // What a gone run held in memory is done (finishing leaves rows
        // alone) or queued again.
        // Those rows are the job's in `loaded` (its log of loads since
        // the last resume), read and emptied.
        // Done if its bit is set.
        {
            let bits = self.memo.bits.at(data_version(&tx)?);
            let mut read = tx
                .prepare("SELECT DISTINCT url FROM loaded WHERE job = ?1 ORDER BY url")
                .map_err(err)?;
            let mut write = tx
                .prepare("UPDATE urls SET state = ?1 WHERE id = ?2 AND state = ?3")
                .map_err(err)?;
            let mut rows = read.query([job.0]).map_err(err)?;
            while let Some(row) = rows.next().map_err(err)? {
                let id: i64 = row.get(0).map_err(err)?;
                let to = if bits.get(&tx, id)? {
                    state::DONE
                } else {
                    state::QUEUED
                };
                write.execute(params![to, id, state::LOADED]).map_err(err)?;
            }
        }
        tx.execute("DELETE FROM loaded WHERE job = ?1", [job.0])
            .map_err(err)?;
        let authorities = {
            let mut stmt = tx
                .prepare(
                    "SELECT authority, state FROM authorities WHERE job = ?1 AND state IS NOT NULL",
                )
                .map_err(err)?;
            let rows = stmt
                .query_map([job.0], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(err)?;
            let mut out = Vec::new();
            for row in rows {
                let (authority, text) = row.map_err(err)?;
                out.push(saved_state(&authority, &text)?);
            }
            out
        };
        let queued = {
            let mut stmt = tx.prepare(schema::SQLITE_QUEUED_HOSTS).map_err(err)?;
            let rows = stmt
                .query_map([job.0], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                })
                .map_err(err)?;
            let mut out = Vec::new();
            for row in rows {
                let (authority, n) = row.map_err(err)?;
                out.push((parse_authority(authority)?, n as u64));
            }
            out
        };
        let counts = counts(&tx, job.0)?;
        let stops = revisit::stops(&tx, job.0)?;
        tx.commit().map_err(err)?;
        // Rows this connection held may be queued again.
        self.memo.held.remove(&job.0);
        Ok(Resumed {
            counts,
            authorities,
            queued,
            stops,
        })
    }

    fn recrawl(&mut self, job: &JobInfo) -> Result<u64, StoreError> {
        self.lock_job(job)?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err)?;
        {
            let mut read = tx
                .prepare(
                    "SELECT u.id, u.chain, r.record FROM results r JOIN urls u ON u.id = r.url
                     WHERE r.job = ?1",
                )
                .map_err(err)?;
            let mut write = tx
                .prepare("UPDATE urls SET chain = ?1 WHERE id = ?2")
                .map_err(err)?;
            let mut rows = read.query([job.id.0]).map_err(err)?;
            while let Some(row) = rows.next().map_err(err)? {
                let id: i64 = row.get(0).map_err(err)?;
                let chain: Option<String> = row.get(1).map_err(err)?;
                let record: String = row.get(2).map_err(err)?;
                let chain = requeued_chain(chain, &record)?;
                write.execute(params![chain, id]).map_err(err)?;
            }
        }
        let queued = tx
            .execute(
                "UPDATE urls SET state = ?1 WHERE job = ?2",
                params![state::QUEUED, job.id.0],
            )
            .map_err(err)?;
        done::set_rows(&tx, done::JOB_RESULT_ROWS, [job.id.0], false)?;
        for table in ["results", "archives", "revisits", "revisit_rates"] {
            tx.execute(&format!("DELETE FROM {table} WHERE job = ?1"), [job.id.0])
                .map_err(err)?;
        }
        for sql in [
            "UPDATE authorities SET state = NULL WHERE job = ?1",
            "UPDATE job_counts SET done = 0, errors = 0 WHERE job = ?1",
            "DELETE FROM loaded WHERE job = ?1",
        ] {
            tx.execute(sql, [job.id.0]).map_err(err)?;
        }
        tx.commit().map_err(err)?;
        self.memo.forget(job.id.0);
        Ok(queued as u64)
    }

    fn results_count(&mut self, job: JobId, _shards: Option<&[u32]>) -> Result<u64, StoreError> {
        // One shard: the job's results are all of it.
        let n: i64 = self
            .conn
            .query_row(
                "SELECT count(*) FROM results WHERE job = ?1",
                [job.0],
                |r| r.get(0),
            )
            .map_err(err)?;
        Ok(n.max(0) as u64)
    }

    fn request_stop(&mut self, job: JobId) -> Result<(), StoreError> {
        self.conn
            .execute("UPDATE jobs SET stops = stops + 1 WHERE id = ?1", [job.0])
            .map(drop)
            .map_err(err)
    }

    fn stops(&mut self, job: JobId) -> Result<u64, StoreError> {
        revisit::stops(&self.conn, job.0)
    }

    fn revisit_rates(&mut self, job: JobId) -> Result<Vec<(i16, u64)>, StoreError> {
        revisit::rates(&self.conn, job.0)
    }

    fn apply(&mut self, job: JobId, batch: &mut Batch) -> Result<(), StoreError> {
        if self.wal && self.checkpointer.is_none() {
            self.checkpointer = Some(Checkpointer::start(
                &self.path,
                &mut self.conn,
                Thresholds::default(),
            )?);
        }
        // BEGIN and COMMIT are cached statements: a batch may be one URL.
        // IMMEDIATE: every batch writes, and a transaction that read first
        // and then asks for the write lock is refused at once when another
        // connection holds it (SQLite cannot wait without risking a
        // deadlock), where one that asks first waits its busy timeout.
        run_cached(&self.conn, "BEGIN IMMEDIATE")?;
        let result = apply_in(&self.conn, &mut self.memo, self.merge_at, job.0, batch)
            .and_then(|next| run_cached(&self.conn, "COMMIT").map(|()| next));
        match result {
            Ok(next) => {
                if let Some(next) = next {
                    self.memo.next_seq.insert(job.0, next);
                }
                Ok(())
            }
            Err(e) => {
                if !self.conn.is_autocommit() {
                    // A failed COMMIT (busy) leaves the transaction open.
                    let _ = run_cached(&self.conn, "ROLLBACK");
                }
                // Forget what the rolled back transaction may have created.
                self.memo.forget(job.0);
                Err(e)
            }
        }
    }

    fn archives(
        &mut self,
        job: JobId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, data FROM archives WHERE job = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(params![job.0, after as i64, limit as i64], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, Vec<u8>>(1)?))
            })
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    fn results(
        &mut self,
        job: JobId,
        shards: Option<&[u32]>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        // Every job here has one shard, number 0.
        if shards.is_some_and(|s| !s.contains(&0)) {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, record FROM results WHERE job = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(params![job.0, after as i64, limit as i64], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, String>(1)?))
            })
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }
}
