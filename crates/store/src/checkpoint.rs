//! Checkpoints of a SQLite state file off the commit path.
//!
//! In WAL mode SQLite copies the log back into the database file every
//! thousand pages or so (a checkpoint), by default inside the commit that
//! crossed the mark, with two `fsync`s. The crawler commits from one thread
//! that the engine waits on, so each checkpoint stalled every worker. Here
//! the writing connection only counts the log's pages (a WAL hook) and
//! wakes a thread with its own connection that checkpoints in `PASSIVE`
//! mode, concurrently with the writer: nothing a commit makes durable
//! changes, only who copies it to the database file, and when.
//!
//! A passive checkpoint never waits, so the log restarts from its
//! beginning only when it has been copied entirely before the next write
//! begins. Under a steady stream of commits that may never happen by
//! itself: once the log holds [`RESTART_FRAMES`] pages, the writer
//! checkpoints inline (copying the few pages the thread has not, then
//! syncing), which lets the next transaction start the log over.
//!
//! SQLite syncs the database file only at the end of a checkpoint that
//! copied the log to its very end, which the thread's, racing the
//! writer, seldom do: the writer's inline checkpoint then wrote to the
//! disk every page the thread had copied since the log began (170–200 ms
//! per 40 MB of log at 50 million URLs, where those pages are scattered
//! over a 22 GB file). So the thread syncs the file itself after each
//! checkpoint that copied pages, and the writer's sync finds only what
//! was copied since. A sync more changes nothing a commit made durable.

use std::ffi::c_int;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, MAIN_DB};
use tracing::debug;

use crate::StoreError;

/// Log pages written between two checkpoints of the thread (SQLite's
/// default automatic checkpoint).
pub const STEP_FRAMES: c_int = 1000;
/// Log pages after which the writer checkpoints itself, so that the log
/// restarts (a log of ~40 MB at 4 KiB pages).
pub const RESTART_FRAMES: c_int = 10_000;

/// When checkpoints happen, in log pages (frames).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Pages written between two wake-ups of the thread.
    pub step: c_int,
    /// Pages in the log after which the writer checkpoints inline.
    pub restart: c_int,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            step: STEP_FRAMES,
            restart: RESTART_FRAMES,
        }
    }
}

#[derive(Default)]
struct Signal {
    wanted: bool,
    stop: bool,
    /// Syncs of the database file the thread has made.
    syncs: u64,
}

type Shared = Arc<(Mutex<Signal>, Condvar)>;

/// The checkpointing thread of one state file.
pub struct Checkpointer {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts a thread checkpointing the file at `path`, and hooks
    /// `writer` (a connection to the same file in WAL mode) to wake it.
    pub fn start(path: &Path, writer: &mut Connection, at: Thresholds) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(|e| {
            StoreError::Backend(format!("cannot open state file {}: {e}", path.display()))
        })?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        // A connection sees the log only once it has read the file.
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Backend(format!(
                "state file {} is not in WAL mode ({mode})",
                path.display()
            )));
        }
        let shared: Shared = Arc::default();
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("sqlite-checkpoint".into())
                .spawn(move || run(&conn, &shared))
                .map_err(|e| StoreError::Backend(format!("cannot start a thread: {e}")))?
        };
        let waker = shared.clone();
        let mut last: c_int = 0;
        writer
            .wal_hook(Some(
                move |wal: &mut rusqlite::hooks::Wal, frames: c_int| {
                    if frames >= at.restart {
                        // Busy when the thread is checkpointing: the next commit
                        // tries again. An error here would fail the commit.
                        let started = std::time::Instant::now();
                        match wal.checkpoint_v2(CheckpointMode::PASSIVE) {
                            Ok((log, copied)) => {
                                debug!(log, copied, took = ?started.elapsed(), "inline checkpoint");
                            }
                            Err(e) => debug!(error = %e, "inline checkpoint deferred"),
                        }
                        last = 0;
                    } else {
                        if frames < last {
                            // The log restarted.
                            last = 0;
                        }
                        if frames - last >= at.step {
                            last = frames;
                            wake(&waker);
                        }
                    }
                    Ok(())
                },
            ))
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        {
            let (lock, cv) = &*self.shared;
            lock.lock().unwrap_or_else(PoisonError::into_inner).stop = true;
            cv.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Syncs the database file of `conn` through SQLite's own handle on it.
/// Not through a handle of ours: closing any descriptor of a file drops
/// every POSIX lock the process holds on it, SQLite's included.
fn sync_database_file(conn: &Connection) -> Result<(), String> {
    use rusqlite::ffi;
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: `conn` is open and used by this thread alone; the file
    // control writes one pointer to `file`, which outlives the call.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast(),
        )
    };
    if rc != ffi::SQLITE_OK || file.is_null() {
        return Err(format!("no database file (code {rc})"));
    }
    // SAFETY: SQLite returned the connection's open file, whose methods
    // stay valid while the connection is open; `xSync` is the VFS's sync,
    // called on the thread that owns the connection, outside any
    // transaction of it.
    let rc = unsafe {
        match (*file).pMethods.as_ref().and_then(|m| m.xSync) {
            Some(sync) => sync(file, ffi::SQLITE_SYNC_NORMAL),
            None => return Err("the database file is not open".into()),
        }
    };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(format!("sync failed (code {rc})"))
    }
}

