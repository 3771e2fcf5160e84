//! HTTPS through an HTTP proxy (issue #30), end to end on loopback: the
//! crawler asks Debian's tinyproxy for a `CONNECT` tunnel to each HTTPS
//! authority, with and without proxy credentials, and speaks TLS (HTTP/2
//! by ALPN) to the test site through it; the site's certificate is still
//! checked, end to end, through the tunnel.

use crate::common;

use common::tinyproxy::Tinyproxy;
use common::{records, run_in};
use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::TestSite;
use crawlkeeper_testsite::site::SiteConfig;

/// The proxy's password: never in the records or the log.
const SECRET: &str = "Tunn3l-9c4e";

/// An HTTPS test site of one host with 10 pages, its authority's
/// certificate written to `ca.pem` in `d`.
async fn https_site(d: &std::path::Path) -> TestSite {
    common::site_in(SiteConfig::uniform(1, 10), true, d).await
}

/// `crawl --follow --out out.jsonl --proxy PROXY EXTRA SEED` in `d`: the
/// exit and the records.
async fn crawl(
    d: &std::path::Path,
    proxy: &str,
    extra: &[&str],
    seed: &str,
) -> (common::Run, Vec<CrawlRecord>) {
    let mut args = vec![
        "crawl",
        "--follow",
        "--no-state",
        "--out",
        "out.jsonl",
        "--proxy",
        proxy,
    ];
    args.extend(extra);
    args.push(seed);
    let r = run_in(d, &args, None).await;
    let out = std::fs::read_to_string(d.join("out.jsonl")).unwrap_or_default();
    assert!(!out.contains(SECRET), "a secret in the records: {out}");
    assert!(
        !r.stderr.contains(SECRET),
        "a secret in the log: {}",
        r.stderr
    );
    (r, records(&out))
}

/// Crawls the site through `proxy` (asked with `auth`) trusting its
/// authority, and checks that everything went through `CONNECT`.
async fn crawl_through(name: &str, auth: Option<(&str, &str)>) {
    let d = common::fresh_dir("proxy-tls", name);
    let site = https_site(&d).await;
    let proxy = Tinyproxy::start(&d, auth);
    let seed = site.url(0, "/");
    assert!(seed.starts_with("https://"), "{seed}");
    let (r, recs) = crawl(&d, &proxy.url(auth), &["--ca-cert", "ca.pem"], &seed).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The index and its 10 pages, each a 200.
    assert_eq!(recs.len(), 11, "{recs:?}");
    for rec in &recs {
        assert!(rec.error.is_none() && rec.status == Some(200), "{rec:?}");
    }
    // The site got robots.txt and every page, over HTTP/2 (ALPN inside
    // the tunnel) ...
    let log = site.log().entries();
    assert_eq!(log.len(), 12, "{log:?}");
    assert_eq!(site.log().count(0, "/robots.txt"), 1);
    for e in &log {
        assert_eq!(e.version, "HTTP/2.0", "{e:?}");
    }
    // ... from the proxy, by a tunnel: tinyproxy logged CONNECTs to the
    // site's authority only, never a request in absolute form.
    let authority = seed
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_owned();
    let through = proxy.requests();
    assert!(!through.is_empty(), "nothing through the proxy");
    for line in &through {
        assert_eq!(
            line,
            &format!("CONNECT {authority} HTTP/1.1"),
            "{through:#?}"
        );
    }
    // Every TLS connection the site accepted came through a tunnel.
    assert_eq!(site.log().handshakes(0), through.len(), "{through:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_goes_through_an_http_proxy_by_connect() {
    crawl_through("plain", None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_goes_through_a_proxy_asking_credentials_by_connect() {
    crawl_through("auth", Some(("crawler", SECRET))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_certificate_is_checked_through_the_tunnel() {
    // Without `--ca-cert` the site's authority is unknown: the tunnel is
    // made, but the crawler refuses the certificate the site presents
    // through it, and no request reaches the site.
    let d = common::fresh_dir("proxy-tls", "untrusted");
    let site = https_site(&d).await;
    let proxy = Tinyproxy::start(&d, None);
    let seed = site.url(0, "/");
    let (r, recs) = crawl(&d, &proxy.url(None), &[], &seed).await;
    assert_eq!(r.code, 1, "the authority failed: {}", r.stderr);
    assert_eq!(recs.len(), 1, "the seed only: {recs:?}");
    let e = recs[0].error.as_ref().expect("an error");
    assert_eq!(e.kind, ErrorKind::Certificate, "{e:?}");
    assert!(e.message.contains("unknown issuer"), "{}", e.message);
    assert!(site.log().is_empty(), "{:?}", site.log().entries());
    assert_eq!(site.log().handshakes(0), 0);
    let through = proxy.requests();
    assert!(
        through.iter().any(|l| l.starts_with("CONNECT ")),
        "{through:#?}"
    );
}
