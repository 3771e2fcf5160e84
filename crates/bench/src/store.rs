//! The store benchmark: a job of N URLs over M authorities, on each
//! backend: frontier inserts, seen-set lookups (admitting known URLs),
//! frontier loads (pops), result writes, and disk bytes per URL.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use crawlkeeper_model::FinishedUrl;
use crawlkeeper_model::state::Batch;
use crawlkeeper_store::{JobId, PgStore, Store};

use crate::store_args::StoreArgs;
use crate::store_data::{authority, bench_job, entry, fresh_sqlite, record};

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
