//! Fail-over of real processes: the time from `kill -9` of a Runner to
//! the first request the cluster sends to one of its hosts, with the
//! breakdown the nodes' log lines and PostgreSQL give.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use crawlkeeper_model::shard_of;
use crawlkeeper_testsite::LogEntry;
use crawlkeeper_testsite::server::loopback_ip;

use super::lab::{Lab, Site};
use super::nodes::{Group, Node, role, shards_of, with_role};
use super::sys::socket_owners;
use super::{Beat, ClusterArgs, DEADLINE, median, ms, secs};

/// What one fail-over measured, as durations after the kill.
#[derive(Debug, Clone)]
struct Failover {
    /// The first request another node sent to one of the victim's hosts.
    first: Duration,
    /// Its target (`/robots.txt` or a page).
    target: String,
    /// Who sent it.
    sender: String,
    /// The first "runner dead" line, and the node that wrote it.
    judged: Option<(Duration, String)>,
    /// The heir's first line after the kill that says it resumed or took
    /// shards (its engine has read the shards' state).
    resumed: Option<Duration>,
    /// The victim's shards and hosts.
    shards: BTreeSet<u32>,
    hosts: usize,
    /// Requests from the victim's address that arrived after the kill.
    after_death: usize,
    /// The victim's PostgreSQL sessions after the kill.
    lingering: Lingering,
    /// When the heir ended the victim's session holding the shard's lock
    /// (it found the dead holder live, and waits out the lease bound).
    terminated: Option<Duration>,
    /// Deadlocks PostgreSQL found in the run's database.
    deadlocks: i64,
}

impl Failover {
    /// One line of a run.
    fn describe(&self) -> String {
        let judged = self
            .judged
            .as_ref()
            .map_or("-".into(), |(d, node)| format!("{} by {node}", secs(*d)));
        let mut line = format!(
            "first request {} ({} to a victim host, by {}); judged dead {judged}; the dead node's \
             PostgreSQL sessions gone {}; heir resumed {}; victim shards {:?} ({} hosts); \
             PostgreSQL deadlocks {}",
            secs(self.first),
            self.target,
            self.sender,
            self.lingering.gone.map_or("-".into(), secs),
            self.resumed.map_or("-".into(), secs),
            self.shards,
            self.hosts,
            self.deadlocks
        );
        if let Some(d) = self.terminated {
            line += &format!(
                "; the heir found the dead holder live and ended its session at {}, then waited \
                 the lease bound",
                secs(d)
            );
        }
        if self.after_death > 0 {
            line += &format!(
                "; {} requests from the victim after the kill",
                self.after_death
            );
        }
        line
    }
}

/// The dead node's PostgreSQL sessions, as the server saw them after the
/// kill: a session holding a shard's advisory lock makes the heir's claim
/// find the holder live.
#[derive(Debug, Clone, Default)]
struct Lingering {
    /// When the first look was taken, after the kill.
    looked: Duration,
    /// The sessions at the first look: state, wait, query.
    first_look: Vec<String>,
    /// When none was left, after the kill.
    gone: Option<Duration>,
}

