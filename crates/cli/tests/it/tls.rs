//! HTTPS end to end (#30): HTTP/2 by ALPN, one TLS connection per
//! authority, TLS sessions resumed on new connections, and refused
//! certificates recorded as their own error kind while the crawl goes on.
//! Every server is the test site on loopback, with its own throw-away
//! certificate authority.

use crate::common;

use common::{records, run_in};
use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::TestSite;
use crawlkeeper_testsite::site::SiteConfig;
use crawlkeeper_testsite::tls::CertKind;

fn dir(name: &str) -> std::path::PathBuf {
    common::fresh_dir("tls", name)
}

/// Starts `config` over TLS, its authority's certificate in `d/ca.pem`.
async fn https_site(config: SiteConfig, d: &std::path::Path) -> TestSite {
    common::site_in(config, true, d).await
}

/// `crawl --follow --out out.jsonl --ca-cert ca.pem EXTRA SEEDS` in `d`
/// (not quiet: the test reads what it logs), the exit and the records.
async fn crawl(
    d: &std::path::Path,
    extra: &[&str],
    seeds: &[String],
) -> (common::Run, Vec<CrawlRecord>) {
    let mut args = vec![
        "crawl",
        "--follow",
        "--no-state",
        "--out",
        "out.jsonl",
        "--ca-cert",
        "ca.pem",
    ];
    args.extend(extra);
    args.extend(seeds.iter().map(String::as_str));
    let r = run_in(d, &args, None).await;
    let out = std::fs::read_to_string(d.join("out.jsonl")).unwrap_or_default();
    (r, records(&out))
}

