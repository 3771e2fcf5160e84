//! `crawl --recrawl`, end to end on a site that changes between crawls
//! (`crawlkeeper_testsite::edition`: 10% of pages change per edition): a
//! finished job run again says so and fetches nothing; `--recrawl` asks
//! for every page again with its validators, unchanged pages answer 304
//! (recorded as not modified, archived as `server-not-modified` revisits
//! that `warcio check` accepts), changed pages are fetched whole and the
//! links new on them followed; a `--recrawl` of a job never crawled is
//! refused before anything is written.

use std::path::Path;

use crawlkeeper_testsite::{SiteConfig, TestSite};
use tokio::process::Command;

use crate::common;

use common::warc::*;

const PAGES: u32 = 200;

/// `crawl --follow --state state.db ARGS SEED`, with its messages.
fn loud(dir: &Path, seed: &str, args: &[&str]) -> Command {
    let mut c = common::command_in(dir, &["crawl", "--follow", "--state", "state.db"]);
    c.args(args).arg(seed);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recrawl_asks_conditionally_and_fetches_only_what_changed() {
    let site = TestSite::start(SiteConfig::uniform(1, PAGES))
        .await
        .unwrap();
    let seed = site.url(0, "/");
    let d = dir("recrawl");
    let first_pass = ["--out", "first.jsonl", "--warc", "first.warc.gz"];
    let (code, err) = run(loud(&d, &seed, &first_pass)).await;
    assert_eq!(code, 0, "{err}");
    let first = records(&d.join("first.jsonl"));
    assert_eq!(first.len() as u32, PAGES + 1, "every page and the index");
    assert!(
        first
            .iter()
            .filter(|r| r.url.contains("/p/"))
            .all(|r| r.etag.is_some() && r.last_modified.is_some()),
        "validators are recorded"
    );
    let (requests, bytes) = (site.log().len(), site.log().bytes());

    // The same command again: complete, nothing fetched, the ways on named.
    site.set_edition(1);
    let (code, err) = run(loud(&d, &seed, &first_pass)).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("complete already") && err.contains("--recrawl") && err.contains("--fresh"),
        "{err}"
    );
    assert_eq!(site.log().len(), requests, "nothing fetched");

    // Its first pass's files are not written over by the new pass.
    let (code, err) = run(loud(&d, &seed, &["--recrawl", "--out", "first.jsonl"])).await;
    assert_eq!(code, 2, "{err}");
    assert_eq!(records(&d.join("first.jsonl")).len(), first.len());
    let before = std::fs::read(d.join("first.warc.gz")).unwrap();
    let again = ["--recrawl", "--out", "x.jsonl", "--warc", "first.warc.gz"];
    let (code, err) = run(loud(&d, &seed, &again)).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("earlier pass"), "{err}");
    assert_eq!(
        std::fs::read(d.join("first.warc.gz")).unwrap(),
        before,
        "kept as it was"
    );
    assert_eq!(site.log().len(), requests, "nothing fetched");

    let second_pass = [
        "--recrawl",
        "--out",
        "second.jsonl",
        "--warc",
        "second.warc.gz",
        "--cdx",
    ];
    let (code, err) = run(loud(&d, &seed, &second_pass)).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("crawling its 201 URLs again"), "{err}");
    let second = records(&d.join("second.jsonl"));
    let pages: Vec<_> = second.iter().filter(|r| r.url.contains("/p/")).collect();
    assert_eq!(pages.len() as u32, PAGES, "every page asked again");
    let unchanged: Vec<_> = pages.iter().filter(|r| r.status == Some(304)).collect();
    let changed: Vec<_> = pages.iter().filter(|r| r.status == Some(200)).collect();
    assert_eq!(unchanged.len() as u32, PAGES * 9 / 10, "90% unchanged");
    assert_eq!(changed.len() as u32, PAGES / 10, "10% changed");
    for r in &unchanged {
        let before = first.iter().find(|f| f.url == r.url).unwrap();
        assert_eq!(
            r.unchanged_since.as_deref(),
            Some(before.fetched_at.as_str())
        );
        assert_eq!(r.etag, before.etag, "validators carried on");
        assert!(r.error.is_none() && r.bytes == 0, "{r:?}");
    }
    let new: Vec<_> = second.iter().filter(|r| r.url.contains("/new/")).collect();
    assert_eq!(
        new.len(),
        changed.len(),
        "links new on changed pages followed"
    );
    assert!(new.iter().all(|r| r.status == Some(200)));
    let log = site.log().entries()[requests..].to_vec();
    assert_eq!(
        log.len(),
        1 + 1 + PAGES as usize + new.len(),
        "robots, index, pages, new"
    );
    let recrawl_bytes = site.log().bytes() - bytes;
    assert!(
        recrawl_bytes * 4 < bytes,
        "a recrawl moves far fewer bytes: {recrawl_bytes} vs {bytes}"
    );

    // The archive: a revisit for each 304, warcio-valid, pointing at the
    // first pass's response.
    let first_recs = check_files(&d.join("first.warc.gz"));
    let first_responses = by_uri(&first_recs, "response");
    let recs = check_files(&d.join("second.warc.gz"));
    check_cdx(&d.join("second.warc.gz"));
    let revisits = by_uri(&recs, "revisit");
    assert_eq!(revisits.len(), unchanged.len());
    for r in &unchanged {
        let v = &revisits[&r.url][0];
        assert_eq!(
            v.get("WARC-Profile"),
            Some("http://netpreserve.org/warc/1.1/revisit/server-not-modified")
        );
        assert_eq!(v.get("WARC-Refers-To-Target-URI"), Some(r.url.as_str()));
        let original = &first_responses[&r.url][0];
        assert_eq!(
            v.get("WARC-Refers-To-Date"),
            Some(original.date.as_str()),
            "the revisit names the original's date exactly"
        );
        assert!(v.block.starts_with(b"HTTP/1.1 304"));
    }
    let requests_sent = by_uri(&recs, "request");
    let asked = &requests_sent[&unchanged[0].url][0];
    let head = String::from_utf8_lossy(&asked.block).to_ascii_lowercase();
    assert!(
        head.contains("if-none-match: \"p") && head.contains("if-modified-since: "),
        "{head}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recrawl_of_a_job_never_crawled_is_refused_before_anything_is_written() {
    let site = TestSite::start(SiteConfig::uniform(1, 5)).await.unwrap();
    let d = dir("recrawl-none");
    let (code, err) = run(loud(&d, &site.url(0, "/"), &["--recrawl"])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no earlier crawl"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!d.join("state.db").exists(), "no state file made");
    assert!(site.log().is_empty());
    let (code, err) = run(loud(&d, &site.url(0, "/"), &["--recrawl", "--fresh"])).await;
    assert_eq!(code, 2, "{err}");
}
