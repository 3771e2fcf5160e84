//! A continuous cluster job (`submit --continuous`) as the tests see it:
//! its first pass, the site's log of what was asked when, and its stop.
//! Shared by `tests/it` and the restarts binary.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use tokio::process::Child;

use super::cluster::Cluster;

/// The interval between two fetches of a page (`--revisit-min` and
/// `--revisit-max` alike).
pub const INTERVAL: Duration = Duration::from_secs(4);

/// Every page request in the site's log (not robots.txt), by host and
/// target, with when each came.
pub fn asked(c: &Cluster) -> BTreeMap<(usize, String), Vec<(SystemTime, Instant)>> {
    let mut asked: BTreeMap<_, Vec<_>> = BTreeMap::new();
    for e in c.site.site.log().entries() {
        if e.target != "/robots.txt" {
            asked
                .entry((e.host, e.target.clone()))
                .or_default()
                .push((e.wall, e.at));
        }
    }
    asked
}

/// URLs done in the job's shards, as `status --json` shows them.
pub fn done(status: &serde_json::Value) -> u64 {
    status["jobs"][0]["shards"]
        .as_array()
        .map_or(0, |s| s.iter().filter_map(|s| s["done"].as_u64()).sum())
}

/// Two Runners and a backup crawling 4 hosts of `pages` pages each as a
/// continuous job of `options`, once its first pass is stored: the
/// cluster, its nodes, the job's name and the status at that moment.
pub async fn first_pass(
    name: &str,
    pages: u32,
    options: &[&str],
) -> (Cluster, Vec<Child>, String, serde_json::Value) {
    let c = Cluster::start(name, 2, 1, 2, 4, pages, 5).await;
    first_pass_of(c, &[], options).await
}

/// [`first_pass`] of cluster `c` (two Runners, a backup, two shards),
/// its nodes started with `node_args`.
pub async fn first_pass_of(
    c: Cluster,
    node_args: &[&str],
    options: &[&str],
) -> (Cluster, Vec<Child>, String, serde_json::Value) {
    let c = c.seeding_every_host();
    for shard in 0..2 {
        assert!(!c.hosts_of(shard).is_empty(), "shard {shard} has no host");
    }
    let nodes: Vec<_> = (1..=3).map(|i| c.node_logged(i, node_args)).collect();
    c.formed().await;
    let (code, job, err) = c.submit(options).await;
    assert_eq!(code, 0, "{err}");
    let total = c.total_pages() as u64;
    let s = c
        .wait_status("the first pass stored", |s| done(s) >= total)
        .await;
    (c, nodes, job.trim().to_owned(), s)
}

/// Checks from the site's log that no page was asked again before its
/// [`INTERVAL`] (100 ms for the clocks' reading), none of the job's
/// `total` pages was forgotten, and every request has its one result.
pub async fn check_schedule(c: &Cluster, total: usize) {
    let after = asked(c);
    assert_eq!(after.len(), total, "no page forgotten");
    for ((host, target), times) in &after {
        for pair in times.windows(2) {
            let gap = pair[1].0.duration_since(pair[0].0).unwrap();
            assert!(
                gap + Duration::from_millis(100) >= INTERVAL,
                "host {host} {target} asked again {gap:?} after, before its interval"
            );
        }
    }
    let requests: usize = after.values().map(Vec::len).sum();
    let results: usize = c.site.results().await.values().sum();
    assert_eq!(results, requests, "one result per request");
}

/// `crawlkeeper stop JOB`, then `submit --wait` of the job (submitted
/// with `options`): both exit 0, the latter saying the job stopped.
pub async fn stop_and_wait(c: &Cluster, job: &str, options: &[&str]) {
    let (code, _, err) = c.run(&["stop", job, "--store", &c.site.url]).await;
    assert_eq!(code, 0, "{err}");
    let mut wait = options.to_vec();
    wait.push("--wait");
    let (code, _, err) = c.submit(&wait).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("job {job} stopped")), "{err}");
}
