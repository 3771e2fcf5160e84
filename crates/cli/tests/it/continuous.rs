//! `crawl --continuous`, end to end on a site that changes while it is
//! crawled (`crawlkeeper_testsite::edition`): every page is fetched again
//! when due, conditionally; its records say whether it `changed`; links
//! new on changed pages join the crawl; `crawlkeeper stop` ends it with
//! every fetch recorded once; a `kill -9` loses no page's schedule and
//! fetches none early.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crawlkeeper_model::CrawlRecord;
use crawlkeeper_testsite::edition::revision;
use crawlkeeper_testsite::{SiteConfig, TestSite};
use tokio::process::Command;

use crate::common;

use common::pg::{admin, postgres_url};
use common::sharded::exit_of;

/// How long a test waits for anything before it fails.
const DEADLINE: Duration = Duration::from_secs(60);

/// Where a test's job is kept: `--state state.db`, or `--store URL`.
fn place(store: Option<&str>) -> [&str; 2] {
    match store {
        Some(url) => ["--store", url],
        None => ["--state", "state.db"],
    }
}

/// `crawl --follow --continuous --revisit-min MIN --revisit-max MAX
/// --out out.jsonl PLACE SEED`, with its messages.
fn continuous(dir: &Path, store: Option<&str>, seed: &str, min: &str, max: &str) -> Command {
    let mut c = common::command_in(
        dir,
        &[
            "crawl",
            "--follow",
            "--continuous",
            "--revisit-min",
            min,
            "--revisit-max",
            max,
            "--out",
            "out.jsonl",
        ],
    );
    c.args(place(store)).arg(seed);
    c
}

/// Waits until `ready()` holds, checking every 20 ms; fails the test,
/// saying `what`, if it does not within [`DEADLINE`].
async fn until(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < DEADLINE, "waited {DEADLINE:?} for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The records in `out.jsonl` of `dir` so far (whole lines only).
fn records(dir: &Path) -> Vec<CrawlRecord> {
    let text = std::fs::read_to_string(dir.join("out.jsonl")).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..=end]);
    common::records(whole)
}

/// `crawlkeeper stop PLACE` in `dir`: it must succeed.
async fn stop(dir: &Path, store: Option<&str>) {
    let mut args = vec!["stop"];
    args.extend(place(store));
    let out = common::command_in(dir, &args).output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("asked to stop"), "{err}");
}

