//! `submit --render` (issue #54): every node renders with its own
//! Chromium (started with its first page to render), offers a browser
//! to the jobs that need one, and a Runner killed with SIGKILL mid-crawl
//! takes its browser with it while its backup crawls on: every URL has
//! exactly one result, each page's read from its rendered DOM. A job
//! that renders is refused when no live Runner has a browser.

use crate::common;

use common::cluster::{Cluster, FAST_HEARTS, send};

const RENDER: [&str; 3] = ["--render", "--render-when", "always"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rendering_cluster_loses_a_runner_to_kill_9_and_every_url_has_one_result() {
    let c = Cluster::start("cl_render", 2, 1, 2, 4, 12, 30)
        .await
        .seeding_every_host();
    let nodes: Vec<_> = (1..=3).map(|i| c.node_logged(i, FAST_HEARTS)).collect();
    let formed = c.formed().await;
    for m in formed["members"].as_array().unwrap() {
        assert_eq!(m["browser"], true, "every node offers a browser: {m:#}");
    }
    let (code, _, err) = c.submit(&RENDER).await;
    assert_eq!(code, 0, "{err}");
    c.wait_requests(1, 5).await;
    let pid = nodes[0].id().unwrap();
    let profile = format!("crawlkeeper-chromium-{pid}-");
    assert!(
        crate::render::browsers(&profile) > 0,
        "crawler_1 renders in a browser of its own"
    );
    send(&nodes[0], libc::SIGKILL);
    let mut args = RENDER.to_vec();
    args.push("--wait");
    let (code, _, err) = c.submit(&args).await;
    assert_eq!(code, 0, "the job completes: {err}\n{}", c.node_log(2));
    // At most one request per host of the dead Runner's shard was in
    // flight at the kill.
    // The browsers' own request for each host's icon aside.
    c.check_complete_allowing(4, &["/favicon.ico"]).await;
    let job = c.status().await["jobs"][0]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, jsonl, err) = c.run(&["results", "--store", &c.site.url, &job]).await;
    assert_eq!(code, 0, "{err}");
    let pages: Vec<_> = common::records(&jsonl)
        .into_iter()
        .filter(|r| r.status == Some(200) && r.url.contains("/p/"))
        .collect();
    assert!(!pages.is_empty());
    for r in &pages {
        assert!(r.rendered.is_some(), "{} not rendered: {r:#?}", r.url);
    }
    assert_eq!(
        crate::render::browsers(&profile),
        0,
        "the killed node's browser died with it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_render_job_no_live_runner_can_render_is_refused_with_one_line() {
    let c = Cluster::start("cl_render_none", 1, 0, 1, 1, 3, 0).await;
    let _node = c.node_logged(1, &["--chromium", "/nonexistent/chromium"]);
    let formed = c.formed().await;
    assert_eq!(formed["members"][0]["browser"], false, "{formed:#}");
    let (code, _, err) = c.submit(&RENDER).await;
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(crawlkeeper_crawl::render::BROWSER) && err.contains("has no browser"),
        "{err}"
    );
    assert!(c.status().await["jobs"].as_array().unwrap().is_empty());
}
