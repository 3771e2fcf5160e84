//! A node's metrics and status page, end to end: three real nodes (two
//! Runners and a backup) on ZooKeeper and PostgreSQL, one serving
//! `--status` and `--metrics`; the page, opened in headless Chromium, shows
//! every member with its role, the job's shards and this node's engine,
//! then `dead-runner` once a Runner is killed with `kill -9`; the metrics
//! parse and name the roles and hearts. A screenshot is kept under
//! `target/test-artifacts`.

use std::time::Duration;

use crate::common;

use common::browser::{dom, role_of, screenshot};
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
    // What a person reads in each member's role cell (the class names
    // alone are in the page's own style sheet, rendered or not).
    for (member, want) in [
        ("crawler_1", "runner"),
        ("crawler_2", "runner"),
        ("crawler_3", "backup-runner"),
    ] {
        assert_eq!(
            role_of(&page, member).as_deref(),
            Some(want),
            "{member}: {page}"
        );
    }
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
    assert_eq!(
        role_of(&page, "crawler_1").as_deref(),
        Some("dead-runner"),
        "a dead Runner is shown as such in the browser: {page}"
    );
    assert_eq!(
        role_of(&page, "crawler_3").as_deref(),
        Some("runner"),
        "the backup took over: {page}"
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
    // The dashboard the guide offers asks only for what a node serves.
    let served = wait_for(metrics, "/metrics", deadline, |t| {
        t.contains("crawlkeeper_requests_total{")
    })
    .await;
    let missing = dashboard_metrics()
        .into_iter()
        .filter(|name| !serves(&served, name))
        .collect::<Vec<_>>();
    assert!(
        missing.is_empty(),
        "the dashboard asks for {missing:?}, not served:\n{served}"
    );
    let shot = screenshot(&profile, &url, "status-cluster").await;
    eprintln!("screenshot: {}", shot.display());
    drop(nodes);
    drop(watcher);
}

/// The metric names the expressions of `docs/grafana-dashboard.json` use.
fn dashboard_metrics() -> std::collections::BTreeSet<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/grafana-dashboard.json"
    );
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut exprs = Vec::new();
    collect_exprs(&dashboard, &mut exprs);
    let mut names = std::collections::BTreeSet::new();
    for expr in exprs {
        for (i, _) in expr.match_indices("crawlkeeper_") {
            let name: String = expr[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            names.insert(name);
        }
    }
    assert!(
        names.len() >= 10,
        "the dashboard's metrics were found: {names:?}"
    );
    names
}

fn collect_exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                match v.as_str() {
                    Some(s) if k == "expr" => out.push(s.to_owned()),
                    _ => collect_exprs(v, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}

/// True when the Prometheus text `scraped` has a sample of `name`, or
/// declares its family (a counter of errors has no sample before the
/// first error).
fn serves(scraped: &str, name: &str) -> bool {
    let declared = format!("# TYPE {name} ");
    scraped.lines().any(|l| {
        l.starts_with(&declared)
            || l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(['{', ' ']))
    })
}
