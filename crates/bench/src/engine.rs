//! The engine benchmark: the crawler as a user runs it, against the test
//! site in another process.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::proc::{binaries_dir, read_origins, stop, wait_with_rusage};

/// Options of `crawlkeeper-bench engine`.
#[derive(Args, Debug)]
pub struct EngineArgs {
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
    /// Pages per host instead of the scenario's.
    #[arg(long)]
    pages: Option<u32>,
    /// Where the crawler keeps its state: sqlite (a file in a temporary
    /// directory, the default of `crawl`), memory (`--no-state`), both (to
    /// compare), or postgres (`--store`, the server of `--postgres`).
    #[arg(long, default_value = "both")]
    state: String,
    /// The PostgreSQL server of `--state postgres`.
    #[arg(
        long,
        env = "CRAWLKEEPER_TEST_POSTGRES",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    postgres: String,
    /// Every page of the site uses a shared stylesheet, logo and icon
    /// (the test site's `--embeds`): with `--crawl-arg=--requisites` the
    /// crawl fetches those too, counted apart from the pages.
    #[arg(long)]
    embeds: bool,
    /// Serve the site over HTTPS (the crawler negotiates HTTP/2 by ALPN),
    /// its throw-away authority passed to the crawler as `--ca-cert`.
    #[arg(long)]
    tls: bool,
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

/// The concurrency of the fast scenarios (and of `memory`).
pub const FAST: &[&str] = &[
    "--per-host",
    "64",
    "--max-workers",
    "64",
    "--max-load",
    "100",
];
/// The concurrency of the latency-bound scenarios (and of each process of
/// `shards`).
pub const POLITE: &[&str] = &[
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
    /// Of the responses, page requisites (`"via": "embed"`).
    requisites: u64,
    wall: Duration,
    cpu: Duration,
    max_rss_kb: i64,
    /// CPU of the crawler itself, sampled (its children not included).
    own_cpu: Duration,
    /// CPU of the crawler's children (its processors), sampled.
    children_cpu: Duration,
    children: usize,
}

/// Runs the engine benchmark.
pub fn run(args: EngineArgs) -> Result<()> {
    let dir = binaries_dir()?;
    let states: Vec<&str> = match args.state.as_str() {
        "both" => vec!["memory", "sqlite"],
        "memory" => vec!["memory"],
        "sqlite" => vec!["sqlite"],
        "postgres" => vec!["postgres"],
        other => bail!("unknown state '{other}' (memory, sqlite, both, postgres)"),
    };
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
        let scenario = Scenario {
            pages: args.pages.unwrap_or(scenario.pages),
            ..scenario
        };
        // Runs alternate between the states, so that drift in the machine's
        // speed falls on both alike.
        let mut runs: Vec<Vec<Measure>> = vec![Vec::new(); states.len()];
        for _ in 0..args.runs {
            for (k, state) in states.iter().enumerate() {
                runs[k].push(run_once(
                    &dir,
                    &scenario,
                    args.page_bytes,
                    args.embeds,
                    args.tls,
                    state,
                    &crawl_args(&args, state),
                )?);
            }
        }
        let mut rates = Vec::new();
        for (state, mut runs) in states.iter().zip(runs) {
            runs.sort_by_key(|m| m.wall);
            let m = runs[runs.len() / 2];
            let rate = m.pages as f64 / m.wall.as_secs_f64();
            rates.push(rate);
            println!(
                "{:<12} state={:<6} {} hosts={:<4} pages={:<6} wall={:>6.2}s rate={:>7.0} pages/s cpu={:>6.3}s \
                 cpu/1000 pages={:.4}s peak_rss={:.1} MB (median of {})",
                scenario.name,
                state,
                if args.tls { "https" } else { "http " },
                scenario.hosts,
                m.pages,
                m.wall.as_secs_f64(),
                rate,
                m.cpu.as_secs_f64(),
                m.cpu.as_secs_f64() * 1000.0 / m.pages as f64,
                m.max_rss_kb as f64 / 1024.0,
                runs.len()
            );
            if m.requisites > 0 {
                let responses = (m.pages + m.requisites) as f64;
                println!(
                    "{:<12} requisites={} responses={} cpu/1000 responses={:.3}s",
                    scenario.name,
                    m.requisites,
                    m.pages + m.requisites,
                    m.cpu.as_secs_f64() * 1000.0 / responses,
                );
            }
            if m.children > 0 {
                let crawler = m.own_cpu.as_secs_f64();
                let children = m.children_cpu.as_secs_f64();
                println!(
                    "{:<12} {} processor processes: cpu={children:.2}s cpu/1000 pages={:.3}s; \
                     the crawler itself cpu={crawler:.2}s cpu/1000 pages={:.3}s",
                    scenario.name,
                    m.children,
                    children * 1000.0 / m.pages as f64,
                    crawler * 1000.0 / m.pages as f64,
                );
            }
            if let Some(ideal) = scenario.ideal_rate {
                println!(
                    "{:<12} {:.2} of the ideal {ideal:.0} pages/s",
                    scenario.name,
                    rate / ideal
                );
            }
        }
        if rates.len() == 2 {
            println!(
                "{:<12} the SQLite store keeps {:.0}% of the in-memory rate",
                scenario.name,
                100.0 * rates[1] / rates[0]
            );
        }
    }
    Ok(())
}