fn assert_nothing_logged_at_error(r: &common::Run) {
    assert!(!r.stderr.contains("ERROR"), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_is_crawled_over_http2_on_one_connection_per_authority() {
    let d = dir("h2");
    let site = https_site(SiteConfig::uniform(2, 50), &d).await;
    let seeds: Vec<String> = (0..2).map(|i| site.url(i, "/")).collect();
    assert!(seeds[0].starts_with("https://"), "{}", seeds[0]);
    let (r, recs) = crawl(&d, &["--per-host", "1"], &seeds).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_nothing_logged_at_error(&r);
    // The index and its 50 pages on each host, each a 200.
    assert_eq!(recs.len(), 2 * 51, "{recs:?}");
    for rec in &recs {
        assert!(rec.error.is_none() && rec.status == Some(200), "{rec:?}");
    }
    // robots.txt and every page, each over HTTP/2 ...
    let log = site.log().entries();
    assert_eq!(log.len(), 2 * 52, "{log:?}");
    for e in &log {
        assert_eq!(e.version, "HTTP/2.0", "{e:?}");
    }
    // ... and on a single TLS connection per authority: one handshake.
    for host in 0..2 {
        assert_eq!(site.log().handshakes(host), 1, "host {host}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_over_http1_keeps_its_connections_alive() {
    // By default the crawler offers both by ALPN; the server offers
    // HTTP/1.1 only, and the crawler must follow (`--http1-only` is
    // tested in http_versions.rs).
    let d = dir("h1");
    let mut config = SiteConfig::uniform(1, 50);
    config.hosts[0].http1_only = true;
    let site = https_site(config, &d).await;
    let (r, recs) = crawl(&d, &["--per-host", "1"], &[site.url(0, "/")]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_nothing_logged_at_error(&r);
    assert_eq!(recs.len(), 51, "{recs:?}");
    assert!(recs.iter().all(|rec| rec.status == Some(200)), "{recs:?}");
    let log = site.log().entries();
    assert_eq!(log.len(), 52, "{log:?}");
    for e in &log {
        assert_eq!(e.version, "HTTP/1.1", "{e:?}");
    }
    // One request at a time: one kept-alive connection carried them all.
    assert_eq!(site.log().handshakes(0), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_to_one_authority_share_its_http2_connection() {
    let d = dir("h2-concurrent");
    // A little time per response, so that requests overlap even on a
    // busy machine.
    let mut config = SiteConfig::uniform(1, 200);
    config.hosts[0].delay = std::time::Duration::from_millis(5);
    let site = https_site(config, &d).await;
    let (r, recs) = crawl(&d, &["--per-host", "8"], &[site.url(0, "/")]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(recs.len(), 201, "{}", r.stderr);
    assert!(
        site.log().max_in_flight(0) > 1,
        "requests went out together"
    );
    // HTTP/2 multiplexes them: connections are never more than the
    // requests in flight, and in practice one.
    let handshakes = site.log().handshakes(0);
    assert!((1..=8).contains(&handshakes), "{handshakes} handshakes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_refused_certificate_is_a_record_saying_why_and_the_crawl_goes_on() {
    let d = dir("refused");
    let mut config = SiteConfig::uniform(4, 5);
    let kinds = [
        (CertKind::Valid, ""),
        (CertKind::Expired, "expired"),
        (CertKind::OtherName, "not valid for this host name"),
        (
            CertKind::SelfSigned,
            "unknown issuer (self-signed or untrusted authority)",
        ),
    ];
    for (host, (kind, _)) in config.hosts.iter_mut().zip(&kinds) {
        host.cert = *kind;
    }
    let site = https_site(config, &d).await;
    let seeds: Vec<String> = (0..4).map(|i| site.url(i, "/")).collect();
    // Robots obeyed, as by default: the certificate is refused fetching
    // robots.txt, and every URL of the authority says so.
    let (r, recs) = crawl(&d, &[], &seeds).await;
    assert_eq!(r.code, 0, "one authority was crawled: {}", r.stderr);
    assert_nothing_logged_at_error(&r);
    assert_eq!(
        recs.iter()
            .filter(|rec| rec.url.starts_with(site.origin(0)))
            .filter(|rec| rec.status == Some(200))
            .count(),
        6,
        "{recs:?}"
    );
    for (host, (_, reason)) in kinds.iter().enumerate().skip(1) {
        let mine: Vec<_> = recs
            .iter()
            .filter(|rec| rec.url.starts_with(site.origin(host)))
            .collect();
        assert_eq!(mine.len(), 1, "the seed only: {mine:?}");
        let e = mine[0].error.as_ref().expect("an error");
        assert_eq!(e.kind, ErrorKind::Certificate, "host {host}: {e:?}");
        assert!(e.message.contains(reason), "host {host}: {}", e.message);
        // The handshake failed: no request reached the server.
        assert!(site.log().targets(host).is_empty(), "host {host}");
    }
    // In the JSON as well: the kind's name is `certificate`.
    let out = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    assert_eq!(out.matches(r#""kind":"certificate""#).count(), 3, "{out}");

    // Robots ignored: the page itself is refused, once (not retried).
    let d = dir("refused-no-robots");
    std::fs::write(d.join("ca.pem"), site.ca_pem().unwrap()).unwrap();
    let (r, recs) = crawl(&d, &["--ignore-robots"], &seeds[1..]).await;
    assert_eq!(r.code, 1, "every authority failed: {}", r.stderr);
    assert_nothing_logged_at_error(&r);
    assert_eq!(recs.len(), 3, "{recs:?}");
    for (host, (_, reason)) in kinds.iter().enumerate().skip(1) {
        let rec = recs
            .iter()
            .find(|rec| rec.url.starts_with(site.origin(host)))
            .expect("a record per seed");
        let e = rec.error.as_ref().expect("an error");
        assert_eq!(e.kind, ErrorKind::Certificate, "host {host}: {e:?}");
        assert!(e.message.contains(reason), "host {host}: {}", e.message);
        assert!(site.log().targets(host).is_empty(), "host {host}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_connections_to_an_authority_resume_its_tls_session() {
    // HTTP/1.1 and four requests in flight: the client opens several
    // connections to the one authority, after robots.txt's.
    let d = dir("resumption");
    let mut config = SiteConfig::uniform(1, 100);
    config.hosts[0].delay = std::time::Duration::from_millis(5);
    let site = https_site(config, &d).await;
    let (r, recs) = crawl(
        &d,
        &["--http1-only", "--per-host", "4"],
        &[site.url(0, "/")],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_nothing_logged_at_error(&r);
    assert_eq!(recs.len(), 101, "{recs:?}");
    assert!(recs.iter().all(|rec| rec.status == Some(200)), "{recs:?}");
    let log = site.log();
    assert!(log.max_in_flight(0) > 1, "requests went out together");
    let (handshakes, resumed) = (log.handshakes(0), log.resumed(0));
    // The first handshake (robots.txt's) is a full one; every later
    // connection resumed a session the client kept from an earlier one
    // (the site sends enough TLS 1.3 tickets for four at once).
    assert!(handshakes > 1, "{handshakes} handshakes");
    assert_eq!(resumed, handshakes - 1, "{handshakes} handshakes");
}
