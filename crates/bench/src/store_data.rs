//! What the store benchmarks write: generated URLs over authorities,
//! their records, and the job they belong to.

use std::path::PathBuf;

use anyhow::Result;
use crawlkeeper_model::{Authority, CrawlRecord, FrontierEntry};
use crawlkeeper_store::{JobId, JobSpec, SqliteStore, Store};

/// A well-mixed 128-bit key for URL `i` (splitmix64 on both halves).
pub(crate) fn key(i: u64) -> u128 {
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (u128::from(mix(i)) << 64) | u128::from(mix(i ^ 0xdead_beef))
}

pub(crate) fn authority(a: u64) -> Authority {
    Authority::try_from(format!("http://h{a}.bench.test:80")).expect("valid authority")
}

pub(crate) fn entry(i: u64, authorities: u64) -> (FrontierEntry, Authority) {
    let a = i % authorities;
    (
        FrontierEntry {
            key: key(i),
            url: format!("http://h{a}.bench.test/section/{}/page-{i}.html", i % 97),
            depth: (i % 5) as u32,
            parent: Some(format!("http://h{a}.bench.test/section/{}/", i % 97)),
            redirect_chain: Vec::new(),
            known: None,
        },
        authority(a),
    )
}

pub(crate) fn record(e: &FrontierEntry, authority: &Authority) -> CrawlRecord {
    CrawlRecord {
        url: e.url.clone(),
        final_url: e.url.clone(),
        status: Some(200),
        depth: e.depth,
        parent: e.parent.clone(),
        authority: authority.clone(),
        fetched_at: "2026-11-21T12:00:00.000Z".into(),
        response_ms: Some(42),
        content_type: Some("text/html; charset=utf-8".into()),
        bytes: 30_000,
        title: Some("A page of a benchmark site".into()),
        fields: None,
        fields_cut: None,
        links: 23,
        links_dropped: 0,
        requisites: 0,
        requisites_dropped: 0,
        truncated: false,
        error: None,
        etag: None,
        last_modified: None,
        lastmod: None,
        unchanged_since: None,
        via: None,
    }
}

/// A SQLite store in a fresh directory named after `label`.
pub(crate) fn fresh_sqlite(label: &str) -> Result<(PathBuf, SqliteStore)> {
    let dir =
        std::env::temp_dir().join(format!("crawlkeeper-bench-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let store = SqliteStore::open(dir.join("state.db"))?;
    Ok((dir, store))
}

/// The job `name` of a benchmark, created if new.
pub(crate) fn bench_job(store: &mut dyn Store, name: &str) -> Result<JobId> {
    Ok(store
        .open_job(&JobSpec {
            name: name.into(),
            seeds: vec!["http://h0.bench.test/".into()],
            options: "{}".into(),
            shards: 1,
        })?
        .id)
}
