//! Reading what a crawl archived: WARC files checked with warcio and the
//! Rust `warc` crate, and their records by kind and URL.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crawlkeeper_model::CrawlRecord;
use crawlkeeper_warc::digest::sha1;
use crawlkeeper_warc::scan::{ScannedRecord, scan_file};
use crawlkeeper_warc::writer::{WriterConfig, existing_files};
use tokio::process::Command;

pub fn dir(name: &str) -> PathBuf {
    super::fresh_dir("warc", name)
}

pub fn crawl(dir: &Path, seed: &str, extra: &[&str]) -> Command {
    super::crawl_in(dir, seed, extra)
}

pub async fn run(mut c: Command) -> (i32, String) {
    let out = tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("the crawl ends in time")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn records(path: &Path) -> Vec<CrawlRecord> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The showcase site, its slow page answering within a crawl's limits.
pub async fn showcase() -> crawlkeeper_testsite::TestSite {
    let mut config = crawlkeeper_testsite::SiteConfig::showcase();
    config.slow = Duration::from_secs(5);
    crawlkeeper_testsite::TestSite::start(config).await.unwrap()
}

/// Crawl limits for the showcase: its huge page cut, its slow page timed
/// out, nothing retried.
pub const SHOWCASE_LIMITS: [&str; 6] = [
    "--max-body",
    "200000",
    "--request-timeout",
    "2s",
    "--retries",
    "0",
];

/// Runs `warcio <args>`: it must succeed.
pub fn warcio(args: &[&str]) -> String {
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
pub fn files(path: &Path) -> Vec<PathBuf> {
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
pub fn check_files(path: &Path) -> Vec<ScannedRecord> {
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

pub fn read_with_warc_crate(f: &Path, expected: usize) {
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
pub fn payload(block: &[u8]) -> &[u8] {
    let end = block.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    &block[end + 4..]
}

/// Response records by target URI.
pub fn by_uri<'a>(
    recs: &'a [ScannedRecord],
    kind: &str,
) -> BTreeMap<String, Vec<&'a ScannedRecord>> {
    let mut m: BTreeMap<String, Vec<&ScannedRecord>> = BTreeMap::new();
    for r in recs.iter().filter(|r| r.kind == kind) {
        m.entry(r.target_uri.clone().unwrap()).or_default().push(r);
    }
    m
}

/// Each page with a response has one response, one request pointing at it
/// and one metadata record; digests are right.
pub fn check_pages(recs: &[ScannedRecord], pages: &[CrawlRecord]) {
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
        // The test site's hosts are loopback addresses, named as such.
        let host = url.split("://").nth(1).and_then(|r| r.split(':').next());
        assert_eq!(r.get("WARC-IP-Address"), host, "{url}");
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
    // Sitemap files have records of their own; robots.txt has none.
    let fetched_for_the_crawl = responses
        .keys()
        .filter(|u| u.ends_with("/robots.txt"))
        .count();
    assert_eq!(
        responses.len(),
        with_status + fetched_for_the_crawl,
        "nothing else archived"
    );
}

/// The CDXJ index `--cdx` wrote beside each file at `path` equals what
/// `cdxj-indexer --sort` (webrecorder's indexer, from PyPI) makes of it.
pub fn check_cdx(path: &Path) {
    for f in files(path) {
        let index = crawlkeeper_warc::cdxj::index_path(&f);
        let ours = std::fs::read_to_string(&index)
            .unwrap_or_else(|e| panic!("no index {}: {e}", index.display()));
        let out = std::process::Command::new("cdxj-indexer")
            .arg("--sort")
            .arg(&f)
            .output()
            .unwrap_or_else(|e| {
                panic!("cdxj-indexer is needed (scripts/test.sh installs it): {e}")
            });
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs = String::from_utf8_lossy(&out.stdout);
        assert!(!ours.is_empty(), "{} has lines", index.display());
        assert!(
            ours == theirs,
            "{} differs from cdxj-indexer's:\n{}",
            index.display(),
            ours.lines()
                .zip(theirs.lines())
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("ours:   {a}\ntheirs: {b}"))
                .unwrap_or_else(|| format!(
                    "{} lines vs {}",
                    ours.lines().count(),
                    theirs.lines().count()
                ))
        );
    }
}
