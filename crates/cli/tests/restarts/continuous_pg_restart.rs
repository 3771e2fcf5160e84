//! PostgreSQL restarted under a continuous crawl (`crawl --continuous
//! --store`): the crawl waits and goes on with every page's schedule; no
//! page is fetched before it is due and none is forgotten; `stop` ends it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::common;
use crate::restart_postgres;
use common::pg::{admin, postgres_url};
use common::sharded::exit_of;

/// How long the test waits for anything before it fails.
const DEADLINE: Duration = Duration::from_secs(120);

/// The records of `out.jsonl` in `dir` so far (whole lines only).
fn records(dir: &Path) -> usize {
    let text = std::fs::read_to_string(dir.join("out.jsonl")).unwrap_or_default();
    text.matches('\n').count()
}

/// Waits until `ready()` holds, checking every 20 ms, within [`DEADLINE`].
async fn until(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < DEADLINE, "waited {DEADLINE:?} for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_under_a_continuous_crawl_keeps_every_schedule() {
    let _turn = crate::TURN.lock().await;
    const PAGES: usize = 30;
    const INTERVAL: Duration = Duration::from_secs(3);
    let db = format!("ck_continuous_restart_{}", std::process::id());
    admin(format!("DROP DATABASE IF EXISTS {db}")).await;
    admin(format!("CREATE DATABASE {db}")).await;
    let url = postgres_url(&db);
    let site = TestSite::start(SiteConfig::uniform(1, PAGES as u32))
        .await
        .unwrap();
    let d = common::fresh_dir("restarts", "continuous");
    let args = [
        "crawl",
        "--follow",
        "--continuous",
        "--revisit-min",
        "3s",
        "--revisit-max",
        "3s",
        "--out",
        "out.jsonl",
        "--store",
        &url,
    ];
    let mut c = common::command_in(&d, &args);
    let child = c.arg(site.url(0, "/")).spawn().unwrap();
    until("the first pass recorded", || records(&d) > PAGES).await;
    tokio::task::spawn_blocking(restart_postgres).await.unwrap();
    until("every page fetched again", || {
        records(&d) >= 2 * (PAGES + 1)
    })
    .await;
    let stop = common::run_in(&d, &["stop", "--store", &url], None).await;
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    let (code, err) = exit_of(child).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("unavailable; retrying"),
        "the wait is said: {err}"
    );

    // From the site's own log: every page again, none before its time.
    let mut asked: BTreeMap<String, Vec<SystemTime>> = BTreeMap::new();
    for e in site.log().entries() {
        if e.target != "/robots.txt" {
            asked.entry(e.target.clone()).or_default().push(e.wall);
        }
    }
    assert_eq!(asked.len(), PAGES + 1, "no page forgotten");
    for (target, times) in &asked {
        assert!(times.len() >= 2, "{target} fetched again");
        for pair in times.windows(2) {
            let gap = pair[1].duration_since(pair[0]).unwrap();
            assert!(
                gap + Duration::from_millis(100) >= INTERVAL,
                "{target} fetched again {gap:?} after the fetch before, before its interval"
            );
        }
    }
    admin(format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
}