/// Watches, on a thread of its own, the sessions of `db_url` that no live
/// node (`live`) owns (traced by their client ports), until none is left.
fn watch_lingering(
    db_url: String,
    live: Vec<u32>,
    from: Instant,
) -> std::thread::JoinHandle<Lingering> {
    std::thread::spawn(move || {
        let mut found = Lingering::default();
        let Ok(mut c) = postgres::Client::connect(&db_url, postgres::NoTls) else {
            return found;
        };
        let end = from + Duration::from_secs(10);
        let mut first = true;
        while Instant::now() < end {
            let looked = from.elapsed();
            let Ok(sessions) = orphan_sessions(&mut c, &live) else {
                return found;
            };
            if first {
                found.looked = looked;
                found.first_look = sessions.clone();
                first = false;
            }
            if sessions.is_empty() {
                found.gone = Some(looked);
                return found;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        found
    })
}

/// The client sessions of the database that none of `live` owns.
fn orphan_sessions(c: &mut postgres::Client, live: &[u32]) -> Result<Vec<String>> {
    let rows = c.query(
        "SELECT a.pid, a.client_port, a.state, coalesce(a.wait_event_type, '') || ':' ||
                coalesce(a.wait_event, ''),
                coalesce(extract(epoch FROM now() - a.state_change)::float8, 0),
                left(a.query, 70),
                EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid
                        AND l.locktype = 'advisory' AND l.granted)
           FROM pg_stat_activity a
          WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
            AND a.backend_type = 'client backend'",
        &[],
    )?;
    let owners = socket_owners(5432, live)?;
    Ok(rows
        .iter()
        .filter(|r| {
            let port: Option<i32> = r.get(1);
            port.and_then(|p| u16::try_from(p).ok())
                .is_none_or(|p| !owners.contains_key(&p))
        })
        .map(|r| {
            let pid: i32 = r.get(0);
            let state: Option<String> = r.get(2);
            let wait: String = r.get(3);
            let since: f64 = r.get(4);
            let query: Option<String> = r.get(5);
            let lock: bool = r.get(6);
            format!(
                "pid {pid}{}: {} for {:.0} ms, wait {wait}, {:?}",
                if lock {
                    " (holds the shard's lock)"
                } else {
                    ""
                },
                state.unwrap_or_default(),
                since * 1000.0,
                query.unwrap_or_default()
            )
        })
        .collect())
}

/// Runs the fail-over part: `--runs` fail-overs per heartbeat setting.
pub(super) fn run(lab: &Lab, args: &ClusterArgs, beats: &[Beat]) -> Result<()> {
    println!(
        "\nfail-over: 3 nodes (2 Runners, 1 backup), a job of 2 shards over {} hosts × {} pages \
         (links to the next host), {} ms per response, --per-host 1; the victim (crawler_1) is \
         killed with SIGKILL after {} page requests; measured: the first request another node \
         sends to one of its hosts, from the site's log",
        args.failover_hosts, args.failover_pages, args.failover_delay_ms, args.victim_requests
    );
    let mut rows = Vec::new();
    for beat in beats {
        println!("heartbeat {}: {}", beat.name, beat.describe());
        let mut runs = Vec::new();
        for run in 1..=args.runs {
            let f = failover_once(lab, args, beat)?;
            println!("  run {run:>2}: {}", f.describe());
            runs.push(f);
        }
        rows.push((beat.clone(), runs));
    }
    print_failover_table(&rows);
    Ok(())
}

/// The figures per heartbeat setting: median, min and max.
fn print_failover_table(rows: &[(Beat, Vec<Failover>)]) {
    println!(
        "\n| heartbeat | update-time | update-timeout | heart-rhythm-timeout | session-timeout | runs \
         | kill → first request: median | min | max | target ≤ 1.0 s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (beat, runs) in rows {
        let firsts: Vec<Duration> = runs.iter().map(|f| f.first).collect();
        let (Some(med), Some(min), Some(max)) = (
            median(&firsts),
            firsts.iter().min().copied(),
            firsts.iter().max().copied(),
        ) else {
            continue;
        };
        let met = if med <= Duration::from_secs(1) {
            "met"
        } else {
            "missed"
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {met} |",
            beat.name,
            ms(beat.update_time),
            ms(beat.update_timeout),
            beat.rhythm,
            ms(beat.session_timeout),
            runs.len(),
            secs(med),
            secs(min),
            secs(max),
        );
    }
    print_breakdown(rows);
}

/// Where the time went, median of the runs: the kill to the judgement,
/// the judgement to the heir's engine resuming, that to the first request;
/// and how often the dead node's PostgreSQL session outlived the heir's claim.
fn print_breakdown(rows: &[(Beat, Vec<Failover>)]) {
    println!(
        "\n| heartbeat | kill → judged dead | judged → heir's engine resumed | resumed → first request \
         | dead node's PostgreSQL sessions gone (median, max) | runs where the heir found the dead \
         holder live (+1 s lease bound) | PostgreSQL deadlocks (all runs) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (beat, runs) in rows {
        let steps = |f: &Failover| {
            let judged = f.judged.as_ref()?.0;
            let resumed = f.resumed?;
            Some((
                judged,
                resumed.saturating_sub(judged),
                f.first.saturating_sub(resumed),
            ))
        };
        let steps: Vec<_> = runs.iter().filter_map(steps).collect();
        let part = |k: usize| {
            let v: Vec<Duration> = steps.iter().map(|s| [s.0, s.1, s.2][k]).collect();
            median(&v).map_or("-".into(), secs)
        };
        let gone: Vec<Duration> = runs.iter().filter_map(|f| f.lingering.gone).collect();
        println!(
            "| {} | {} | {} | {} | {}, {} | {} of {} | {} |",
            beat.name,
            part(0),
            part(1),
            part(2),
            median(&gone).map_or("-".into(), secs),
            gone.iter().max().copied().map_or("-".into(), secs),
            runs.iter().filter(|f| f.terminated.is_some()).count(),
            runs.len(),
            runs.iter().map(|f| f.deadlocks).sum::<i64>()
        );
    }
}

/// One fail-over: a fresh site, database and group; the victim killed
/// once it has made `--victim-requests` requests.
fn failover_once(lab: &Lab, args: &ClusterArgs, beat: &Beat) -> Result<Failover> {
    let site = lab.site(
        args.failover_hosts,
        args.failover_pages,
        args.failover_delay_ms,
        true,
    )?;
    let mut group = Group::start(lab, "failover", 2, 1, beat)?;
    let formed = group.formed()?;
    let victim = "crawler_1";
    if role(&formed, victim) != "runner" {
        bail!("{victim} is not a Runner: {formed:#}");
    }
    let heir = with_role(&formed, "backup-runner")
        .pop()
        .context("no backup")?;
    group.submit(&site.seeds(), 2, false)?;
    let victim_address = group.node(victim)?.address;
    wait_until(DEADLINE, || {
        site.requests_from(victim_address) >= args.victim_requests
    })
    .with_context(|| format!("{victim} never made {} requests", args.victim_requests))?;
    let shards = victim_shards(&group, victim)?;
    let hosts: BTreeSet<usize> = (0..site.site.hosts())
        .filter(|&h| shards.contains(&shard_of(&loopback_ip(h).to_string(), 2)))
        .collect();
    let killed_at = Instant::now();
    let index = group
        .nodes
        .iter()
        .position(|n| n.name == victim)
        .context("no victim")?;
    group.nodes[index].kill();
    let live: Vec<u32> = group
        .nodes
        .iter()
        .filter(|n| n.name != victim)
        .map(Node::pid)
        .collect();
    let lingering = watch_lingering(group.db.url.clone(), live, killed_at);
    let first = first_request_after(&site, killed_at, &hosts, victim_address)
        .with_context(|| format!("no request to the victim's hosts\n{}", group.tails()))?;
    let sender = group
        .nodes
        .iter()
        .find(|n| n.address == first.peer)
        .map_or_else(|| first.peer.to_string(), |n| n.name.clone());
    // The lines the kill's consequences were written in, read a moment later.
    std::thread::sleep(Duration::from_millis(50));
    let lines = timeline(&group, killed_at);
    let lingering = lingering.join().unwrap_or_default();
    if args.timeline {
        for look in &lingering.first_look {
            println!(
                "    +{:>5} ms postgres: a session no live node owns: {look}",
                lingering.looked.as_millis()
            );
        }
        for (at, node, text) in &lines {
            if *at <= first.at.duration_since(killed_at) + Duration::from_millis(50) {
                println!("    +{:>5} ms {node}: {text}", at.as_millis());
            }
        }
        println!(
            "    +{:>5} ms site: {} {} from {sender}",
            first.at.duration_since(killed_at).as_millis(),
            first.target,
            loopback_ip(first.host)
        );
    }
    let judged = lines
        .iter()
        .find(|(_, _, t)| t.contains("runner dead"))
        .map(|(at, node, _)| (*at, node.clone()));
    let resumed = lines
        .iter()
        .find(|(_, n, t)| {
            *n == heir && (t.contains("resuming the crawl") || t.contains("took shards"))
        })
        .map(|(at, _, _)| *at);
    let terminated = lines
        .iter()
        .find(|(_, n, t)| *n == heir && t.contains("ended the session of the shard's old holder"))
        .map(|(at, _, _)| *at);
    let after_death = site
        .site
        .log()
        .entries()
        .iter()
        .filter(|e| e.peer == victim_address && e.at > killed_at)
        .count();
    let deadlocks = group.stop()?;
    Ok(Failover {
        first: first.at.duration_since(killed_at),
        target: first.target,
        sender,
        judged,
        resumed,
        shards,
        hosts: hosts.len(),
        after_death,
        lingering,
        terminated,
        deadlocks,
    })
}

/// The victim's shards, ZooKeeper's account and PostgreSQL's agreeing.
fn victim_shards(group: &Group, victim: &str) -> Result<BTreeSet<u32>> {
    let status = group.wait_status("showing the victim's shards", |s| {
        let (assigned, leased) = shards_of(s, victim);
        !assigned.is_empty() && assigned == leased
    })?;
    Ok(shards_of(&status, victim).0)
}

/// Polls `ready` until it holds, for at most `limit`.
pub(super) fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> Result<()> {
    let end = Instant::now() + limit;
    while !ready() {
        if Instant::now() > end {
            bail!("not within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// The first request after `from` to one of `hosts` from another address
/// than `victim`.
fn first_request_after(
    site: &Site,
    from: Instant,
    hosts: &BTreeSet<usize>,
    victim: IpAddr,
) -> Result<LogEntry> {
    let find = || {
        site.site
            .log()
            .entries()
            .into_iter()
            .find(|e| e.at > from && hosts.contains(&e.host) && e.peer != victim)
    };
    wait_until(DEADLINE, || find().is_some())?;
    find().context("the request vanished")
}

/// Every node's lines after `from`: (offset, node, text), in order.
fn timeline(group: &Group, from: Instant) -> Vec<(Duration, String, String)> {
    let mut lines: Vec<(Duration, String, String)> = group
        .nodes
        .iter()
        .flat_map(|n| {
            n.lines_after(from)
                .into_iter()
                .map(|l| (l.at.duration_since(from), n.name.clone(), l.text))
        })
        .collect();
    lines.sort_by_key(|l| l.0);
    lines
}
