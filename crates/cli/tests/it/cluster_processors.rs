//! Processors in a cluster (issue #27): a job names processors, each node
//! says what a name runs. `submit` refuses a job no live Runner can run; a
//! Runner that lacks a processor leaves its shard unclaimed and says so in
//! `status`, and the shard is crawled once a Runner that runs it takes it.

use crate::common;

use std::time::Duration;

use common::cluster::{Cluster, exit_within, role};
use common::signal;

fn products() -> String {
    format!(
        "products=python3 {}/../../examples/processors/products.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn warnings(s: &serde_json::Value) -> Vec<String> {
    s["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_waits_for_a_runner_that_runs_its_processor() {
    let c = Cluster::start("cl_proc", 1, 1, 1, 2, 8, 30).await;
    let processor = products();
    let first = c.node(1, &["--processor", &processor]);
    let lacking = c.node(2, &[]);
    let formed = c.formed().await;
    assert_eq!(role(&formed, "crawler_1"), "runner");
    let listed = formed["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "crawler_1")
        .map(|m| m["processors"].clone());
    assert_eq!(listed, Some(serde_json::json!(["products"])));

    // No live Runner runs `nope`: refused with one line, nothing stored.
    let (code, _, err) = c.submit(&["--use", "nope"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no live Runner runs 'nope': crawler_1 runs products"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(c.status().await["jobs"].as_array().unwrap().is_empty());

    let (code, _, err) = c.submit(&["--use", "products"]).await;
    assert_eq!(code, 0, "{err}");
    c.wait_requests(1, 3).await;
    signal(&first, "-KILL");
    drop(first);
    // crawler_2 takes the dead Runner's task over, and lacks the processor:
    // it claims nothing, crawls nothing, and status says why.
    let s = c
        .wait_status("the shard waiting", |s| {
            role(s, "crawler_2") == "runner"
                && warnings(s)
                    .iter()
                    .any(|w| w.contains("waits: crawler_2 does not run processor products"))
        })
        .await;
    assert_eq!(s["jobs"][0]["shards"][0]["assigned"], "crawler_2", "{s:#}");
    assert_eq!(
        c.requests_from(2),
        0,
        "the node that lacks it fetched nothing"
    );

    // A node that runs it joins as a backup; the lacking Runner leaves and
    // hands the shard over; the job completes, every page processed once.
    let heir = c.node(3, &["--processor", &processor]);
    c.wait_status("crawler_3 a backup", |s| {
        role(s, "crawler_3") == "backup-runner"
    })
    .await;
    signal(&lacking, "-TERM");
    assert_eq!(exit_within(lacking, Duration::from_secs(30)).await, 0);
    let (code, _, err) = c.submit(&["--use", "products", "--wait"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(c.requests_from(2), 0);
    assert!(c.requests_from(3) > 0, "the heir crawled the rest");
    // One shard of two hosts: at most one request per host in flight at the kill.
    c.check_complete(2).await;
    let (code, jsonl, err) = c
        .run(&["results", "--store", &c.site.url, &job_name(&c).await])
        .await;
    assert_eq!(code, 0, "{err}");
    for r in common::records(&jsonl)
        .iter()
        .filter(|r| r.status == Some(200))
    {
        let words = r.fields.as_ref().and_then(|f| f.get("words"));
        assert!(
            words.is_some_and(|w| w.as_u64() > Some(0)),
            "{}: {:?}",
            r.url,
            r.fields
        );
    }
    drop(heir);
}

async fn job_name(c: &Cluster) -> String {
    let s = c.status().await;
    s["jobs"][0]["name"].as_str().unwrap().to_owned()
}
