//! Seeding one job of `store --scale`: N URLs over M authorities,
//! generated and bulk-loaded straight into a store's tables, in the
//! layout the store itself writes ([`crawlkeeper_store::schema`]).
//!
//! URL `i` (0 ≤ i < N) is [`Urls::entry`]`(i)`: on host `host(i)` (row id
//! `host(i) + 1`), keyed as `--scale-keys` says, depth `i mod 5`. Half of
//! the URLs, spread ([`is_done`]), are done: their row is marked done
//! and a result holds their record; the others are queued.
//!
//! Rows go in in id order, in the layout the store writes
//! ([`crawlkeeper_store::schema`]); each index is either maintained as
//! the rows go in, where a crawl fills it at random, or made afterwards
//! by the store's own statements:
//! - SQLite: the store creates the file and the job; rows go in with
//!   prepared statements in transactions of a million rows, journal off.
//!   `urls_queued` is filled as the rows go in (a run of one host's URLs
//!   at a random place, as admission fills it), and the results in a
//!   fixed shuffle of their URLs (pages finish in another order than they
//!   were admitted), and the done rows' bits (`done_bits`) after them
//!   (version 5's index `results_url` was filled at random too). An
//!   index made after the load has its leaves full, and the first
//!   insertion into each splits it, which a crawl's index, whose leaves
//!   random insertions left partly empty, does not: at 10 M URLs,
//!   admitting new URLs wrote 70.6 pages of `urls_queued` per commit of
//!   256 and finishing loaded pages 142 of `results_url`, where 1 M wrote
//!   34.4 and 59; with the indexes filled as a crawl fills them, 38.7
//!   and 62 (the log's pages by table, session 26). `url_keys` goes in in
//!   key order, every key merged (`merged.upto` = N).
//! - PostgreSQL: the store creates the schema and the job; rows go in with
//!   `COPY … FROM STDIN` (results in their URLs' order), the indexes are
//!   made afterwards (their leaves a tenth empty, PostgreSQL's default
//!   fill factor for an index); sequences are set past the rows; `VACUUM
//!   ANALYZE` and a `CHECKPOINT` follow, as on a database that has run
//!   for a while under autovacuum.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use crawlkeeper_model::{CrawlRecord, shard_of};
use crawlkeeper_store::sqlite::done::InOrder;
use crawlkeeper_store::{PgStore, SqliteStore, schema};
use rusqlite::params;

use crate::store_data::{Urls, authority, bench_job, key, record, shuffled};

/// Rows written between progress lines and SQLite commits.
const STEP: u64 = 1_000_000;

/// Whether seeded URL `i` is done (half of them, spread).
pub fn is_done(i: u64) -> bool {
    key(i) & 1 == 1
}

/// The JSON record of seeded URL `i`.
fn record_json(i: u64, u: &Urls) -> String {
    let (e, a) = u.entry(i);
    let r: CrawlRecord = record(&e, &a);
    r.to_json()
}

/// Prints a loader's progress on stderr.
fn progress(what: &str, done: u64, total: u64, started: Instant) {
    if done.is_multiple_of(5 * STEP) || done == total {
        let s = started.elapsed().as_secs_f64();
        eprintln!(
            "  {what}: {done}/{total} rows, {s:.0} s ({:.0} rows/s)",
            done as f64 / s.max(1e-9)
        );
    }
}

