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
    let what = format!("the crawl of {seeds:?}");
    let seeds = seeds.iter().map(|s| Url::parse(s).unwrap()).collect();
    let engine = Engine::new(config, seeds, registry, Box::new(sink)).unwrap();
    let watchdog = Watchdog::new(what);
    let summary = engine.run(std::future::pending()).await.unwrap();
    drop(watchdog);
    let records = records.lock().unwrap().clone();
    (summary, records)
}

/// How long an engine test's crawl may run before the test fails.
pub const CRAWL_DEADLINE: Duration = Duration::from_secs(300);

/// Fails the test binary, saying what did not end, when it is not dropped
/// within [`CRAWL_DEADLINE`] of real time: a crawl that never returns
/// would otherwise hang CI, and the test's own time bounds would never be
/// checked. A thread of its own, so it works on tokio's paused clock too.
pub struct Watchdog {
    done: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    pub fn new(what: String) -> Self {
        let (done, ended) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                ended.recv_timeout(CRAWL_DEADLINE)
            {
                eprintln!("{what} did not end within {CRAWL_DEADLINE:?}");
                std::process::abort();
            }
        });
        Self {
            done: Some(done),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
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
