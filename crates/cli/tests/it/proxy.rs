//! Proxies and headers (issue #30), end to end on loopback: a real
//! forward proxy (Debian's tinyproxy) carries every request, robots.txt
//! included, with and without credentials, and so does a SOCKS5 proxy
//! (the test site's, with and without credentials); a proxy that is
//! gone, or dies mid-crawl, gives
//! errors, not a hang; `--header` arrives on every request; secrets never
//! reach the output or the logs; bad options are refused before anything
//! is written.

use crate::common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::tinyproxy::Tinyproxy;
use common::{command_in, crawl_in, fresh_dir, records};
use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::hostile::{HostileServer, Script, Step};
use crawlkeeper_testsite::socks::SocksServer;

const SECRET: &str = "S3cret-7f2a";

async fn site() -> HostileServer {
    HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 6),
        vec![
            (
                "/robots.txt",
                Script::response(200, &[], "User-agent: *\nAllow: /\n"),
            ),
            (
                "/",
                Script::html("<a href=/two>two</a><a href=/three>three</a>"),
            ),
            ("/two", Script::html("<title>two</title>")),
            ("/three", Script::html("<title>three</title>")),
        ],
    )
    .await
    .unwrap()
}

/// Crawls `seed` in `d` with `extra`; the records and stderr.
async fn crawl(d: &std::path::Path, seed: &str, extra: &[&str]) -> (Vec<CrawlRecord>, String) {
    let mut c = crawl_in(d, seed, extra);
    c.env("RUST_LOG", "debug");
    let out = tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("the crawl ends in time")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    assert!(!text.contains(SECRET), "a secret in the records: {text}");
    assert!(!stderr.contains(SECRET), "a secret in the log: {stderr}");
    (records(&text), stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_goes_through_the_proxy_with_the_user_s_headers() {
    let site = site().await;
    let d = fresh_dir("proxy", "plain");
    let proxy = Tinyproxy::start(&d, None);
    let api_key = format!("X-Api-Key: {SECRET}");
    let (got, _) = crawl(
        &d,
        &site.url("/"),
        &[
            "--proxy",
            &proxy.url(None),
            "--header",
            &api_key,
            "--header",
            "Accept-Language: de",
        ],
    )
    .await;
    assert_eq!(got.len(), 3, "{got:#?}");
    assert!(got.iter().all(|r| r.status == Some(200)), "{got:#?}");
    let through = proxy.requests();
    for target in ["/robots.txt", "/", "/two", "/three"] {
        let line = format!("GET {} HTTP/1.1", site.url(target));
        assert!(through.contains(&line), "{line} not in {through:#?}");
    }
    assert_eq!(through.len(), 4, "{through:#?}");
    // What the site received: the user's headers on every request,
    // robots.txt included, once each.
    let heads = site.heads();
    assert_eq!(heads.len(), 4, "{heads:#?}");
    for head in &heads {
        let lower = head.to_ascii_lowercase();
        assert!(
            lower.contains(&format!("x-api-key: {}", SECRET.to_ascii_lowercase())),
            "{head}"
        );
        assert!(lower.contains("accept-language: de\r\n"), "{head}");
        assert_eq!(lower.matches("accept-language").count(), 1, "{head}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_with_credentials_is_used_with_them_and_never_shows_them() {
    let site = site().await;
    let d = fresh_dir("proxy", "auth");
    let auth = ("crawler", SECRET);
    let proxy = Tinyproxy::start(&d, Some(auth));
    let (got, _) = crawl(&d, &site.url("/"), &["--proxy", &proxy.url(Some(auth))]).await;
    assert_eq!(got.len(), 3, "{got:#?}");
    assert!(got.iter().all(|r| r.status == Some(200)), "{got:#?}");
    assert_eq!(site.count("/two"), 1);

    // The wrong password: the proxy answers 407 for every request (robots.txt
    // included, so the seed is not fetched: its authority's robots.txt is
    // unavailable), and the crawl ends.
    let wrong = fresh_dir("proxy", "auth-wrong");
    let (got, _) = crawl(
        &wrong,
        &site.url("/"),
        &["--proxy", &proxy.url(Some(("crawler", "nope")))],
    )
    .await;
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(site.count("/two"), 1, "nothing more reached the site");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_is_gone_gives_errors_not_a_hang() {
    let site = site().await;
    let d = fresh_dir("proxy", "gone");
    let mut proxy = Tinyproxy::start(&d, None);
    let url = proxy.url(None);
    proxy.kill();
    let (got, _) = crawl(&d, &site.url("/"), &["--proxy", &url, "--retries", "0"]).await;
    assert_eq!(got.len(), 1, "{got:#?}");
    let kind = got[0].error.as_ref().map(|e| e.kind);
    assert!(
        matches!(
            kind,
            Some(ErrorKind::RobotsUnavailable | ErrorKind::Connect)
        ),
        "{got:#?}"
    );
    assert!(site.requests().is_empty(), "{:?}", site.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_goes_through_a_socks5_proxy() {
    let site = site().await;
    for remote_names in [false, true] {
        let d = fresh_dir("proxy", &format!("socks-{remote_names}"));
        let socks = SocksServer::start().await.unwrap();
        let before = site.requests().len();
        let (got, _) = crawl(&d, &site.url("/"), &["--proxy", &socks.url(remote_names)]).await;
        assert_eq!(got.len(), 3, "{got:#?}");
        assert!(got.iter().all(|r| r.status == Some(200)), "{got:#?}");
        // One connection per request (the site closes each one), each
        // through the proxy.
        let requests = site.requests().len() - before;
        assert_eq!(requests, 4, "{:?}", site.requests());
        let through = socks.connections();
        assert_eq!(through.len(), requests, "{through:?}");
        assert!(
            through.iter().all(|t| *t == site.addr().to_string()),
            "{through:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socks5_proxy_asking_credentials_is_given_them_and_they_never_show() {
    let site = site().await;
    let socks = SocksServer::start_with(Some(("crawler", SECRET)))
        .await
        .unwrap();
    let d = fresh_dir("proxy", "socks-auth");
    let before = site.requests().len();
    let (got, _) = crawl(&d, &site.url("/"), &["--proxy", &socks.url(false)]).await;
    assert_eq!(got.len(), 3, "{got:#?}");
    assert!(got.iter().all(|r| r.status == Some(200)), "{got:#?}");
    let requests = site.requests().len() - before;
    assert_eq!(
        socks.connections().len(),
        requests,
        "every request through it"
    );
    assert_eq!(socks.refused(), 0);

    // The wrong password: refused by the proxy, nothing reaches the site.
    let wrong = fresh_dir("proxy", "socks-auth-wrong");
    let before = site.requests().len();
    let (got, _) = crawl(
        &wrong,
        &site.url("/"),
        &[
            "--proxy",
            &socks.url_as("crawler", "nope"),
            "--retries",
            "0",
        ],
    )
    .await;
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(got[0].error.is_some(), "{got:#?}");
    assert!(socks.refused() > 0, "the proxy refused the credentials");
    assert_eq!(site.requests().len(), before, "nothing reached the site");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proxy_hosts_are_reached_directly() {
    let site = site().await;
    let d = fresh_dir("proxy", "bypass");
    let proxy = Tinyproxy::start(&d, None);
    let (got, _) = crawl(
        &d,
        &site.url("/"),
        &["--proxy", &proxy.url(None), "--no-proxy", "127.0.0.0/8"],
    )
    .await;
    assert_eq!(got.len(), 3, "{got:#?}");
    assert!(proxy.requests().is_empty(), "{:?}", proxy.requests());
}

#[tokio::test]
async fn bad_headers_and_proxies_are_refused_before_anything_is_written() {
    for (name, bad) in [
        ("no-colon", vec!["--header", "X-Key S3cret-7f2a"]),
        ("owned", vec!["--header", "Host: evil.test"]),
        (
            "line-break",
            vec!["--header", "X-Key: a\r\nHost: evil.test"],
        ),
        ("scheme", vec!["--proxy", "ftp://127.0.0.1:21"]),
    ] {
        let d = fresh_dir("proxy", name);
        let out = crawl_in(&d, "http://127.0.0.1:9/", &bad)
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains(SECRET), "{name}: {stderr}");
        assert!(!d.join("out.jsonl").exists(), "{name}");
        assert!(!d.join("state.db").exists(), "{name}");
    }
    // The environment's proxy is checked the same way.
    let d = fresh_dir("proxy", "env");
    let out = command_in(&d, &["crawl", "--out", "out.jsonl", "http://127.0.0.1:9/"])
        .env("https_proxy", "gopher://x")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("environment proxy"));
    assert!(!d.join("out.jsonl").exists());
}

/// Pages `/p/0 … /p/{n-1}`, each answered after `slow`, all linked from
/// `/`: a crawl of one request at a time is mid-way for a while.
async fn slow_site(n: usize, slow: Duration) -> HostileServer {
    let links: String = (0..n).map(|i| format!("<a href=/p/{i}>{i}</a>")).collect();
    let pages: Vec<(String, Script)> = (0..n)
        .map(|i| {
            let mut page = Script::html(format!("<title>{i}</title>"));
            page.0.insert(0, Step::Wait(slow));
            (format!("/p/{i}"), page)
        })
        .collect();
    let mut routes = vec![
        (
            "/robots.txt",
            Script::response(200, &[], "User-agent: *\nAllow: /\n"),
        ),
        ("/", Script::html(links)),
    ];
    routes.extend(pages.iter().map(|(p, s)| (p.as_str(), s.clone())));
    HostileServer::start(Ipv4Addr::new(127, 0, 0, 6), routes)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_dying_mid_crawl_gives_errors_not_a_hang() {
    const PAGES: usize = 16;
    let site = slow_site(PAGES, Duration::from_millis(300)).await;
    let d = fresh_dir("proxy", "dies");
    let mut proxy = Tinyproxy::start(&d, None);
    // One request at a time, retried once (the retry finds the proxy
    // gone too), and no giving up on the host: every page gets its own
    // record.
    let crawl = crawl_in(
        &d,
        &site.url("/"),
        &[
            "--proxy",
            &proxy.url(None),
            "--retries",
            "1",
            "--retry-base",
            "50ms",
            "--max-host-errors",
            "1000",
        ],
    )
    .spawn()
    .unwrap();
    // robots.txt, the index and two pages reached the site through the
    // proxy: the crawl is mid-way. The proxy dies.
    tokio::time::timeout(common::ARRIVAL_DEADLINE, site.received(4))
        .await
        .unwrap_or_else(|_| panic!("the site saw only {:?}", site.requests()));
    proxy.kill();
    let reached = site.requests();
    let out = tokio::time::timeout(Duration::from_secs(120), crawl.wait_with_output())
        .await
        .expect("the crawl ends in time, the proxy gone")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Some pages came: the authority answered, so the crawl finished
    // with page errors as data (exit 0).
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    let got = records(&text);
    assert_eq!(got.len(), 1 + PAGES, "a record per URL: {got:#?}");
    // Nothing fetched twice, and nothing reached the site after the kill
    // but what was already on its way.
    let after = site.requests();
    let mut unique = after.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), after.len(), "fetched twice: {after:?}");
    assert!(
        after.len() <= reached.len() + 1,
        "{reached:?} then {after:?}"
    );
    let failed: Vec<&CrawlRecord> = got.iter().filter(|r| r.error.is_some()).collect();
    assert!(
        failed.len() >= PAGES + 1 - after.len() && failed.len() >= PAGES / 2,
        "the crawl was mid-way, the pages not reached are errors: {got:#?}"
    );
    for rec in &got {
        let target = rec.url.strip_prefix(&site.origin()).unwrap();
        if after.iter().any(|t| t == target) {
            // Reached the site: a page, or the one in flight when the
            // proxy died (an error of whatever kind the cut gave).
            assert!(rec.status == Some(200) || rec.error.is_some(), "{rec:?}");
        } else {
            // Never reached: the proxy refused the connection.
            let kind = rec.error.as_ref().map(|e| e.kind);
            assert_eq!(kind, Some(ErrorKind::Connect), "{rec:?}");
        }
    }
}
