//! The memory benchmark: peak RSS of a crawl whose seen set reaches a
//! million URLs (pages with 100 links each; the SQLite store on).

use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::engine::FAST;
use crate::proc::{binaries_dir, read_origins, stop, wait_with_rusage};

/// Options of `crawlkeeper-bench memory`.
#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// URLs to admit (the seen set's size).
    #[arg(long, default_value_t = 1_000_000)]
    seen: u64,
    /// How long to crawl after that.
    #[arg(long, default_value = "40s")]
    timeout: String,
}

/// Runs the memory benchmark.
pub fn run(args: MemoryArgs) -> Result<()> {
    let dir = binaries_dir()?;
    let work = std::env::temp_dir().join(format!("crawlkeeper-bench-mem-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let mut site = Command::new(dir.join("crawlkeeper-testsite"))
        .args(["--hosts", "1", "--links", "100", "--page-bytes", "8000"])
        .args(["--pages", &(args.seen * 2).to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the test site")?;
    let origins = read_origins(&mut site)?;
    let started = Instant::now();
    let crawler = Command::new(dir.join("crawlkeeper"))
        .current_dir(&work)
        .args(["crawl", "--follow", "--quiet", "--out", "out.jsonl"])
        .args(FAST)
        .args([
            "--max-pages",
            &args.seen.to_string(),
            "--timeout",
            &args.timeout,
        ])
        .arg(format!("{}/", origins[0]))
        .spawn()
        .context("starting the crawler")?;
    let (status, cpu, max_rss_kb) = wait_with_rusage(crawler.id())?;
    let wall = started.elapsed();
    stop(site);
    if status != 0 && status != 124 {
        bail!("crawler exited with status {status}");
    }
    let jobs = Command::new(dir.join("crawlkeeper"))
        .current_dir(&work)
        .arg("jobs")
        .output()?;
    let text = String::from_utf8_lossy(&jobs.stdout);
    let line = text.lines().nth(1).context("no job")?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    println!(
        "memory   seen={} done={} wall={:.1}s cpu={:.1}s peak_rss={:.1} MB state file={:.0} MB",
        fields[2],
        fields[3],
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        max_rss_kb as f64 / 1024.0,
        dir_size(&work) as f64 / 1e6
    );
    std::fs::remove_dir_all(&work).ok();
    Ok(())
}

fn dir_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
