//! The status page in a real browser (headless Chromium): a crawl of the
//! test site with `--status`, the page opened twice, its figures moving
//! and its host table naming the site's hosts; a token asked for where
//! one is set. A screenshot of each is kept under `target/test-artifacts`.

use std::time::Duration;

use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::common;

use common::browser::{card, dom, screenshot};
use common::http::{free_addr, get};
use common::warc::dir;

/// `crawl --follow --quiet --no-state --status ADDR EXTRA SEEDS` in `dir`.
fn status_crawl(
    dir: &std::path::Path,
    addr: std::net::SocketAddr,
    extra: &[&str],
    seeds: &[String],
) -> tokio::process::Command {
    let a = addr.to_string();
    let mut c = common::command_in(dir, &[]);
    c.args([
        "crawl",
        "--follow",
        "--quiet",
        "--no-state",
        "--out",
        "out.jsonl",
    ])
    .args(["--status", &a])
    .args(extra)
    .args(seeds);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_of_a_crawl_shows_its_hosts_and_moving_figures() {
    let mut config = SiteConfig::uniform(2, 400);
    for h in &mut config.hosts {
        h.delay = Duration::from_millis(20);
    }
    let site = TestSite::start(config).await.unwrap();
    let d = dir("browser-crawl");
    let addr = free_addr();
    let seeds = [site.url(0, "/"), site.url(1, "/")];
    let mut child = status_crawl(&d, addr, &[], &seeds).spawn().unwrap();
    common::arrived(site.log(), 10).await;
    let url = format!("http://{addr}/");
    let profile = d.join("chromium");
    let first = dom(&profile, &url).await;
    let before = card(&first, "Pages done").expect("the page shows the pages done");
    for i in 0..2 {
        assert!(
            first.contains(&site.url(i, "").trim_end_matches('/').to_owned()),
            "host {i} listed"
        );
    }
    assert!(
        first.contains("crawlkeeper: job "),
        "the title names the job"
    );
    let second = dom(&profile, &url).await;
    let after = card(&second, "Pages done").unwrap();
    assert!(after > before, "the figures move: {before} then {after}");
    let shot = screenshot(&profile, &url, "status-crawl").await;
    eprintln!("screenshot: {}", shot.display());
    let _ = child.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_guards_the_page_when_one_is_set() {
    let site = TestSite::start(SiteConfig::uniform(1, 300)).await.unwrap();
    let d = dir("browser-token");
    let addr = free_addr();
    let mut c = status_crawl(&d, addr, &["--linger", "60s"], &[site.url(0, "/")]);
    c.env("CRAWLKEEPER_STATUS_TOKEN", "s3+cr/et=");
    let mut child = c.spawn().unwrap();
    common::arrived(site.log(), 1).await;
    let status = |path: &str| tokio::task::block_in_place(|| get(addr, path).map(|r| r.0));
    let mut up = status("/api/status?token=s3%2Bcr%2Fet%3D");
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    while up.is_none() && tokio::time::Instant::now() < end {
        tokio::task::yield_now().await;
        up = status("/api/status?token=s3%2Bcr%2Fet%3D");
    }
    assert_eq!(up, Some(200));
    assert_eq!(status("/api/status"), Some(401));
    assert_eq!(status("/api/status?token=s3%2Bcr%2Fet"), Some(401));
    assert_eq!(status("/?token=wrong"), Some(401));
    let page = dom(
        &d.join("chromium"),
        &format!("http://{addr}/?token=s3%2Bcr%2Fet%3D"),
    )
    .await;
    assert!(
        card(&page, "Pages done").is_some(),
        "the page reads the API with its token"
    );
    let _ = child.kill().await;
}
