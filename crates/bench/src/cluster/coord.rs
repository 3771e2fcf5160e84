//! Coordination cost: ZooKeeper packets each node's session sends per
//! second while the cluster crawls, interval by interval.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::failover::wait_until;
use super::lab::{Lab, Site};
use super::nodes::{Group, Node, role};
use super::sys::{connections, four_letter, socket_owners};
use super::{Beat, ClusterArgs, DEADLINE};

/// ZooKeeper packets received per node process, and the pages crawled, at
/// one instant.
#[derive(Debug, Clone)]
struct Sample {
    at: Instant,
    pages: usize,
    by_pid: HashMap<u32, u64>,
}

/// Runs the coordination part with `beat`: samples ZooKeeper's `cons` every
/// `--coord-every` seconds for `--coord-secs` while the cluster crawls.
pub(super) fn run(lab: &Lab, args: &ClusterArgs, beat: &Beat) -> Result<()> {
    println!(
        "\ncoordination cost, heartbeat {} ({}): 2 Runners + 1 backup crawl {} hosts × {} pages \
         (20 ms per response); ZooKeeper packets received from each node's session (`cons` \
         recved, pings included, each connection traced to its process), per node per second",
        beat.name,
        beat.describe(),
        args.coord_hosts,
        args.coord_pages
    );
    let site = lab.site(args.coord_hosts, args.coord_pages, 20, false)?;
    let mut group = Group::start(lab, "coord", 2, 1, beat)?;
    let formed = group.formed()?;
    let roles: BTreeMap<u32, String> = group
        .nodes
        .iter()
        .map(|n| (n.pid(), role(&formed, &n.name)))
        .collect();
    group.submit(&site.seeds(), 2, false)?;
    wait_until(DEADLINE, || site.site.log().len() > 100)?;
    let zk = lab.zk.address();
    let pids: Vec<u32> = group.nodes.iter().map(Node::pid).collect();
    let started = Instant::now();
    let mut samples = vec![sample(zk, &pids, &site)?];
    let every = Duration::from_secs(args.coord_every.max(1));
    let count = (args.coord_secs / args.coord_every.max(1)).max(1);
    for k in 1..=count {
        let next = started + every * u32::try_from(k)?;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        samples.push(sample(zk, &pids, &site)?);
    }
    if samples.last().map(|s| s.pages) == samples.get(samples.len() - 2).map(|s| s.pages) {
        println!("  warning: the crawl stopped before the last interval (grow --coord-pages)");
    }
    print_coord_table(&samples, &roles, started);
    println!("PostgreSQL deadlocks during this crawl: {}", group.stop()?);
    Ok(())
}

/// One row per interval: pages, and packets per node per second by role.
fn print_coord_table(samples: &[Sample], roles: &BTreeMap<u32, String>, started: Instant) {
    println!(
        "\n| interval | pages crawled by its end | pages/s | Runner ops/s per node \
         | backup ops/s per node | all nodes ops/s per node |"
    );
    println!("|---|---|---|---|---|---|");
    let mut rates = Vec::new();
    for w in samples.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let secs = b.at.duration_since(a.at).as_secs_f64();
        let rate_of = |wanted: Option<&str>| {
            let pids: Vec<u32> = roles
                .iter()
                .filter(|(_, r)| wanted.is_none_or(|w| r.as_str() == w))
                .map(|(p, _)| *p)
                .collect();
            let ops: u64 = pids
                .iter()
                .map(|p| {
                    let before = a.by_pid.get(p).copied().unwrap_or(0);
                    b.by_pid.get(p).copied().unwrap_or(0).saturating_sub(before)
                })
                .sum();
            ops as f64 / secs / pids.len().max(1) as f64
        };
        let all = rate_of(None);
        rates.push(all);
        println!(
            "| {:.0}–{:.0} s | {} | {:.0} | {:.1} | {:.1} | {:.1} |",
            a.at.duration_since(started).as_secs_f64(),
            b.at.duration_since(started).as_secs_f64(),
            b.pages,
            (b.pages - a.pages) as f64 / secs,
            rate_of(Some("runner")),
            rate_of(Some("backup-runner")),
            all
        );
    }
    if let (Some(first), Some(last)) = (rates.first(), rates.last()) {
        println!(
            "late / early: {:.2} (all nodes, last interval over the first)",
            last / first.max(f64::MIN_POSITIVE)
        );
    }
}

/// Packets received so far from each of `pids`' ZooKeeper sessions.
fn sample(zk: &str, pids: &[u32], site: &Site) -> Result<Sample> {
    let at = Instant::now();
    let cons = four_letter(zk, "cons")?;
    let pages = site.site.log().len();
    let zk_port: u16 = zk
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .context("ZooKeeper's port")?;
    let owners = socket_owners(zk_port, pids)?;
    let mut by_pid = HashMap::new();
    for (port, recved) in connections(&cons) {
        if let Some(pid) = owners.get(&port) {
            *by_pid.entry(*pid).or_insert(0) += recved;
        }
    }
    if by_pid.len() != pids.len() {
        bail!(
            "found ZooKeeper connections of {} of {} nodes in:\n{cons}",
            by_pid.len(),
            pids.len()
        );
    }
    Ok(Sample { at, pages, by_pid })
}
