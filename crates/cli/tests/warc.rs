//! `crawl --warc`, end to end: the files of a crawl of the showcase site
//! pass `warcio check` and `warcio index` (the Python tools archivists
//! use; `scripts/test.sh` installs them) and read back with the Rust `warc`
//! crate; every response is there once with its request and metadata and
//! right digests; a crawl killed with `kill -9` and resumed leaves valid
//! files with no page twice; rotation, plain WARC, and refusals; and
//! sitemaps (`--sitemaps`), whose files are archived too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crawlkeeper_model::CrawlRecord;
use crawlkeeper_testsite::{SiteConfig, TestSite};
use crawlkeeper_warc::digest::sha1;
use crawlkeeper_warc::scan::{ScannedRecord, scan_file};
use crawlkeeper_warc::writer::{WriterConfig, existing_files};
use tokio::process::Command;

mod common;

use common::signal;

fn dir(name: &str) -> PathBuf {
    common::fresh_dir("warc", name)
}

fn crawl(dir: &Path, seed: &str, extra: &[&str]) -> Command {
    common::crawl_in(dir, seed, extra)
}

async fn run(mut c: Command) -> (i32, String) {
    let out = tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("the crawl ends in time")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn records(path: &Path) -> Vec<CrawlRecord> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs `warcio <args>`: it must succeed.
fn warcio(args: &[&str]) -> String {
    let out = std::process::Command::new("warcio")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("warcio is needed (scripts/test.sh installs it with pip): {e}"));
    assert!(
        out.status.success(),
        "warcio {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The files of the WARC output at `path`, in order.
fn files(path: &Path) -> Vec<PathBuf> {
    let config = WriterConfig {
        path: path.to_path_buf(),
        max_size: 1,
        gzip_level: 1,
        info: Vec::new(),
    };
    existing_files(&config)
        .into_iter()
        .map(|n| config.path_of(n))
        .collect()
}

/// Checks every file with warcio and the `warc` crate, and returns their
/// records as our scanner reads them.
fn check_files(path: &Path) -> Vec<ScannedRecord> {
    let mut all = Vec::new();
    for f in files(path) {
        let name = f.to_str().unwrap();
        warcio(&["check", name]);
        let index = warcio(&["index", name]);
        let scanned = scan_file(&f).unwrap();
        assert_eq!(
            scanned.valid_len, scanned.file_len,
            "{name} ends with a whole record"
        );
        assert_eq!(index.lines().count(), scanned.records.len(), "{name}");
        assert_eq!(
            scanned.records[0].kind, "warcinfo",
            "{name} begins with warcinfo"
        );
        read_with_warc_crate(&f, scanned.records.len());
        all.extend(scanned.records);
    }
    all
}

fn read_with_warc_crate(f: &Path, expected: usize) {
    let reader: Box<dyn std::io::BufRead> = if f.extension().is_some_and(|e| e == "gz") {
        let file = std::fs::File::open(f).unwrap();
        Box::new(std::io::BufReader::new(flate2::read::MultiGzDecoder::new(
            file,
        )))
    } else {
        // (`WarcReader::from_path` opens the file for writing.)
        Box::new(std::io::BufReader::new(std::fs::File::open(f).unwrap()))
    };
    let mut count = 0;
    for record in warc::WarcReader::new(reader).iter_records() {
        let record = record.unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!record.warc_id().is_empty());
        count += 1;
    }
    assert_eq!(count, expected, "the warc crate reads {}", f.display());
}

/// The HTTP payload of a response block (after the head).
fn payload(block: &[u8]) -> &[u8] {
    let end = block.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    &block[end + 4..]
}

/// Response records by target URI.
fn by_uri<'a>(recs: &'a [ScannedRecord], kind: &str) -> BTreeMap<String, Vec<&'a ScannedRecord>> {
    let mut m: BTreeMap<String, Vec<&ScannedRecord>> = BTreeMap::new();
    for r in recs.iter().filter(|r| r.kind == kind) {
        m.entry(r.target_uri.clone().unwrap()).or_default().push(r);
    }
    m
}

