//! Page requisites (`--requisites`, issue #28) as the crawler fetches
//! them: whatever the depth, on a second host standing for a CDN, each
//! once however many pages use it, a stylesheet's imports and fonts up to
//! the third embed, `--max-pages` counting pages only (also in a crawl
//! killed and resumed), and `--requisites-scope same-host`. Every server listens on loopback and
//! judges from its own request log.

use crate::common;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use common::{crawl_in, fresh_dir, records, signal};
use crawlkeeper_model::{CrawlRecord, Via};
use crawlkeeper_testsite::hostile::{HostileServer, Script, Step};

fn typed(content_type: &str, body: &str) -> Script {
    Script::response(200, &[("Content-Type", content_type)], body.to_owned())
}

/// The page host (127.0.0.3) and the CDN (127.0.0.4): two pages sharing a
/// logo and a stylesheet; the stylesheet imports another from the CDN,
/// which loads a font, which… (a fourth embed is never fetched).
async fn sites() -> (HostileServer, HostileServer) {
    let cdn = HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 4),
        vec![
            ("/robots.txt", Script::response(404, &[], "")),
            ("/lib.js", typed("text/javascript", "export const x = 1;")),
            (
                "/deep.css",
                typed(
                    "text/css",
                    "@font-face { font-family: f; src: url(/font.woff2) format('woff2') }\n\
                     /* url(/in-a-comment.png) */ .x { background: url('/bg.png') }",
                ),
            ),
            ("/font.woff2", typed("font/woff2", "wOF2")),
            ("/bg.png", typed("image/png", "png")),
        ],
    )
    .await
    .unwrap();
    let page = |title: &str, next: &str| {
        format!(
            "<title>{title}</title><link rel=stylesheet href=/site.css>\
             <img src=/logo.png srcset='/logo-2x.png 2x'>\
             <script type=module src={cdn}/lib.js></script>\
             <div style=\"background:url(/inline.png)\"></div>\
             <a href={next}>next</a>",
            cdn = cdn.origin()
        )
    };
    let site = HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 3),
        vec![
            ("/robots.txt", Script::response(404, &[], "")),
            ("/", Script::html(page("one", "/two"))),
            ("/two", Script::html(page("two", "/three"))),
            ("/three", Script::html(page("three", "/"))),
            (
                "/site.css",
                typed(
                    "text/css",
                    &format!(
                        "@import url({}/deep.css);\nbody {{ color: red }}",
                        cdn.origin()
                    ),
                ),
            ),
            ("/logo.png", typed("image/png", "png")),
            ("/logo-2x.png", typed("image/png", "png")),
            ("/inline.png", typed("image/png", "png")),
        ],
    )
    .await
    .unwrap();
    (site, cdn)
}

async fn crawl(name: &str, seed: &str, extra: &[&str]) -> Vec<CrawlRecord> {
    crawl_in_dir(&fresh_dir("requisites", name), seed, extra).await
}

/// Crawls in `d` to the end; every record in its `out.jsonl`.
async fn crawl_in_dir(d: &std::path::Path, seed: &str, extra: &[&str]) -> Vec<CrawlRecord> {
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        crawl_in(d, seed, extra).output(),
    )
    .await
    .expect("the crawl ends in time")
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    records(&std::fs::read_to_string(d.join("out.jsonl")).unwrap())
}

