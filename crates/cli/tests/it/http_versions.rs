//! `--http1-only` and `--http2` end to end (#30): which HTTP version the
//! crawler speaks, seen by the server, and a server that does not speak
//! the version asked for giving error records, not a hang; and the option
//! reaching a cluster's Runner with a submitted job (ZooKeeper and
//! PostgreSQL, as the cluster tests). Every server is the test site on
//! loopback.

use crate::common;

use std::time::Duration;

use common::{records, run_in};
use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::TestSite;
use crawlkeeper_testsite::site::SiteConfig;

/// How long a crawl of these small sites may take before the test fails.
const CRAWL_DEADLINE: Duration = Duration::from_secs(60);

fn dir(name: &str) -> std::path::PathBuf {
    common::fresh_dir("http-versions", name)
}

/// `crawl --no-state --out out.jsonl --ca-cert ca.pem EXTRA SEEDS` in
/// `d`, bounded by [`CRAWL_DEADLINE`]: the exit and the records.
async fn crawl(
    d: &std::path::Path,
    extra: &[&str],
    seeds: &[String],
) -> (common::Run, Vec<CrawlRecord>) {
    let _ = std::fs::remove_file(d.join("out.jsonl"));
    let mut args = vec!["crawl", "--no-state", "--out", "out.jsonl"];
    if d.join("ca.pem").exists() {
        args.extend(["--ca-cert", "ca.pem"]);
    }
    args.extend(extra);
    args.extend(seeds.iter().map(String::as_str));
    let r = tokio::time::timeout(CRAWL_DEADLINE, run_in(d, &args, None))
        .await
        .unwrap_or_else(|_| panic!("crawl {args:?} did not end within {CRAWL_DEADLINE:?}"));
    let out = std::fs::read_to_string(d.join("out.jsonl")).unwrap_or_default();
    (r, records(&out))
}

/// The versions `site` served host `host`'s requests in, in order.
fn versions(site: &TestSite, host: usize) -> Vec<String> {
    site.log()
        .entries()
        .into_iter()
        .filter(|e| e.host == host)
        .map(|e| e.version)
        .collect()
}