/// Each page with a response has one response, one request pointing at it
/// and one metadata record; digests are right.
fn check_pages(recs: &[ScannedRecord], pages: &[CrawlRecord]) {
    let responses = by_uri(recs, "response");
    let requests = by_uri(recs, "request");
    let metadata = by_uri(recs, "metadata");
    let ids: BTreeSet<&str> = recs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), recs.len(), "record ids are unique");
    for page in pages.iter().filter(|p| p.status.is_some()) {
        let url = &page.url;
        let r = responses
            .get(url)
            .unwrap_or_else(|| panic!("no response for {url}"));
        assert_eq!(r.len(), 1, "{url} archived once");
        let r = r[0];
        assert_eq!(r.block_digest_ok, Some(true), "{url}");
        assert_eq!(
            r.get("WARC-Payload-Digest"),
            Some(sha1(payload(&r.block)).as_str()),
            "{url}"
        );
        assert_eq!(r.get("WARC-IP-Address"), Some("127.0.0.1"), "{url}");
        let status = format!(" {} ", page.status.unwrap());
        assert!(
            String::from_utf8_lossy(&r.block[..20]).contains(&status),
            "{url}"
        );
        let q = &requests[url];
        assert_eq!(q.len(), 1, "{url}");
        assert_eq!(q[0].get("WARC-Concurrent-To"), Some(r.id.as_str()));
        assert!(q[0].block.starts_with(b"GET /"), "{url}");
        assert_eq!(
            metadata[url][0].get("WARC-Concurrent-To"),
            Some(r.id.as_str())
        );
        if page.truncated {
            assert_eq!(r.get("WARC-Truncated"), Some("length"), "{url}");
        }
    }
    // Every URL, with a response or not, has one metadata record.
    for page in pages {
        let m = metadata.get(&page.url).map_or(0, Vec::len);
        assert_eq!(m, 1, "{} has {m} metadata records", page.url);
    }
    assert_eq!(metadata.len(), pages.len());
    let with_status = pages.iter().filter(|p| p.status.is_some()).count();
    let fetched_for_the_crawl = responses
        .keys()
        .filter(|u| u.ends_with("/robots.txt") || u.contains("/sitemap"))
        .count();
    assert_eq!(
        responses.len(),
        with_status + fetched_for_the_crawl,
        "nothing else archived"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_of_the_showcase_archives_every_exchange_and_warcio_checks_it() {
    let mut config = SiteConfig::showcase();
    config.slow = Duration::from_secs(5);
    let site = TestSite::start(config).await.unwrap();
    let d = dir("showcase");
    let extra = [
        "--warc",
        "crawl.warc.gz",
        "--max-body",
        "200000",
        "--request-timeout",
        "2s",
        "--retries",
        "0",
    ];
    let mut c = crawl(&d, &site.url(0, "/"), &extra);
    c.arg(site.url(0, "/busy"));
    let (code, err) = run(c).await;
    assert!(matches!(code, 0 | 1), "{err}");
    let pages = records(&d.join("out.jsonl"));
    let recs = check_files(&d.join("crawl.warc.gz"));
    check_pages(&recs, &pages);
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
    let mut config = SiteConfig::showcase();
    config.slow = Duration::from_secs(5);
    let showcase = TestSite::start(config).await.unwrap();
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
    let (code, err) = run(crawl(&d, &showcase.url(0, "/"), &extra)).await;
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
    let mut config = SiteConfig::showcase();
    config.slow = Duration::from_secs(5);
    let site = TestSite::start(config).await.unwrap();
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
    for file in [
        "/sitemap.xml",
        "/sitemap-pages.xml",
        "/sitemap-more.xml.gz",
        "/sitemap-robots.txt",
    ] {
        assert!(
            responses.contains_key(&site.url(0, file)),
            "{file} archived"
        );
    }
}
