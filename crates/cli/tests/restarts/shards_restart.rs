//! PostgreSQL restarted under a job crawled by two processes: both wait
//! and go on; nothing is lost or fetched twice.

use crate::common;

use crate::restart_postgres;
use common::sharded::{Sharded, exit_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_under_a_sharded_crawl_loses_nothing() {
    let _turn = crate::TURN.lock().await;
    let job = Sharded::start("pgrestart", 2, 4, 80, 10).await;
    let a = job.process(0, "zero", &[]).spawn().unwrap();
    let b = job.process(1, "one", &[]).spawn().unwrap();
    job.wait_for_agent("zero", 30).await;
    let before = job.site.log().len();
    tokio::task::spawn_blocking(restart_postgres).await.unwrap();
    for (who, child) in [("zero", a), ("one", b)] {
        let (code, stderr) = exit_of(child).await;
        assert_eq!(code, 0, "{who}: {stderr}");
    }
    let total: usize = job.expected().values().map(|p| p.len()).sum();
    assert!(before < total, "the restart came mid-crawl");
    job.check_log(&[&["zero"], &["one"]], 0);
    let results = job.results().await;
    assert!(results.values().all(|&n| n == 1), "a URL has two records");
    assert_eq!(results.len(), total);
}
