//! PostgreSQL restarted under a job crawled by a cluster of real
//! `crawlkeeper node` processes: the nodes wait and go on, nobody is
//! declared dead, nothing is lost or fetched twice.

use crate::common;

use crate::restart_postgres;
use common::cluster::{Cluster, check_members, check_nobody_died, role};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_under_the_cluster_kills_nobody_and_loses_nothing() {
    let _turn = crate::TURN.lock().await;
    // Long enough (4 hosts × 150 pages, 20 ms each, one at a time per host:
    // 3 s and more) that `pg_ctlcluster` stops the server mid-crawl.
    let c = Cluster::start("clpg", 2, 1, 2, 4, 150, 20).await;
    let nodes: Vec<_> = (1..=3).map(|i| c.node_logged(i, &[])).collect();
    c.formed().await;
    let (code, _, err) = c.submit(&[]).await;
    assert_eq!(code, 0, "{err}");
    c.wait_log("both Runners under way", || {
        c.requests_from(1) >= 10 && c.requests_from(2) >= 10
    })
    .await;
    tokio::task::spawn_blocking(restart_postgres).await.unwrap();
    let after = c.site.site.log().len();
    assert!(after < c.total_pages(), "the restart came mid-crawl");

    // A new `submit --wait` (its connection is made after the restart).
    let (code, _, err) = c.submit(&["--wait"]).await;
    assert_eq!(
        code,
        0,
        "the job completes: {err}; crawler_1 said:\n{}\ncrawler_2 said:\n{}",
        c.node_log(1),
        c.node_log(2)
    );
    assert!(
        c.site.site.log().len() > after,
        "the Runners crawled on after the restart"
    );
    // As for `crawl --shards` (shards_restart.rs): no page twice.
    c.check_complete(0).await;
    let s = c.status().await;
    check_nobody_died(&s, "the restart");
    assert_eq!(role(&s, "crawler_1"), "runner", "{s:#}");
    assert_eq!(role(&s, "crawler_2"), "runner", "{s:#}");
    check_members(&s, &["crawler_1", "crawler_2", "crawler_3"]);
    assert_eq!(c.requests_from(3), 0, "the backup had nothing to take over");
    drop(nodes);
}
