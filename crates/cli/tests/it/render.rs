//! `crawl --render` (issue #54) in Debian's headless Chromium against the
//! test site's script pages (`/js/`), judged from the records and the
//! site's own request log: links and fields that only script builds, the
//! page itself not fetched twice, the page's requests refused by the SSRF
//! guard and robots.txt (never reaching the site), a hanging and a
//! crashing page bounded and recorded with errors of their own, a missing
//! browser refused before anything is written, and the browser gone with
//! a crawler killed with SIGKILL. Everything on loopback.

use std::time::Duration;

use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::script::{
    CRASH, DATA_JSON, FETCH_TO, HANG, HEADLINE, LINKS, PRICE, PRIVATE_DATA, PRIVATE_PIXEL, REFUSED,
    SECRET, SHELL, USES_PRIVATE, secret,
};
use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::common;
use common::{crawl_in, crawl_to_end, fresh_dir};

const LIMIT: Duration = Duration::from_secs(180);

fn field<'a>(r: &'a CrawlRecord, name: &str) -> Option<&'a str> {
    r.fields.as_ref()?.get(name)?.as_str()
}

fn by_url<'a>(records: &'a [CrawlRecord], url: &str) -> &'a CrawlRecord {
    records
        .iter()
        .find(|r| r.url == url)
        .unwrap_or_else(|| panic!("no record of {url}: {records:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_and_fields_that_script_builds_are_found_only_when_rendered() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let seed = site.url(0, SHELL);
    let fields = [
        "--extract",
        "headline=#headline",
        "--extract",
        "price=.price",
    ];

    let plain = fresh_dir("render", "shell-plain");
    let (records, _) = crawl_to_end(&plain, crawl_in(&plain, &seed, &fields), LIMIT).await;
    let shell = by_url(&records, &seed);
    assert_eq!(shell.links, 0, "the served shell has no link");
    assert_eq!(field(shell, "headline"), None);
    assert_eq!(records.len(), 1, "nothing else found: {records:#?}");

    let d = fresh_dir("render", "shell-rendered");
    // A processor is given the rendered DOM as the page's body.
    let script = d.join("saw.py");
    std::fs::write(
        &script,
        format!(
            "import sys, json, base64\n\
             for line in sys.stdin:\n\
             \x20   r = json.loads(line)\n\
             \x20   body = base64.b64decode(r['body']).decode('utf-8', 'replace')\n\
             \x20   print(json.dumps({{'id': r['id'], 'fields': {{'saw': {HEADLINE:?} in body}}}}), flush=True)\n"
        ),
    )
    .unwrap();
    let processor = format!("saw=python3 {}", script.display());
    let mut args = vec!["--render", "--render-wait", "networkidle", "--text"];
    args.extend(["--processor", &processor, "--use", "saw"]);
    args.extend(fields);
    let (records, err) = crawl_to_end(&d, crawl_in(&d, &seed, &args), LIMIT).await;
    let shell = by_url(&records, &seed);
    assert_eq!(
        field(shell, "headline"),
        Some(HEADLINE),
        "{shell:#?}\n{err}"
    );
    assert_eq!(field(shell, "price"), Some(PRICE));
    assert!(
        field(shell, "text").is_some_and(|t| t.contains(HEADLINE)),
        "{shell:#?}"
    );
    let saw = shell.fields.as_ref().and_then(|f| f.get("saw"));
    assert_eq!(saw, Some(&serde_json::Value::Bool(true)), "{shell:#?}");
    assert_eq!(shell.links, 3);
    let rendered = shell
        .rendered
        .as_ref()
        .expect("the record says it rendered");
    assert!(rendered.requests >= 2, "app.js and data.json: {rendered:?}");
    for path in LINKS {
        let leaf = by_url(&records, &site.url(0, path));
        assert_eq!(leaf.status, Some(200));
        assert_eq!(
            leaf.rendered, None,
            "a page without script is not rendered (auto)"
        );
    }
    // Once by each crawl: the rendered page was not fetched again by the
    // browser, its data once by the browser.
    assert_eq!(site.log().count(0, SHELL), 2);
    assert_eq!(site.log().count(0, DATA_JSON), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pages_requests_meet_the_ssrf_guard_and_robots_txt() {
    let site = TestSite::start(SiteConfig::uniform(2, 3)).await.unwrap();
    let target = site.url(1, SECRET);
    let seed = site.url(0, &format!("{FETCH_TO}?url={target}"));
    let wait = [
        "--render",
        "--render-wait",
        "#done",
        "--extract",
        "leak=#leak",
    ];
    let extract = [
        "--extract",
        "refused=#refused",
        "--extract",
        "private=#private",
    ];

    // The guard lets loopback through here (--allow-private), but not the
    // second address: the page's fetch() there is refused, never sent.
    let d = fresh_dir("render", "ssrf-denied");
    let mut args = vec!["--allow-private", "--deny-net", "127.0.0.2/32"];
    args.extend(wait);
    args.extend(extract);
    let private = site.url(0, USES_PRIVATE);
    let mut c = crawl_in(&d, &seed, &args);
    c.arg(&private);
    let (records, err) = crawl_to_end(&d, c, LIMIT).await;
    let page = by_url(&records, &seed);
    assert_eq!(field(page, "refused"), Some(REFUSED), "{page:#?}\n{err}");
    assert_eq!(field(page, "leak"), None);
    assert_eq!(site.log().count(1, SECRET), 0, "nothing reached 127.0.0.2");
    // robots.txt disallows /private/: the page's fetch() and its image.
    let page = by_url(&records, &private);
    assert_eq!(field(page, "refused"), Some(REFUSED), "{page:#?}");
    for path in [PRIVATE_DATA, PRIVATE_PIXEL] {
        assert_eq!(site.log().count(0, path), 0, "{path} was requested");
    }
    assert!(
        page.rendered.as_ref().is_some_and(|r| r.refused >= 2),
        "{page:#?}"
    );

    // The control: allowed, the same fetch() reaches the other host.
    let d = fresh_dir("render", "ssrf-allowed");
    let mut args = vec!["--allow-private"];
    args.extend(wait);
    let (records, _) = crawl_to_end(&d, crawl_in(&d, &seed, &args), LIMIT).await;
    assert_eq!(
        field(by_url(&records, &seed), "leak"),
        Some(secret(1).as_str())
    );
    assert_eq!(site.log().count(1, SECRET), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_and_a_crashing_page_are_bounded_and_the_crawl_goes_on() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let d = fresh_dir("render", "hang-crash");
    let args = [
        "--render",
        "--render-when",
        "always",
        "--render-timeout",
        "10s",
        "--render-heap",
        "64",
    ];
    let hang = site.url(0, HANG);
    let crash = site.url(0, CRASH);
    let started = std::time::Instant::now();
    let mut c = crawl_in(&d, &hang, &args);
    c.arg(&crash).arg(site.url(0, SHELL));
    let (records, err) = crawl_to_end(&d, c, LIMIT).await;
    let took = started.elapsed();
    let kind = |url: &str| by_url(&records, url).error.as_ref().map(|e| e.kind);
    assert_eq!(
        kind(&hang),
        Some(ErrorKind::RenderTimeout),
        "{records:#?}\n{err}"
    );
    assert_eq!(kind(&crash), Some(ErrorKind::RenderFailed), "{records:#?}");
    // What the served HTML gave is kept: the hanging page's link was
    // followed, and the crawl went on to render the shell.
    assert_eq!(by_url(&records, &hang).links, 1);
    assert!(by_url(&records, &site.url(0, SHELL)).rendered.is_some());
    assert!(took < Duration::from_secs(90), "bounded: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_browser_is_one_line_and_exit_2_before_anything_is_written() {
    let d = fresh_dir("render", "no-browser");
    let out = crawl_in(
        &d,
        "http://127.0.0.1:9/",
        &["--render", "--chromium", "/nonexistent/chromium"],
    )
    .output()
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--render") && err.contains("/nonexistent/chromium"),
        "{err}"
    );
    assert!(!d.join("out.jsonl").exists() && !d.join("state.db").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_dies_with_a_crawler_killed_with_sigkill() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let d = fresh_dir("render", "kill");
    let args = [
        "--render",
        "--render-when",
        "always",
        "--render-timeout",
        "10m",
    ];
    let mut child = crawl_in(&d, &site.url(0, HANG), &args).spawn().unwrap();
    let pid = child.id().unwrap();
    common::arrived(site.log(), 2).await;
    // The page is rendering (its script never returns) in the crawler's browser.
    let profile = format!("crawlkeeper-chromium-{pid}-");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while browsers(&profile) == 0 {
        assert!(std::time::Instant::now() < deadline, "no browser started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    common::signal(&child, "-KILL");
    child.wait().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while browsers(&profile) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the browser outlived its crawler"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Live processes (zombies aside) whose command line names `profile`.
pub fn browsers(profile: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'));
            !zombie && String::from_utf8_lossy(&cmd).contains(profile)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rendering_every_page_finds_what_the_served_html_gives() {
    let mut config = SiteConfig::uniform(2, 40);
    for host in &mut config.hosts {
        host.embeds = true;
    }
    let site = TestSite::start(config).await.unwrap();
    let seed = site.url(0, "/");
    let urls = |records: &[CrawlRecord]| {
        records
            .iter()
            .map(|r| (r.url.clone(), r.links))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let plain = fresh_dir("render", "every-plain");
    let (served, _) =
        crawl_to_end(&plain, crawl_in(&plain, &seed, &["--per-host", "2"]), LIMIT).await;
    let d = fresh_dir("render", "every-rendered");
    let args = [
        "--per-host",
        "2",
        "--render",
        "--render-when",
        "always",
        "--render-tabs",
        "2",
    ];
    let (rendered, err) = crawl_to_end(&d, crawl_in(&d, &seed, &args), LIMIT).await;
    assert_eq!(urls(&rendered), urls(&served), "{err}");
    let pages = rendered.iter().filter(|r| r.url.contains("/p/"));
    for r in pages {
        assert!(r.rendered.is_some(), "{r:#?}");
    }
}
