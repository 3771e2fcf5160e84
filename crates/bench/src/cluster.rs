//! `crawlkeeper-bench cluster`: the cluster as a user runs it. Real
//! `crawlkeeper node` processes on a ZooKeeper of the benchmark's own and
//! a PostgreSQL database per run crawl the test site, served in this
//! process so that its request log's instants and the instant of a
//! `kill -9` are read on one monotonic clock. Each node sends from a
//! loopback address of its own (`--bind-address 127.0.9.<i>`), so the
//! log tells which node asked. Three parts:
//!
//! - `failover`: 3 nodes (2 Runners, 1 backup) crawl a job of 2 shards;
//!   once the victim Runner has made some requests it is killed with
//!   SIGKILL, and the time to the first request another node sends to one
//!   of the victim's hosts is read from the site's log. The nodes' log
//!   lines (stamped when read) give the breakdown: when a node judged the
//!   victim dead, when the heir's engine resumed the crawl.
//! - `scale`: the latency-bound site of `shards` crawled by 1, 2, 3
//!   Runners (no backups) through `submit --wait`: pages/s and the ratio
//!   to one Runner.
//! - `coord`: ZooKeeper requests per node per second while 2 Runners and
//!   a backup crawl, from ZooKeeper's `cons` (packets received per
//!   connection, each connection traced to its node's process through
//!   `/proc`), interval by interval, so that early and late compare.

mod coord;
mod failover;
mod lab;
mod nodes;
mod pg_profile;
mod scale;
mod sys;

use std::time::Duration;

use anyhow::Result;
use clap::{Args, ValueEnum};

use lab::Lab;

/// Options of `crawlkeeper-bench cluster`.
#[derive(Args, Debug)]
pub struct ClusterArgs {
    /// Parts to run.
    #[arg(
        long,
        value_enum,
        default_value = "failover,scale,coord",
        value_delimiter = ','
    )]
    parts: Vec<Part>,
    /// Heartbeat settings of the fail-over and coordination parts: fast
    /// (update-time 100ms, update-timeout 500ms, heart-rhythm-timeout 1),
    /// seed (the seed's defaults: 500ms, 2s, 3) or both.
    #[arg(long, value_enum, default_value = "both")]
    heartbeat: HeartbeatChoice,
    /// Fail-overs measured per heartbeat setting.
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// The nodes' ZooKeeper session timeout (default: 4s with fast
    /// heartbeats, 10s with the seed's: longer than the heartbeat's death
    /// time, so that the heartbeat is what is measured).
    #[arg(long, value_parser = crawlkeeper_model::parse_duration)]
    session_timeout: Option<Duration>,
    /// Hosts of the fail-over site (their pages link to the next host's).
    #[arg(long, default_value_t = 12)]
    failover_hosts: usize,
    /// Pages per host of the fail-over site.
    #[arg(long, default_value_t = 400)]
    failover_pages: u32,
    /// Server delay per response of the fail-over site, in milliseconds.
    #[arg(long, default_value_t = 30)]
    failover_delay_ms: u64,
    /// Page requests the victim makes before it is killed.
    #[arg(long, default_value_t = 100)]
    victim_requests: usize,
    /// Print each fail-over's timeline: the nodes' log lines from the
    /// kill to the first request.
    #[arg(long)]
    timeline: bool,
    /// Runner counts of the scale-out part.
    #[arg(long, default_value = "1,2,3", value_delimiter = ',')]
    scale_runners: Vec<u32>,
    /// Hosts of the scale-out site.
    #[arg(long, default_value_t = 400)]
    scale_hosts: usize,
    /// Pages per host of the scale-out site.
    #[arg(long, default_value_t = 20)]
    scale_pages: u32,
    /// Server delay per response of the scale-out site, in milliseconds.
    #[arg(long, default_value_t = 50)]
    scale_delay_ms: u64,
    /// Repetitions of each Runner count (the median is reported).
    #[arg(long, default_value_t = 3)]
    scale_runs: usize,
    /// Shards of the scale-out job, whatever the Runner count (`submit`
    /// gives each Runner a share of about as many hosts); 0 for one shard
    /// per Runner, where each Runner's hosts are what the hash gives it.
    #[arg(long, default_value_t = 12)]
    scale_shards: u32,
    /// Seconds the coordination cost is sampled over.
    #[arg(long, default_value_t = 30)]
    coord_secs: u64,
    /// Seconds between two samples of the coordination cost.
    #[arg(long, default_value_t = 5)]
    coord_every: u64,
    /// Hosts of the coordination site (big enough to outlast the sampling).
    #[arg(long, default_value_t = 64)]
    coord_hosts: usize,
    /// Pages per host of the coordination site.
    #[arg(long, default_value_t = 2000)]
    coord_pages: u32,
    /// The PostgreSQL server (a database is created per run on it).
    #[arg(
        long,
        env = "CRAWLKEEPER_TEST_POSTGRES",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    postgres: String,
}

