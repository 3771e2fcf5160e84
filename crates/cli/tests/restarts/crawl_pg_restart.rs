//! PostgreSQL restarted under a crawl of one process: it waits, says so
//! and goes on; nothing is lost or fetched twice.

use std::collections::{BTreeSet, HashMap};
use std::process::Stdio;
use std::time::Duration;

use crawlkeeper_testsite::{SiteConfig, TestSite};
use tokio::process::Command;

use crate::common;

use crate::restart_postgres;
use common::pg::{admin, postgres_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_mid_crawl_loses_nothing() {
    let _turn = crate::TURN.lock().await;
    let db = format!("ck_restart_{}", std::process::id());
    admin(format!("DROP DATABASE IF EXISTS {db}")).await;
    admin(format!("CREATE DATABASE {db}")).await;

    let mut config = SiteConfig::uniform(1, 600);
    config.hosts[0].delay = Duration::from_millis(5);
    let site = TestSite::start(config).await.unwrap();
    let d = common::fresh_dir("restarts", "pg-restart");
    let url = postgres_url(&db);
    let mut c = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"));
    c.current_dir(&d)
        .args([
            "crawl",
            "--follow",
            "--per-host",
            "4",
            "--out",
            "out.jsonl",
            "--store",
            &url,
        ])
        .arg(site.url(0, "/"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    common::arrived(site.log(), 100).await;
    let seen_before = site.log().len();
    tokio::task::spawn_blocking(restart_postgres).await.unwrap();
    let out = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(seen_before < 601, "the restart came mid-crawl");
    assert!(
        stderr.contains("unavailable; retrying"),
        "a clear log line: {stderr}"
    );

    let recs = common::records(&std::fs::read_to_string(d.join("out.jsonl")).unwrap());
    let urls: BTreeSet<&str> = recs.iter().map(|r| r.url.as_str()).collect();
    assert_eq!((recs.len(), urls.len()), (601, 601));
    // Page requests (robots.txt aside) by target.
    let mut reqs = HashMap::<String, usize>::new();
    for t in site.log().targets(0) {
        if t != "/robots.txt" {
            *reqs.entry(t).or_default() += 1;
        }
    }
    assert_eq!(reqs.len(), 601);
    assert!(reqs.values().all(|&n| n == 1), "nothing fetched twice");
    let results = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .args(["results", "--store", &url])
        .output()
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8(results.stdout).unwrap().lines().count(),
        601
    );

    admin(format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
}
