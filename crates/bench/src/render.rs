//! `--render` against not rendering, on the same site (issue #54): the
//! test site's hosts, every page using the shared stylesheet, logo and
//! icon (as a real site's pages share theirs), crawled whole by the
//! release `crawlkeeper` without `--render`, then with `--render
//! --render-when always` on 1 and 2 browsers. For each: pages/s, the
//! crawler's own CPU per page, the browsers' CPU per page and their
//! memory (every process under the crawler, sampled from
//! `/proc` every 100 ms: CPU from each one's last sample, memory as the
//! peak of their summed proportional set size, PSS, so that pages shared
//! between a browser's processes count once).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use crawlkeeper_testsite::site::HostConfig;
use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::children::{children, cpu_ticks};
use crate::proc::{binaries_dir, wait_with_rusage};

/// Options of `crawlkeeper-bench render`.
#[derive(Args, Debug)]
pub struct RenderArgs {
    /// Hosts of the site.
    #[arg(long, default_value_t = 4)]
    hosts: usize,
    /// Pages per host.
    #[arg(long, default_value_t = 100)]
    pages: u32,
    /// Runs of each setting (the table shows each).
    #[arg(long, default_value_t = 1)]
    runs: usize,
}

/// What one crawl cost.
struct Pass {
    records: usize,
    wall: Duration,
    crawler_cpu: Duration,
    browser_cpu: Duration,
    /// Peak of the browsers' summed PSS, in KiB.
    browser_pss: u64,
}

/// Runs the benchmark and prints its table.
pub fn run(args: RenderArgs) -> Result<()> {
    let bin = binaries_dir()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let host = HostConfig {
        pages: args.pages,
        links: 10,
        page_bytes: 8_000,
        embeds: true,
        ..HostConfig::default()
    };
    let config = SiteConfig {
        hosts: vec![host; args.hosts],
        slow: Duration::from_secs(30),
        tls: false,
    };
    let site = runtime.block_on(TestSite::start(config))?;
    let seeds: Vec<String> = (0..args.hosts).map(|h| site.url(h, "/")).collect();
    let work =
        std::env::temp_dir().join(format!("crawlkeeper-bench-render-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let settings: [(&str, &[&str]); 3] = [
        ("served HTML", &[]),
        (
            "--render, 1 browser",
            &["--render", "--render-when", "always", "--browsers", "1"],
        ),
        (
            "--render, 2 browsers",
            &["--render", "--render-when", "always", "--browsers", "2"],
        ),
    ];
    println!(
        "render: {} hosts × {} pages (~8 KB, a shared stylesheet, logo and icon each), --per-host 2, 4 tabs a browser",
        args.hosts, args.pages
    );
    println!(
        "| setting | records | wall s | pages/s | crawler CPU ms/page | browser CPU ms/page | browsers' peak PSS MB |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|");
    let mut served = None;
    for run in 0..args.runs {
        for (name, extra) in settings {
            let out = format!("out-{run}-{}.jsonl", name.len());
            let p = crawl(&bin, &work, &seeds, extra, &out)?;
            // A render that lost a page's links would crawl less.
            if *served.get_or_insert(p.records) != p.records {
                bail!(
                    "{name}: {} records, not the {served:?} of the served HTML",
                    p.records
                );
            }
            let per_page = |d: Duration| 1000.0 * d.as_secs_f64() / p.records.max(1) as f64;
            println!(
                "| {name} | {} | {:.2} | {:.1} | {:.2} | {:.2} | {:.0} |",
                p.records,
                p.wall.as_secs_f64(),
                p.records as f64 / p.wall.as_secs_f64(),
                per_page(p.crawler_cpu),
                per_page(p.browser_cpu),
                p.browser_pss as f64 / 1024.0,
            );
        }
    }
    std::fs::remove_dir_all(&work).ok();
    Ok(())
}

/// One fresh crawl of `seeds` in `work`, records to `out`.
fn crawl(bin: &Path, work: &Path, seeds: &[String], extra: &[&str], out: &str) -> Result<Pass> {
    let started = Instant::now();
    let child = Command::new(bin.join("crawlkeeper"))
        .current_dir(work)
        .args(["crawl", "--follow", "--quiet", "--no-state", "--out", out])
        .args(["--per-host", "2", "--overwrite"])
        .args(extra)
        .args(seeds)
        .stdin(Stdio::null())
        .spawn()
        .context("starting the crawler")?;
    let tree = Tree::start(child.id());
    let (status, kernel, _) = wait_with_rusage(child.id())?;
    let wall = started.elapsed();
    // The kernel's account of the crawler includes the browsers it
    // reaped; its own ticks are sampled, which a crawl shorter than a
    // sample misses: the larger of the two.
    let (sampled, browser_cpu, browser_pss) = tree.finish();
    let crawler_cpu = sampled.max(kernel.saturating_sub(browser_cpu));
    if status != 0 {
        bail!("crawler exited with status {status}");
    }
    let records = std::fs::read_to_string(work.join(out))?.lines().count();
    Ok(Pass {
        records,
        wall,
        crawler_cpu,
        browser_cpu,
        browser_pss,
    })
}

/// A sampler of one process and every process below it, on a thread of
/// its own.
struct Tree {
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(u64, BTreeMap<u32, u64>, u64)>,
}

impl Tree {
    fn start(root: u32) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::spawn(move || {
            let mut ticks: BTreeMap<u32, u64> = BTreeMap::new();
            let mut peak = 0;
            let mut own = 0;
            while !stop.load(Ordering::Relaxed) {
                own = cpu_ticks(root).unwrap_or(own);
                let mut pss = 0;
                for pid in descendants(root) {
                    if let Some(t) = cpu_ticks(pid) {
                        ticks.insert(pid, t);
                    }
                    pss += pss_kib(pid).unwrap_or(0);
                }
                peak = peak.max(pss);
                std::thread::sleep(Duration::from_millis(100));
            }
            (own, ticks, peak)
        });
        Self { done, thread }
    }

    /// The root's own CPU (as last sampled), its descendants' CPU, and
    /// their peak summed PSS (KiB).
    fn finish(self) -> (Duration, Duration, u64) {
        self.done.store(true, Ordering::Relaxed);
        let (own, ticks, peak) = self.thread.join().unwrap_or_default();
        // SAFETY: sysconf has no memory effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        let time = |t: u64| Duration::from_millis(t * 1000 / hz);
        (time(own), time(ticks.values().sum()), peak)
    }
}

/// Every process below `root` (its children, and theirs).
fn descendants(root: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(pid) = next.pop() {
        for c in children(pid) {
            found.push(c);
            next.push(c);
        }
    }
    found
}

/// The proportional set size of `pid`, in KiB.
fn pss_kib(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}