fn by_url(records: &[CrawlRecord]) -> BTreeMap<String, &CrawlRecord> {
    records.iter().map(|r| (r.url.clone(), r)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_s_requisites_are_fetched_once_whatever_the_depth_and_pages_limit() {
    let (site, cdn) = sites().await;
    // Two pages: the third is never fetched, but every requisite of the
    // two is (`--max-pages` counts pages).
    let all = crawl("any", &site.url("/"), &["--requisites", "--max-pages", "2"]).await;
    let got = by_url(&all);
    let pages: Vec<&str> = all
        .iter()
        .filter(|r| r.via.is_none())
        .map(|r| r.url.as_str())
        .collect();
    assert_eq!(pages, [site.url("/"), site.url("/two")], "{all:#?}");
    let requisites = [
        site.url("/site.css"),
        site.url("/logo.png"),
        site.url("/logo-2x.png"),
        site.url("/inline.png"),
        cdn.url("/lib.js"),
        cdn.url("/deep.css"),
        cdn.url("/font.woff2"),
        cdn.url("/bg.png"),
    ];
    for url in &requisites {
        let r = got
            .get(url)
            .unwrap_or_else(|| panic!("{url} not fetched: {all:#?}"));
        assert_eq!(r.via, Some(Via::Embed), "{url}");
        assert_eq!(r.status, Some(200), "{url}");
        assert!(r.parent.is_some(), "{url}");
    }
    assert_eq!(all.len(), pages.len() + requisites.len(), "{all:#?}");
    // Requisites are at their page's depth; the stylesheet's are its own.
    assert_eq!(got[&site.url("/logo.png")].depth, 0);
    assert_eq!(
        got[&cdn.url("/deep.css")].parent.as_deref(),
        Some(&*site.url("/site.css"))
    );
    assert_eq!(
        got[&cdn.url("/font.woff2")].parent.as_deref(),
        Some(&*cdn.url("/deep.css"))
    );
    // The first page names 5 requisites (the srcset's two images, the
    // stylesheet, the module, the inline style's image), the stylesheet 1.
    assert_eq!(got[&site.url("/")].requisites, 5);
    assert_eq!(got[&site.url("/site.css")].requisites, 1);
    assert_eq!(got[&cdn.url("/deep.css")].requisites, 2);
    // Shared by both pages, fetched once; nothing in a comment.
    for target in ["/site.css", "/logo.png"] {
        assert_eq!(site.count(target), 1, "{target}: {:?}", site.requests());
    }
    assert_eq!(cdn.count("/in-a-comment.png"), 0);
    assert_eq!(site.count("/three"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_crawl_s_page_limit_counts_pages_not_requisites() {
    // A chain of four pages, each with four requisites of its own; the
    // second page answers after a while, and the crawl is killed while it
    // waits: two pages and four requisites are in the state file, more
    // URLs than `--max-pages`.
    let names = ["one", "two", "three", "four"];
    let requisites: Vec<String> = names
        .iter()
        .flat_map(|n| [".css", ".js", "-a.png", "-b.png"].map(|t| format!("/{n}{t}")))
        .collect();
    let page = |i: usize| {
        let (n, next) = (names[i], names.get(i + 1).unwrap_or(&"one"));
        Script::html(format!(
            "<title>{n}</title><link rel=stylesheet href=/{n}.css>\
             <img src=/{n}-a.png srcset='/{n}-b.png 2x'><script src=/{n}.js></script>\
             <a href=/{next}>next</a>"
        ))
    };
    let slow = Script(vec![Step::Wait(std::time::Duration::from_secs(2))]);
    let mut routes = vec![
        ("/robots.txt", Script::response(404, &[], "")),
        ("/one", page(0)),
        ("/two", Script([slow.0, page(1).0].concat())),
        ("/three", page(2)),
        ("/four", page(3)),
    ];
    routes.extend(
        requisites
            .iter()
            .map(|t| (t.as_str(), typed("application/octet-stream", "x"))),
    );
    let site = HostileServer::start(Ipv4Addr::new(127, 0, 0, 5), routes)
        .await
        .unwrap();
    let d = fresh_dir("requisites", "resumed-limit");
    let args = ["--requisites", "--max-pages", "3"];
    let child = crawl_in(&d, &site.url("/one"), &args).spawn().unwrap();
    tokio::time::timeout(common::ARRIVAL_DEADLINE, site.requested("/two", 1))
        .await
        .expect("the second page is asked for");
    signal(&child, "-KILL");
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), None, "killed by a signal");
    for t in &requisites[..4] {
        assert_eq!(site.count(t), 1, "{t} fetched before the kill");
    }

    // The same command again: the third page is still within the limit.
    let all = crawl_in_dir(&d, &site.url("/one"), &args).await;
    let pages: Vec<&str> = all
        .iter()
        .filter(|r| r.via.is_none())
        .map(|r| r.url.as_str())
        .collect();
    assert_eq!(
        pages,
        [site.url("/one"), site.url("/two"), site.url("/three")],
        "{all:#?}"
    );
    assert_eq!(site.count("/four"), 0, "{:?}", site.requests());
    let got = by_url(&all);
    assert_eq!(got.len(), all.len(), "each URL once: {all:#?}");
    for t in &requisites[..12] {
        assert_eq!(got[&site.url(t)].via, Some(Via::Embed), "{t}");
        assert_eq!(site.count(t), 1, "{t} fetched once");
    }
    assert_eq!(all.len(), 3 + 12, "{all:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_host_requisites_stay_on_the_page_s_host() {
    let (site, cdn) = sites().await;
    let all = crawl(
        "same-host",
        &site.url("/"),
        &[
            "--requisites",
            "--requisites-scope",
            "same-host",
            "--depth",
            "0",
        ],
    )
    .await;
    let got = by_url(&all);
    assert!(got.contains_key(&site.url("/logo.png")));
    assert!(got.contains_key(&site.url("/site.css")));
    // The CDN is another host: its module and the stylesheet's import are
    // left (and counted).
    assert!(cdn.requests().is_empty(), "{:?}", cdn.requests());
    assert_eq!(got[&site.url("/")].requisites, 4);
    assert_eq!(got[&site.url("/")].requisites_dropped, 1);
    assert_eq!(got[&site.url("/site.css")].requisites_dropped, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_option_nothing_but_pages_is_fetched() {
    let (site, cdn) = sites().await;
    let all = crawl("off", &site.url("/"), &["--depth", "0"]).await;
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0].requisites, 0);
    assert!(cdn.requests().is_empty());
    assert_eq!(site.count("/logo.png"), 0);
}

#[tokio::test]
async fn a_requisites_scope_without_requisites_is_refused_before_anything_is_written() {
    let d = fresh_dir("requisites", "refused");
    let out = crawl_in(
        &d,
        "http://127.0.0.1:9/",
        &["--requisites-scope", "same-host"],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--requisites"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(!d.join("out.jsonl").exists());
    assert!(!d.join("state.db").exists());
}