/// The page number of a `/p/N` URL.
fn page_of(url: &str) -> Option<u32> {
    url.rsplit_once("/p/")?.1.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_fetched_again_when_due_with_changes_told_and_stop_ends_it() {
    const PAGES: u32 = 20;
    let mut config = SiteConfig::uniform(1, PAGES);
    config.hosts[0].changed_percent = 50;
    let site = TestSite::start(config).await.unwrap();
    let d = common::fresh_dir("continuous", "changes");
    let child = continuous(&d, None, &site.url(0, "/"), "1s", "2s")
        .spawn()
        .unwrap();
    // The first pass: the index and every page, each a change.
    until("the first pass", || records(&d).len() > PAGES as usize).await;
    site.set_edition(1);
    // Some pages change (13 of these 20): each gains a link to a new
    // page, which the crawl finds when it fetches the page again.
    let changed: Vec<u32> = (0..PAGES).filter(|&p| revision(p, 1, 50) > 0).collect();
    assert!((1..PAGES as usize).contains(&changed.len()), "{changed:?}");
    until("the new pages", || {
        records(&d)
            .iter()
            .filter(|r| r.url.contains("/new/"))
            .count()
            == changed.len()
    })
    .await;
    stop(&d, None).await;
    let (code, err) = exit_of(child).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("stopped on request"), "{err}");

    let recs = records(&d);
    let mut by_page: BTreeMap<u32, Vec<&CrawlRecord>> = BTreeMap::new();
    for r in &recs {
        if let Some(p) = page_of(&r.url) {
            by_page.entry(p).or_default().push(r);
        }
    }
    assert_eq!(by_page.len(), PAGES as usize, "every page");
    for (p, fetches) in &by_page {
        let first = fetches[0];
        assert_eq!(
            (first.status, first.changed),
            (Some(200), Some(true)),
            "a first fetch is a change"
        );
        assert!(fetches.len() >= 2, "page {p} fetched again: {fetches:?}");
        let seen_change = fetches[1..].iter().any(|r| r.changed == Some(true));
        assert_eq!(
            seen_change,
            changed.contains(p),
            "page {p}: a change told exactly when it changed: {fetches:#?}"
        );
        for r in &fetches[1..] {
            match r.changed {
                // Unchanged: asked with its validators, answered 304.
                Some(false) => assert_eq!(r.status, Some(304), "{r:?}"),
                Some(true) => assert_eq!(r.status, Some(200), "{r:?}"),
                None => panic!("a page's fetch says whether it changed: {r:?}"),
            }
        }
    }
    // The index has no validators: it is asked whole each time, and its
    // body, the same, is not a change.
    let index: Vec<_> = recs.iter().filter(|r| r.url.ends_with('/')).collect();
    assert!(index.len() >= 2, "{index:?}");
    assert!(
        index[1..]
            .iter()
            .all(|r| (r.status, r.changed) == (Some(200), Some(false))),
        "{index:#?}"
    );
    // Every fetch has one record, in the file and in the store alike.
    let log = site.log();
    let pages_asked = log
        .targets(0)
        .iter()
        .filter(|t| t.as_str() != "/robots.txt")
        .count();
    assert_eq!(recs.len(), pages_asked, "one record per request");
    let stored = common::run_in(&d, &["results", "--state", "state.db"], None).await;
    assert_eq!(stored.code, 0, "{}", stored.stderr);
    assert_eq!(stored.stdout.lines().count(), recs.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_continuous_crawl_keeps_every_page_s_schedule() {
    killed_and_started_again(&common::fresh_dir("continuous", "kill"), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_continuous_crawl_over_postgres_keeps_every_page_s_schedule() {
    let db = format!("ck_continuous_{}", std::process::id());
    admin(format!("DROP DATABASE IF EXISTS {db}")).await;
    admin(format!("CREATE DATABASE {db}")).await;
    let url = postgres_url(&db);
    killed_and_started_again(&common::fresh_dir("continuous", "kill-pg"), Some(&url)).await;
    admin(format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
}

/// A continuous crawl (pages due 4 s after each fetch) killed between
/// passes, in `d` with its job in `store`, then started again: no page is
/// fetched early and none is forgotten.
async fn killed_and_started_again(d: &Path, store: Option<&str>) {
    const PAGES: u32 = 30;
    const INTERVAL: Duration = Duration::from_secs(4);
    let site = TestSite::start(SiteConfig::uniform(1, PAGES))
        .await
        .unwrap();
    let seed = site.url(0, "/");
    let first = continuous(d, store, &seed, "4s", "4s").spawn().unwrap();
    // Every page's first fetch is durable (records reach the file once
    // they are): then the crawl is killed, waiting for the next ones.
    until("the first pass recorded", || {
        records(d).len() > PAGES as usize
    })
    .await;
    common::signal(&first, "-KILL");
    let (code, _) = exit_of(first).await;
    assert_eq!(code, -1, "killed");
    let killed_at = site.log().len();

    let again = continuous(d, store, &seed, "4s", "4s").spawn().unwrap();
    until("every page fetched a second time", || {
        records(d).len() >= 2 * (PAGES as usize + 1)
    })
    .await;
    stop(d, store).await;
    let (code, err) = exit_of(again).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("continuing"), "{err}");

    // From the site's own log: each page's second request came no sooner
    // than its interval after its first (the schedule was kept; 100 ms
    // for the two clocks' reading), and none was forgotten.
    let mut asked: BTreeMap<String, Vec<std::time::SystemTime>> = BTreeMap::new();
    for e in site.log().entries() {
        if e.target != "/robots.txt" {
            asked.entry(e.target.clone()).or_default().push(e.wall);
        }
    }
    assert_eq!(asked.len(), PAGES as usize + 1, "no page forgotten");
    for (target, times) in &asked {
        assert!(times.len() >= 2, "{target} fetched again");
        let gap = times[1].duration_since(times[0]).unwrap();
        assert!(
            gap + Duration::from_millis(100) >= INTERVAL,
            "{target} fetched again {gap:?} after its first fetch, before its interval"
        );
    }
    assert!(
        killed_at <= PAGES as usize + 2,
        "the kill came between passes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuous_crawl_in_memory_revisits_until_its_timeout() {
    let site = TestSite::start(SiteConfig::uniform(1, 5)).await.unwrap();
    let d = common::fresh_dir("continuous", "memory");
    let mut c = common::command_in(
        &d,
        &[
            "crawl",
            "--follow",
            "--continuous",
            "--revisit-min",
            "1s",
            "--revisit-max",
            "1s",
            "--no-state",
            "--timeout",
            "3500ms",
            "--out",
            "out.jsonl",
        ],
    );
    let (code, err) = exit_of(c.arg(site.url(0, "/")).spawn().unwrap()).await;
    assert_eq!(code, 124, "a --timeout ends it: {err}");
    let recs = records(&d);
    for page in 0..5 {
        let fetches: Vec<_> = recs
            .iter()
            .filter(|r| page_of(&r.url) == Some(page))
            .collect();
        assert!(fetches.len() >= 2, "page {page} fetched again: {fetches:?}");
        assert!(
            fetches[1..]
                .iter()
                .all(|r| (r.status, r.changed) == (Some(304), Some(false))),
            "{fetches:#?}"
        );
    }
    assert!(!d.join("crawlkeeper.db").exists(), "nothing kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_pages_are_archived_as_revisits_of_their_copy() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let d = common::fresh_dir("continuous", "warc");
    let mut c = continuous(&d, None, &site.url(0, "/"), "1s", "1s");
    let child = c.args(["--warc", "pages.warc.gz"]).spawn().unwrap();
    until("every page fetched three times", || records(&d).len() >= 12).await;
    stop(&d, None).await;
    let (code, err) = exit_of(child).await;
    assert_eq!(code, 0, "{err}");

    // warcio reads every file; the records as our scanner reads them.
    let recs = common::warc::check_files(&d.join("pages.warc.gz"));
    let mut responses = common::warc::by_uri(&recs, "response");
    responses.retain(|uri, _| !uri.ends_with("/robots.txt"));
    let revisits = common::warc::by_uri(&recs, "revisit");
    assert_eq!(responses.len(), 4, "one whole copy of each page");
    for (uri, copies) in &responses {
        assert_eq!(copies.len(), 1, "{uri}: unchanged, archived whole once");
        let again = &revisits[uri];
        assert!(again.len() >= 2, "{uri}: {again:?}");
        // The index has no validators: asked whole, its same body is an
        // identical-payload revisit; the pages answer 304.
        let profile = if uri.ends_with('/') {
            "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
        } else {
            "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
        };
        for v in again {
            assert_eq!(v.get("WARC-Profile"), Some(profile), "{uri}");
            assert_eq!(v.get("WARC-Refers-To-Target-URI"), Some(uri.as_str()));
            assert_eq!(
                v.get("WARC-Refers-To-Date"),
                Some(copies[0].date.as_str()),
                "{uri}: the revisit names its copy's date exactly"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_crawl_started_again_goes_on_until_stopped_again() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let d = common::fresh_dir("continuous", "again");
    let seed = site.url(0, "/");
    let first = continuous(&d, None, &seed, "1s", "1s").spawn().unwrap();
    until("the first pass", || records(&d).len() >= 4).await;
    stop(&d, None).await;
    let (code, err) = exit_of(first).await;
    assert_eq!(code, 0, "{err}");
    let before = records(&d).len();
    // The request made before it began does not stop the new run.
    let again = continuous(&d, None, &seed, "1s", "1s").spawn().unwrap();
    until("two more passes", || records(&d).len() >= before + 8).await;
    stop(&d, None).await;
    let (code, err) = exit_of(again).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("continuing") && err.contains("stopped on request"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_signature_sees_no_change_where_only_markup_changed() {
    // The index's markup names the site's edition; its text never
    // changes. No page changes.
    let mut config = SiteConfig::uniform(1, 3);
    config.hosts[0].changed_percent = 0;
    config.hosts[0].stamped_index = true;
    let site = TestSite::start(config).await.unwrap();
    let index_changes = |signature: &'static str| {
        let site = &site;
        async move {
            site.set_edition(0);
            let d = common::fresh_dir("continuous", &format!("signature-{signature}"));
            let mut c = continuous(&d, None, &site.url(0, "/"), "1s", "1s");
            let child = c.args(["--signature", signature]).spawn().unwrap();
            let index = |d: &Path| -> Vec<CrawlRecord> {
                records(d)
                    .into_iter()
                    .filter(|r| r.url.ends_with('/'))
                    .collect()
            };
            until("the first pass", || records(&d).len() > 3).await;
            let before = index(&d).len();
            site.set_edition(1);
            // Two more: the second was asked after the edition moved.
            until("the index fetched again", || index(&d).len() >= before + 2).await;
            stop(&d, None).await;
            let (code, err) = exit_of(child).await;
            assert_eq!(code, 0, "{err}");
            index(&d)
        }
    };
    let by_text = index_changes("text").await;
    assert!(
        by_text[1..].iter().all(|r| r.changed == Some(false)),
        "the text did not change: {by_text:#?}"
    );
    assert!(
        by_text[0]
            .fields
            .as_ref()
            .is_some_and(|f| f.contains_key("text")),
        "--signature text takes the text: {:?}",
        by_text[0]
    );
    // The same with the body's signature: the edition's comment is a change.
    let by_body = index_changes("body").await;
    assert!(
        by_body[1..].iter().any(|r| r.changed == Some(true)),
        "{by_body:#?}"
    );
}
