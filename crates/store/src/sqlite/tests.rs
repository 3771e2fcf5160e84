//! Storage details of the SQLite store that the conformance suite (which
//! sees only what a store answers) cannot observe.

use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, CrawlRecord, FinishedUrl, FrontierEntry};
use rusqlite::Connection;

use super::SqliteStore;
use crate::{JobSpec, Store};

fn entry(i: u64) -> (FrontierEntry, Authority) {
    let url = format!("http://a.test/page/{i}");
    (
        FrontierEntry {
            // Spread like real keys, so the key index fills at random.
            key: u128::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835),
            url,
            depth: 1,
            parent: Some("http://a.test/".into()),
            redirect_chain: Vec::new(),
        },
        Authority::try_from("http://a.test".to_owned()).unwrap(),
    )
}

fn record(e: &FrontierEntry, a: &Authority) -> CrawlRecord {
    CrawlRecord {
        url: e.url.clone(),
        final_url: e.url.clone(),
        status: Some(200),
        depth: e.depth,
        parent: e.parent.clone(),
        authority: a.clone(),
        fetched_at: "2026-11-22T00:00:00.000Z".into(),
        response_ms: Some(1),
        content_type: Some("text/html".into()),
        bytes: 4096,
        title: Some("a page".into()),
        links: 20,
        truncated: false,
        error: None,
    }
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

#[test]
fn finishing_urls_never_splits_the_pages_of_their_rows() {
    let dir = std::env::temp_dir().join(format!("ck_sqlite_rows_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    let mut store = SqliteStore::open(&path).unwrap();
    let job = store
        .open_job(&JobSpec {
            name: "rows".into(),
            seeds: vec!["http://a.test/".into()],
            options: "{}".into(),
        })
        .unwrap()
        .id;
    let n = 3000;
    for start in (0..n).step_by(100) {
        let mut batch = Batch {
            admit: (start..start + 100)
                .map(|i| {
                    let (e, a) = entry(i);
                    (e, a, true)
                })
                .collect(),
            ..Batch::default()
        };
        store.apply(job, &mut batch).unwrap();
        assert!(batch.admitted.iter().all(|new| *new));
    }
    let admitted = urls_pages(&path);
    // Pages finish in admission order, a few per transaction, as in a crawl.
    for start in (0..n).step_by(8) {
        let mut batch = Batch {
            finished: (start..(start + 8).min(n))
                .map(|i| {
                    let (e, a) = entry(i);
                    FinishedUrl::new(e.key, record(&e, &a))
                })
                .collect(),
            ..Batch::default()
        };
        store.apply(job, &mut batch).unwrap();
        assert!(batch.recorded.iter().all(|new| *new));
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
