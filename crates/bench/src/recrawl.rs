//! A re-crawl against a fresh crawl: one host of the test site crawled
//! whole, then moved to its next edition (a share of its pages changed,
//! each with a link to a new page), then crawled again with `--recrawl`
//! (conditional requests) and, for comparison, from scratch (`--fresh`).
//! Requests and body bytes are counted by the site; wall and CPU time of
//! the crawler by the kernel.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use crawlkeeper_testsite::site::HostConfig;
use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::proc::{binaries_dir, wait_with_rusage};

/// Options of `crawlkeeper-bench recrawl`.
#[derive(Args, Debug)]
pub struct RecrawlArgs {
    /// Pages of the host.
    #[arg(long, default_value_t = 5000)]
    pages: u32,
    /// Approximate page size in bytes.
    #[arg(long, default_value_t = 30_000)]
    page_bytes: usize,
    /// Share of pages, in percent, changed in the second edition.
    #[arg(long, default_value_t = 10)]
    changed_percent: u32,
}

/// What one pass cost.
struct Pass {
    requests: usize,
    bytes: u64,
    wall: Duration,
    cpu: Duration,
    records: usize,
}

/// Runs the benchmark and prints its table.
pub fn run(args: RecrawlArgs) -> Result<()> {
    let bin = binaries_dir()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let config = SiteConfig {
        hosts: vec![HostConfig {
            pages: args.pages,
            links: 20,
            page_bytes: args.page_bytes,
            changed_percent: args.changed_percent,
            ..HostConfig::default()
        }],
        slow: Duration::from_secs(30),
        tls: false,
    };
    let site = runtime.block_on(TestSite::start(config))?;
    let seed = site.url(0, "/");
    let work =
        std::env::temp_dir().join(format!("crawlkeeper-bench-recrawl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let pass = |extra: &[&str], out: &str| -> Result<Pass> {
        let (requests, bytes) = (site.log().len(), site.log().bytes());
        let p = crawl(&bin, &work, &seed, extra, out)?;
        Ok(Pass {
            requests: site.log().len() - requests,
            bytes: site.log().bytes() - bytes,
            ..p
        })
    };
    let first = pass(&[], "first.jsonl")?;
    site.set_edition(1);
    let recrawl = pass(&["--recrawl"], "recrawl.jsonl")?;
    let fresh = pass(&["--fresh"], "fresh.jsonl")?;
    std::fs::remove_dir_all(&work).ok();
    println!(
        "recrawl: 1 host, {} pages of ~{} bytes, {}% changed in the second edition",
        args.pages, args.page_bytes, args.changed_percent
    );
    println!("pass                      records  requests   body bytes  wall s   CPU s");
    for (name, p) in [
        ("first crawl", &first),
        ("second edition, fresh", &fresh),
        ("second edition, recrawl", &recrawl),
    ] {
        println!(
            "{name:<24} {:>8} {:>9} {:>12} {:>7.2} {:>7.2}",
            p.records,
            p.requests,
            p.bytes,
            p.wall.as_secs_f64(),
            p.cpu.as_secs_f64()
        );
    }
    println!(
        "recrawl / fresh: requests {:.0}%, body bytes {:.1}%, wall {:.0}%, CPU {:.0}%",
        100.0 * recrawl.requests as f64 / fresh.requests as f64,
        100.0 * recrawl.bytes as f64 / fresh.bytes as f64,
        100.0 * recrawl.wall.as_secs_f64() / fresh.wall.as_secs_f64(),
        100.0 * recrawl.cpu.as_secs_f64() / fresh.cpu.as_secs_f64(),
    );
    Ok(())
}

/// One crawl of `seed` in `work` with `extra` arguments, records to `out`.
fn crawl(bin: &Path, work: &Path, seed: &str, extra: &[&str], out: &str) -> Result<Pass> {
    let started = Instant::now();
    let child = Command::new(bin.join("crawlkeeper"))
        .current_dir(work)
        .args([
            "crawl", "--follow", "--quiet", "--state", "state.db", "--out", out,
        ])
        .args(extra)
        .arg(seed)
        .stdin(Stdio::null())
        .spawn()
        .context("starting the crawler")?;
    let (status, cpu, _) = wait_with_rusage(child.id())?;
    if status != 0 {
        bail!("crawler exited with status {status}");
    }
    let records = std::fs::read_to_string(work.join(out))?.lines().count();
    Ok(Pass {
        requests: 0,
        bytes: 0,
        wall: started.elapsed(),
        cpu,
        records,
    })
}
