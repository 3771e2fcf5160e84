//! Scale-out: the latency-bound site crawled by 1, 2, 3 Runners.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use crawlkeeper_cluster::node::share_out;
use crawlkeeper_model::shard_of;
use crawlkeeper_testsite::server::loopback_ip;

use super::lab::Lab;
use super::nodes::Group;
use super::pg_profile::Profile;
use super::sys::{machine_ticks, own_cpu, process_cpu};
use super::{Beat, ClusterArgs, MAX_WORKERS, secs};
use crate::shards::postgres_cpu;

/// What one scale-out run measured.
#[derive(Debug, Clone)]
struct ScaleRun {
    pages: usize,
    /// From `submit` to the last request's response.
    wall: Duration,
    /// From `submit` to the first request.
    start: Duration,
    /// Hosts of the largest Runner's shards.
    largest: usize,
    nodes_cpu: Duration,
    postgres_cpu: Duration,
    /// The CPU of the backends serving this run's database only (what
    /// another database's work on the same server cannot blur).
    backends_cpu: Duration,
    /// The CPU of the nodes, PostgreSQL and the site over the machine's
    /// cores × the time `submit --wait` took.
    share: f64,
    /// The machine's busy ticks over all its ticks meanwhile.
    busy: f64,
    /// Deadlocks PostgreSQL found in the run's database.
    deadlocks: i64,
    /// Where the run's database's work went.
    profile: Profile,
}

impl ScaleRun {
    /// Pages per second.
    fn rate(&self) -> f64 {
        self.pages as f64 / self.wall.as_secs_f64()
    }
}