impl Checkpointer {
    /// Syncs of the database file the thread has made.
    #[cfg(test)]
    fn syncs(&self) -> u64 {
        self.shared
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .syncs
    }
}

fn wake(shared: &Shared) {
    let (lock, cv) = &**shared;
    lock.lock().unwrap_or_else(PoisonError::into_inner).wanted = true;
    cv.notify_one();
}

/// Checkpoints whenever woken, until told to stop, syncing the database
/// file after each checkpoint that copied pages.
fn run(conn: &Connection, shared: &Shared) {
    let (lock, cv) = &**shared;
    // Log pages copied when the file was last synced.
    let mut synced: c_int = 0;
    loop {
        {
            let mut s = lock.lock().unwrap_or_else(PoisonError::into_inner);
            while !s.wanted && !s.stop {
                s = cv.wait(s).unwrap_or_else(PoisonError::into_inner);
            }
            if s.stop {
                return;
            }
            s.wanted = false;
        }
        let started = std::time::Instant::now();
        match conn.wal_checkpoint_v2(Some(MAIN_DB), CheckpointMode::PASSIVE) {
            Ok((log, copied)) => {
                debug!(log, copied, took = ?started.elapsed(), "checkpoint");
                // `copied` counts from the log's start, which restarts.
                if copied != synced {
                    synced = copied;
                    let started = std::time::Instant::now();
                    let synced_in = sync_database_file(conn);
                    debug!(took = ?started.elapsed(), "database file synced");
                    match synced_in {
                        Ok(()) => {
                            lock.lock().unwrap_or_else(PoisonError::into_inner).syncs += 1;
                        }
                        // The writer's own checkpoint syncs the file again.
                        Err(e) => debug!(error = %e, "sync after checkpoint failed"),
                    }
                }
            }
            // The file stays correct; the next wake tries again.
            Err(e) => debug!(error = %e, "checkpoint failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_frames(db: &Path) -> u64 {
        let wal = db.with_extension("db-wal");
        std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0) / (4096 + 24)
    }

    #[test]
    fn the_log_stays_bounded_and_every_commit_is_kept() {
        let dir = std::env::temp_dir().join(format!("ck_ckpt_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("t.db");
        let mut writer = Connection::open(&db).unwrap();
        writer
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
            .unwrap();
        writer
            .execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
            .unwrap();
        let at = Thresholds {
            step: 20,
            restart: 100,
        };
        let ckpt = Checkpointer::start(&db, &mut writer, at).unwrap();
        let mut largest = 0;
        for i in 0..400 {
            let tx = writer.transaction().unwrap();
            for j in 0..5 {
                // Rows of a page each: five log pages per commit.
                tx.execute(
                    "INSERT INTO t (k, v) VALUES (?1, zeroblob(3000))",
                    [i * 5 + j],
                )
                .unwrap();
            }
            tx.commit().unwrap();
            largest = largest.max(wal_frames(&db));
        }
        // 2,000 pages were logged; the log restarted well before that (the
        // margin covers commits made while the thread held the checkpoint).
        assert!(largest < 1000, "the log grew to {largest} pages");
        // The thread wrote back what it copied, off the commit path.
        assert!(ckpt.syncs() > 0, "the thread never synced the file");
        drop(ckpt);
        let n: i64 = Connection::open(&db)
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2000);
        drop(writer);
        let _ = std::fs::remove_dir_all(dir);
    }
}
