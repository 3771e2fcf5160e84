//! `crawlkeeper-bench`: measures the crawler as a user runs it. The test
//! site and the crawler are separate processes; the crawler's CPU time and
//! peak RSS come from the kernel (`wait4`), its rate from the wall clock.
//!
//! Run with `scripts/bench.sh` (builds release binaries first).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;

/// Benchmark the crawl engine against the synthetic site.
#[derive(Parser, Debug)]
struct Args {
    /// Scenarios to run: one-host (1 × 20,000 pages), fifty-hosts (50 × 400),
    /// politeness (1,000 hosts × 20 pages, 50 ms per response, one request
    /// in flight per host, 50 workers).
    #[arg(
        long,
        default_value = "one-host,fifty-hosts,politeness",
        value_delimiter = ','
    )]
    scenario: Vec<String>,
    /// Repetitions of each scenario (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Approximate size of each page in bytes.
    #[arg(long, default_value_t = 4096)]
    page_bytes: usize,
    /// Extra arguments passed to `crawlkeeper crawl`.
    #[arg(long, allow_hyphen_values = true)]
    crawl_arg: Vec<String>,
}

struct Scenario {
    name: &'static str,
    hosts: usize,
    pages: u32,
    /// Server delay per response.
    delay_ms: u64,
    /// Concurrency options given to the crawler.
    crawl_args: &'static [&'static str],
    /// Pages/s a perfect scheduler reaches, if the scenario has a bound.
    ideal_rate: Option<f64>,
}

const FAST: &[&str] = &[
    "--per-host",
    "64",
    "--max-workers",
    "64",
    "--max-load",
    "100",
];
const POLITE: &[&str] = &[
    "--per-host",
    "1",
    "--max-workers",
    "50",
    "--max-load",
    "100",
];

/// What one run measured.
#[derive(Debug, Clone, Copy)]
struct Measure {
    pages: u64,
    wall: Duration,
    cpu: Duration,
    max_rss_kb: i64,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let dir = binaries_dir()?;
    for name in &args.scenario {
        let scenario = match name.as_str() {
            "one-host" => Scenario {
                name: "one-host",
                hosts: 1,
                pages: 20_000,
                delay_ms: 0,
                crawl_args: FAST,
                ideal_rate: None,
            },
            "fifty-hosts" => Scenario {
                name: "fifty-hosts",
                hosts: 50,
                pages: 400,
                delay_ms: 0,
                crawl_args: FAST,
                ideal_rate: None,
            },
            "politeness" => Scenario {
                name: "politeness",
                hosts: 1000,
                pages: 20,
                delay_ms: 50,
                crawl_args: POLITE,
                ideal_rate: Some(50.0 / 0.05),
            },
            other => bail!("unknown scenario '{other}' (one-host, fifty-hosts, politeness)"),
        };
        let mut runs = Vec::new();
        for _ in 0..args.runs {
            runs.push(run_once(&dir, &scenario, args.page_bytes, &args.crawl_arg)?);
        }
        runs.sort_by_key(|m| m.wall);
        let m = runs[runs.len() / 2];
        let rate = m.pages as f64 / m.wall.as_secs_f64();
        println!(
            "{:<12} hosts={:<3} pages={:<6} wall={:>6.2}s rate={:>7.0} pages/s cpu={:>6.2}s \
             cpu/1000 pages={:.3}s peak_rss={:.1} MB (median of {})",
            scenario.name,
            scenario.hosts,
            m.pages,
            m.wall.as_secs_f64(),
            rate,
            m.cpu.as_secs_f64(),
            m.cpu.as_secs_f64() * 1000.0 / m.pages as f64,
            m.max_rss_kb as f64 / 1024.0,
            runs.len()
        );
        if let Some(ideal) = scenario.ideal_rate {
            println!(
                "{:<12} {:.2} of the ideal {ideal:.0} pages/s",
                scenario.name,
                rate / ideal
            );
        }
    }
    Ok(())
}

/// The directory of the release binaries (next to this one).
fn binaries_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().context("no parent dir")?.to_path_buf();
    for bin in ["crawlkeeper", "crawlkeeper-testsite"] {
        if !dir.join(bin).exists() {
            bail!(
                "{} not found: run scripts/bench.sh (it builds the release binaries)",
                dir.join(bin).display()
            );
        }
    }
    Ok(dir)
}

fn run_once(dir: &Path, s: &Scenario, page_bytes: usize, extra: &[String]) -> Result<Measure> {
    let mut site = Command::new(dir.join("crawlkeeper-testsite"))
        .args([
            "--hosts",
            &s.hosts.to_string(),
            "--pages",
            &s.pages.to_string(),
            "--links",
            "20",
            "--page-bytes",
            &page_bytes.to_string(),
            "--delay-ms",
            &s.delay_ms.to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the test site")?;
    let origins = read_origins(&mut site)?;
    let out = std::env::temp_dir().join(format!("crawlkeeper-bench-{}.jsonl", std::process::id()));
    let mut cmd = Command::new(dir.join("crawlkeeper"));
    cmd.args(["crawl", "--follow", "--quiet", "--out"])
        .arg(&out)
        .args(s.crawl_args)
        .args(extra)
        .args(origins.iter().map(|o| format!("{o}/")));
    let started = Instant::now();
    let crawler = cmd.spawn().context("starting the crawler")?;
    let (status, cpu, max_rss_kb) = wait_with_rusage(crawler.id())?;
    let wall = started.elapsed();
    stop(site);
    if status != 0 {
        bail!("crawler exited with status {status}");
    }
    let pages = BufReader::new(std::fs::File::open(&out)?).lines().count() as u64;
    let expected = u64::from(s.pages + 1) * s.hosts as u64;
    if pages != expected {
        bail!(
            "crawled {pages} pages, expected {expected} (records kept in {})",
            out.display()
        );
    }
    std::fs::remove_file(&out).ok();
    Ok(Measure {
        pages,
        wall,
        cpu,
        max_rss_kb,
    })
}

fn read_origins(site: &mut Child) -> Result<Vec<String>> {
    let stdout = site.stdout.take().context("no stdout")?;
    let mut origins = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if line == "ready" {
            return Ok(origins);
        }
        origins.push(line);
    }
    bail!("the test site exited before it was ready")
}

fn stop(mut site: Child) {
    // SIGINT lets the site exit cleanly; kill is the fallback.
    let pid = libc::pid_t::try_from(site.id()).unwrap_or(0);
    // SAFETY: sending a signal to a child we own has no memory effects.
    unsafe { libc::kill(pid, libc::SIGINT) };
    if site.wait().is_err() {
        let _ = site.kill();
    }
}

/// Waits for `pid` and returns its exit status, CPU time (user + system)
/// and peak RSS in KiB.
fn wait_with_rusage(pid: u32) -> Result<(i32, Duration, i64)> {
    let mut status = 0;
    // SAFETY: rusage is plain data, zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = libc::pid_t::try_from(pid)?;
    // SAFETY: pointers are to live locals; pid is our child.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r < 0 {
        bail!("wait4 failed: {}", std::io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec * 1000) as u32);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Ok((
        code,
        tv(usage.ru_utime) + tv(usage.ru_stime),
        usage.ru_maxrss,
    ))
}
