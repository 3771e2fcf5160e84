//! `crawl --warc`, end to end: the files of a crawl of the showcase site
//! pass `warcio check` and `warcio index` (the Python tools archivists
//! use; `scripts/test.sh` installs them) and read back with the Rust `warc`
//! crate; every response is there once with its request and metadata and
//! right digests; a crawl killed with `kill -9` and resumed leaves valid
//! files with no page twice; rotation, plain WARC, and refusals; and
//! sitemaps (`--sitemaps`), whose files are archived too.

use std::collections::BTreeSet;
use std::time::Duration;

use crawlkeeper_model::{ErrorKind, Via};
use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::common;

use common::signal;
use common::warc::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_of_the_showcase_archives_every_exchange_and_warcio_checks_it() {
    let site = showcase().await;
    let d = dir("showcase");
    let extra = [&["--warc", "crawl.warc.gz", "--cdx"][..], &SHOWCASE_LIMITS].concat();
    let mut c = crawl(&d, &site.url(0, "/"), &extra);
    c.arg(site.url(0, "/busy"));
    let (code, err) = run(c).await;
    assert!(matches!(code, 0 | 1), "{err}");
    let pages = records(&d.join("out.jsonl"));
    let recs = check_files(&d.join("crawl.warc.gz"));
    check_pages(&recs, &pages);
    check_cdx(&d.join("crawl.warc.gz"));
    let status = |s: u16| pages.iter().any(|p| p.status == Some(s));
    assert!(
        status(301) && status(404) && status(200) && status(429),
        "redirects, errors and a response left after its retries are archived"
    );
    assert!(
        pages.iter().any(|p| p.status.is_none()),
        "URLs without a response (robots-denied, timeouts) have a metadata record"
    );
    assert!(pages.iter().any(|p| p.truncated), "a page was cut");
    // The gzip page is archived as it came: coded, its digest over the coded bytes.
    let responses = by_uri(&recs, "response");
    let gz = responses
        .iter()
        .find(|(u, _)| u.ends_with("/gzip"))
        .map(|(_, r)| r[0])
        .expect("the gzip page");
    let head = String::from_utf8_lossy(&gz.block[..gz.block.len() - payload(&gz.block).len()])
        .to_lowercase();
    assert!(head.contains("content-encoding: gzip"), "{head}");
    assert!(payload(&gz.block).starts_with(&[0x1f, 0x8b]));
    assert!(
        responses.keys().any(|u| u.ends_with("/robots.txt")),
        "robots.txt is archived"
    );
    // The warcinfo names the software and the job.
    let info = String::from_utf8_lossy(&recs[0].block).into_owned();
    assert!(info.contains("software: crawlkeeper/"), "{info}");
    assert!(info.contains("crawlkeeper-job: "), "{info}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_crawl_and_resume_leaves_valid_files_with_each_page_once() {
    let mut config = SiteConfig::uniform(1, 400);
    config.hosts[0].delay = Duration::from_millis(5);
    let site = TestSite::start(config).await.unwrap();
    let d = dir("kill");
    let seed = site.url(0, "/");
    let extra = [
        "--warc",
        "crawl.warc.gz",
        "--per-host",
        "4",
        "--warc-max-size",
        "300000",
    ];
    let mut before = 0;
    for round in 0..3 {
        let child = crawl(&d, &seed, &extra).spawn().unwrap();
        before += 60;
        tokio::time::timeout(Duration::from_secs(60), site.log().wait_for(before))
            .await
            .expect("the crawl goes on");
        signal(&child, "-KILL");
        let _ = child.wait_with_output().await;
        if round == 1 {
            // A record cut in the middle, as a kill during a write leaves it.
            let last = files(&d.join("crawl.warc.gz")).pop().unwrap();
            let whole = std::fs::read(&last).unwrap();
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&last)
                .unwrap();
            std::io::Write::write_all(&mut f, &whole[..whole.len().min(700)]).unwrap();
        }
        before = site.log().len();
    }
    let (code, err) = run(crawl(&d, &seed, &extra)).await;
    assert_eq!(code, 0, "{err}");
    let pages = records(&d.join("out.jsonl"));
    assert_eq!(pages.len(), 401);
    let recs = check_files(&d.join("crawl.warc.gz"));
    assert!(files(&d.join("crawl.warc.gz")).len() > 1, "rotated");
    check_pages(&recs, &pages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_warc_dedup_and_refusals() {
    let site = TestSite::start(SiteConfig::uniform(1, 30)).await.unwrap();
    let d = dir("plain");
    let seed = site.url(0, "/");
    let (code, err) = run(crawl(&d, &seed, &["--warc", "crawl.warc", "--warc-dedup"])).await;
    assert_eq!(code, 0, "{err}");
    let pages = records(&d.join("out.jsonl"));
    let recs = check_files(&d.join("crawl.warc"));
    check_pages(&recs, &pages);
    assert!(
        !std::fs::read(d.join("crawl.warc"))
            .unwrap()
            .starts_with(&[0x1f, 0x8b])
    );

    // Another job (in a directory of its own) may not write over this
    // job's WARC file, nor over a file that is no WARC file.
    let original = std::fs::read(d.join("crawl.warc")).unwrap();
    let d2 = dir("plain-other");
    let theirs = d.join("crawl.warc");
    let other = site.url(0, "/p/1");
    let (code, err) = run(crawl(&d2, &other, &["--warc", theirs.to_str().unwrap()])).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("crawl.warc") && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read(&theirs).unwrap(), original, "untouched");
    assert!(!d2.join("out.jsonl").exists(), "nothing written");
    std::fs::write(d2.join("notes.warc.gz"), "my notes").unwrap();
    let (code, err) = run(crawl(&d2, &other, &["--warc", "notes.warc.gz"])).await;
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        std::fs::read(d2.join("notes.warc.gz")).unwrap(),
        b"my notes"
    );
    let (code, err) = run(crawl(&d2, &other, &["--warc", "out.jsonl"])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("same file"), "{err}");
    assert!(!d2.join("out.jsonl").exists(), "nothing written");

    // --fresh starts the archive over: no page twice.
    let (code, err) = run(crawl(&d, &seed, &["--warc", "crawl.warc", "--fresh"])).await;
    assert_eq!(code, 0, "{err}");
    let recs = check_files(&d.join("crawl.warc"));
    check_pages(&recs, &records(&d.join("out.jsonl")));
    // A job crawled without --warc cannot be archived from the middle on.
    let d3 = dir("plain-late");
    let (code, err) = run(crawl(&d3, &seed, &[])).await;
    assert_eq!(code, 0, "{err}");
    let (code, err) = run(crawl(&d3, &seed, &["--warc", "late.warc"])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--fresh"), "{err}");
    assert!(!d3.join("late.warc").exists());

    // With --warc-dedup, a payload archived before becomes a revisit.
    let again = showcase().await;
    let d = dir("dedup");
    let extra = [
        "--warc",
        "d.warc.gz",
        "--warc-dedup",
        "--request-timeout",
        "2s",
        "--retries",
        "0",
    ];
    let (code, err) = run(crawl(&d, &again.url(0, "/"), &extra)).await;
    assert!(matches!(code, 0 | 1), "{err}");
    let recs = check_files(&d.join("d.warc.gz"));
    let revisits: Vec<_> = recs.iter().filter(|r| r.kind == "revisit").collect();
    assert!(
        !revisits.is_empty(),
        "identical payloads (/q?id=1, /q?id=2) give a revisit"
    );
    for r in revisits {
        let refers = r.get("WARC-Refers-To").unwrap();
        let original = recs
            .iter()
            .find(|o| o.id == refers)
            .expect("its original is archived");
        assert_eq!(
            original.get("WARC-Payload-Digest"),
            r.get("WARC-Payload-Digest")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_lead_to_pages_no_link_reaches_and_are_archived() {
    let site = showcase().await;
    let only: Vec<String> = [
        "/only-in-sitemap",
        "/only-in-gz-sitemap",
        "/only-in-broken-sitemap",
        "/only-in-text-sitemap",
    ]
    .iter()
    .map(|p| site.url(0, p))
    .collect();
    let extra = ["--request-timeout", "2s", "--retries", "0"];
    // Without --sitemaps, nothing leads there.
    let d = dir("no-sitemaps");
    let (code, err) = run(crawl(&d, &site.url(0, "/"), &extra)).await;
    assert!(matches!(code, 0 | 1), "{err}");
    let pages = records(&d.join("out.jsonl"));
    assert!(pages.iter().all(|p| !only.contains(&p.url)));

    let d = dir("sitemaps");
    let mut with = extra.to_vec();
    with.extend(["--sitemaps", "--warc", "s.warc.gz"]);
    let (code, err) = run(crawl(&d, &site.url(0, "/"), &with)).await;
    assert!(matches!(code, 0 | 1), "{err}");
    let pages = records(&d.join("out.jsonl"));
    for url in &only {
        let page = pages
            .iter()
            .find(|p| p.url == *url)
            .unwrap_or_else(|| panic!("{url} was not crawled"));
        assert_eq!(page.status, Some(200), "{url}");
        assert_eq!(page.depth, 1, "{url}");
        assert!(
            page.parent
                .as_deref()
                .is_some_and(|p| p.contains("/sitemap")),
            "{url} comes from a sitemap: {page:?}"
        );
        let lastmod = (url.ends_with("/only-in-sitemap") || url.ends_with("-gz-sitemap"))
            .then_some("2026-11-01");
        assert_eq!(
            page.lastmod.as_deref(),
            lastmod,
            "{url}: the sitemap's lastmod"
        );
    }
    // robots.txt still rules: the disallowed page a sitemap lists is not fetched.
    let denied = pages
        .iter()
        .find(|p| p.url.ends_with("/private/in-sitemap"))
        .expect("listed");
    assert!(denied.status.is_none(), "{denied:?}");
    assert!(
        site.log()
            .targets(0)
            .iter()
            .all(|t| t != "/private/in-sitemap"),
        "never requested"
    );
    // Each URL once; the sitemap files are archived beside the pages.
    let urls: BTreeSet<&str> = pages.iter().map(|p| p.url.as_str()).collect();
    assert_eq!(urls.len(), pages.len());
    let recs = check_files(&d.join("s.warc.gz"));
    check_pages(&recs, &pages);
    let responses = by_uri(&recs, "response");
    // Every sitemap file is a request with a record of its own: how many
    // URLs it listed, and what could not be read.
    for (file, listed, error) in [
        ("/sitemap.xml", 3, None),
        ("/sitemap-pages.xml", 3, None),
        ("/sitemap-more.xml.gz", 1, None),
        ("/sitemap-broken.xml", 1, Some(ErrorKind::Sitemap)),
        ("/sitemap-robots.txt", 1, None),
    ] {
        let url = site.url(0, file);
        assert!(responses.contains_key(&url), "{file} archived");
        let r = pages
            .iter()
            .find(|p| p.url == url)
            .unwrap_or_else(|| panic!("no record of {file}"));
        assert_eq!(r.via, Some(Via::Sitemap), "{r:?}");
        assert_eq!((r.status, r.links), (Some(200), listed), "{r:?}");
        assert_eq!(r.error.as_ref().map(|e| e.kind), error, "{r:?}");
    }
    let sitemaps = pages.iter().filter(|p| p.via.is_some()).count();
    assert_eq!(sitemaps, 5, "no other record is a sitemap's");
}