/// Runs the scale-out part: each Runner count `--scale-runs` times, alternating.
pub(super) fn run(lab: &Lab, args: &ClusterArgs) -> Result<()> {
    println!(
        "\nscale-out: {} hosts × {} pages, {} ms per response, every host's / a seed, {} shards, --per-host 1 \
         --max-load 100, --max-workers {MAX_WORKERS} per node, no backups, the node's default \
         heartbeat; submit --wait, pages/s = distinct pages requested / (submit → last request's \
         response), median of {}",
        args.scale_hosts,
        args.scale_pages,
        args.scale_delay_ms,
        match args.scale_shards {
            0 => "one per Runner".to_owned(),
            n => n.to_string(),
        },
        args.scale_runs
    );
    let mut by_count: Vec<(u32, Vec<ScaleRun>)> = args
        .scale_runners
        .iter()
        .map(|&r| (r, Vec::new()))
        .collect();
    for _ in 0..args.scale_runs {
        // Alternating, so that drift in the machine's speed falls on all alike.
        for (runners, runs) in &mut by_count {
            let r = scale_once(lab, args, *runners)?;
            println!(
                "  runners={runners} pages={} wall={} rate={:.0} pages/s",
                r.pages,
                secs(r.wall),
                r.rate()
            );
            runs.push(r);
        }
    }
    println!(
        "\n| Runners | pages | wall | submit → first request | largest Runner's share | pages/s | vs 1 Runner | nodes CPU / 1,000 pages \
         | PostgreSQL CPU / 1,000 pages | its database's backends / 1,000 pages | CPU used (nodes + PostgreSQL + site) | machine CPU busy | PostgreSQL deadlocks |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let cores = cores();
    let mut base = None;
    let mut profiles = Vec::new();
    for (runners, mut runs) in by_count {
        runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
        let Some(m) = runs.get(runs.len() / 2).cloned() else {
            continue;
        };
        profiles.push((runners, m.pages, m.profile.clone()));
        let base = *base.get_or_insert(m.rate());
        let per_k = |d: Duration| d.as_secs_f64() * 1000.0 / m.pages as f64;
        println!(
            "| {runners} | {} | {} | {} | {} hosts ({:.2}× the mean) | {:.0} | {:.2}× | {:.3} s | {:.3} s | {:.3} s | {:.0}% of {cores} cores | {:.0}% | {} |",
            m.pages,
            secs(m.wall),
            secs(m.start),
            m.largest,
            m.largest as f64 * f64::from(runners) / args.scale_hosts as f64,
            m.rate(),
            m.rate() / base,
            per_k(m.nodes_cpu),
            per_k(m.postgres_cpu),
            per_k(m.backends_cpu),
            m.share * 100.0,
            m.busy * 100.0,
            m.deadlocks
        );
    }
    for (runners, pages, profile) in profiles {
        profile.print(
            &format!("PostgreSQL's work, {runners} Runner(s), the median run"),
            pages,
            12,
        );
    }
    Ok(())
}

/// One crawl of the whole site by `runners` Runners, through `submit --wait`.
fn scale_once(lab: &Lab, args: &ClusterArgs, runners: u32) -> Result<ScaleRun> {
    let delay = Duration::from_millis(args.scale_delay_ms);
    let site = lab.site(
        args.scale_hosts,
        args.scale_pages,
        args.scale_delay_ms,
        false,
    )?;
    let mut group = Group::start(lab, "scale", runners, 0, &Beat::defaults())?;
    group.formed()?;
    let pg_before = postgres_cpu()?;
    let sampler = BackendSampler::start(&group.db)?;
    let own_before = own_cpu();
    let nodes_before: Duration = group.nodes.iter().map(|n| process_cpu(n.pid())).sum();
    let (busy_before, total_before) = machine_ticks();
    let started = Instant::now();
    let shards = match args.scale_shards {
        0 => runners,
        n => n,
    };
    group.submit(&site.seeds(), shards, true)?;
    let submitted = started.elapsed();
    let (busy_after, total_after) = machine_ticks();
    let postgres_cpu = postgres_cpu()?.saturating_sub(pg_before);
    let backends_cpu = sampler.stop();
    let site_cpu = own_cpu().saturating_sub(own_before);
    let nodes_cpu = group
        .nodes
        .iter()
        .map(|n| process_cpu(n.pid()))
        .sum::<Duration>()
        .saturating_sub(nodes_before);
    let deadlocks = group.stop()?;
    let profile = Profile::read(&group.db)?;
    let (pages, last) = site.pages_requested();
    if pages != site.expected_pages() {
        bail!(
            "{runners} Runners requested {pages} pages, expected {}",
            site.expected_pages()
        );
    }
    let (first, last) = last.context("no request")?;
    Ok(ScaleRun {
        pages,
        wall: last.duration_since(started) + delay,
        start: first.duration_since(started),
        largest: largest_share(args.scale_hosts, shards, runners),
        nodes_cpu,
        postgres_cpu,
        backends_cpu,
        share: (nodes_cpu + postgres_cpu + site_cpu).as_secs_f64()
            / (submitted.as_secs_f64() * cores() as f64),
        busy: busy_after.saturating_sub(busy_before) as f64
            / total_after.saturating_sub(total_before).max(1) as f64,
        deadlocks,
        profile,
    })
}

/// Hosts of the largest Runner's share when `submit` places `shards`
/// shards of the site's `hosts` hosts (every one a seed) on `runners`
/// Runners: by the same rule ([`share_out`], each shard weighing its
/// seeds' hosts).
fn largest_share(hosts: usize, shards: u32, runners: u32) -> usize {
    let mut sizes = vec![0u64; shards as usize];
    for h in 0..hosts {
        sizes[shard_of(&loopback_ip(h).to_string(), shards) as usize] += 1;
    }
    let Some(to) = share_out(&sizes, runners as usize) else {
        return 0;
    };
    let mut shares = vec![0u64; runners as usize];
    for (size, r) in sizes.iter().zip(to) {
        shares[r] += size;
    }
    shares.into_iter().max().unwrap_or(0) as usize
}

/// The machine's cores.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Samples the CPU of the backends serving one database while a run
/// lasts: the nodes open and close their sessions with the job, so a
/// look at the start and one at the end would miss them. A backend's
/// CPU counts from its first sample (or from zero if it opened during
/// the run) to its last; what a backend uses in its last 20 ms is missed.
struct BackendSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Duration>,
}

impl BackendSampler {
    fn start(db: &super::lab::Database) -> Result<Self> {
        let first: std::collections::HashMap<u32, Duration> = db
            .backends()?
            .into_iter()
            .map(|pid| (pid, process_cpu(pid)))
            .collect();
        let name = db.name.clone();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut last: std::collections::HashMap<u32, Duration> =
                std::collections::HashMap::new();
            loop {
                let done = stopping.load(std::sync::atomic::Ordering::Acquire);
                for pid in super::lab::backends_of(&name).unwrap_or_default() {
                    // A backend gone meanwhile reads as zero.
                    let cpu = process_cpu(pid);
                    let seen = last.entry(pid).or_default();
                    *seen = (*seen).max(cpu);
                }
                if done {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            last.iter()
                .map(|(pid, cpu)| cpu.saturating_sub(first.get(pid).copied().unwrap_or_default()))
                .sum()
        });
        Ok(Self { stop, thread })
    }

    fn stop(self) -> Duration {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.thread.join().unwrap_or_default()
    }
}
