//! `store --scale --scale-warm`: the memory of a crawl that has run a
//! while. Such a crawl uses its frontier and seen set (`urls` and its
//! indexes, SQLite's key table and bits) again and again, and never
//! reads back the results it appended, so on a machine with memory for
//! the former the operating system keeps them and lets the latter go.
//! A bulk load leaves the opposite: what it wrote last (the results)
//! and, on PostgreSQL, what its `VACUUM` read twice (the results again).

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::proc::self_io;

/// Reads the job's frontier and seen set in `schema` (the tables `urls`
/// and `authorities` and their indexes) into the operating system's cache (`pg_prewarm`'s
/// `read` mode: past the server's shared buffers, which hold 128 MB by
/// default), after dropping the results' files from it ([`drop_results`]);
/// returns the bytes read.
pub fn pg(url: &str, schema: &str) -> Result<u64> {
    let mut c = postgres::Client::connect(url, postgres::NoTls)?;
    match drop_results(&mut c, schema)? {
        Some(bytes) => eprintln!(
            "  results (table, TOAST, indexes) dropped from the cache: {} MB",
            bytes >> 20
        ),
        None => eprintln!("  results left in the cache: the server's files are not readable here"),
    }
    c.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")?;
    let blocks: i64 = c
        .query_one(
            "SELECT CAST(coalesce(sum(pg_prewarm(r.oid, 'read')), 0) AS BIGINT) FROM (
                 SELECT i.indexrelid AS oid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
                 JOIN pg_namespace n ON n.oid = t.relnamespace
                 WHERE n.nspname = $1 AND t.relname IN ('urls', 'authorities')
                 UNION ALL
                 SELECT t.oid FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
                 WHERE n.nspname = $1 AND t.relname IN ('urls', 'authorities')) AS r",
            &[&schema],
        )?
        .get(0);
    Ok(blocks as u64 * 8192)
}

/// Drops the files of `schema`'s table `results`, its TOAST table and
/// their indexes from the operating system's cache
/// (`posix_fadvise(DONTNEED)`, after a `CHECKPOINT` has written them),
/// where the server's data directory is readable from here (a server on
/// this machine, this process its owner or root); returns their bytes,
/// or `None` where it is not.
fn drop_results(c: &mut postgres::Client, schema: &str) -> Result<Option<u64>> {
    c.batch_execute("CHECKPOINT")?;
    let dir: String = c.query_one("SHOW data_directory", &[])?.get(0);
    let files: Vec<String> = c
        .query(
            "SELECT pg_relation_filepath(r.oid) FROM pg_class t
             JOIN pg_namespace n ON n.oid = t.relnamespace
             JOIN pg_class r ON r.oid IN (t.oid, t.reltoastrelid)
                 OR r.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (t.oid, t.reltoastrelid))
             WHERE n.nspname = $1 AND t.relname = 'results'",
            &[&schema],
        )?
        .iter()
        .filter_map(|r| r.get::<_, Option<String>>(0))
        .collect();
    let mut bytes = 0;
    for file in &files {
        let first = Path::new(&dir).join(file);
        // A relation is files of 1 GB: `path`, `path.1`, `path.2`, …
        for segment in 0.. {
            let path = match segment {
                0 => first.clone(),
                n => PathBuf::from(format!("{}.{n}", first.display())),
            };
            let Ok(f) = std::fs::File::open(&path) else {
                if segment == 0 {
                    // Not readable from here (or not made yet).
                    return Ok(None);
                }
                break;
            };
            bytes += f.metadata()?.len();
            // SAFETY: a valid open descriptor; advice only.
            let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            anyhow::ensure!(rc == 0, "posix_fadvise on {}: error {rc}", path.display());
        }
    }
    Ok(Some(bytes))
}

/// [`pg`] for SQLite: reads `urls`, its index `urls_queued`, the key
/// table `url_keys`, `done_bits` (which rows have a result) and
/// `authorities` with its indexes whole;
/// returns the bytes read from the disk. The results share the file and
/// stay as the bulk load left them.
pub fn sqlite(path: &Path) -> Result<u64> {
    let before = self_io("read_bytes:")?;
    let c = rusqlite::Connection::open(path)?;
    for sql in [
        "SELECT sum(length(key)) FROM urls",
        "SELECT count(*) FROM urls INDEXED BY urls_queued WHERE state = 0",
        "SELECT count(*) FROM url_keys",
        "SELECT sum(length(bits)) FROM done_bits",
        "SELECT sum(length(authority)) FROM authorities",
        "SELECT sum(id) FROM authorities INDEXED BY sqlite_autoindex_authorities_1",
        "SELECT sum(length(authority)) FROM authorities INDEXED BY sqlite_autoindex_authorities_2",
    ] {
        c.query_row(sql, [], |_| Ok(()))
            .with_context(|| sql.to_owned())?;
    }
    Ok(self_io("read_bytes:")?.saturating_sub(before))
}
