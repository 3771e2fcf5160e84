//! The commit benchmark: what the crawl engine's state thread asks of a
//! store during a crawl of one site, replayed on one thread without the
//! engine, so that the store's own cost per transaction and per page is
//! measured apart from fetching, parsing and the machine's noise.
//!
//! The pattern is the engine benchmark's `one-host` scenario: pages finish
//! in the order they were admitted, each page's first visit brings its
//! links (20 new URLs per page until every URL is known), and the engine
//! groups finished pages into transactions of G. Each G is run on a fresh
//! store; the cost of a transaction is then fitted as fixed + G × per page.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{FinishedUrl, FrontierEntry};
use crawlkeeper_store::Store;

use crate::store_data::{bench_job, entry, fresh_sqlite, record};

/// Options of `crawlkeeper-bench commit`.
#[derive(Args, Debug)]
pub struct CommitArgs {
    /// Pages of the site (each is admitted, then finished).
    #[arg(long, default_value_t = 100_000)]
    pages: u64,
    /// New URLs found on each page until every page is known.
    #[arg(long, default_value_t = 20)]
    links: u64,
    /// Finished pages per transaction, one run each.
    #[arg(long, default_value = "1,4,16,32", value_delimiter = ',')]
    groups: Vec<usize>,
    /// Repetitions of each group size (the fastest is kept: noise only
    /// ever adds time).
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

/// Runs the commit benchmark on SQLite.
pub fn run(args: CommitArgs) -> Result<()> {
    if args.groups.is_empty() || args.groups.contains(&0) {
        bail!("--groups needs sizes of at least 1");
    }
    let mut fits = Vec::new();
    for &group in &args.groups {
        let best = (0..args.runs.max(1))
            .map(|_| replay(&args, group))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .min()
            .expect("at least one run");
        let per_page = best.as_secs_f64() * 1e6 / args.pages as f64;
        println!(
            "sqlite   group={group:<4} {:>7.2} µs per page, {:>7.1} µs per transaction, {:>8.0} pages/s",
            per_page,
            per_page * group as f64,
            args.pages as f64 / best.as_secs_f64()
        );
        fits.push((group as f64, per_page * group as f64));
    }
    if let Some((fixed, per_page)) = fit(&fits) {
        println!("sqlite   a transaction costs {fixed:.1} µs + {per_page:.2} µs per finished page");
    }
    Ok(())
}

/// One crawl of the site on a fresh store, `group` pages per transaction;
/// the time spent in the store.
fn replay(args: &CommitArgs, group: usize) -> Result<Duration> {
    let (dir, mut store) = fresh_sqlite("commit")?;
    let job = bench_job(&mut store, "commit")?;
    let one_host = |i: u64| -> (FrontierEntry, _) { entry(i, 1) };
    // A page is admitted in an earlier transaction than the one that
    // finishes it: the first group is admitted before anything finishes.
    let mut admitted = (group as u64 + 1).min(args.pages);
    let mut first = Batch {
        admit: (0..admitted)
            .map(|i| {
                let (e, a) = one_host(i);
                (e, a, true)
            })
            .collect(),
        ..Batch::default()
    };
    store.apply(job, &mut first)?;
    let mut spent = Duration::ZERO;
    let mut page = 0u64;
    while page < args.pages {
        let end = (page + group as u64).min(args.pages);
        let mut batch = Batch::default();
        for i in page..end {
            let (e, a) = one_host(i);
            let links = args.links.min(args.pages - admitted);
            for j in admitted..admitted + links {
                let (le, la) = one_host(j);
                batch.admit.push((le, la, true));
            }
            admitted += links;
            batch.finished.push(FinishedUrl::new(e.key, record(&e, &a)));
        }
        let started = Instant::now();
        store.apply(job, &mut batch)?;
        spent += started.elapsed();
        if !batch.recorded.iter().all(|r| *r) || !batch.admitted.iter().all(|a| *a) {
            bail!("group {group}: a page was not recorded or a new URL not admitted");
        }
        page = end;
    }
    drop(store);
    std::fs::remove_dir_all(&dir).ok();
    Ok(spent)
}

/// Least-squares line through (group, µs per transaction) points:
/// (intercept, slope); `None` with fewer than two distinct groups.
fn fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    Some((my - slope * mx, slope))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_a_line() {
        let points = [(1.0, 12.0), (4.0, 30.0), (16.0, 102.0)];
        let (fixed, per_page) = fit(&points).unwrap();
        assert!((fixed - 6.0).abs() < 1e-9 && (per_page - 6.0).abs() < 1e-9);
        assert!(fit(&[(4.0, 1.0), (4.0, 2.0)]).is_none());
    }
}
