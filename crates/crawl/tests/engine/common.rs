//! Helpers shared by the engine tests.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crawlkeeper_crawl::{CrawlConfig, Engine, MemorySink, Registry, Summary};
use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::TestSite;
use url::Url;

pub type Records = Arc<Mutex<Vec<CrawlRecord>>>;

pub fn follow_config() -> CrawlConfig {
    let mut c = CrawlConfig::default();
    c.scope.follow = true;
    c.fetch.request_timeout = Duration::from_secs(1);
    c.engine.per_host = 4;
    // No politeness delay and no retries: these tests are about the pipeline.
    c.politeness.max_load = 100;
    c.politeness.retries = 0;
    c
}

pub async fn crawl_with(
    registry: &Registry,
    config: CrawlConfig,
    seeds: &[String],
) -> (Summary, Vec<CrawlRecord>) {
    let sink = MemorySink::new();
    let records: Records = sink.records();
    let seeds = seeds.iter().map(|s| Url::parse(s).unwrap()).collect();
    let engine = Engine::new(config, seeds, registry, Box::new(sink)).unwrap();
    let summary = engine.run(std::future::pending()).await.unwrap();
    let records = records.lock().unwrap().clone();
    (summary, records)
}

pub async fn crawl(config: CrawlConfig, seeds: &[String]) -> (Summary, Vec<CrawlRecord>) {
    crawl_with(&Registry::builtin(), config, seeds).await
}

/// Requests to `host` other than robots.txt, asserting none was repeated.
pub fn page_requests(site: &TestSite, host: usize) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for t in site.log().targets(host) {
        if t == "/robots.txt" {
            continue;
        }
        assert!(seen.insert(t.clone()), "{t} requested twice on host {host}");
    }
    seen
}

pub fn by_path<'a>(site: &TestSite, records: &'a [CrawlRecord], path: &str) -> &'a CrawlRecord {
    let url = site.url(0, path);
    records
        .iter()
        .find(|r| r.url == url)
        .unwrap_or_else(|| panic!("no record for {url}"))
}

pub fn error_kind(r: &CrawlRecord) -> Option<ErrorKind> {
    r.error.as_ref().map(|e| e.kind)
}
