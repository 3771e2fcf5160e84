//! The cluster under faults, end to end: real `crawlkeeper node`
//! processes paused, killed two at once, their ZooKeeper halted and
//! restarted; and what `submit --wait` and `status --json` tell. Judged
//! from the test site's request log (each node sends from its own
//! loopback address) and the store.

use crate::common;

use std::collections::BTreeSet;
use std::time::Instant;

use common::cluster::{
    Cluster, FAST_HEARTS, HEART_LIMIT, check_members, halt_zookeeper, restart_zookeeper, role,
    send, shards_of,
};
use common::writers::Writers;
use crawlkeeper_testsite::zookeeper::ZkServer;
use serde_json::Value;

/// Heartbeats fast enough that a silent Runner is dead after half a second.
const FAST: &[&str] = &[
    "--update-time",
    "100ms",
    "--update-timeout",
    "500ms",
    "--heart-rhythm-timeout",
    "1",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_runner_taken_over_is_fenced_when_it_wakes_and_rejoins_as_a_backup() {
    // Every host seeded: the paused Runner's hosts are all busy together
    // (found one by one along the site's ring, one of them could be done
    // before the next one starts, and the pause below would never come).
    let c = Cluster::start("clf_zombie", 2, 1, 2, 4, 60, 50)
        .await
        .seeding_every_host();
    let nodes: Vec<_> = (1..=3).map(|i| c.node_logged(i, FAST)).collect();
    c.formed().await;
    let (code, _, err) = c.submit(&[]).await;
    assert_eq!(code, 0, "{err}");
    let s = c
        .wait_status("crawler_1 given a shard", |s| {
            !shards_of(s, "crawler_1").is_empty()
        })
        .await;
    let hosts: Vec<usize> = shards_of(&s, "crawler_1")
        .into_iter()
        .flat_map(|shard| c.hosts_of(shard))
        .collect();
    assert!(!hosts.is_empty(), "crawler_1's shard has hosts: {s:#}");

    // Paused while each of its hosts answers it: no request of its is past
    // the lease gate and not yet on the wire (see docs/guide/durable-state.md).
    c.stop_while_busy(&nodes[0], 1, 10, &hosts).await;
    let stopped_at = Instant::now();
    let sent_before = c.requests_from(1);
    c.wait_status("showing the paused Runner dead", |s| {
        role(s, "crawler_1") == "dead-runner" && role(s, "crawler_3") == "runner"
    })
    .await;
    c.wait_log("the backup crawling the paused Runner's hosts", || {
        c.requests_to(3, &hosts) >= 3
    })
    .await;
    eprintln!(
        "take-over: the backup's first request to the paused Runner's hosts came {:?} after SIGSTOP",
        c.first_request_to(3, &hosts, stopped_at)
            .map(|at| at.duration_since(stopped_at))
    );
    assert!(
        c.site.site.log().len() < c.total_pages(),
        "the Runner wakes mid-crawl"
    );

    let resumed_at = Instant::now();
    send(&nodes[0], libc::SIGCONT);
    let (code, _, err) = c.submit(&["--wait"]).await;
    assert_eq!(code, 0, "the job completes: {err}");
    // Who stored what, from the database: the paused Runner's shard was
    // taken by the backup, and nothing was stored under its lease since;
    // `results --writer` names the node that stored each record.
    let writers = c.check_taken_over("crawler_1", &["crawler_3"]).await;
    check_writers_shown(&c, &writers).await;
    let late = c.requests_since(1, resumed_at);
    assert!(
        late.is_empty(),
        "the fenced Runner sent {late:?} after SIGCONT; its log:\n{}",
        c.node_log(1)
    );
    assert_eq!(c.requests_from(1), sent_before, "nothing while paused");
    // What it had in flight when paused is fetched again by the backup: at
    // most a request per host of its shard. Its writes after the take-over
    // are fenced: every URL has one result.
    c.check_complete(hosts.len()).await;

    let s = c
        .wait_status("showing the woken Runner back as a backup", |s| {
            role(s, "crawler_1") == "backup-runner"
        })
        .await;
    check_members(&s, &["crawler_1", "crawler_2", "crawler_3"]);
    assert_eq!(role(&s, "crawler_3"), "runner", "{s:#}");
    assert!(
        shards_of(&s, "crawler_1").is_empty(),
        "a backup holds no shard: {s:#}"
    );
    drop(nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runners_killed_at_once_one_shard_to_the_backup_the_other_to_the_survivor() {
    let c = Cluster::start("clf_two", 3, 1, 3, 6, 60, 30).await;
    for shard in 0..3 {
        assert!(!c.hosts_of(shard).is_empty(), "shard {shard} has no host");
    }
    let nodes: Vec<_> = (1..=4).map(|i| c.node_logged(i, &[])).collect();
    let formed = c.formed().await;
    assert_eq!(role(&formed, "crawler_4"), "backup-runner");
    let (code, _, err) = c.submit(&[]).await;
    assert_eq!(code, 0, "{err}");
    let s = c
        .wait_status("every Runner given a shard", |s| {
            (1..=3).all(|i| shards_of(s, &format!("crawler_{i}")).len() == 1)
        })
        .await;
    let dead: Vec<u32> = ["crawler_1", "crawler_2"]
        .iter()
        .flat_map(|n| shards_of(&s, n))
        .collect();
    let dead_hosts: Vec<usize> = dead.iter().flat_map(|&d| c.hosts_of(d)).collect();
    c.wait_log("both Runners under way", || {
        c.requests_from(1) >= 5 && c.requests_from(2) >= 5
    })
    .await;
    let mut nodes = nodes.into_iter();
    let (one, two) = (nodes.next().unwrap(), nodes.next().unwrap());
    send(&one, libc::SIGKILL);
    send(&two, libc::SIGKILL);
    let killed_at = Instant::now();
    drop((one, two));

    let (code, _, err) = c.submit(&["--wait"]).await;
    assert_eq!(code, 0, "the job completes: {err}");
    // Whose dead shard each heir crawled, by the hosts it asked.
    let crawled_by = |i: u32| -> BTreeSet<u32> {
        dead.iter()
            .copied()
            .filter(|&d| c.requests_to(i, &c.hosts_of(d)) > 0)
            .collect()
    };
    let (backup, survivor) = (crawled_by(4), crawled_by(3));
    assert_eq!(
        backup.len(),
        1,
        "the backup crawled dead shards {backup:?}; it said:\n{}",
        c.node_log(4)
    );
    assert_eq!(
        survivor.len(),
        1,
        "the surviving Runner crawled dead shards {survivor:?}"
    );
    assert_ne!(backup, survivor, "one dead shard each");
    eprintln!(
        "fail-over: the backup's first request to a dead shard's host {:?}, the survivor's {:?} after the kills",
        c.first_request_to(4, &dead_hosts, killed_at)
            .map(|at| at.duration_since(killed_at)),
        c.first_request_to(3, &dead_hosts, killed_at)
            .map(|at| at.duration_since(killed_at)),
    );
    // Each dead Runner had at most a request per host of its shard in flight.
    c.check_complete(dead_hosts.len()).await;
    for dead in ["crawler_1", "crawler_2"] {
        c.check_taken_over(dead, &["crawler_3", "crawler_4"]).await;
    }
    let s = c
        .wait_status("showing both dead", |s| {
            role(s, "crawler_1") == "dead-runner" && role(s, "crawler_2") == "dead-runner"
        })
        .await;
    let failed: BTreeSet<&str> = s["group_state"]["fail_runner"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert_eq!(failed, BTreeSet::from(["crawler_1", "crawler_2"]), "{s:#}");
    assert_eq!(role(&s, "crawler_4"), "runner", "{s:#}");
    assert!(s["jobs"][0]["complete"].as_bool().unwrap(), "{s:#}");
    drop(nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_restart_mid_job_kills_nobody_and_loses_nothing() {
    let zk = tokio::task::spawn_blocking(ZkServer::start).await.unwrap();
    let c = Cluster::start("clf_zk", 2, 1, 2, 4, 120, 30)
        .await
        .through_outages(&zk);
    let nodes: Vec<_> = (1..=3).map(|i| c.node_logged(i, FAST_HEARTS)).collect();
    c.formed().await;
    let (code, _, err) = c.submit(&[]).await;
    assert_eq!(code, 0, "{err}");
    c.wait_log("both Runners under way", || {
        c.requests_from(1) >= 5 && c.requests_from(2) >= 5
    })
    .await;

    let zk = std::sync::Arc::new(zk);
    halt_zookeeper(&zk).await;
    let halted_at = Instant::now();
    let (one, two) = (c.requests_from(1), c.requests_from(2));
    // The Runners crawl on without ZooKeeper, for longer than a heart may
    // stay silent.
    c.wait_log("the crawl going on through the outage", || {
        halted_at.elapsed() > HEART_LIMIT && c.requests_from(1) > one && c.requests_from(2) > two
    })
    .await;
    restart_zookeeper(&zk).await;
    let outage = halted_at.elapsed();
    eprintln!("ZooKeeper was down for {outage:?}");
    assert!(outage > HEART_LIMIT);
    assert!(
        c.site.site.log().len() < c.total_pages(),
        "ZooKeeper came back mid-crawl"
    );

    // Every heart beats again, and the judge has judged them since.
    c.wait_status("every member beating again", |s| {
        s["members"]
            .as_array()
            .is_some_and(|m| m.len() == 3 && m.iter().all(|m| m["pulse"] == "beating"))
    })
    .await;
    let (code, _, err) = c.submit(&["--wait"]).await;
    assert_eq!(
        code,
        0,
        "the job completes: {err}; crawler_1 said:\n{}",
        c.node_log(1)
    );
    let s = c.status().await;
    let fail = &s["group_state"]["fail_runner"];
    assert!(
        fail.as_array().unwrap().is_empty(),
        "nobody died of the outage: {fail}; the nodes said:\n{}\n{}\n{}",
        c.node_log(1),
        c.node_log(2),
        c.node_log(3)
    );
    c.check_complete(0).await;
    assert_eq!(role(&s, "crawler_1"), "runner", "{s:#}");
    assert_eq!(role(&s, "crawler_2"), "runner", "{s:#}");
    assert_eq!(role(&s, "crawler_3"), "backup-runner", "{s:#}");
    check_members(&s, &["crawler_1", "crawler_2", "crawler_3"]);
    assert_eq!(c.requests_from(3), 0, "the backup had nothing to take over");
    drop(nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_wait_exits_0_when_complete_and_1_when_the_job_failed() {
    let c = Cluster::start("clf_exit", 1, 1, 1, 2, 10, 5).await;
    let nodes: Vec<_> = (1..=2).map(|i| c.node_logged(i, &[])).collect();
    let s = c.formed().await;
    check_members(&s, &["crawler_1", "crawler_2"]);
    assert_eq!(role(&s, "crawler_1"), "runner", "{s:#}");
    assert_eq!(role(&s, "crawler_2"), "backup-runner", "{s:#}");

    let (code, job, err) = c.submit(&["--wait"]).await;
    assert_eq!(code, 0, "a complete job: {err}");
    c.check_complete(0).await;

    // Every URL failed: the seed's port answers nothing.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_seed = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let (code, _, err) = c
        .submit_job(&["--wait", "--retries", "0"], &[&dead_seed])
        .await;
    assert_eq!(code, 1, "every URL failed: {err}");
    assert!(err.contains("every one of its 1 URLs failed"), "{err}");

    // A shard failed on its Runner: the job's run timeout passed there.
    let mut slow = common::cluster::JOB.to_vec();
    slow.extend(["--delay", "1s", "--timeout", "1s", "--wait"]);
    let seed = c.site.site.url(1, "/");
    let (code, _, err) = c.submit_job(&slow, &[&seed]).await;
    assert_eq!(code, 1, "a failed shard: {err}");
    assert!(
        err.contains("failed: shard") && err.contains("run timeout passed"),
        "{err}"
    );

    // status --json names every member, and all three jobs.
    let s = c.status().await;
    check_members(&s, &["crawler_1", "crawler_2"]);
    let jobs: Vec<&str> = s["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| j["name"].as_str())
        .collect();
    assert_eq!(jobs.len(), 3, "{s:#}");
    assert!(jobs.contains(&job.trim()), "{s:#}");
    drop(nodes);
}

/// Checks that `results --writer` shows, for every record, the holder,
/// shard and generation the database has for it.
async fn check_writers_shown(c: &Cluster, writers: &Writers) {
    let (code, out, err) = c
        .run(&["results", "--store", &c.site.url, "--writer"])
        .await;
    assert_eq!(code, 0, "{err}");
    let shown: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(shown.len(), writers.results.len());
    for stored in &writers.results {
        let take = writers
            .current(stored.job, stored.shard, stored.seq)
            .unwrap();
        let line = shown
            .iter()
            .find(|v| v["url"] == stored.url.as_str())
            .unwrap_or_else(|| panic!("results --writer has no {}", stored.url));
        assert_eq!(
            line["writer"],
            serde_json::json!({
                "holder": take.holder,
                "shard": stored.shard,
                "generation": take.generation,
            }),
            "{line}"
        );
    }
}