/// The extra arguments of `crawl` for `state`.
fn crawl_args(args: &EngineArgs, state: &str) -> Vec<String> {
    let mut extra = args.crawl_arg.clone();
    if state == "postgres" {
        extra.extend(["--store".to_owned(), args.postgres.clone()]);
    }
    extra
}

fn run_once(
    dir: &Path,
    s: &Scenario,
    page_bytes: usize,
    embeds: bool,
    tls: bool,
    state: &str,
    extra: &[String],
) -> Result<Measure> {
    let work = std::env::temp_dir().join(format!("crawlkeeper-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let ca = work.join("site-ca.pem");
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
        .args(embeds.then_some("--embeds"))
        .args(tls.then_some("--tls"))
        .args(tls.then_some("--ca-out"))
        .args(tls.then_some(&ca))
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the test site")?;
    let origins = read_origins(&mut site)?;
    let out = work.join("out.jsonl");
    let mut cmd = Command::new(dir.join("crawlkeeper"));
    cmd.current_dir(&work);
    cmd.args(["crawl", "--follow", "--quiet", "--out"])
        .arg(&out)
        .args(s.crawl_args)
        .args(tls.then_some("--ca-cert"))
        .args(tls.then_some(&ca))
        .args((state == "memory").then_some("--no-state"))
        .args(extra)
        .args(origins.iter().map(|o| format!("{o}/")));
    let started = Instant::now();
    let crawler = cmd.spawn().context("starting the crawler")?;
    let sampler = crate::children::ChildrenCpu::start(crawler.id());
    let (status, cpu, max_rss_kb) = wait_with_rusage(crawler.id())?;
    // Before the sampler is joined: it sleeps up to 100 ms between samples.
    let wall = started.elapsed();
    let (own_cpu, children_cpu, children) = sampler.finish();
    stop(site);
    if status != 0 {
        bail!("crawler exited with status {status}");
    }
    let (mut pages, mut requisites) = (0u64, 0u64);
    for line in BufReader::new(std::fs::File::open(&out)?).lines() {
        if line?.contains(r#""via":"embed""#) {
            requisites += 1;
        } else {
            pages += 1;
        }
    }
    let expected = u64::from(s.pages + 1) * s.hosts as u64;
    // Without --requisites, the shared stylesheet and icon of --embeds are
    // links like others: a page more each.
    if pages < expected || (!embeds && pages != expected) {
        bail!(
            "crawled {pages} pages, expected {expected} (records kept in {})",
            out.display()
        );
    }
    std::fs::remove_dir_all(&work).ok();
    Ok(Measure {
        pages,
        requisites,
        wall,
        cpu,
        max_rss_kb,
        own_cpu,
        children_cpu,
        children,
    })
}
