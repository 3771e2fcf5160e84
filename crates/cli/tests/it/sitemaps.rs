//! Sitemaps as a hostile server writes them (issue 24): a robots.txt
//! naming sitemap files with huge URLs, files on other hosts, outside the
//! crawl's scope or disallowed by their own host's robots.txt. Every
//! server listens on loopback; each judges from its own request log.

use crate::common;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::Path;

use std::time::Duration;

use common::measure::{Measured, measured};
use common::{fresh_dir, records};
use crawlkeeper_model::{CrawlRecord, ErrorKind, Via};
use crawlkeeper_testsite::hostile::{HostileServer, Script};

/// A urlset of `n` URLs `{prefix}{i}`.
fn urlset(prefix: &str, n: usize) -> Vec<u8> {
    let mut xml = String::with_capacity(n * (prefix.len() + 30));
    xml.push_str("<urlset>");
    for i in 0..n {
        xml.push_str(&format!("<url><loc>{prefix}{i}</loc></url>"));
    }
    xml.push_str("</urlset>");
    xml.into_bytes()
}

fn xml(body: Vec<u8>) -> Script {
    Script::response(200, &[("Content-Type", "application/xml")], body)
}

fn out_records(dir: &Path) -> Vec<CrawlRecord> {
    records(&std::fs::read_to_string(dir.join("out.jsonl")).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_with_huge_urls_listing_many_pages_stay_small_in_memory() {
    // Once: each listed URL carried its own copy of its sitemap's URL (as
    // parent, per job, per record): two 60 KB sitemap URLs listing 50,000
    // URLs each took gigabytes, and --max-pages did not bound it.
    let long = |tag: &str, n: usize| format!("/{tag}/{}.xml", "s".repeat(n));
    let (huge_a, huge_b) = (long("a", 60_000), long("b", 60_000));
    let (long_c, long_d) = (long("c", 1_990), long("d", 1_990));
    let robots = format!(
        "User-agent: *\nAllow: /\nSitemap: {huge_a}\nSitemap: {huge_b}\nSitemap: {long_c}\nSitemap: {long_d}\n"
    );
    let server = HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 2),
        vec![
            ("/robots.txt", Script::response(200, &[], robots)),
            ("/", Script::html("<title>home</title>")),
            (huge_a.as_str(), xml(urlset("/ua/", 50_000))),
            (huge_b.as_str(), xml(urlset("/ub/", 50_000))),
            (long_c.as_str(), xml(urlset("/uc/", 50_000))),
            (long_d.as_str(), xml(urlset("/ud/", 50_000))),
        ],
    )
    .await
    .unwrap();
    let d = fresh_dir("sitemaps", "memory");
    let seed = server.url("/");
    let Measured { code, stderr, peak } = measured(
        &d,
        &[
            "crawl",
            "--sitemaps",
            "--quiet",
            "--max-pages",
            "2000",
            "--per-host",
            "8",
            "--max-load",
            "100",
            "--retries",
            "0",
            "--out",
            "out.jsonl",
            "--state",
            "state.db",
            &seed,
        ],
        Duration::from_secs(180),
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    eprintln!("peak RSS of the crawl: {} MB", peak >> 20);
    assert!(
        peak < 150 << 20,
        "peak RSS {} MB, the bound is 150 MB",
        peak >> 20
    );
    // Sitemap URLs longer than a `loc` may be are not requested at all.
    for huge in [&huge_a, &huge_b] {
        assert_eq!(server.count(huge), 0, "a 60 KB sitemap URL was fetched");
    }
    let recs = out_records(&d);
    for file in [&long_c, &long_d] {
        let url = server.url(file);
        let r = record(&recs, &url);
        assert_eq!(r.via, Some(Via::Sitemap));
        assert_eq!(r.links, 50_000, "every listed URL counted");
    }
    assert!(recs.len() <= 2000, "--max-pages bounds it: {}", recs.len());
    let listed = recs
        .iter()
        .filter(|r| r.url.contains("/uc/") || r.url.contains("/ud/"))
        .count();
    assert!(listed > 1000, "listed pages are crawled: {listed}");
    assert!(
        recs.iter()
            .all(|r| !r.url.contains("/ua/") && !r.url.contains("/ub/"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_on_other_hosts_go_through_scope_and_their_own_robots_txt() {
    // Once: any `Sitemap:` line was fetched if the *naming* host's
    // robots.txt allowed its path, whatever --scope and the target host's
    // robots.txt said, and the request showed in no record.
    let other = HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 3),
        vec![
            (
                "/robots.txt",
                Script::response(200, &[], "User-agent: *\nDisallow: /private-sitemap.xml\n"),
            ),
            ("/private-sitemap.xml", xml(urlset("/from-private/", 3))),
            ("/open-sitemap.xml", xml(urlset("/from-open/", 2))),
        ],
    )
    .await
    .unwrap();
    let robots = format!(
        "User-agent: *\nAllow: /\nSitemap: {}\nSitemap: {}\nSitemap: /own.xml\nSitemap: /moved.xml\n",
        other.url("/private-sitemap.xml"),
        other.url("/open-sitemap.xml"),
    );
    let seed_site = HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 2),
        vec![
            ("/robots.txt", Script::response(200, &[], robots)),
            ("/", Script::html("<title>home</title>")),
            ("/own.xml", xml(urlset("/listed/", 2))),
            (
                "/moved.xml",
                Script::response(301, &[("Location", "/new-home.xml")], ""),
            ),
            ("/new-home.xml", xml(urlset("/moved-listed/", 1))),
        ],
    )
    .await
    .unwrap();
    let seed = seed_site.url("/");
    let crawl = |name: &str, extra: &[&str]| {
        let d = fresh_dir("sitemaps", name);
        let mut args = vec![
            "crawl",
            "--sitemaps",
            "--retries",
            "0",
            "--out",
            "out.jsonl",
            "--state",
            "state.db",
        ];
        args.extend_from_slice(extra);
        args.push(&seed);
        let deadline = Duration::from_secs(180);
        let run = tokio::runtime::Handle::current().block_on(measured(&d, &args, deadline));
        let (code, stderr) = (run.code, run.stderr);
        assert!(matches!(code, 0 | 1), "{stderr}");
        (out_records(&d), stderr)
    };

    // The default scope is the seed's host: the other host hears nothing.
    let (recs, stderr) = tokio::task::block_in_place(|| crawl("same-host", &[]));
    assert_eq!(
        other.requests(),
        Vec::<String>::new(),
        "out of scope, never asked"
    );
    let own = record(&recs, &seed_site.url("/own.xml"));
    assert_eq!(
        (own.via, own.status, own.links),
        (Some(Via::Sitemap), Some(200), 2)
    );
    assert!(recs.iter().any(|r| r.url == seed_site.url("/listed/1")));
    // A sitemap file that moved is read as one where it went.
    let moved = record(&recs, &seed_site.url("/new-home.xml"));
    assert_eq!(
        (moved.via, moved.links),
        (Some(Via::Sitemap), 1),
        "{moved:?}"
    );
    assert!(
        recs.iter()
            .any(|r| r.url == seed_site.url("/moved-listed/0"))
    );
    assert!(
        stderr.contains("sitemap files read: 4"),
        "own.xml, moved.xml, new-home.xml, /sitemap.xml: {stderr}"
    );
    every_request_has_a_record(&seed_site, &recs);

    // Anywhere: the other host's own robots.txt rules its sitemap files.
    let (recs, stderr) = tokio::task::block_in_place(|| crawl("any", &["--scope", "any"]));
    assert_eq!(
        other.count("/robots.txt"),
        1,
        "its own robots.txt is read first"
    );
    assert_eq!(
        other.count("/private-sitemap.xml"),
        0,
        "disallowed there, never fetched"
    );
    let private = record(&recs, &other.url("/private-sitemap.xml"));
    assert_eq!(
        private.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::RobotsDenied)
    );
    assert_eq!(private.via, Some(Via::Sitemap));
    assert_eq!(other.count("/open-sitemap.xml"), 1);
    assert!(
        recs.iter().any(|r| r.url == other.url("/from-open/1")),
        "its pages crawled"
    );
    assert!(recs.iter().all(|r| !r.url.contains("/from-private/")));
    assert!(stderr.contains("sitemap files read:"), "{stderr}");
    every_request_has_a_record(&seed_site, &recs);
    every_request_has_a_record(&other, &recs);
}

/// The record of `url` (cut to 60 bytes in the message: some are long).
fn record<'a>(recs: &'a [CrawlRecord], url: &str) -> &'a CrawlRecord {
    recs.iter()
        .find(|r| r.url == url)
        .unwrap_or_else(|| panic!("no record of {}…", &url[..url.len().min(60)]))
}

/// Every request `server` received is robots.txt or has a record: no
/// request the crawler made is invisible.
fn every_request_has_a_record(server: &HostileServer, recs: &[CrawlRecord]) {
    let recorded: BTreeSet<&str> = recs.iter().map(|r| r.url.as_str()).collect();
    for target in server.requests() {
        if target == "/robots.txt" {
            continue;
        }
        let url = server.url(&target);
        assert!(
            recorded.contains(url.as_str()),
            "{url} was requested with no record"
        );
    }
}
