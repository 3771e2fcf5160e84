//! A node's metrics and status page, end to end: three real nodes (two
//! Runners and a backup) on ZooKeeper and PostgreSQL, one serving
//! `--status` and `--metrics`; the page, opened in headless Chromium, shows
//! every member with its role, the job's shards and this node's engine,
//! then `dead-runner` once a Runner is killed with `kill -9`; the metrics
//! parse and name the roles and hearts. A screenshot is kept under
//! `target/test-artifacts`.

use std::time::Duration;

mod common;

use common::browser::{dom, screenshot};
use common::cluster::{Cluster, role};
use common::http::{free_addr, wait_for};
use common::signal;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nodes_page_shows_the_members_roles_and_a_dead_runner_after_a_kill() {
    let c = Cluster::start("cl_view", 2, 1, 2, 6, 40, 30).await;
    let (status, metrics) = (free_addr(), free_addr());
    let (s, m) = (status.to_string(), metrics.to_string());
    let watcher = c.node_logged(3, &["--status", &s, "--metrics", &m]);
    let nodes: Vec<_> = (1..=2).map(|i| c.node_logged(i, &[])).collect();
    let formed = c.formed().await;
    assert_eq!(role(&formed, "crawler_3"), "backup-runner");
    let (code, _, err) = c.submit(&[]).await;
    assert_eq!(code, 0, "{err}");
    c.wait_requests(1, 3).await;

    let profile = c.site.dir.join("chromium");
    let url = format!("http://{status}/");
    let deadline = Duration::from_secs(60);
    let text = wait_for(metrics, "/metrics", deadline, |t| {
        t.contains("crawlkeeper_cluster_member_heart{member=\"crawler_1\"")
    })
    .await;
    let parsed = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("the node's metrics parse");
    let roles: Vec<String> = parsed
        .samples
        .iter()
        .filter(|s| s.metric == "crawlkeeper_node_role")
        .filter_map(|s| s.labels.get("role").map(str::to_owned))
        .collect();
    assert_eq!(roles, ["backup-runner"], "{text}");
    let zk_ops = parsed
        .samples
        .iter()
        .find(|s| s.metric == "crawlkeeper_zookeeper_operations_total")
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) => v,
            _ => 0.0,
        });
    assert!(
        zk_ops.is_some_and(|v| v > 0.0),
        "ZooKeeper requests counted"
    );

    let page = dom(&profile, &url).await;
    for member in ["crawler_1", "crawler_2", "crawler_3"] {
        assert!(page.contains(member), "{member} on the page");
    }
    assert!(
        page.contains("role-runner") && page.contains("role-backup-runner"),
        "roles shown"
    );
    assert!(page.contains("node crawler_3"), "the title names the node");

    // crawler_1 dies: the backup takes its shard; the page says so.
    let mut nodes = nodes.into_iter();
    let victim = nodes.next().unwrap();
    signal(&victim, "-KILL");
    drop(victim);
    wait_for(status, "/api/status", deadline, |t| {
        t.contains("dead-runner")
    })
    .await;
    let page = dom(&profile, &url).await;
    assert!(
        page.contains("role-dead-runner"),
        "a dead Runner is shown as such"
    );
    // The backup took the dead Runner's shard over: its metrics count it.
    wait_for(metrics, "/metrics", deadline, |t| {
        t.lines().any(|l| {
            l.strip_prefix("crawlkeeper_node_shards_started_total ")
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|v| v >= 1.0)
        })
    })
    .await;
    let shot = screenshot(&profile, &url, "status-cluster").await;
    eprintln!("screenshot: {}", shot.display());
    drop(nodes);
    drop(watcher);
}
