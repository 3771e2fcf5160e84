//! `crawl --store-bodies` and `results --format warc`, end to end: a job's
//! pages kept in the store are exported as WARC files that `warcio check`
//! and `warcio index` accept, every result once (also after `kill -9` and
//! resume), gzip or plain, rotated; and the refusals.

use std::time::Duration;

use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::common;

use common::signal;
use common::warc::*;

/// `results --state state.db --format warc ARGS` in `dir`.
async fn export(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let mut all = vec!["results", "--state", "state.db", "--format", "warc"];
    all.extend(args);
    let r = common::run_in(dir, &all, None).await;
    (r.code, r.stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_pages_export_as_valid_warc_the_same_as_the_live_file() {
    let site = showcase().await;
    let d = dir("export");
    let extra = [
        &["--store-bodies", "--warc", "live.warc.gz"][..],
        &SHOWCASE_LIMITS,
    ]
    .concat();
    let (code, err) = run(crawl(&d, &site.url(0, "/"), &extra)).await;
    assert!(matches!(code, 0 | 1), "{err}");
    let pages = records(&d.join("out.jsonl"));

    let (code, err) = export(&d, &["--out", "export.warc.gz", "--cdx"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("{} results exported", pages.len())),
        "{err}"
    );
    let exported = check_files(&d.join("export.warc.gz"));
    check_cdx(&d.join("export.warc.gz"));
    check_pages(&exported, &pages);
    // The same records as the live file, robots.txt aside.
    let live = check_files(&d.join("live.warc.gz"));
    let ids = |recs: &[crawlkeeper_warc::scan::ScannedRecord]| -> Vec<String> {
        recs.iter()
            .filter(|r| r.kind != "warcinfo")
            .filter(|r| {
                !r.target_uri
                    .as_deref()
                    .unwrap_or("")
                    .ends_with("/robots.txt")
            })
            // A URL without a response: its metadata is made again.
            .filter(|r| r.kind != "metadata" || r.get("WARC-Concurrent-To").is_some())
            .map(|r| r.id.clone())
            .collect()
    };
    let (mut a, mut b) = (ids(&live), ids(&exported));
    a.sort();
    b.sort();
    assert!(
        a == b,
        "the export holds the live file's page records ({} vs {})",
        a.len(),
        b.len()
    );

    // Plain WARC, rotated.
    let (code, err) = export(&d, &["--out", "plain.warc", "--warc-max-size", "100000"]).await;
    assert_eq!(code, 0, "{err}");
    let plain = check_files(&d.join("plain.warc"));
    check_pages(&plain, &pages);
    assert!(files(&d.join("plain.warc")).len() > 1, "rotated");

    // Refusals, before anything is written.
    let (code, err) = export(&d, &["--out", "export.warc.gz"]).await;
    assert_eq!(code, 2, "an existing file: {err}");
    assert!(err.contains("--overwrite"), "{err}");
    let (code, err) = export(&d, &[]).await;
    assert_eq!(code, 2, "no --out: {err}");
    let (code, err) = export(&d, &["--out", "state.db"]).await;
    assert_eq!(code, 2, "the state file: {err}");
    let (code, err) = export(&d, &["--out", "export.warc.gz", "--overwrite"]).await;
    assert_eq!(code, 0, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_killed_and_resumed_exports_each_page_once() {
    let mut config = SiteConfig::uniform(1, 300);
    config.hosts[0].delay = Duration::from_millis(5);
    let site = TestSite::start(config).await.unwrap();
    let d = dir("export-kill");
    let seed = site.url(0, "/");
    let extra = ["--store-bodies", "--per-host", "4"];
    let mut before = 60;
    for _ in 0..2 {
        let child = crawl(&d, &seed, &extra).spawn().unwrap();
        tokio::time::timeout(Duration::from_secs(60), site.log().wait_for(before))
            .await
            .expect("the crawl goes on");
        signal(&child, "-KILL");
        let _ = child.wait_with_output().await;
        before = site.log().len() + 60;
    }
    let (code, err) = run(crawl(&d, &seed, &extra)).await;
    assert_eq!(code, 0, "{err}");
    let pages = records(&d.join("out.jsonl"));
    assert_eq!(pages.len(), 301);
    let (code, err) = export(&d, &["--out", "job.warc.gz"]).await;
    assert_eq!(code, 0, "{err}");
    check_pages(&check_files(&d.join("job.warc.gz")), &pages);
    // A re-crawl would replace the kept pages: only when the user says so.
    let requests = site.log().len();
    let (code, err) = run(crawl(&d, &seed, &["--recrawl"])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("results --format warc"), "{err}");
    assert_eq!(site.log().len(), requests, "nothing fetched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_without_stored_bodies_says_how_to_get_them() {
    let site = TestSite::start(SiteConfig::uniform(1, 5)).await.unwrap();
    let d = dir("export-none");
    let (code, err) = run(crawl(&d, &site.url(0, "/"), &[])).await;
    assert_eq!(code, 0, "{err}");
    let (code, err) = export(&d, &["--out", "x.warc.gz"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--store-bodies"), "{err}");
    assert!(!d.join("x.warc.gz").exists(), "nothing written");
    let r = common::run_in(
        &d,
        &["crawl", "--store-bodies", "--no-state", &site.url(0, "/")],
        None,
    )
    .await;
    assert_eq!(r.code, 2, "{}", r.stderr);
}
