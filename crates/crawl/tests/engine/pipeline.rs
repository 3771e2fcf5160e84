//! End-to-end tests of the pipeline against the test site, judged from
//! the site's own request log.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crawlkeeper_crawl::config::{HostScope, ResolveOverride};
use crawlkeeper_crawl::{
    CrawlConfig, Engine, Extracted, Extractor, MemorySink, Page, Registry, ScopeReason, Scoper,
    StopReason, Verdict,
};
use crawlkeeper_model::ErrorKind;
use crawlkeeper_testsite::site::RobotsMode;
use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn showcase_crawl_reaches_every_page_once_and_avoids_every_trap() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let (summary, records) = crawl(follow_config(), &[site.url(0, "/")]).await;
    assert_eq!(summary.stop, StopReason::Finished);

    let requested = page_requests(&site, 0);
    let expected: BTreeSet<String> = SiteConfig::showcase().hosts[0]
        .expected(5)
        .into_keys()
        .collect();
    assert_eq!(
        requested, expected,
        "requested pages differ from the reachable in-scope set"
    );
    assert!(
        requested.iter().all(|t| !t.starts_with("/never/")),
        "{requested:?}"
    );
    assert!(
        !requested.contains("/private/secret"),
        "robots-disallowed page fetched"
    );
    assert!(
        requested.contains("/q?id=1"),
        "tracking parameters are stripped"
    );
    assert!(
        site.log().targets(1).is_empty(),
        "another host was crawled under same-host scope"
    );
    let robots = site
        .log()
        .targets(0)
        .iter()
        .filter(|t| *t == "/robots.txt")
        .count();
    assert_eq!(robots, 1, "robots.txt is fetched once per authority");

    // One record per request, plus the robots-denied one.
    assert_eq!(records.len(), requested.len() + 1);
    let urls: BTreeSet<&str> = records.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls.len(), records.len(), "a URL has two records");
    assert_eq!(
        error_kind(by_path(&site, &records, "/private/secret")),
        Some(ErrorKind::RobotsDenied)
    );

    let looped = [
        by_path(&site, &records, "/loop/a"),
        by_path(&site, &records, "/loop/b"),
    ];
    assert!(
        looped
            .iter()
            .any(|r| error_kind(r) == Some(ErrorKind::RedirectLoop))
    );
    assert_eq!(
        error_kind(by_path(&site, &records, "/chain/2")),
        Some(ErrorKind::TooManyRedirects)
    );

    let huge = by_path(&site, &records, "/huge");
    assert!(huge.truncated);
    assert_eq!(huge.bytes, 10 * 1024 * 1024);
    assert_eq!(error_kind(huge), Some(ErrorKind::TooLarge));

    let slow = by_path(&site, &records, "/slow");
    assert_eq!(error_kind(slow), Some(ErrorKind::Timeout));
    assert_eq!(slow.status, None);
    // The slow page did not stall the crawl: other pages finished while it waited.
    let during = records
        .iter()
        .filter(|r| r.fetched_at > slow.fetched_at && r.url != slow.url)
        .count();
    assert!(
        during > 10,
        "only {during} requests started while /slow was waiting"
    );

    let bomb = by_path(&site, &records, "/bomb");
    assert!(
        bomb.truncated,
        "a decompression bomb is cut at the body limit: {bomb:?}"
    );
    assert_eq!(bomb.bytes, 10 * 1024 * 1024);
    assert_eq!(error_kind(bomb), Some(ErrorKind::TooLarge));

    let gzip = by_path(&site, &records, "/gzip");
    assert_eq!(
        (gzip.status, gzip.links, gzip.title.as_deref()),
        (Some(200), 1, Some("Compressed"))
    );

    let redirect = by_path(&site, &records, "/redirect/p1");
    assert_eq!(
        (redirect.status, redirect.final_url.clone()),
        (Some(301), site.url(0, "/p/1"))
    );

    let page = by_path(&site, &records, "/p/0");
    assert_eq!(page.title.as_deref(), Some("Page 0 & friends"));
    assert_eq!(page.parent.as_deref(), Some(site.url(0, "/").as_str()));
    assert_eq!(page.depth, 1);
    assert_eq!(
        page.links, 6,
        "5 children and a link to itself; the cross-host link is out of scope"
    );
    assert_eq!(
        page.content_type.as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert!(page.response_ms.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_crawl_fetches_only_seeds_and_their_redirects() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let mut config = follow_config();
    config.scope.follow = false;
    let seeds = [
        site.url(0, "/"),
        site.url(0, "/p/3"),
        site.url(0, "/redirect/p1"),
        site.url(0, "/p/3#again"),
    ];
    let (_, records) = crawl(config, &seeds).await;
    let requested = page_requests(&site, 0);
    let expected: BTreeSet<String> = ["/", "/p/3", "/redirect/p1", "/p/1"]
        .map(String::from)
        .into();
    assert_eq!(requested, expected);
    assert_eq!(records.len(), 4);
    assert!(
        records
            .iter()
            .find(|r| r.url == site.url(0, "/"))
            .unwrap()
            .links
            > 10,
        "links are still counted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_unavailable_disallows_and_missing_allows() {
    let mut config = SiteConfig::uniform(2, 5);
    config.hosts[0].robots = RobotsMode::Unavailable;
    config.hosts[1].robots = RobotsMode::Missing;
    let site = TestSite::start(config).await.unwrap();
    let (_, records) = crawl(follow_config(), &[site.url(0, "/"), site.url(1, "/")]).await;
    assert_eq!(
        site.log().targets(0),
        ["/robots.txt"],
        "nothing but robots.txt on a 503 host"
    );
    assert!(
        records
            .iter()
            .filter(|r| r.authority.host() == "127.0.0.1")
            .all(|r| error_kind(r) == Some(ErrorKind::RobotsUnavailable))
    );
    assert_eq!(
        page_requests(&site, 1).len(),
        6,
        "index and 5 pages on the host without robots.txt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_robots_fetches_disallowed_pages_and_never_robots_txt() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let mut config = follow_config();
    config.scope.respect_robots = false;
    config.scope.include = vec!["/$".into(), "/private/".into()];
    crawl(config, &[site.url(0, "/")]).await;
    let requested = page_requests(&site, 0);
    assert!(requested.contains("/private/secret"));
    assert!(!site.log().targets(0).contains(&"/robots.txt".to_owned()));
}

const NAMES: [&str; 3] = ["www.site.test", "blog.site.test", "other.test"];

/// Three hosts with names, each linking to the next: www → blog → other.
async fn named_site() -> (TestSite, CrawlConfig) {
    let mut config = SiteConfig::uniform(3, 5);
    for (host, name) in config.hosts.iter_mut().zip(NAMES) {
        host.name = Some(name.to_owned());
        host.cross_links = true;
    }
    let site = TestSite::start(config).await.unwrap();
    let mut crawl_config = follow_config();
    crawl_config.fetch.resolve = NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| ResolveOverride {
            host: (*name).to_owned(),
            addr: site.addr(i),
        })
        .collect();
    (site, crawl_config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_domain_scope_follows_sibling_hosts_only() {
    let (site, mut config) = named_site().await;
    config.scope.hosts = HostScope::SameDomain;
    crawl(config, &[site.url(0, "/")]).await;
    assert_eq!(page_requests(&site, 0).len(), 6);
    assert!(
        !page_requests(&site, 1).is_empty(),
        "blog.site.test shares the domain"
    );
    assert!(
        page_requests(&site, 2).is_empty(),
        "other.test is another domain"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_host_scope_with_allow_list() {
    let (site, config) = named_site().await;
    crawl(config.clone(), &[site.url(0, "/")]).await;
    assert_eq!(page_requests(&site, 0).len(), 6);
    assert!(page_requests(&site, 1).is_empty(), "same-host stays on www");

    let (site, mut config) = named_site().await;
    config.scope.allow_hosts = vec!["BLOG.site.test".into()];
    crawl(config, &[site.url(0, "/")]).await;
    assert!(
        !page_requests(&site, 1).is_empty(),
        "an allowed host is followed"
    );
    assert!(
        page_requests(&site, 2).is_empty(),
        "links from an allowed host stay in scope rules"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_patterns_and_user_agent() {
    let site = TestSite::start(SiteConfig::uniform(1, 200)).await.unwrap();
    let mut config = follow_config();
    config.scope.max_pages = Some(25);
    config.fetch.user_agent = "tester/1.0".into();
    let (summary, records) = crawl(config, &[site.url(0, "/")]).await;
    assert_eq!(page_requests(&site, 0).len(), 25);
    assert_eq!(records.len(), 25);
    assert_eq!(summary.total().requests, 25);
    assert!(
        site.log()
            .entries()
            .iter()
            .all(|e| e.user_agent == "tester/1.0")
    );

    let site = TestSite::start(SiteConfig::uniform(1, 200)).await.unwrap();
    let mut config = follow_config();
    config.scope.exclude = vec!["/p/1\\d*$".into()];
    config.scope.max_depth = 2;
    crawl(config, &[site.url(0, "/")]).await;
    let requested = page_requests(&site, 0);
    assert!(
        requested.iter().all(|t| !t.starts_with("/p/1")),
        "{requested:?}"
    );
    // Depth 2 from "/": /p/0 (1) and its children (2) but not theirs.
    let expected: BTreeSet<String> = SiteConfig::uniform(1, 200).hosts[0]
        .expected(2)
        .into_keys()
        .filter(|t| !t.starts_with("/p/1"))
        .collect();
    assert_eq!(requested, expected);
    let ua = &site.log().entries()[0].user_agent;
    assert!(
        ua.starts_with("crawlkeeper/"),
        "default user agent, got {ua}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_host_and_max_workers_bound_concurrency() {
    let mut config = SiteConfig::uniform(3, 30);
    for h in &mut config.hosts {
        h.delay = Duration::from_millis(20);
    }
    let site = TestSite::start(config).await.unwrap();
    let mut crawl_config = follow_config();
    crawl_config.engine.per_host = 3;
    crawl_config.engine.max_workers = 5;
    let seeds: Vec<String> = (0..3).map(|i| site.url(i, "/")).collect();
    crawl(crawl_config, &seeds).await;
    for h in 0..3 {
        assert_eq!(page_requests(&site, h).len(), 31);
        assert!(
            site.log().max_in_flight(h) <= 3,
            "host {h}: {}",
            site.log().max_in_flight(h)
        );
    }
    let total_max: usize = (0..3).map(|h| site.log().max_in_flight(h)).max().unwrap();
    assert!(total_max >= 2, "requests to one host did overlap");
}

/// A library user's scoper: refuses odd page numbers.
struct EvenPagesOnly;

impl Scoper for EvenPagesOnly {
    fn name(&self) -> &str {
        "even-pages"
    }
    fn check(&self, c: &crawlkeeper_crawl::Candidate<'_>) -> Verdict {
        let odd = c
            .url
            .path()
            .strip_prefix("/p/")
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n % 2 == 1);
        if odd {
            Verdict::Reject(ScopeReason::Custom("even-pages"))
        } else {
            Verdict::Accept
        }
    }
}

/// A library user's extractor: counts the pages it sees, finds no links.
struct Counter(Arc<AtomicUsize>);

impl Extractor for Counter {
    fn name(&self) -> &str {
        "counter"
    }
    fn extract(&self, _page: &Page<'_>, _out: &mut Extracted) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_processors_are_configured_by_name() {
    let site = TestSite::start(SiteConfig::uniform(1, 40)).await.unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let mut registry = Registry::builtin();
    registry.add_scoper("even-pages", |_| Ok(Box::new(EvenPagesOnly)));
    let counter = seen.clone();
    registry.add_extractor("counter", move |_| Ok(Box::new(Counter(counter.clone()))));
    let mut config = follow_config();
    config.pipeline.scopers.push("even-pages".into());
    config.pipeline.extractors.push("counter".into());
    let (_, records) = crawl_with(&registry, config, &[site.url(0, "/")]).await;
    let requested = page_requests(&site, 0);
    assert!(
        requested
            .iter()
            .all(|t| !t.ends_with(['1', '3', '5', '7', '9'])),
        "{requested:?}"
    );
    assert_eq!(
        seen.load(Ordering::SeqCst),
        records.len(),
        "the extractor saw every page"
    );

    let mut config = follow_config();
    config.pipeline.scopers.push("no-such-scoper".into());
    let err = Engine::new(config, vec![], &registry, Box::new(MemorySink::new()))
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("unknown scoper 'no-such-scoper'"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_timeout_stops_in_order_and_keeps_what_was_done() {
    let mut config = SiteConfig::uniform(1, 500);
    config.hosts[0].delay = Duration::from_millis(50);
    let site = TestSite::start(config).await.unwrap();
    let mut crawl_config = follow_config();
    crawl_config.engine.run_timeout = Duration::from_millis(600);
    crawl_config.engine.per_host = 2;
    let (summary, records) = crawl(crawl_config, &[site.url(0, "/")]).await;
    assert_eq!(summary.stop, StopReason::Timeout);
    assert!(summary.pending > 0);
    // The whole site (500 pages at 50 ms, two at a time) takes 12.5 s: a
    // crawl that ignored its 0.6 s timeout could not end within 8 s, one
    // that obeyed it ends long before, however busy the machine.
    assert!(
        summary.elapsed < Duration::from_secs(8),
        "{:?}",
        summary.elapsed
    );
    // Every page requested and answered before the stop has its record.
    let recorded: BTreeSet<String> = records.iter().map(|r| r.url.clone()).collect();
    let requested = page_requests(&site, 0);
    assert_eq!(
        records.len(),
        requested.len(),
        "in-flight requests finish within the grace"
    );
    let counts: HashMap<&str, usize> = records.iter().fold(HashMap::new(), |mut m, r| {
        *m.entry(r.url.as_str()).or_default() += 1;
        m
    });
    assert!(counts.values().all(|&n| n == 1));
    assert!(!recorded.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depth_limit_is_exact_under_high_concurrency() {
    // 3,000 pages, 8 links each: the tree's last level sits at the depth
    // limit, and back links offer the same pages again at greater depths.
    let mut config = SiteConfig::uniform(1, 3000);
    config.hosts[0].links = 8;
    config.hosts[0].delay_spread = Duration::from_millis(30);
    let site = TestSite::start(config.clone()).await.unwrap();
    let mut crawl_config = follow_config();
    crawl_config.engine.per_host = 32;
    crawl_config.engine.max_workers = 32;
    crawl_config.scope.max_depth = 4;
    crawl(crawl_config, &[site.url(0, "/")]).await;
    let expected: BTreeSet<String> = config.hosts[0].expected(4).into_keys().collect();
    assert_eq!(page_requests(&site, 0), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_sites_are_crawled_over_http2_with_verified_certificates() {
    let mut config = SiteConfig::uniform(1, 10);
    config.tls = true;
    let site = TestSite::start(config).await.unwrap();
    assert!(site.origin(0).starts_with("https://"));
    let ca = std::env::temp_dir().join(format!("ck-ca-{}.pem", std::process::id()));
    std::fs::write(&ca, site.ca_pem().unwrap()).unwrap();

    let mut crawl_config = follow_config();
    crawl_config.fetch.ca_certs = vec![ca.clone()];
    let (_, records) = crawl(crawl_config, &[site.url(0, "/")]).await;
    assert_eq!(records.len(), 11);
    assert!(
        records.iter().all(|r| r.status == Some(200)),
        "{records:#?}"
    );
    let entries = site.log().entries();
    assert!(
        entries.iter().all(|e| e.version == "HTTP/2.0"),
        "ALPN chose HTTP/2"
    );

    // Without the authority the certificate is refused: nothing is fetched.
    let site = TestSite::start({
        let mut c = SiteConfig::uniform(1, 3);
        c.tls = true;
        c
    })
    .await
    .unwrap();
    let (_, records) = crawl(follow_config(), &[site.url(0, "/")]).await;
    assert!(
        site.log().is_empty(),
        "no request got through the TLS handshake"
    );
    assert_eq!(records.len(), 1);
    let e = records[0].error.as_ref().unwrap();
    assert_eq!(
        e.kind,
        ErrorKind::Certificate,
        "refused fetching robots.txt: the seed is not requested, and says why"
    );
    assert!(e.message.contains("unknown issuer"), "{e:?}");

    // A certificate file that is not one is a configuration error.
    let mut bad = follow_config();
    bad.fetch.ca_certs = vec![std::env::temp_dir().join("no-such-ca.pem")];
    let err = Engine::new(
        bad,
        vec![],
        &Registry::builtin(),
        Box::new(MemorySink::new()),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("no-such-ca.pem"), "{err}");
    std::fs::remove_file(ca).ok();
}
