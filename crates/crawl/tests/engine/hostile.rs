//! Servers that send absurd, huge, slow or malformed answers: every page is
//! recorded, nothing panics, memory and time per page stay bounded. Each
//! test here failed (panicked, aborted or stalled) before its fix.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use crawlkeeper_crawl::{CrawlConfig, HttpFetcher, Registry};
use crawlkeeper_fetch::{FetchError, FetchResponse, Fetcher};
use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::hostile::{HostileServer, Script};
use url::Url;

use crate::common::*;

const HOST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

async fn server(routes: Vec<(&str, Script)>) -> HostileServer {
    HostileServer::start(HOST, routes).await.unwrap()
}

/// A list crawl of `paths` on `server`, no retries.
async fn list_crawl(
    server: &HostileServer,
    config: CrawlConfig,
    paths: &[&str],
) -> Vec<CrawlRecord> {
    let seeds: Vec<String> = paths.iter().map(|p| server.url(p)).collect();
    let (_, records) = crawl(config, &seeds).await;
    records
}

fn config() -> CrawlConfig {
    let mut c = follow_config();
    c.scope.follow = false;
    c
}

fn only<'a>(records: &'a [CrawlRecord], url: &str) -> &'a CrawlRecord {
    let found: Vec<_> = records.iter().filter(|r| r.url == url).collect();
    assert_eq!(found.len(), 1, "one record for {url}: {records:?}");
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absurd_crawl_delay_is_capped_not_a_crash() {
    let server = server(vec![
        (
            "/robots.txt",
            Script::response(200, &[], "User-agent: *\nCrawl-delay: 1e30\n"),
        ),
        ("/a", Script::html("<title>a</title>")),
        ("/b", Script::html("<title>b</title>")),
    ])
    .await;
    let mut config = config();
    config.engine.per_host = 1;
    config.politeness.max_crawl_delay = Duration::from_millis(200);
    let started = Instant::now();
    let records = list_crawl(&server, config, &["/a", "/b"]).await;
    assert_eq!(only(&records, &server.url("/a")).status, Some(200));
    assert_eq!(only(&records, &server.url("/b")).status, Some(200));
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "the cap is the delay between the two"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_that_cost_the_parser_dearly_are_recorded_within_seconds() {
    let mut amps = b"<html><a href=\"".to_vec();
    amps.resize(10 * 1024 * 1024, b'&');
    amps.extend_from_slice(b"\">x</a><a href=\"/after\">y</a>");
    let nested = "<div><span><b>".repeat(600_000);
    let server = server(vec![
        ("/amps", Script::html(amps)),
        ("/nested", Script::html(nested)),
    ])
    .await;
    let mut config = config();
    config.fetch.max_body_bytes = 20 * 1024 * 1024;
    config.fetch.request_timeout = Duration::from_secs(20);
    config.engine.extract_timeout = Duration::from_secs(120);
    let started = Instant::now();
    let records = list_crawl(&server, config, &["/amps", "/nested"]).await;
    let amps = only(&records, &server.url("/amps"));
    assert_eq!((amps.status, &amps.error), (Some(200), &None));
    assert_eq!(
        amps.links, 1,
        "the 10 MiB link is too long to keep; the next is kept"
    );
    assert_eq!(only(&records, &server.url("/nested")).status, Some(200));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsolicited_304_is_an_error_and_confirms_no_copy() {
    // Nothing conditional is asked on a first pass: a 304 there confirms
    // nothing, and once left validators a re-crawl turned into a revisit
    // of a copy never archived.
    let headers = [
        ("ETag", "\"v1\""),
        ("Last-Modified", "Tue, 24 Nov 2026 00:00:00 GMT"),
    ];
    let server = server(vec![("/nm", Script::response(304, &headers, ""))]).await;
    let records = list_crawl(&server, config(), &["/nm"]).await;
    let r = only(&records, &server.url("/nm"));
    assert_eq!(r.status, Some(304));
    assert_eq!(
        error_kind(r),
        Some(ErrorKind::UnsolicitedNotModified),
        "{r:?}"
    );
    assert_eq!((&r.etag, &r.last_modified), (&None, &None), "{r:?}");
    assert_eq!(
        crawlkeeper_model::Known::of_record(r),
        None,
        "nothing for a re-crawl to ask"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_past_its_parse_time_is_recorded_with_the_links_found() {
    let page = "<a href=/x>x</a>".repeat(200_000);
    let server = server(vec![("/many", Script::html(page))]).await;
    let mut config = config();
    config.engine.extract_timeout = Duration::from_millis(1);
    let records = list_crawl(&server, config, &["/many"]).await;
    let r = only(&records, &server.url("/many"));
    assert_eq!(r.status, Some(200));
    assert_eq!(error_kind(r), Some(ErrorKind::ExtractLimit), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_past_the_per_page_limit_are_counted_and_dropped() {
    let page: String = (0..300_000)
        .map(|i| format!("<a href=/l/{i}>.</a>"))
        .collect();
    let server = server(vec![("/", Script::html(page))]).await;
    let mut config = config();
    config.engine.max_links_per_page = 1000;
    // Unoptimised test builds on a loaded machine parse slowly.
    config.engine.extract_timeout = Duration::from_secs(120);
    let records = list_crawl(&server, config, &["/"]).await;
    let r = only(&records, &server.url("/"));
    assert_eq!((r.links, r.links_dropped), (1000, 299_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_content_length_allocates_nothing_from_the_header() {
    // Before: the body buffer was preallocated from Content-Length, up to
    // the body limit; with a 1 TB limit the process aborted.
    let server = server(vec![
        (
            "/liar",
            Script::head_only(
                200,
                &[
                    ("Content-Type", "text/html"),
                    ("Content-Length", "1000000000000"),
                ],
            )
            .then(crawlkeeper_testsite::hostile::Step::Send(
                b"\r\n<title>short</title>".to_vec(),
            )),
        ),
        (
            "/overflow",
            Script::head_only(200, &[("Content-Length", "99999999999999999999999999")])
                .then(crawlkeeper_testsite::hostile::Step::Send(b"\r\nx".to_vec())),
        ),
    ])
    .await;
    let mut config = config();
    config.fetch.max_body_bytes = 1_000_000_000_000;
    let records = list_crawl(&server, config, &["/liar", "/overflow"]).await;
    let liar = only(&records, &server.url("/liar"));
    assert_eq!(error_kind(liar), Some(ErrorKind::Body), "{liar:?}");
    let overflow = only(&records, &server.url("/overflow"));
    assert!(overflow.error.is_some(), "{overflow:?}");
}

/// A fetcher that panics on robots.txt and fetches anything else.
struct PanicsOnRobots(HttpFetcher);

#[async_trait]
impl Fetcher for PanicsOnRobots {
    async fn fetch(&self, url: &Url) -> Result<FetchResponse, FetchError> {
        if url.path() == "/robots.txt" {
            panic!("robots.txt handling blew up");
        }
        self.0.fetch(url).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_while_reading_robots_txt_records_every_url_of_the_authority() {
    let server = server(vec![("/a", Script::html("a")), ("/b", Script::html("b"))]).await;
    let mut registry = Registry::builtin();
    registry.set_fetcher(|ctx| {
        let inner = HttpFetcher::new(&ctx.config.fetch, ctx.seeds).map_err(|e| e.to_string())?;
        Ok(Arc::new(PanicsOnRobots(inner)))
    });
    let seeds = vec![server.url("/a"), server.url("/b")];
    let (_, records) = crawl_with(&registry, config(), &seeds).await;
    for seed in &seeds {
        let r = only(&records, seed);
        assert_eq!(error_kind(r), Some(ErrorKind::Internal), "{r:?}");
        assert!(
            r.error.as_ref().unwrap().message.contains("blew up"),
            "{r:?}"
        );
    }
    assert_eq!(server.count("/a"), 0, "nothing requested without rules");
}

/// An extractor that panics on one page.
struct PanicsOn(&'static str);

impl crawlkeeper_crawl::Extractor for PanicsOn {
    fn name(&self) -> &str {
        "panics"
    }

    fn extract(&self, page: &crawlkeeper_crawl::Page<'_>, _out: &mut crawlkeeper_crawl::Extracted) {
        if page.url.path() == self.0 {
            panic!("extractor blew up on {}", self.0);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_while_processing_a_page_is_recorded_and_the_crawl_goes_on() {
    let server = server(vec![
        ("/", Script::html("<a href=/boom>b</a><a href=/fine>f</a>")),
        ("/boom", Script::html("boom")),
        ("/fine", Script::html("fine")),
    ])
    .await;
    let mut registry = Registry::builtin();
    registry.add_extractor("panics", |_| Ok(Box::new(PanicsOn("/boom"))));
    let mut config = follow_config();
    config.pipeline.extractors.push("panics".into());
    let (_, records) = crawl_with(&registry, config, &[server.url("/")]).await;
    let boom = only(&records, &server.url("/boom"));
    assert_eq!(error_kind(boom), Some(ErrorKind::Internal), "{boom:?}");
    assert_eq!(only(&records, &server.url("/fine")).status, Some(200));
    assert_eq!(server.count("/boom"), 1, "recorded once, not retried");
}