/// Creates the SQLite file at `path` with one job (`bench`) holding
/// `urls` URLs of `u`; returns the job's id.
pub fn sqlite(path: &Path, urls: u64, u: &Urls) -> Result<i64> {
    let authorities = u.authorities;
    let job = {
        let mut store = SqliteStore::open(path)?;
        bench_job(&mut store, "bench")?.0
    };
    let mut conn = rusqlite::Connection::open(path)?;
    // A bulk load: no journal, no syncs, a large cache. The store sets
    // WAL again when it opens the file.
    conn.pragma_update(None, "journal_mode", "DELETE")?;
    conn.pragma_update(None, "journal_mode", "OFF")?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "cache_size", -1_000_000)?;
    let started = Instant::now();
    let tx = conn.transaction()?;
    {
        let mut st =
            tx.prepare("INSERT INTO authorities (job, id, authority) VALUES (?1, ?2, ?3)")?;
        for a in 0..authorities {
            st.execute(params![job, a as i64 + 1, authority(a).to_string()])?;
        }
    }
    tx.commit()?;
    let mut keys: Vec<([u8; 16], i64)> = Vec::with_capacity(urls as usize);
    let mut i = 0u64;
    while i < urls {
        let end = (i + STEP).min(urls);
        let tx = conn.transaction()?;
        {
            let mut url_row = tx.prepare_cached(
                "INSERT INTO urls (id, job, key, auth, url, depth, parent, chain, state)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, ?8)",
            )?;
            for j in i..end {
                let (e, _) = u.entry(j);
                let id = j as i64 + 1;
                let k = e.key.to_be_bytes();
                let state = if is_done(j) {
                    schema::state::DONE
                } else {
                    schema::state::QUEUED
                };
                let auth = u.host(j) as i64 + 1;
                url_row.execute(params![id, job, k, auth, e.url, e.depth, e.parent, state])?;
                keys.push((k, id));
            }
        }
        tx.commit()?;
        i = end;
        progress("sqlite urls", i, urls, started);
    }
    // Results in the order pages finish: another than their URLs' (a
    // fixed shuffle), as a crawl stores them.
    let started = Instant::now();
    let mut seq = 0i64;
    let mut k = 0u64;
    while k < urls {
        let end = (k + STEP).min(urls);
        let tx = conn.transaction()?;
        {
            let mut result_row = tx.prepare_cached(
                "INSERT INTO results (job, seq, url, failed, record) VALUES (?1, ?2, ?3, 0, ?4)",
            )?;
            for j in (k..end).map(|j| shuffled(j, urls)).filter(|&j| is_done(j)) {
                seq += 1;
                result_row.execute(params![job, seq, j as i64 + 1, record_json(j, u)])?;
            }
        }
        tx.commit()?;
        k = end;
        progress("sqlite results", k, urls, started);
    }
    keys.sort_unstable();
    let started = Instant::now();
    for (n, part) in keys.chunks(STEP as usize).enumerate() {
        let tx = conn.transaction()?;
        {
            let mut st =
                tx.prepare_cached("INSERT INTO url_keys (job, key, id) VALUES (?1, ?2, ?3)")?;
            for (k, id) in part {
                st.execute(params![job, k, id])?;
            }
        }
        tx.commit()?;
        progress(
            "sqlite url_keys",
            ((n as u64 + 1) * STEP).min(urls),
            urls,
            started,
        );
    }
    drop(keys);
    conn.execute(
        "INSERT INTO merged (job, upto) VALUES (?1, ?2)",
        params![job, urls as i64],
    )?;
    conn.execute(schema::SQLITE_ADD_COUNTS, params![job, urls as i64, seq, 0])?;
    let started = Instant::now();
    for s in schema::sqlite() {
        conn.execute(&s, [])?;
    }
    // The done rows' bits.
    let tx = conn.transaction()?;
    let mut bits = InOrder::new(&tx, true);
    for j in (0..urls).filter(|&j| is_done(j)) {
        bits.push(j as i64 + 1)?;
    }
    bits.end()?;
    tx.commit()?;
    eprintln!(
        "  sqlite indexes and bits: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    conn.pragma_update(None, "journal_mode", "WAL")?;
    drop(conn);
    // The bulk load did not sync: what it left in the page cache would
    // be written by the first `fsync` of the operations (a checkpoint's),
    // and charged to them.
    let started = Instant::now();
    std::fs::File::open(path)?.sync_all()?;
    eprintln!(
        "  sqlite file synced: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(job)
}

/// `text` escaped for `COPY … FROM STDIN` (text format).
fn copy_text(out: &mut Vec<u8>, text: &str) {
    for b in text.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
}

/// Runs `COPY sql FROM STDIN` with `rows` lines, each written by `line`.
fn copy(
    c: &mut postgres::Client,
    what: &str,
    sql: &str,
    rows: u64,
    mut line: impl FnMut(u64, &mut Vec<u8>),
) -> Result<()> {
    let started = Instant::now();
    let mut w = c.copy_in(sql)?;
    let mut buf = Vec::with_capacity(1 << 20);
    for i in 0..rows {
        line(i, &mut buf);
        if buf.len() > 1 << 20 {
            w.write_all(&buf)?;
            buf.clear();
        }
        if (i + 1).is_multiple_of(STEP) || i + 1 == rows {
            progress(what, i + 1, rows, started);
        }
    }
    w.write_all(&buf)?;
    w.finish()?;
    Ok(())
}

/// Creates the tables in `schema` of the database at `url` with one job
/// (`bench`) holding `urls` URLs of `u`; returns the job's id.
pub fn postgres(url: &str, space: &str, urls: u64, u: &Urls) -> Result<i64> {
    let authorities = u.authorities;
    let job = {
        let mut store = PgStore::connect_in_schema(url, Some(space))?;
        bench_job(&mut store, "bench")?.0
    };
    let mut c = postgres::Client::connect(url, postgres::NoTls)
        .with_context(|| format!("connecting to {url}"))?;
    renice_backend(&mut c)?;
    c.batch_execute(&format!(
        "SET search_path TO {space}; SET maintenance_work_mem = '1GB';
         SET synchronous_commit = off;
         DROP INDEX urls_key; DROP INDEX urls_queued; DROP INDEX urls_held;
         DROP INDEX results_shard"
    ))?;
    let shards = 1;
    copy(
        &mut c,
        "postgres authorities",
        "COPY authorities (job, id, authority, shard) FROM STDIN",
        authorities,
        |a, b| {
            let auth = authority(a);
            let name = auth.to_string();
            let _ = write!(b, "{job}\t{}\t", a + 1);
            copy_text(b, &name);
            let _ = writeln!(b, "\t{}", shard_of(auth.host(), shards));
        },
    )?;
    let mut seq = 0u64;
    // URLs seen and done by shard.
    let mut by_shard = vec![(0i64, 0i64); shards as usize];
    copy(
        &mut c,
        "postgres urls",
        "COPY urls (id, job, key, auth, url, depth, parent, chain, state, seq) FROM STDIN",
        urls,
        |i, b| {
            let (e, auth) = u.entry(i);
            let _ = write!(
                b,
                "{}\t{job}\t\\\\x{:032x}\t{}\t",
                i + 1,
                e.key,
                u.host(i) + 1
            );
            copy_text(b, &e.url);
            let _ = write!(b, "\t{}\t", e.depth);
            copy_text(b, e.parent.as_deref().unwrap_or_default());
            let shard = &mut by_shard[shard_of(auth.host(), shards) as usize];
            shard.0 += 1;
            if is_done(i) {
                shard.1 += 1;
                seq += 1;
                let _ = writeln!(b, "\t\\N\t{}\t{seq}", schema::state::DONE);
            } else {
                let _ = writeln!(b, "\t\\N\t{}\t\\N", schema::state::QUEUED);
            }
        },
    )?;
    let mut seq = 0u64;
    copy(
        &mut c,
        "postgres results",
        "COPY results (job, seq, failed, record, shard, generation) FROM STDIN",
        urls,
        |i, b| {
            if is_done(i) {
                seq += 1;
                let auth = authority(u.host(i));
                let _ = write!(b, "{job}\t{seq}\t0\t");
                copy_text(b, &record_json(i, u));
                let _ = writeln!(b, "\t{}\t\\N", shard_of(auth.host(), shards));
            }
        },
    )?;
    c.batch_execute(&format!(
        "SELECT setval('urls_id_seq', {urls});
         SELECT setval('result_seqs', {}, false);
         SELECT setval('authority_ids', {}, false);
         UPDATE jobs SET admitted = {urls}, requisites = 0 WHERE id = {job}",
        seq + 1,
        authorities + 1
    ))?;
    // The job's counts by shard, as the store keeps them.
    let (shard_ids, shard_counts): (Vec<i32>, Vec<(i64, i64)>) = by_shard
        .into_iter()
        .enumerate()
        .map(|(s, n)| (s as i32, n))
        .unzip();
    let (seen, done): (Vec<i64>, Vec<i64>) = shard_counts.into_iter().unzip();
    let errors = vec![0i64; seen.len()];
    c.execute(
        schema::PG_ADD_COUNTS,
        &[&job, &0i32, &shard_ids, &seen, &done, &errors],
    )?;
    let started = Instant::now();
    let creates = schema::postgres()
        .into_iter()
        .chain(schema::PG_INDEXES.iter().map(|s| s.to_string()))
        .collect::<Vec<_>>();
    for s in creates {
        c.batch_execute(&s)?;
    }
    eprintln!(
        "  postgres indexes: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    // One statement at a time: VACUUM cannot run in a transaction.
    for s in [
        "VACUUM (ANALYZE) urls",
        "VACUUM (ANALYZE) results",
        "VACUUM (ANALYZE) authorities",
        "CHECKPOINT",
    ] {
        c.batch_execute(s)?;
    }
    eprintln!(
        "  postgres vacuum, analyze, checkpoint: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(job)
}

/// Lowers the priority of the server process serving `c` (nice 19), so
/// that the load yields to others' work on the machine; possible when
/// running as root or as the server's user.
pub fn renice_backend(c: &mut postgres::Client) -> Result<()> {
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[])?.get(0);
    // SAFETY: a plain system call on a process id.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, 19) };
    if rc != 0 {
        eprintln!(
            "  (cannot renice the server process {pid}: {})",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_text_escapes_what_copy_reads_specially() {
        let mut out = Vec::new();
        copy_text(&mut out, "a\\b\tc\nd\re");
        assert_eq!(out, b"a\\\\b\\tc\\nd\\re");
    }

    /// Seeds a small SQLite job; returns its file (in a directory of its
    /// own, removed by the caller) and the URLs.
    fn seeded(name: &str, n: u64) -> (std::path::PathBuf, Urls) {
        let dir = std::env::temp_dir().join(format!("ck_seed_{name}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.db");
        let u = Urls {
            authorities: 50,
            run: 16,
            keys: crate::store_data::Keys::Host,
        };
        sqlite(&path, n, &u).unwrap();
        (path, u)
    }

    #[test]
    fn a_sqlite_seed_stores_its_results_in_another_order_than_its_urls() {
        let n = 3000;
        let (path, _) = seeded("order", n);
        let c = rusqlite::Connection::open(&path).unwrap();
        let one = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        let done = (0..n).filter(|&i| is_done(i)).count() as i64;
        assert_eq!(one("SELECT count(*) FROM results"), done);
        assert_eq!(one("SELECT count(DISTINCT url) FROM results"), done);
        // Each result names a done row, and every done row has one.
        assert_eq!(
            one("SELECT count(*) FROM results r JOIN urls u ON u.id = r.url WHERE u.state = 2"),
            done
        );
        // Positions do not follow the rows: a later result often names an
        // earlier row.
        let backwards = one(
            "SELECT count(*) FROM results a JOIN results b ON b.seq = a.seq + 1 WHERE b.url < a.url",
        );
        assert!(backwards > done / 4, "{backwards} of {done}");
        // The index a crawl fills at random is there, and whole.
        assert_eq!(
            one("SELECT count(*) FROM sqlite_schema WHERE name = 'urls_queued'"),
            1
        );
        // A bit per done row, and none other.
        let mut bits = crawlkeeper_store::sqlite::done::DoneBits::default();
        for j in 0..n + 3 {
            assert_eq!(
                bits.get(&c, j as i64 + 1).unwrap(),
                j < n && is_done(j),
                "{j}"
            );
        }
        let check: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        drop(c);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn the_store_reads_a_sqlite_seed_as_its_own() {
        use crawlkeeper_model::FinishedUrl;
        use crawlkeeper_model::state::Batch;
        use crawlkeeper_store::Store;
        let n = 2000;
        let (path, u) = seeded("store", n);
        let mut store = SqliteStore::open(&path).unwrap();
        let job = store.find_job("bench").unwrap().unwrap();
        let (seen, done) = (job.counts.seen, job.counts.done);
        let expected = (0..n).filter(|&i| is_done(i)).count() as u64;
        assert_eq!((seen, done), (n, expected));
        let first_done = (0..n).find(|&i| is_done(i)).unwrap();
        let first_queued = (0..n).find(|&i| !is_done(i)).unwrap();
        let entry = |i| u.entry(i);
        let mut batch = Batch {
            admit: [0, n]
                .into_iter()
                .map(|i| {
                    let (e, a) = entry(i);
                    (e, a, false)
                })
                .collect(),
            finished: [first_done, first_queued]
                .into_iter()
                .map(|i| {
                    let (e, a) = entry(i);
                    FinishedUrl::new(e.key, record(&e, &a))
                })
                .collect(),
            ..Batch::default()
        };
        store.apply(job.id, &mut batch).unwrap();
        assert_eq!(batch.admitted, [false, true], "URL 0 is known, URL n new");
        assert_eq!(
            batch.recorded,
            [false, true],
            "a done URL is not done twice"
        );
        drop(store);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn about_half_of_the_urls_are_done() {
        let done = (0..100_000).filter(|&i| is_done(i)).count();
        assert!((45_000..55_000).contains(&done), "{done}");
    }
}
