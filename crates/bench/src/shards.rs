//! Sharded jobs: one job crawled by 1, 2, … processes sharing PostgreSQL
//! (`crawl --shards N --shard I`), on a latency-bound site where adding
//! processes should add throughput: many hosts, one request in flight per
//! host, a fixed delay per response. Reports pages/s of each process count,
//! the speed-up, the crawlers' CPU and PostgreSQL's own CPU.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::engine::POLITE;
use crate::proc::{binaries_dir, read_origins, stop, wait_with_rusage};

/// Options of `crawlkeeper-bench shards`.
#[derive(Args, Debug)]
pub struct ShardsArgs {
    /// Numbers of processes (= shards) to compare.
    #[arg(long, default_value = "1,2", value_delimiter = ',')]
    processes: Vec<u32>,
    /// Hosts of the test site.
    #[arg(long, default_value_t = 400)]
    hosts: usize,
    /// Pages per host.
    #[arg(long, default_value_t = 20)]
    pages: u32,
    /// Server delay per response, in milliseconds.
    #[arg(long, default_value_t = 50)]
    delay_ms: u64,
    /// Repetitions of each process count (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The PostgreSQL server (a database is created per run on it).
    #[arg(
        long,
        env = "CRAWLKEEPER_TEST_POSTGRES",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    postgres: String,
}

#[derive(Debug, Clone, Copy)]
struct Measure {
    pages: u64,
    wall: Duration,
    crawler_cpu: Duration,
    postgres_cpu: Duration,
}

/// Runs the sharded-job benchmark.
pub fn run(args: ShardsArgs) -> Result<()> {
    let dir = binaries_dir()?;
    let mut by_count: Vec<(u32, Vec<Measure>)> =
        args.processes.iter().map(|&p| (p, Vec::new())).collect();
    for _ in 0..args.runs {
        // Alternating, so that drift in the machine's speed falls on all alike.
        for (p, runs) in &mut by_count {
            runs.push(run_once(&dir, &args, *p)?);
        }
    }
    let mut first_rate = None;
    for (p, mut runs) in by_count {
        runs.sort_by_key(|m| m.wall);
        let m = runs[runs.len() / 2];
        let rate = m.pages as f64 / m.wall.as_secs_f64();
        let base = *first_rate.get_or_insert(rate);
        println!(
            "shards processes={p} hosts={} pages={} wall={:.2}s rate={rate:.0} pages/s ({:.2}x) \
             crawler cpu/1000 pages={:.3}s postgres cpu/1000 pages={:.3}s (median of {})",
            args.hosts,
            m.pages,
            m.wall.as_secs_f64(),
            rate / base,
            m.crawler_cpu.as_secs_f64() * 1000.0 / m.pages as f64,
            m.postgres_cpu.as_secs_f64() * 1000.0 / m.pages as f64,
            runs.len()
        );
    }
    Ok(())
}

fn run_once(dir: &Path, args: &ShardsArgs, processes: u32) -> Result<Measure> {
    let db = format!("ck_bench_shards_{}", std::process::id());
    let (server, _) = args
        .postgres
        .rsplit_once('/')
        .context("--postgres is not a URL with a database")?;
    let admin = format!("{server}/postgres");
    let mut c = postgres::Client::connect(&admin, postgres::NoTls)
        .with_context(|| format!("connecting to {admin}"))?;
    // One statement per call: CREATE DATABASE runs outside a transaction.
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))?;
    c.batch_execute(&format!("CREATE DATABASE {db}"))?;
    let store = format!("{server}/{db}");
    let mut site = Command::new(dir.join("crawlkeeper-testsite"))
        .args(["--hosts", &args.hosts.to_string()])
        .args(["--pages", &args.pages.to_string(), "--links", "20"])
        .args(["--delay-ms", &args.delay_ms.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the test site")?;
    let origins = read_origins(&mut site)?;
    let work =
        std::env::temp_dir().join(format!("crawlkeeper-bench-shards-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let pg_before = postgres_cpu()?;
    let started = Instant::now();
    let mut crawlers = Vec::new();
    for shard in 0..processes {
        let mut cmd = Command::new(dir.join("crawlkeeper"));
        cmd.current_dir(&work)
            .args(["crawl", "--follow", "--quiet", "--store", &store])
            .args(["--out", &format!("out-{shard}.jsonl")])
            .args(POLITE);
        if processes > 1 {
            cmd.args([
                "--shards",
                &processes.to_string(),
                "--shard",
                &shard.to_string(),
            ]);
        }
        cmd.args(origins.iter().map(|o| format!("{o}/")));
        crawlers.push(cmd.spawn().context("starting a crawler")?);
    }
    let mut crawler_cpu = Duration::ZERO;
    for crawler in crawlers {
        let (status, cpu, _) = wait_with_rusage(crawler.id())?;
        if status != 0 {
            bail!("a crawler exited with status {status}");
        }
        crawler_cpu += cpu;
    }
    let wall = started.elapsed();
    let postgres_cpu = postgres_cpu()?.saturating_sub(pg_before);
    stop(site);
    let mut pages = 0;
    for shard in 0..processes {
        let f = std::fs::File::open(work.join(format!("out-{shard}.jsonl")))?;
        pages += BufReader::new(f).lines().count() as u64;
    }
    let expected = u64::from(args.pages + 1) * args.hosts as u64;
    if pages != expected {
        bail!(
            "crawled {pages} pages, expected {expected} (in {})",
            work.display()
        );
    }
    std::fs::remove_dir_all(&work).ok();
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))?;
    Ok(Measure {
        pages,
        wall,
        crawler_cpu,
        postgres_cpu,
    })
}

/// CPU used so far by the PostgreSQL server: its postmaster, its live
/// processes, and the processes that ended (counted into the postmaster's
/// children's time when it reaped them).
pub(crate) fn postgres_cpu() -> Result<Duration> {
    let out = Command::new("pgrep")
        .args(["-o", "-x", "postgres"])
        .output()?;
    let postmaster: u32 = String::from_utf8(out.stdout)?
        .trim()
        .parse()
        .context("no postgres process (is the server local?)")?;
    let tick = 1.0 / ticks_per_second();
    let mut ticks = 0u64;
    for entry in std::fs::read_dir("/proc")? {
        let Ok(pid) = entry?.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name, which may hold spaces.
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let f: Vec<&str> = rest.split(' ').collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        // rest[0] is the state (field 3): utime is field 14, so index 11.
        let (ppid, utime, stime, cutime, cstime) =
            (num(1) as u32, num(11), num(12), num(13), num(14));
        if pid == postmaster {
            ticks += utime + stime + cutime + cstime;
        } else if ppid == postmaster {
            ticks += utime + stime;
        }
    }
    Ok(Duration::from_secs_f64(ticks as f64 * tick))
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}
