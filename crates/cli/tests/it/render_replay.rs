//! `crawl --render --warc --cdx`, replayed (issue #54): a rendered page's
//! archive holds what the browser fetched for it (its script, the JSON
//! the script asked for), each as a request and a response record beside
//! the page's own, checked with warcio; with the live site stopped, pywb
//! replays the page in headless Chromium and its script builds the same
//! text from the archive.

use std::path::Path;

use crawlkeeper_testsite::script::{APP_JS, DATA_JSON, HEADLINE, SHELL};
use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::common;
use common::pywb;
use common::warc::{by_uri, check_files, crawl, dir, records, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rendered_page_replays_in_pywb_with_its_script_built_text() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let d = dir("render-replay");
    let seed = site.url(0, SHELL);
    let args = [
        "--render",
        "--render-wait",
        "networkidle",
        "--warc",
        "out.warc.gz",
        "--cdx",
    ];
    let (code, err) = run(crawl(&d, &seed, &args)).await;
    assert_eq!(code, 0, "{err}");
    let pages = records(&d.join("out.jsonl"));
    assert!(
        pages.iter().any(|p| p.url == seed && p.rendered.is_some()),
        "{pages:#?}"
    );

    let warc = d.join("out.warc.gz");
    let recs = check_files(&warc);
    let responses = by_uri(&recs, "response");
    let requests = by_uri(&recs, "request");
    for path in [SHELL, APP_JS, DATA_JSON] {
        let url = site.url(0, path);
        let n = responses.get(&url).map_or(0, Vec::len);
        assert_eq!(n, 1, "{url} has {n} response records");
        assert!(requests.contains_key(&url), "{url} has its request record");
    }
    // The page was fetched once, by the crawler: the browser was handed
    // that response.
    assert_eq!(site.log().count(0, SHELL), 1);

    replay(&d, site, &seed).await;
}

/// With the live site stopped, the page replayed from the archive in
/// Chromium shows the text its script builds.
async fn replay(d: &Path, site: TestSite, seed: &str) {
    let log = site.log().clone();
    let served = log.len();
    drop(site);
    let (wayback, url) = pywb::replay(d, "crawl", seed).await;
    let dom = common::browser::dom(&d.join("chromium"), &url).await;
    assert!(
        dom.contains(HEADLINE),
        "the replayed page's script built no headline:\n{dom}\n{}",
        wayback.output()
    );
    assert_eq!(log.len(), served, "nothing reached the live site");
}