/// A part of the cluster benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Part {
    /// Time from `kill -9` of a Runner to the cluster's next request to its hosts.
    Failover,
    /// Pages/s of 1, 2, 3 Runners.
    Scale,
    /// ZooKeeper requests per node per second.
    Coord,
}

/// Which heartbeat settings to run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HeartbeatChoice {
    /// update-time 100ms, update-timeout 500ms, heart-rhythm-timeout 1.
    Fast,
    /// The seed's defaults: 500ms, 2s, 3.
    Seed,
    /// Both, fast first.
    Both,
}

/// The job options of every part: the whole site, one request per host.
const JOB: &[&str] = &[
    "--follow",
    "--scope",
    "any",
    "--depth",
    "1000",
    "--per-host",
    "1",
    "--max-load",
    "100",
];
/// Requests in flight per job per node (as each process of `shards`).
const MAX_WORKERS: &str = "50";
/// The longest any wait of this benchmark may take.
const DEADLINE: Duration = Duration::from_secs(120);

/// A node's heartbeat settings and ZooKeeper session timeout.
#[derive(Debug, Clone)]
struct Beat {
    name: &'static str,
    update_time: Duration,
    update_timeout: Duration,
    rhythm: u32,
    session_timeout: Duration,
}

impl Beat {
    /// The settings `choice` names; `session` overrides the session timeout.
    fn chosen(choice: HeartbeatChoice, session: Option<Duration>) -> Vec<Beat> {
        let fast = Beat {
            name: "fast",
            update_time: Duration::from_millis(100),
            update_timeout: Duration::from_millis(500),
            rhythm: 1,
            session_timeout: session.unwrap_or(Duration::from_secs(4)),
        };
        let seed = Beat {
            name: "seed",
            update_time: Duration::from_millis(500),
            update_timeout: Duration::from_secs(2),
            rhythm: 3,
            session_timeout: session.unwrap_or(Duration::from_secs(10)),
        };
        match choice {
            HeartbeatChoice::Fast => vec![fast],
            HeartbeatChoice::Seed => vec![seed],
            HeartbeatChoice::Both => vec![fast, seed],
        }
    }

    /// The node's defaults (the seed's heartbeat, a 4 s session).
    fn defaults() -> Beat {
        Beat {
            session_timeout: Duration::from_secs(4),
            ..Beat::chosen(HeartbeatChoice::Seed, None).remove(0)
        }
    }

    /// The options of `crawlkeeper node`.
    fn node_args(&self) -> Vec<String> {
        vec![
            "--update-time".into(),
            ms(self.update_time),
            "--update-timeout".into(),
            ms(self.update_timeout),
            "--heart-rhythm-timeout".into(),
            self.rhythm.to_string(),
            "--session-timeout".into(),
            ms(self.session_timeout),
        ]
    }

    /// The settings as the options read.
    fn describe(&self) -> String {
        format!(
            "--update-time {} --update-timeout {} --heart-rhythm-timeout {} --session-timeout {}",
            ms(self.update_time),
            ms(self.update_timeout),
            self.rhythm,
            ms(self.session_timeout)
        )
    }
}

/// `d` as an option reads it (`500ms`).
fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// Runs the cluster benchmark.
pub fn run(args: ClusterArgs) -> Result<()> {
    let lab = Lab::start(&args.postgres)?;
    println!(
        "cluster: ZooKeeper {} (a server of this run), PostgreSQL {}, nodes send from 127.0.9.<i>",
        lab.zk.address(),
        lab.server
    );
    let beats = Beat::chosen(args.heartbeat, args.session_timeout);
    if args.parts.contains(&Part::Failover) {
        failover::run(&lab, &args, &beats)?;
    }
    if args.parts.contains(&Part::Scale) {
        scale::run(&lab, &args)?;
    }
    if args.parts.contains(&Part::Coord) {
        for beat in &beats {
            coord::run(&lab, &args, beat)?;
        }
    }
    Ok(())
}

/// The middle value (the upper one of an even count).
fn median<T: Copy + Ord>(values: &[T]) -> Option<T> {
    let mut v = values.to_vec();
    v.sort();
    v.get(v.len() / 2).copied()
}

/// `d` in seconds, two decimals.
fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}
