//! `submit --continuous`: a cluster job that never completes by itself.
//! Its Runner is killed (`kill -9`) between two passes; the backup takes
//! its shard over and keeps every page's schedule (judged from the site's
//! own log: no page fetched before its interval, none forgotten);
//! `status` shows the job continuous with its expected freshness;
//! `crawlkeeper stop` ends it on every Runner, and `submit --wait` then
//! returns with every fetch stored once.

use std::time::Instant;

use crawlkeeper_testsite::zookeeper::ZkServer;

use crate::common::cluster::{
    Cluster, FAST_HEARTS, HEART_LIMIT, check_nobody_died, halt_zookeeper, restart_zookeeper, send,
    shards_of,
};
use crate::common::continuous::{asked, check_schedule, first_pass, first_pass_of, stop_and_wait};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuous_job_keeps_its_schedule_through_a_kill_and_stops_on_every_runner() {
    let continuous = ["--continuous", "--revisit-min", "4s", "--revisit-max", "4s"];
    let (c, nodes, job, s) = first_pass("clc_kill", 8, &continuous).await;
    let total = c.total_pages();
    assert!(!s["jobs"][0]["complete"].as_bool().unwrap(), "{s:#}");
    assert_eq!(
        s["jobs"][0]["continuous"]["stopping"].as_bool(),
        Some(false),
        "{s:#}"
    );
    let victim = (1..=2)
        .find(|&i| shards_of(&s, &format!("crawler_{i}")).contains(&0))
        .expect("a Runner holds shard 0");
    let mut nodes: Vec<_> = nodes.into_iter().map(Some).collect();
    let killed = nodes[victim as usize - 1].take().unwrap();
    send(&killed, libc::SIGKILL);
    let killed_at = Instant::now();
    drop(killed);
    let before_kill = asked(&c);
    assert_eq!(before_kill.len(), total, "every page asked once");
    assert!(
        before_kill.values().all(|t| t.len() == 1),
        "the kill came between passes: {before_kill:?}"
    );

    // Every page is fetched a second time (shard 0's by the heir), and
    // once the estimates exist, `status` shows what freshness they keep.
    c.wait_log("every page fetched again", || {
        let a = asked(&c);
        a.len() == total && a.values().all(|t| t.len() >= 2)
    })
    .await;
    let s = c
        .wait_status("an expected freshness", |s| {
            s["jobs"][0]["continuous"]["freshness"].is_number()
        })
        .await;
    let fresh = s["jobs"][0]["continuous"]["freshness"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&fresh), "{s:#}");
    let heir_hosts = c.hosts_of(0);
    let heir_fetched = (1..=3)
        .filter(|&i| i != victim)
        .any(|i| c.first_request_to(i, &heir_hosts, killed_at).is_some());
    assert!(heir_fetched, "shard 0's hosts were fetched by an heir");

    // Stopped: every Runner's engine ends, the job is complete, and
    // `submit --wait` of it says so.
    stop_and_wait(&c, &job, &continuous).await;
    // It returned once every Runner's engine had ended, not at the stop.
    for i in (1..=3).filter(|&i| i != victim) {
        let log = c.node_log(i);
        assert!(log.contains("job complete"), "crawler_{i} said:\n{log}");
    }
    let s = c.status().await;
    assert!(s["jobs"][0]["complete"].as_bool().unwrap(), "{s:#}");
    assert_eq!(
        s["jobs"][0]["continuous"]["stopping"].as_bool(),
        Some(true),
        "{s:#}"
    );
    for i in (1..=3).filter(|&i| i != victim) {
        let name = format!("crawler_{i}");
        assert!(shards_of(&s, &name).is_empty(), "{name} ended: {s:#}");
    }
    // Submitted again, a stopped job stays stopped.
    let (code, _, err) = c.submit(&continuous).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("stays stopped"), "{err}");

    // The schedule was kept through the take-over.
    check_schedule(&c, total).await;
    // No request after the job completed.
    let n = c.site.site.log().len();
    let s = c.status().await;
    assert!(s["jobs"][0]["complete"].as_bool().unwrap(), "{s:#}");
    assert_eq!(c.site.site.log().len(), n, "nothing asked once stopped");
    drop(nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_ends_the_job_also_on_the_heir_of_a_paused_runner() {
    // Pages due in an hour: after the first pass nothing is in flight.
    let continuous = ["--continuous", "--revisit-min", "1h"];
    let (c, nodes, job, s) = first_pass("clc_pause", 6, &continuous).await;
    let total = c.total_pages();
    let paused = (1..=2)
        .find(|&i| !shards_of(&s, &format!("crawler_{i}")).is_empty())
        .expect("a Runner holds a shard");
    // A Runner that cannot hear the stop: its shard goes to the backup,
    // which must end at once (the job was stopped before it took it), and
    // `submit --wait` returns only then.
    send(&nodes[paused as usize - 1], libc::SIGSTOP);
    stop_and_wait(&c, &job, &continuous).await;
    let s = c.status().await;
    for i in 1..=3 {
        let name = format!("crawler_{i}");
        assert!(shards_of(&s, &name).is_empty(), "{name} ended: {s:#}");
    }
    assert!(
        c.node_log(3).contains("job complete"),
        "the backup took the paused Runner's shard and ended it:\n{}",
        c.node_log(3)
    );
    send(&nodes[paused as usize - 1], libc::SIGCONT);
    // Every page asked once, none again: nothing was due, and the stop
    // held on the heir.
    let a = asked(&c);
    assert_eq!(a.len(), total, "every page");
    assert!(a.values().all(|t| t.len() == 1), "{a:?}");
    drop(nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuous_job_revisits_through_a_zookeeper_outage_and_stops_after_it() {
    let zk = tokio::task::spawn_blocking(ZkServer::start).await.unwrap();
    let c = Cluster::start("clc_zk", 2, 1, 2, 4, 6, 5)
        .await
        .through_outages(&zk);
    let continuous = ["--continuous", "--revisit-min", "4s", "--revisit-max", "4s"];
    let (c, nodes, job, _) = first_pass_of(c, FAST_HEARTS, &continuous).await;
    let total = c.total_pages();
    let zk = std::sync::Arc::new(zk);
    halt_zookeeper(&zk).await;
    let halted_at = Instant::now();
    // Every page is fetched again while ZooKeeper is down: the schedule
    // lives in PostgreSQL.
    c.wait_log("every page fetched again through the outage", || {
        let a = asked(&c);
        a.len() == total && a.values().all(|t| t.len() >= 2)
    })
    .await;
    restart_zookeeper(&zk).await;
    let outage = halted_at.elapsed();
    assert!(outage > HEART_LIMIT, "{outage:?}");
    c.wait_status("every member beating again", |s| {
        s["members"]
            .as_array()
            .is_some_and(|m| m.len() == 3 && m.iter().all(|m| m["pulse"] == "beating"))
    })
    .await;
    stop_and_wait(&c, &job, &continuous).await;
    let s = c.status().await;
    check_nobody_died(&s, "the outage");
    assert_eq!(c.requests_from(3), 0, "the backup had nothing to take over");
    check_schedule(&c, total).await;
    drop(nodes);
}
