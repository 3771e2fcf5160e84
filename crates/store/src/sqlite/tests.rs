//! Storage details of the SQLite store that the conformance suite (which
//! sees only what a store answers) cannot observe.

use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, FinishedUrl, FrontierEntry};
use rusqlite::Connection;

use super::SqliteStore;
use crate::schema;
use crate::test_record::record;
use crate::{JobSpec, Store};

fn entry(i: u64) -> (FrontierEntry, Authority) {
    let url = format!("http://a.test/page/{i}");
    (
        FrontierEntry {
            // The crawler's keys: one host's, at random after their prefix.
            key: crawlkeeper_model::key::key_of_text(&url).unwrap(),
            url,
            depth: 1,
            parent: Some("http://a.test/".into()),
            redirect_chain: Vec::new(),
            known: None,
        },
        Authority::try_from("http://a.test".to_owned()).unwrap(),
    )
}

/// Pages of the `urls` table (not its indexes).
fn urls_pages(path: &std::path::Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row("SELECT count(*) FROM dbstat WHERE name = 'urls'", [], |r| {
            r.get(0)
        })
        .unwrap()
}

/// A fresh state file at a path of its own, with the directory to remove.
fn fresh(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("ck_sqlite_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    (dir, path)
}

fn open_job(store: &mut SqliteStore) -> crate::JobId {
    store
        .open_job(&JobSpec {
            name: "keys".into(),
            seeds: vec!["http://a.test/".into()],
            options: "{}".into(),
            shards: 1,
        })
        .unwrap()
        .id
}

/// Admits `ids` held by a crawler (`loaded`) or queued; returns which
/// were new.
fn admit_as(
    store: &mut SqliteStore,
    job: crate::JobId,
    ids: impl Iterator<Item = u64>,
    loaded: bool,
) -> Vec<bool> {
    let mut batch = Batch {
        admit: ids
            .map(|i| {
                let (e, a) = entry(i);
                (e, a, loaded)
            })
            .collect(),
        ..Batch::default()
    };
    store.apply(job, &mut batch).unwrap();
    batch.admitted
}

fn admit(store: &mut SqliteStore, job: crate::JobId, ids: impl Iterator<Item = u64>) -> Vec<bool> {
    admit_as(store, job, ids, true)
}

/// Admits `ids` queued (not held by a crawler), all new.
fn queue(store: &mut SqliteStore, job: crate::JobId, ids: impl Iterator<Item = u64>) {
    assert!(admit_as(store, job, ids, false).iter().all(|new| *new));
}

/// Loads at most `limit` of the host's queued URLs; returns their numbers.
fn load(store: &mut SqliteStore, job: crate::JobId, limit: usize) -> Vec<u64> {
    let mut batch = Batch {
        load: vec![(entry(0).1, limit)],
        ..Batch::default()
    };
    store.apply(job, &mut batch).unwrap();
    let mut got: Vec<u64> = batch.loaded[0]
        .iter()
        .map(|e| e.url.rsplit('/').next().unwrap().parse().unwrap())
        .collect();
    got.sort_unstable();
    got
}

fn finish(store: &mut SqliteStore, job: crate::JobId, ids: impl Iterator<Item = u64>) -> Vec<bool> {
    let mut batch = Batch {
        finished: ids
            .map(|i| {
                let (e, a) = entry(i);
                FinishedUrl::new(e.key, record(&e, &a))
            })
            .collect(),
        ..Batch::default()
    };
    store.apply(job, &mut batch).unwrap();
    batch.recorded
}

fn count(path: &std::path::Path, sql: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

#[test]
fn finishing_urls_leaves_the_pages_of_their_rows_alone() {
    let (dir, path) = fresh("rows");
    let mut store = SqliteStore::open(&path).unwrap();
    let job = open_job(&mut store);
    let n = 3000;
    for start in (0..n).step_by(100) {
        assert!(
            admit(&mut store, job, start..start + 100)
                .iter()
                .all(|new| *new)
        );
    }
    let admitted = urls_pages(&path);
    // Pages finish in admission order, a few per transaction, as in a crawl.
    for start in (0..n).step_by(8) {
        assert!(
            finish(&mut store, job, start..(start + 8).min(n))
                .iter()
                .all(|r| *r)
        );
    }
    let finished = urls_pages(&path);
    assert!(admitted > 10, "{admitted} pages hold {n} rows");
    assert_eq!(
        finished, admitted,
        "finishing URLs grew their rows: {admitted} pages became {finished}"
    );
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn newest_keys_are_merged_in_bulk_and_every_key_stays_known() {
    let (dir, path) = fresh("merge");
    let mut store = SqliteStore::open(&path).unwrap();
    store.set_merge_at(100);
    let job = open_job(&mut store);
    let n: u64 = 1000;
    for start in (0..n).step_by(30) {
        // Each batch repeats a key of the batch before.
        let ids = start.saturating_sub(1)..(start + 30).min(n);
        let new = admit(&mut store, job, ids);
        assert_eq!(new[0], start == 0, "batch at {start}");
        assert!(new[1..].iter().all(|n| *n), "batch at {start}");
    }
    let merged = count(&path, "SELECT count(*) FROM url_keys");
    assert!(
        (900..1000).contains(&merged),
        "{merged} of {n} keys merged in runs of at least 100"
    );
    assert_eq!(
        count(&path, "SELECT upto FROM merged"),
        count(&path, "SELECT max(id) FROM url_keys"),
        "merged up to the last merged row"
    );
    assert!(admit(&mut store, job, 0..n).iter().all(|new| !new));
    assert!(
        finish(&mut store, job, (0..n).step_by(2))
            .iter()
            .all(|r| *r)
    );
    drop(store);
    // A new connection finds the merged keys in the table and rebuilds
    // the newest ones from their rows.
    let mut store = SqliteStore::open(&path).unwrap();
    let job = open_job(&mut store);
    assert!(admit(&mut store, job, 0..n).iter().all(|new| !new));
    let recorded = finish(&mut store, job, 0..n);
    assert_eq!(
        recorded,
        (0..n).map(|i| i % 2 == 1).collect::<Vec<_>>(),
        "the odd ones were not finished yet"
    );
    let counts = store.find_job("keys").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.done), (n, n));
    assert_eq!(count(&path, "SELECT count(*) FROM urls"), n as i64);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file of an older version (`downgrade` makes it one from version
/// 5's layout): 50 URLs admitted as loaded (held by a crawler), 20 of
/// them finished.
fn older_file(name: &str, downgrade: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let (dir, path) = fresh(name);
    let mut store = SqliteStore::open(&path).unwrap();
    let job = open_job(&mut store);
    admit(&mut store, job, 0..50);
    finish(&mut store, job, 0..20);
    drop(store);
    let conn = Connection::open(&path).unwrap();
    // Version 5: results found by their row through an index, no bits.
    conn.execute_batch(
        "DROP TABLE done_bits; CREATE INDEX results_url ON results (url);
         UPDATE crawlkeeper_version SET version = 5;",
    )
    .unwrap();
    conn.execute_batch(downgrade).unwrap();
    (dir, path)
}

#[test]
fn a_version_5_file_gets_the_bits_of_its_finished_rows() {
    let (dir, path) = older_file("v5", "");
    let table = |name: &str| {
        count(
            &path,
            &format!("SELECT count(*) FROM sqlite_master WHERE name = '{name}'"),
        )
    };
    assert_eq!((table("done_bits"), table("results_url")), (0, 1));
    let mut store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        count(&path, "SELECT max(version) FROM crawlkeeper_version"),
        schema::SQLITE_VERSION
    );
    assert_eq!((table("done_bits"), table("results_url")), (1, 0));
    let job = open_job(&mut store);
    // A new connection: the finished rows are known by their bits alone.
    assert_eq!(
        finish(&mut store, job, 15..25),
        (15..25).map(|i| i >= 20).collect::<Vec<_>>()
    );
    let info = store.find_job("keys").unwrap().unwrap();
    store.lock_job(&info).unwrap();
    let resumed = store.resume(job).unwrap();
    assert_eq!(resumed.queued.iter().map(|(_, n)| n).sum::<u64>(), 25);
    assert_eq!(load(&mut store, job, 100), (25..50).collect::<Vec<_>>());
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_queued_row_finished_without_a_load_is_not_loaded() {
    let (dir, path) = fresh("queued_done");
    let mut store = SqliteStore::open(&path).unwrap();
    let job = open_job(&mut store);
    queue(&mut store, job, 0..10);
    assert_eq!(finish(&mut store, job, 2..5), [true; 3]);
    assert_eq!(
        load(&mut store, job, 4),
        [0, 1, 5, 6],
        "the finished rows are passed over, and the limit still filled"
    );
    assert_eq!(
        count(&path, "SELECT count(*) FROM urls WHERE state = 2"),
        3,
        "and marked done"
    );
    assert_eq!(load(&mut store, job, 10), [7, 8, 9]);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_deleted_or_recrawled_job_leaves_no_row_done() {
    let (dir, path) = fresh("bits_cleared");
    let mut store = SqliteStore::open(&path).unwrap();
    let job = open_job(&mut store);
    queue(&mut store, job, 0..5);
    assert_eq!(finish(&mut store, job, 0..5), [true; 5]);
    assert!(store.delete_job("keys").unwrap());
    assert_eq!(count(&path, "SELECT count(*) FROM urls"), 0);
    // The new job's rows take the ids the deleted ones had.
    let job = open_job(&mut store);
    queue(&mut store, job, 0..5);
    assert_eq!(
        count(&path, "SELECT min(id) FROM urls"),
        1,
        "an id given again"
    );
    assert_eq!(load(&mut store, job, 10), (0..5).collect::<Vec<_>>());
    assert_eq!(finish(&mut store, job, 0..5), [true; 5]);
    let info = store.find_job("keys").unwrap().unwrap();
    assert_eq!(store.recrawl(&info).unwrap(), 5);
    assert_eq!(load(&mut store, job, 10), (0..5).collect::<Vec<_>>());
    assert_eq!(finish(&mut store, job, 0..5), [true; 5]);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_version_1_file_is_migrated_with_its_urls_known() {
    // What version 1 wrote: a unique index on the keys, no key table, no
    // counts, no log of loads, finished rows marked done with their
    // result's position.
    let (dir, path) = older_file(
        "v1",
        "DROP TABLE url_keys; DROP TABLE merged; DROP INDEX results_url;
             DROP TABLE job_counts; DROP TABLE loaded;
             CREATE UNIQUE INDEX urls_key ON urls (job, key);
             UPDATE urls SET state = 2,
                 seq = (SELECT seq FROM results r WHERE r.url = urls.id)
                 WHERE id IN (SELECT url FROM results);
             ALTER TABLE results DROP COLUMN url;
             ALTER TABLE jobs DROP COLUMN requisites;
             UPDATE urls SET chain = '{\"chain\":[],\"known\":{\"embed\":1}}' WHERE id <= 3;
             UPDATE urls SET chain = '[\"http://a.test/\\\"embed\\\":\"]' WHERE id = 4;
             UPDATE crawlkeeper_version SET version = 1;",
    );
    let mut store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        count(&path, "SELECT max(version) FROM crawlkeeper_version"),
        schema::SQLITE_VERSION
    );
    assert_eq!(
        count(
            &path,
            "SELECT count(*) FROM sqlite_master WHERE name = 'urls_key'"
        ),
        0
    );
    assert_eq!(count(&path, "SELECT count(*) FROM url_keys"), 50);
    assert_eq!(
        count(&path, "SELECT count(*) FROM results WHERE url IS NULL"),
        0,
        "every result names its row"
    );
    let job = open_job(&mut store);
    let counts = store.find_job("keys").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.done), (50, 20));
    assert_eq!(
        counts.requisites, 3,
        "requisites counted from their rows, a quoted \"embed\": in a URL not"
    );
    assert_eq!(
        admit(&mut store, job, 45..55),
        (45..55).map(|i| i >= 50).collect::<Vec<_>>()
    );
    assert_eq!(
        finish(&mut store, job, 15..25),
        (15..25).map(|i| i >= 20).collect::<Vec<_>>()
    );
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_version_4_file_is_re_keyed_from_its_urls() {
    // Version 4 kept keys that were a hash of the URL alone: here, other
    // keys than today's, in `urls` and in `url_keys`, some merged.
    let (dir, path) = older_file(
        "v4",
        "UPDATE urls SET key = randomblob(16);
         DELETE FROM url_keys;
         INSERT INTO url_keys (job, key, id) SELECT job, key, id FROM urls WHERE id <= 30;
         UPDATE merged SET upto = 30;
         UPDATE crawlkeeper_version SET version = 4;",
    );
    let stale = count(
        &path,
        "SELECT count(*) FROM urls u JOIN url_keys k ON k.id = u.id AND k.key = u.key",
    );
    assert_eq!(stale, 30, "the old keys, merged up to row 30");
    let mut store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        count(&path, "SELECT max(version) FROM crawlkeeper_version"),
        schema::SQLITE_VERSION
    );
    let conn = Connection::open(&path).unwrap();
    let mut rows = conn
        .prepare("SELECT url, key FROM urls ORDER BY id")
        .unwrap();
    let rows: Vec<(String, Vec<u8>)> = rows
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 50);
    for (url, key) in &rows {
        let want = crawlkeeper_model::key::key_of_text(url).unwrap();
        assert_eq!(key.as_slice(), want.to_be_bytes(), "{url}");
    }
    assert_eq!(
        count(&path, "SELECT count(*) FROM url_keys"),
        50,
        "all merged"
    );
    assert_eq!(count(&path, "SELECT upto FROM merged"), 50);
    let job = open_job(&mut store);
    assert_eq!(
        admit(&mut store, job, 45..55),
        (45..55).map(|i| i >= 50).collect::<Vec<_>>(),
        "the URLs it knew are known under today's keys"
    );
    assert_eq!(
        finish(&mut store, job, 15..25),
        (15..25).map(|i| i >= 20).collect::<Vec<_>>()
    );
    let counts = store.find_job("keys").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.done), (55, 25));
    assert_eq!(
        count(&path, "SELECT count(*) FROM urls"),
        55,
        "no row twice"
    );
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_database_of_another_program_is_refused_and_left_untouched() {
    let (dir, path) = fresh("foreign");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
             INSERT INTO customers (name) VALUES ('alice');",
        )
        .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = SqliteStore::open(&path).err().expect("refused");
    let said = err.to_string();
    assert!(said.contains("not a crawlkeeper state file"), "{said}");
    assert!(said.contains("customers"), "{said}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "not a byte changed");
    let journal = |suffix: &str| {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        std::path::PathBuf::from(p).exists()
    };
    assert!(!journal("-wal") && !journal("-shm"), "no WAL was started");
    // An empty file, and our own file, are used as before.
    std::fs::write(&path, b"").unwrap();
    SqliteStore::open(&path).unwrap();
    SqliteStore::open(&path).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_lock_file_that_is_a_link_or_a_pipe_is_not_opened_through() {
    let (dir, _) = fresh("lock_link");
    let precious = dir.join("precious");
    std::fs::write(&precious, "keep").unwrap();
    let link = dir.join("x.lock");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    // Once truncated through the link (File::create).
    assert!(super::JobLock::take(link.clone()).is_err());
    assert_eq!(std::fs::read(&precious).unwrap(), b"keep");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let fifo = dir.join("p.lock");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // Refused without waiting for a reader.
    assert!(super::JobLock::take(fifo.clone()).is_err());
    assert!(!std::fs::symlink_metadata(&fifo).unwrap().is_file());
    let plain = dir.join("ok.lock");
    assert!(super::JobLock::take(plain).unwrap().is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_version_3_file_gets_its_counts_and_its_log_of_loads() {
    // What version 3 wrote: no counts, no log of loads.
    let (dir, path) = older_file(
        "v3",
        "DROP TABLE job_counts; DROP TABLE loaded;
         UPDATE crawlkeeper_version SET version = 3;",
    );
    let mut store = SqliteStore::open(&path).unwrap();
    let job = open_job(&mut store);
    assert_eq!(
        count(&path, "SELECT max(version) FROM crawlkeeper_version"),
        schema::SQLITE_VERSION
    );
    let info = store.find_job("keys").unwrap().unwrap();
    assert_eq!(
        (info.counts.seen, info.counts.done),
        (50, 20),
        "counted from the rows"
    );
    assert_eq!(
        count(&path, "SELECT count(*) FROM loaded"),
        50,
        "every row in state 1 is in the log"
    );
    store.lock_job(&info).unwrap();
    let resumed = store.resume(job).unwrap();
    assert_eq!(
        resumed.queued.iter().map(|(_, n)| n).sum::<u64>(),
        30,
        "the held rows without a result are queued again"
    );
    assert_eq!(
        count(&path, "SELECT count(*) FROM loaded"),
        0,
        "read and emptied"
    );
    assert_eq!(
        count(&path, "SELECT count(*) FROM urls WHERE state = 1"),
        0,
        "the finished ones are marked done"
    );
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_row_loaded_here_and_finished_by_another_connection_is_not_recorded_twice() {
    let (dir, path) = fresh("held");
    let mut here = SqliteStore::open(&path).unwrap();
    let job = open_job(&mut here);
    queue(&mut here, job, 0..4);
    // This connection loads the host's URLs (and remembers their rows).
    assert_eq!(load(&mut here, job, 4).len(), 4);
    // Another connection finishes one of them.
    let mut other = SqliteStore::open(&path).unwrap();
    assert_eq!(finish(&mut other, job, 0..1), [true]);
    drop(other);
    assert_eq!(finish(&mut here, job, 0..4), [false, true, true, true]);
    assert_eq!(finish(&mut here, job, 0..4), [false; 4]);
    assert_eq!(count(&path, "SELECT count(*) FROM results"), 4);
    assert_eq!(count(&path, "SELECT count(DISTINCT url) FROM results"), 4);
    drop(here);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_resume_queues_again_what_a_gone_run_held_without_a_result() {
    let (dir, path) = fresh("resume");
    let mut store = SqliteStore::open(&path).unwrap();
    let job = open_job(&mut store);
    queue(&mut store, job, 0..20);
    assert_eq!(load(&mut store, job, 12), (0..12).collect::<Vec<_>>());
    assert_eq!(finish(&mut store, job, 0..7), [true; 7]);
    // The run is gone; the next opens the file and resumes the job.
    drop(store);
    let mut store = SqliteStore::open(&path).unwrap();
    let info = store.find_job("keys").unwrap().unwrap();
    store.lock_job(&info).unwrap();
    let resumed = store.resume(info.id).unwrap();
    assert_eq!(
        resumed.queued.iter().map(|(_, n)| n).sum::<u64>(),
        13,
        "the 5 held rows without a result and the 8 never loaded"
    );
    assert_eq!(load(&mut store, info.id, 20), (7..20).collect::<Vec<_>>());
    assert_eq!(
        finish(&mut store, info.id, 0..20),
        (0..20).map(|i| i >= 7).collect::<Vec<_>>(),
        "the finished ones stay done"
    );
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}
