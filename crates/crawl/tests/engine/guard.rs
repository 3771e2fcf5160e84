//! The SSRF guard end to end, on loopback only: 127.0.0.3 plays the
//! network a page must not lead into (`deny_nets`), and its server's log
//! proves no request reached it. No test here names an address outside
//! 127.0.0.0/8, so no bug can send a packet elsewhere.

use std::net::Ipv4Addr;

use crawlkeeper_crawl::CrawlConfig;
use crawlkeeper_crawl::config::{HostScope, ResolveOverride};
use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::hostile::{HostileServer, Script};

use crate::common::*;

const SEED_HOST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const INNER_HOST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// The server that must never be reached unless allowed.
async fn inner() -> HostileServer {
    HostileServer::start(
        INNER_HOST,
        vec![
            ("/robots.txt", Script::response(404, &[], "")),
            (
                "/robots-target.txt",
                Script::response(200, &[], "User-agent: *\nAllow: /\n"),
            ),
            ("/secret", Script::html("<title>secret</title>")),
        ],
    )
    .await
    .unwrap()
}

/// Follows links anywhere, with `inner.test` pinned to 127.0.0.3 (as
/// `--resolve` does), and 127.0.0.3 denied if asked.
/// The seed's server on 127.0.0.2: `routes`, and a missing robots.txt
/// unless `routes` has one.
async fn seed_site(mut routes: Vec<(&str, Script)>) -> HostileServer {
    if !routes.iter().any(|(path, _)| *path == "/robots.txt") {
        routes.push(("/robots.txt", Script::response(404, &[], "")));
    }
    HostileServer::start(SEED_HOST, routes).await.unwrap()
}

fn config(deny_inner: bool) -> CrawlConfig {
    let mut c = follow_config();
    c.scope.hosts = HostScope::Any;
    c.fetch.resolve = vec![ResolveOverride {
        host: "inner.test".into(),
        addr: (INNER_HOST, 0).into(),
    }];
    if deny_inner {
        c.fetch.deny_nets = vec!["127.0.0.3/32".parse().unwrap()];
    }
    c
}

fn record_of<'a>(records: &'a [CrawlRecord], url: &str) -> &'a CrawlRecord {
    records
        .iter()
        .find(|r| r.url == url)
        .unwrap_or_else(|| panic!("no record for {url}: {records:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_and_redirects_into_a_denied_network_are_recorded_not_fetched() {
    let inner = inner().await;
    let secret = inner.url("/secret");
    let named = format!("http://inner.test:{}/secret", inner.addr().port());
    let seed = seed_site(vec![
        (
            "/",
            Script::html(format!(
                "<a href='{secret}'>literal</a><a href='{named}'>named</a><a href='/go'>go</a>"
            )),
        ),
        (
            "/go",
            Script::response(302, &[("Location", &format!("{secret}?via=redirect"))], ""),
        ),
    ])
    .await;
    // `named` is pinned to the denied address: --resolve goes through the guard.
    let (summary, records) = crawl(config(true), &[seed.url("/")]).await;
    assert_eq!(
        inner.requests(),
        Vec::<String>::new(),
        "nothing reached 127.0.0.3"
    );
    for url in [secret.clone(), named, format!("{secret}?via=redirect")] {
        let r = record_of(&records, &url);
        assert_eq!(error_kind(r), Some(ErrorKind::BlockedAddress), "{r:?}");
        assert_eq!(r.status, None);
        assert!(
            r.error.as_ref().unwrap().message.contains("127.0.0.3"),
            "{r:?}"
        );
    }
    assert_eq!(summary.total().blocked, 3, "{summary}");
    assert!(summary.to_string().contains("blocked"), "{summary}");
    assert_eq!(seed.count("/"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_denied_in_its_ipv4_mapped_form_covers_the_plain_address() {
    // `--allow-private --deny-net ::ffff:127.0.0.3/128`: once the mapped
    // spelling covered only `[::ffff:127.0.0.3]`, and 127.0.0.3 was fetched.
    let inner = inner().await;
    let secret = inner.url("/secret");
    let mapped = format!("http://[::ffff:7f00:3]:{}/secret", inner.addr().port());
    let seed = seed_site(vec![(
        "/",
        Script::html(format!(
            "<a href='{secret}'>plain</a><a href='{mapped}'>mapped</a>"
        )),
    )])
    .await;
    let mut c = config(false);
    c.fetch.allow_private = true;
    c.fetch.deny_nets = vec!["::ffff:127.0.0.3/128".parse().unwrap()];
    let (summary, records) = crawl(c, &[seed.url("/")]).await;
    assert_eq!(
        inner.requests(),
        Vec::<String>::new(),
        "nothing reached 127.0.0.3"
    );
    for url in [&secret, &mapped] {
        let r = record_of(&records, url);
        assert_eq!(error_kind(r), Some(ErrorKind::BlockedAddress), "{r:?}");
    }
    assert_eq!(summary.total().blocked, 2, "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robots_txt_redirect_into_a_denied_network_is_not_followed() {
    let inner = inner().await;
    let target = inner.url("/robots-target.txt");
    let seed = seed_site(vec![
        (
            "/robots.txt",
            Script::response(301, &[("Location", target.as_str())], ""),
        ),
        ("/", Script::html("<title>seed</title>")),
    ])
    .await;
    let (_, records) = crawl(config(true), &[seed.url("/")]).await;
    assert_eq!(
        inner.requests(),
        Vec::<String>::new(),
        "nothing reached 127.0.0.3"
    );
    assert_eq!(seed.count("/robots.txt"), 1);
    // Rules that cannot be read mean nothing is fetched (RFC 9309's unreachable).
    let r = record_of(&records, &seed.url("/"));
    assert_eq!(error_kind(r), Some(ErrorKind::RobotsUnavailable), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_a_seed_resolved_into_stays_open() {
    // Without a deny list, the loopback seed allows all of 127.0.0.0/8 (a
    // crawl of one's own intranet works), by address and by name.
    let inner = inner().await;
    let named = format!("http://inner.test:{}/secret", inner.addr().port());
    let seed = seed_site(vec![(
        "/",
        Script::html(format!(
            "<a href='{}'>a</a><a href='{named}'>b</a>",
            inner.url("/secret")
        )),
    )])
    .await;
    let (_, records) = crawl(config(false), &[seed.url("/")]).await;
    assert_eq!(record_of(&records, &inner.url("/secret")).status, Some(200));
    assert_eq!(record_of(&records, &named).status, Some(200));
    assert_eq!(inner.count("/secret"), 2);
}
