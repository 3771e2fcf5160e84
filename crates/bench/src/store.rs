//! The store benchmark: a job of N URLs over M authorities, on each
//! backend: frontier inserts, seen-set lookups (admitting known URLs),
//! frontier loads (pops), result writes, and disk bytes per URL.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, CrawlRecord, FinishedUrl, FrontierEntry};
use crawlkeeper_store::{JobId, JobSpec, PgStore, SqliteStore, Store};

/// Options of `crawlkeeper-bench store`.
#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Backends to measure: sqlite, postgres.
    #[arg(long, default_value = "sqlite,postgres", value_delimiter = ',')]
    pub(crate) backend: Vec<String>,
    /// URLs in the job.
    #[arg(long, default_value_t = 1_000_000)]
    urls: u64,
    /// Authorities they are spread over.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) authorities: u64,
    /// URLs per transaction (the engine groups commands the same way).
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// The PostgreSQL server (a fresh schema is used and dropped).
    #[arg(
        long,
        env = "CRAWLKEEPER_TEST_POSTGRES",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    pub(crate) postgres: String,
    /// Scale mode: the job sizes (URLs) to seed and measure, e.g.
    /// `1000000,10000000,50000000` (see `store_scale`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scale: Vec<u64>,
    /// Scale mode: the options of the measured operations.
    #[command(flatten)]
    pub(crate) scale_opts: crate::store_scale::ScaleOpts,
}

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

fn rate(n: u64, started: Instant) -> f64 {
    n as f64 / started.elapsed().as_secs_f64()
}

/// Runs the store benchmark.
pub fn run(args: StoreArgs) -> Result<()> {
    if !args.scale.is_empty() {
        return crate::store_scale::run(&args);
    }
    for backend in &args.backend {
        let schema = format!("ck_bench_{}", std::process::id());
        // The SQLite store's directory (none for PostgreSQL).
        let (dir, mut store): (PathBuf, Box<dyn Store>) = match backend.as_str() {
            "sqlite" => {
                let (dir, store) = fresh_sqlite("store")?;
                (dir, Box::new(store))
            }
            "postgres" => (
                PathBuf::new(),
                Box::new(
                    PgStore::connect_in_schema(&args.postgres, Some(&schema))
                        .with_context(|| format!("connecting to {}", args.postgres))?,
                ),
            ),
            other => bail!("unknown backend '{other}' (sqlite, postgres)"),
        };
        let job = bench_job(store.as_mut(), "bench")?;
        measure(backend, store.as_mut(), job, &args)?;
        match backend.as_str() {
            "sqlite" => {
                drop(store);
                let bytes: u64 = std::fs::read_dir(&dir)?
                    .filter_map(|e| e.ok()?.metadata().ok())
                    .map(|m| m.len())
                    .sum();
                println!(
                    "{backend:<8} disk: {:.0} bytes per URL (file and WAL, records included)",
                    bytes as f64 / args.urls as f64
                );
                std::fs::remove_dir_all(&dir).ok();
            }
            _ => {
                drop(store);
                let mut c = postgres::Client::connect(&args.postgres, postgres::NoTls)?;
                let row = c.query_one(
                    "SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c
                     JOIN pg_namespace n ON n.oid = c.relnamespace
                     WHERE n.nspname = $1 AND c.relkind = 'r'",
                    &[&schema],
                )?;
                let bytes: i64 = row.get(0);
                println!(
                    "{backend:<8} disk: {:.0} bytes per URL (tables, indexes and TOAST, records included)",
                    bytes as f64 / args.urls as f64
                );
                c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
            }
        }
    }
    Ok(())
}

fn measure(backend: &str, store: &mut dyn Store, job: JobId, args: &StoreArgs) -> Result<()> {
    let n = args.urls;
    let chunks = |f: &mut dyn FnMut(std::ops::Range<u64>) -> Result<()>| -> Result<()> {
        let mut i = 0;
        while i < n {
            let end = (i + args.batch as u64).min(n);
            f(i..end)?;
            i = end;
        }
        Ok(())
    };
    // Frontier inserts (every URL new, left in the store), then seen-set
    // lookups (every URL offered again, all known).
    for (label, expect_new) in [("frontier inserts", true), ("seen-set lookups", false)] {
        let started = Instant::now();
        chunks(&mut |r| {
            let mut batch = Batch {
                admit: r
                    .map(|i| {
                        let (e, a) = entry(i, args.authorities);
                        (e, a, false)
                    })
                    .collect(),
                ..Batch::default()
            };
            store.apply(job, &mut batch)?;
            anyhow::ensure!(
                batch.admitted.iter().all(|x| *x == expect_new),
                "{label}: a URL was not what it should be (new: {expect_new})"
            );
            Ok(())
        })?;
        println!("{backend:<8} {label}: {:>9.0} URLs/s", rate(n, started));
    }
    // Frontier pops: every authority's URLs loaded, shallowest first.
    let per_load = (n / args.authorities).max(1) as usize;
    let loads_per_batch = (args.batch / per_load).max(1);
    let started = Instant::now();
    let mut popped = 0u64;
    let mut a = 0;
    while a < args.authorities {
        let end = (a + loads_per_batch as u64).min(args.authorities);
        let mut batch = Batch {
            load: (a..end).map(|x| (authority(x), per_load)).collect(),
            ..Batch::default()
        };
        store.apply(job, &mut batch)?;
        popped += batch.loaded.iter().map(|l| l.len() as u64).sum::<u64>();
        a = end;
    }
    anyhow::ensure!(popped == n, "popped {popped} of {n}");
    println!(
        "{backend:<8} frontier pops:    {:>9.0} URLs/s",
        rate(n, started)
    );
    // Results: every URL finished with a typical record.
    let started = Instant::now();
    chunks(&mut |r| {
        let mut batch = Batch {
            finished: r
                .map(|i| {
                    let (e, a) = entry(i, args.authorities);
                    FinishedUrl::new(e.key, record(&e, &a))
                })
                .collect(),
            ..Batch::default()
        };
        store.apply(job, &mut batch)?;
        Ok(())
    })?;
    println!(
        "{backend:<8} results written:  {:>9.0} URLs/s",
        rate(n, started)
    );
    Ok(())
}
