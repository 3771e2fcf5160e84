//! The per-authority scheduler, judged from the server's side: overlap
//! across authorities, spacing within one, retries, giving up.

use std::time::{Duration, Instant};

use crawlkeeper_crawl::politeness::adaptive_delay;
use crawlkeeper_model::ErrorKind;
use crawlkeeper_testsite::{HostConfig, SiteConfig, TestSite};

use crate::common::*;

/// Arrival instants of the page requests (robots.txt excluded) to `host`.
fn arrivals(site: &TestSite, host: usize) -> Vec<(String, Instant)> {
    site.log()
        .entries()
        .into_iter()
        .filter(|e| e.host == host && e.target != "/robots.txt")
        .map(|e| (e.target, e.at))
        .collect()
}

fn polite_config() -> crawlkeeper_crawl::CrawlConfig {
    let mut c = follow_config();
    c.politeness = Default::default();
    c.engine.per_host = 1;
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorities_overlap_while_each_has_one_request_in_flight() {
    let mut config = SiteConfig::uniform(20, 5);
    for h in &mut config.hosts {
        h.delay = Duration::from_millis(200);
    }
    let site = TestSite::start(config).await.unwrap();
    let seeds: Vec<String> = (0..20).map(|i| site.url(i, "/")).collect();
    let started = Instant::now();
    let (summary, records) = crawl(polite_config(), &seeds).await;
    let elapsed = started.elapsed();
    assert_eq!(records.len(), 20 * 6);
    let sequential = Duration::from_millis(200) * (20 * 6);
    assert!(
        elapsed <= sequential / 5,
        "took {elapsed:?}, sequential sum is {sequential:?}"
    );
    for h in 0..20 {
        assert_eq!(
            site.log().max_in_flight(h),
            1,
            "host {h} had overlapping requests"
        );
    }
    assert_eq!(summary.total().status_2xx, 120);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adaptive_delay_spaces_requests_to_one_authority() {
    let mut config = SiteConfig::uniform(1, 6);
    config.hosts[0].delay = Duration::from_millis(100);
    let site = TestSite::start(config).await.unwrap();
    let (_, records) = crawl(polite_config(), &[site.url(0, "/")]).await;
    let arrivals = arrivals(&site, 0);
    assert_eq!(arrivals.len(), 7);
    let mut previous = Duration::ZERO;
    for pair in arrivals.windows(2) {
        let (target, at) = &pair[0];
        let record = records
            .iter()
            .find(|r| r.url == site.url(0, target))
            .unwrap();
        let response = Duration::from_millis(record.response_ms.unwrap());
        let delay = adaptive_delay(50, previous, response);
        previous = delay;
        let gap = pair[1].1 - *at;
        // The next request waits for the response and then the delay; 5 ms
        // allows for the client's clock reading before the server's.
        assert!(
            gap + Duration::from_millis(5) >= response + delay,
            "after {target}: gap {gap:?} < response {response:?} + delay {delay:?}"
        );
        assert!(delay >= Duration::from_millis(25), "{delay:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_delay_from_robots_spaces_requests_by_a_second() {
    let mut config = SiteConfig::uniform(1, 3);
    config.hosts[0].crawl_delay = Some(1.0);
    let site = TestSite::start(config).await.unwrap();
    let mut crawl_config = polite_config();
    crawl_config.politeness.max_load = 100;
    crawl(crawl_config, &[site.url(0, "/")]).await;
    let arrivals = arrivals(&site, 0);
    assert_eq!(arrivals.len(), 4);
    for pair in arrivals.windows(2) {
        let gap = pair[1].1 - pair[0].1;
        assert!(
            gap >= Duration::from_secs(1),
            "gap {gap:?} after {}",
            pair[0].0
        );
    }
}

fn special_site() -> SiteConfig {
    SiteConfig {
        hosts: vec![HostConfig {
            special: true,
            ..HostConfig::default()
        }],
        slow: Duration::from_secs(30),
        tls: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_and_rate_limited_pages_are_retried_to_success() {
    let site = TestSite::start(special_site()).await.unwrap();
    let mut config = polite_config();
    config.scope.follow = false;
    config.politeness.max_load = 100;
    config.politeness.retry_base = Duration::from_millis(20);
    let seeds = [
        site.url(0, "/busy"),
        site.url(0, "/flaky/2"),
        site.url(0, "/p/1"),
    ];
    let (summary, records) = crawl(config, &seeds).await;
    assert_eq!(records.len(), 3, "one record per URL, retries aside");
    assert!(
        records.iter().all(|r| r.status == Some(200)),
        "{records:#?}"
    );
    assert_eq!(site.log().count(0, "/flaky/2"), 3, "two 503s, then 200");
    assert_eq!(site.log().count(0, "/busy"), 2, "one 429, then 200");
    assert_eq!(summary.total().retries, 3);
    // Retry-After: 1 held back the whole authority, not just /busy.
    let arrivals = arrivals(&site, 0);
    let (_, first_busy) = arrivals.iter().find(|(t, _)| t == "/busy").unwrap();
    for (target, at) in arrivals.iter().skip(1) {
        assert!(
            *at - *first_busy >= Duration::from_millis(990),
            "{target} came {:?} after the 429",
            *at - *first_busy
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_always_fails_is_abandoned_and_its_urls_recorded() {
    let mut config = SiteConfig::uniform(2, 10);
    config.hosts[0].fail_all = true;
    let site = TestSite::start(config).await.unwrap();
    let mut crawl_config = polite_config();
    crawl_config.scope.follow = false;
    crawl_config.politeness.max_load = 100;
    crawl_config.politeness.retry_base = Duration::from_millis(1);
    let mut seeds: Vec<String> = (0..30).map(|i| site.url(0, &format!("/p/{i}"))).collect();
    seeds.push(site.url(1, "/"));
    let (summary, records) = crawl(crawl_config, &seeds).await;
    assert_eq!(records.len(), 31, "every URL has its record");
    let failing: Vec<_> = records
        .iter()
        .filter(|r| r.url.starts_with(site.origin(0)))
        .collect();
    let answered = failing.iter().filter(|r| r.status == Some(500)).count();
    let skipped = failing
        .iter()
        .filter(|r| r.error.as_ref().map(|e| e.kind) == Some(ErrorKind::Skipped))
        .count();
    assert!(answered >= 1, "a URL whose retries ran out keeps its 500");
    assert_eq!(answered + skipped, 30, "the others are recorded as skipped");
    assert_eq!(
        arrivals(&site, 0).len(),
        20,
        "20 failures in a row, then nothing more"
    );
    let stats = summary.authorities.values().find(|s| s.abandoned).unwrap();
    assert_eq!(stats.skipped as usize, skipped);
    assert!(stats.first_error_at.is_some());
    assert!(!summary.all_failed(), "the other host was fine");
    assert_eq!(arrivals(&site, 1).len(), 1);
}

/// A fetcher on tokio's clock: every response takes 400 ms and has no links.
struct ClockFetcher {
    starts: std::sync::Arc<std::sync::Mutex<Vec<tokio::time::Instant>>>,
}

#[async_trait::async_trait]
impl crawlkeeper_crawl::Fetcher for ClockFetcher {
    async fn fetch(
        &self,
        _url: &url::Url,
    ) -> Result<crawlkeeper_crawl::FetchResponse, crawlkeeper_crawl::FetchError> {
        self.starts
            .lock()
            .unwrap()
            .push(tokio::time::Instant::now());
        tokio::time::sleep(Duration::from_millis(400)).await;
        let mut headers = http::header::HeaderMap::new();
        headers.insert(http::header::CONTENT_TYPE, "text/html".parse().unwrap());
        Ok(crawlkeeper_crawl::FetchResponse {
            started_at: std::time::SystemTime::now(),
            elapsed: Duration::from_millis(400),
            status: 200,
            headers,
            body: bytes::Bytes::from_static(b"<title>t</title>"),
            truncated: false,
            capture: None,
        })
    }
}

#[tokio::test(start_paused = true)]
async fn engine_spacing_is_exact_on_a_paused_clock() {
    let starts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut registry = crawlkeeper_crawl::Registry::builtin();
    let shared = starts.clone();
    registry.set_fetcher(move |_| {
        Ok(std::sync::Arc::new(ClockFetcher {
            starts: shared.clone(),
        }))
    });
    let mut config = polite_config();
    config.scope.respect_robots = false;
    let seeds: Vec<String> = (0..4).map(|i| format!("http://a.test/{i}")).collect();
    let (_, records) = crawl_with(&registry, config, &seeds).await;
    assert_eq!(records.len(), 4);
    let starts = starts.lock().unwrap().clone();
    let gaps: Vec<u128> = starts
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    // 400 ms responses with L = 50: delays 100, 175, 231.25 ms (a quarter
    // of the way from the previous delay to the response time each time);
    // tokio's timer fires on the next whole millisecond.
    assert_eq!(gaps, [500, 575, 632]);
}
