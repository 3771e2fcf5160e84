//! Requisites cannot multiply (#51): a page's whole tree of requisites
//! (frames of frames, each naming its own) costs at most 500 requests; a
//! frame counts as a page against `--max-pages`; `--max-requisites` (by
//! default 100 per page of `--max-pages`) bounds the crawl's. Judged from
//! the server's own request log, on loopback.

use crate::common;

use std::net::Ipv4Addr;

use common::{crawl_in, crawl_to_end, fresh_dir};
use crawlkeeper_model::CrawlRecord;
use crawlkeeper_testsite::hostile::{HostileServer, Script};

/// Frames each frame page names, at each of two levels; each frame of the
/// second level names as many images (not served: a 404 is a request
/// too). Unbounded, that is 25 + 625 + 15,625 requisites.
const FAN: usize = 25;

fn frames(prefix: &str) -> String {
    (0..FAN)
        .map(|i| format!("<iframe src=/{prefix}{i}.html></iframe>"))
        .collect()
}

/// A site whose `/` starts a fan-out tree of frames, and whose `/wide`
/// names 3 frames and 300 images.
async fn site(ip: Ipv4Addr) -> HostileServer {
    let mut routes: Vec<(String, Script)> = vec![
        ("/robots.txt".into(), Script::response(404, &[], "")),
        ("/".into(), Script::html(frames("a"))),
    ];
    for i in 0..FAN {
        routes.push((
            format!("/a{i}.html"),
            Script::html(frames(&format!("b{i}_"))),
        ));
        for j in 0..FAN {
            let images: String = (0..FAN)
                .map(|k| format!("<img src=/c{i}_{j}_{k}.png>"))
                .collect();
            routes.push((format!("/b{i}_{j}.html"), Script::html(images)));
        }
    }
    let wide: String = (0..3)
        .map(|i| format!("<iframe src=/w{i}.html></iframe>"))
        .chain((0..300).map(|i| format!("<img src=/i{i}.png>")))
        .collect();
    routes.push(("/wide".into(), Script::html(wide)));
    let routes: Vec<(&str, Script)> = routes
        .iter()
        .map(|(p, s)| (p.as_str(), s.clone()))
        .collect();
    HostileServer::start(ip, routes).await.unwrap()
}

async fn crawl(name: &str, seed: &str, extra: &[&str]) -> Vec<CrawlRecord> {
    let d = fresh_dir("requisite-bounds", name);
    let mut args = vec!["--requisites", "--retries", "0", "--per-host", "8"];
    args.extend_from_slice(extra);
    let limit = std::time::Duration::from_secs(300);
    crawl_to_end(&d, crawl_in(&d, seed, &args), limit).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_s_requisite_tree_costs_at_most_500_requests() {
    let s = site(Ipv4Addr::new(127, 0, 0, 33)).await;
    let recs = crawl("tree", &s.url("/"), &[]).await;
    let requested: Vec<String> = s
        .requests()
        .into_iter()
        .filter(|t| t != "/robots.txt")
        .collect();
    // The page itself, and at most 500 below it.
    assert!(requested.len() <= 501, "{} requests", requested.len());
    let named: u64 = recs.iter().map(|r| u64::from(r.requisites)).sum();
    assert!(named <= 500, "{named} requisites taken");
    assert_eq!(recs.len(), requested.len(), "one record per request");
    // The first two levels are whole: the page names 25 frames, each
    // frame 25 more (its share of what is left: 475 / 25 = 19).
    let first = recs.iter().find(|r| r.url == s.url("/")).unwrap();
    assert_eq!(first.requisites, 25);
    let a0 = recs.iter().find(|r| r.url == s.url("/a0.html")).unwrap();
    assert_eq!((a0.requisites, a0.requisites_dropped), (19, 6), "{a0:?}");
}

/// How many of `/wide`'s frames and images `s` was asked for.
fn frames_and_images(s: &HostileServer) -> (usize, usize) {
    let requested = s.requests();
    let frames = requested
        .iter()
        .filter(|t| t.starts_with("/w") && t.ends_with(".html"));
    let images = requested.iter().filter(|t| t.starts_with("/i"));
    (frames.count(), images.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_count_as_pages_and_the_page_budget_bounds_requisites() {
    let s = site(Ipv4Addr::new(127, 0, 0, 34)).await;
    // Two pages: the seed and one frame. Requisites: 100 per page.
    crawl("max-pages", &s.url("/wide"), &["--max-pages", "2"]).await;
    assert_eq!(frames_and_images(&s), (1, 200), "{:?}", s.requests());

    let s = site(Ipv4Addr::new(127, 0, 0, 35)).await;
    crawl(
        "max-requisites",
        &s.url("/wide"),
        &["--max-requisites", "7"],
    )
    .await;
    assert_eq!(frames_and_images(&s), (3, 7), "{:?}", s.requests());
}
