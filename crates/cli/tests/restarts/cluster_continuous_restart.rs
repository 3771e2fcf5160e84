//! PostgreSQL restarted under a continuous cluster job, between two of
//! its passes: the nodes wait and go on with every page's schedule (no
//! page asked before its interval, none forgotten, from the site's log),
//! nobody is declared dead, and `stop` ends it.

use crate::common;

use crate::restart_postgres;
use common::cluster::check_nobody_died;
use common::continuous::{asked, check_schedule, first_pass, stop_and_wait};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_under_a_continuous_cluster_job_keeps_its_schedule() {
    let _turn = crate::TURN.lock().await;
    let continuous = ["--continuous", "--revisit-min", "4s", "--revisit-max", "4s"];
    let (c, nodes, job, _) = first_pass("clcpg", 6, &continuous).await;
    let total = c.total_pages();
    tokio::task::spawn_blocking(restart_postgres).await.unwrap();
    c.wait_log("every page fetched again after the restart", || {
        let a = asked(&c);
        a.len() == total && a.values().all(|t| t.len() >= 2)
    })
    .await;
    stop_and_wait(&c, &job, &continuous).await;
    let s = c.status().await;
    check_nobody_died(&s, "the restart");
    assert_eq!(c.requests_from(3), 0, "the backup had nothing to take over");
    check_schedule(&c, total).await;
    drop(nodes);
}
