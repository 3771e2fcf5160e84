//! robots.txt parsing and matching, and the Crawl-delay it yields fed to
//! the politeness timing, as a crawl does for every authority.
//!
//! Invariants: nothing panics; a recorded Crawl-delay is never above
//! `PolitenessConfig::max_crawl_delay`, and one is recorded exactly when
//! the file gave a positive one (zero, negative and NaN mean none:
//! crates/crawl/src/politeness.rs); `/robots.txt` itself is
//! always allowed; checking is deterministic.
#![no_main]

use std::sync::LazyLock;
use std::time::Duration;

use crawlkeeper_crawl::config::PolitenessConfig;
use crawlkeeper_crawl::politeness::Timing;
use crawlkeeper_crawl::robots::RobotsRules;
use libfuzzer_sys::fuzz_target;
use url::Url;

static BASE: LazyLock<Url> = LazyLock::new(|| Url::parse("http://a.test/").expect("valid base"));
static CONFIG: LazyLock<PolitenessConfig> = LazyLock::new(PolitenessConfig::default);

/// URLs to check: fixed ones, plus the value of each of the first lines
/// of the file (`Disallow: /x*` gives `/x*`), so the fuzzer can steer
/// paths towards its own rules.
fn urls(data: &[u8]) -> Vec<Url> {
    let mut out: Vec<Url> = ["/", "/robots.txt", "/private/x?a=1&b=2", "/%E2%82%AC/$"]
        .iter()
        .filter_map(|p| BASE.join(p).ok())
        .collect();
    let text = String::from_utf8_lossy(data);
    for line in text.lines().take(8) {
        let value = line.split_once(':').map_or(line, |(_, v)| v).trim();
        if let Ok(u) = BASE.join(value)
            && u.scheme() == "http"
        {
            out.push(u);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let rules = RobotsRules::parse(data);
    for url in urls(data) {
        let first = rules.check(&url).is_ok();
        assert_eq!(first, rules.check(&url).is_ok(), "check is not deterministic for {url}");
        if url.path() == "/robots.txt" && url.query().is_none() {
            assert!(first, "/robots.txt disallowed");
        }
    }
    let delay = rules.crawl_delay();
    let config = &*CONFIG;
    let mut timing = Timing::default();
    // The return value (the capped delay, if any) is not used: its type is
    // being changed in crates/crawl while this target is written.
    let _ = timing.set_crawl_delay(delay, config);
    if let Some(d) = timing.crawl_delay {
        assert!(
            d <= config.max_crawl_delay,
            "Crawl-delay {delay:?} recorded as {d:?}, above the cap"
        );
        assert!(
            delay.is_some_and(|s| s > 0.0),
            "delay {d:?} recorded from Crawl-delay {delay:?}"
        );
    } else {
        assert!(
            delay.is_none_or(|s| !(s > 0.0)),
            "positive Crawl-delay {delay:?} dropped"
        );
    }
    let wait = timing.after_response(config, Duration::from_millis(250), 0.5);
    if let Some(d) = timing.crawl_delay {
        assert!(wait >= d, "waited {wait:?}, less than the Crawl-delay {d:?}");
    }
});