fn assert_all_200(recs: &[CrawlRecord], n: usize) {
    assert_eq!(recs.len(), n, "{recs:#?}");
    for rec in recs {
        assert!(rec.error.is_none() && rec.status == Some(200), "{rec:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_is_http2_by_default_and_http1_with_http1_only() {
    let d = dir("tls");
    let site = common::site_in(SiteConfig::uniform(1, 10), true, &d).await;
    let seed = [site.url(0, "/")];

    let (r, recs) = crawl(&d, &["--follow"], &seed).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_all_200(&recs, 11);
    // robots.txt and every page, over HTTP/2: the server offered it.
    let default = versions(&site, 0);
    assert_eq!(default.len(), 12, "{default:?}");
    assert!(default.iter().all(|v| v == "HTTP/2.0"), "{default:?}");

    let (r, recs) = crawl(&d, &["--follow", "--http1-only"], &seed).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_all_200(&recs, 11);
    let all = versions(&site, 0);
    let http1 = &all[default.len()..];
    assert_eq!(http1.len(), 12, "{all:?}");
    assert!(http1.iter().all(|v| v == "HTTP/1.1"), "{all:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_is_spoken_over_tls_and_by_prior_knowledge_on_plain_http() {
    let d = dir("h2-tls");
    let tls = common::site_in(SiteConfig::uniform(1, 10), true, &d).await;
    let (r, recs) = crawl(&d, &["--follow", "--http2"], &[tls.url(0, "/")]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_all_200(&recs, 11);
    let served = versions(&tls, 0);
    assert_eq!(served.len(), 12, "{served:?}");
    assert!(served.iter().all(|v| v == "HTTP/2.0"), "{served:?}");

    // A plain server that speaks h2c beside HTTP/1.1: by default the
    // crawler speaks HTTP/1.1 to it, with --http2 HTTP/2.
    let d = dir("h2c");
    let mut config = SiteConfig::uniform(1, 10);
    config.hosts[0].h2c = true;
    let plain = common::site_in(config, false, &d).await;
    let seed = [plain.url(0, "/")];
    assert!(seed[0].starts_with("http://"), "{seed:?}");
    let (r, recs) = crawl(&d, &["--follow"], &seed).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_all_200(&recs, 11);
    let default = versions(&plain, 0);
    assert_eq!(default.len(), 12, "{default:?}");
    assert!(default.iter().all(|v| v == "HTTP/1.1"), "{default:?}");
    let (r, recs) = crawl(&d, &["--follow", "--http2"], &seed).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_all_200(&recs, 11);
    let all = versions(&plain, 0);
    let h2c = &all[default.len()..];
    assert_eq!(h2c.len(), 12, "{all:?}");
    assert!(h2c.iter().all(|v| v == "HTTP/2.0"), "{all:?}");
}

/// Crawls `site`'s seeds `/` and `/p/1` on both its hosts with `--http2`
/// (host 0 speaks it, host 1 does not): host 0 is crawled, host 1's
/// seeds are error records of `kind`, and nothing of host 1 reached its
/// server.
async fn http2_to_a_server_without_it(site: &TestSite, d: &std::path::Path, kind: ErrorKind) {
    let seeds: Vec<String> = (0..2)
        .flat_map(|h| [site.url(h, "/"), site.url(h, "/p/1")])
        .collect();
    let args = ["--http2", "--ignore-robots", "--retries", "0"];
    let (r, recs) = crawl(d, &args, &seeds).await;
    assert_eq!(r.code, 0, "one authority answered: {}", r.stderr);
    assert!(!r.stderr.contains("ERROR"), "{}", r.stderr);
    assert_eq!(recs.len(), 4, "{recs:#?}");
    for rec in &recs {
        if rec.url.starts_with(site.origin(0)) {
            assert_eq!(rec.status, Some(200), "{rec:?}");
        } else {
            let e = rec.error.as_ref().unwrap_or_else(|| panic!("{rec:?}"));
            assert!(rec.status.is_none(), "{rec:?}");
            assert_eq!(e.kind, kind, "{e:?}");
        }
    }
    assert_eq!(site.log().targets(0).len(), 2);
    assert!(
        site.log().targets(1).is_empty(),
        "{:?}",
        site.log().targets(1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_to_an_http1_only_server_gives_error_records_not_a_hang() {
    // Over TLS: the server offers HTTP/1.1 only by ALPN, the crawler
    // HTTP/2 only; the handshake fails (rustls' alert
    // `NoApplicationProtocol`), as other TLS failures: `connect`.
    let d = dir("h2-refused-tls");
    let mut config = SiteConfig::uniform(2, 5);
    config.hosts[1].http1_only = true;
    let tls = common::site_in(config, true, &d).await;
    http2_to_a_server_without_it(&tls, &d, ErrorKind::Connect).await;

    // On plain HTTP: the server reads the HTTP/2 preface as a bad
    // HTTP/1.1 request and closes the connection: `http`.
    let d = dir("h2-refused-plain");
    let mut config = SiteConfig::uniform(2, 5);
    config.hosts[0].h2c = true;
    let plain = common::site_in(config, false, &d).await;
    http2_to_a_server_without_it(&plain, &d, ErrorKind::Http).await;
}

#[tokio::test]
async fn http1_only_and_http2_together_are_refused_before_anything_is_written() {
    let d = dir("both");
    for command in ["crawl", "submit"] {
        let mut args = vec![command, "--http1-only", "--http2"];
        match command {
            "crawl" => args.extend(["--out", "out.jsonl"]),
            _ => args.extend([
                "--zookeeper",
                "127.0.0.1:9",
                "--store",
                "postgres://nobody@127.0.0.1:9/none",
            ]),
        }
        args.push("http://127.0.0.1:9/");
        let r = run_in(&d, &args, None).await;
        assert_eq!(r.code, 2, "{command}: {}", r.stderr);
        assert!(r.stderr.contains("--http2"), "{}", r.stderr);
        assert!(!d.join("out.jsonl").exists());
        assert!(!d.join("crawlkeeper.db").exists());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submitted_job_s_http_version_reaches_its_runner() {
    // The option rides in the job's stored options: the Runner, another
    // process, speaks HTTP/2 by prior knowledge to a plain server.
    let c = common::cluster::Cluster::start("cl_h2c", 1, 0, 1, 1, 1, 0).await;
    let d = dir("cluster");
    let mut config = SiteConfig::uniform(1, 5);
    config.hosts[0].h2c = true;
    let h2c = common::site_in(config, false, &d).await;
    let _node = c.node(1, &[]);
    c.formed().await;
    let (code, _, err) = c
        .submit_job(&["--follow", "--http2", "--wait"], &[&h2c.url(0, "/")])
        .await;
    assert_eq!(code, 0, "the job completes: {err}");
    let served = versions(&h2c, 0);
    assert_eq!(served.len(), 7, "robots.txt, / and 5 pages: {served:?}");
    assert!(served.iter().all(|v| v == "HTTP/2.0"), "{served:?}");
}
