//! A node holding many shards leaves promptly on SIGTERM: a Runner holding
//! the 500 shards of a running job exits 0 within 5 seconds, whether its
//! engine is crawling them or still claiming them (one holding 1,100 took
//! over two minutes: its claim looked at the lock table once per shard,
//! and a stop waited for the claim).

use std::time::{Duration, Instant};

use crate::common;

use common::cluster::{Cluster, exit_within, send, shards_of};

const SHARDS: u32 = 500;

/// A Runner given the `SHARDS` shards of a job of slow pages (it runs
/// while the node holds them), told to stop once it holds them all and,
/// if `crawling`, once its engine made requests: it exits 0 within 5 s.
async fn leaves_promptly(name: &str, crawling: bool) {
    let c = Cluster::start(name, 1, 0, SHARDS, 4, 200, 100).await;
    let node = c.node_logged(1, &[]);
    c.formed().await;
    let (code, _, err) = c.submit(&[]).await;
    assert_eq!(code, 0, "{err}");
    c.wait_status("the node holding every shard", |s| {
        shards_of(s, "crawler_1").len() == SHARDS as usize
    })
    .await;
    if crawling {
        c.wait_requests(1, 3).await;
    }
    let asked = Instant::now();
    send(&node, libc::SIGTERM);
    let code = exit_within(node, Duration::from_secs(180)).await;
    let took = asked.elapsed();
    eprintln!("left {took:?} after SIGTERM");
    assert_eq!(code, 0, "{}", c.node_log(1));
    assert!(
        took < Duration::from_secs(5),
        "left {took:?} after SIGTERM: {}",
        c.node_log(1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_crawling_500_shards_leaves_within_5_seconds_of_sigterm() {
    leaves_promptly("cl_leave_crawling", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_claiming_500_shards_leaves_within_5_seconds_of_sigterm() {
    leaves_promptly("cl_leave_claiming", false).await;
}
