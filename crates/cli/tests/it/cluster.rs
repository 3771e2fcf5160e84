//! The cluster as a crawler, end to end: real `crawlkeeper node`
//! processes on a real ZooKeeper and PostgreSQL, killed with real signals,
//! judged from the test site's request log and the store.

use crate::common;

use std::time::{Duration, Instant};

use common::cluster::{Cluster, exit_within, role};
use common::signal;

/// The kill test's job options beyond the site's own.
const JOB_EXTRA: &[&str] = &[
    "--store-bodies",
    "--extract",
    "heading=title",
    "--use",
    "products",
];

/// `--processor` for the example processor, as every node of the kill
/// test runs it.
fn products() -> String {
    format!(
        "products=python3 {}/../../examples/processors/products.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_runners_shards_are_crawled_on_by_the_backup_with_nothing_lost_or_doubled() {
    let c = Cluster::start("cl_kill", 2, 1, 2, 8, 12, 30).await;
    let processor = products();
    let nodes: Vec<_> = (1..=3)
        .map(|i| c.node(i, &["--processor", &processor]))
        .collect();
    let formed = c.formed().await;
    assert_eq!(role(&formed, "crawler_3"), "backup-runner");
    // Pages kept in PostgreSQL, for one WARC export of every shard; a
    // field by selector, taken by whichever node crawls a page.
    let (code, job, err) = c.submit(JOB_EXTRA).await;
    assert_eq!(code, 0, "{err}");
    let job = job.trim().to_owned();
    assert_eq!(job.len(), 12, "the job's name is printed: {job:?}");
    // crawler_1 crawls its shard; then it dies.
    c.wait_requests(1, 8).await;
    // So far each Runner fetched only its own shard's hosts.
    c.wait_requests(2, 1).await;
    c.check_holders();
    let mut nodes = nodes.into_iter();
    let victim = nodes.next().unwrap();
    signal(&victim, "-KILL");
    let killed_at = Instant::now();
    let before = c.requests_from(3);
    drop(victim);
    let (code, _, err) = c.submit(&[JOB_EXTRA, &["--wait"]].concat()).await;
    assert_eq!(code, 0, "the job completes: {err}");
    assert!(
        c.requests_from(3) > before,
        "the backup crawled the dead Runner's shard"
    );
    eprintln!(
        "fail-over: the heir's first request came {:?} after the kill",
        c.site
            .site
            .log()
            .entries()
            .iter()
            .find(|e| e.peer == Cluster::address(3))
            .map(|e| e.at.duration_since(killed_at))
    );
    // Shard 0 went to crawler_1 (shards go to Runners in index order): at
    // most one request per host of it was in flight when it died.
    let bound = (0..c.site.site.hosts())
        .filter(|&h| c.site.shard_of(h) == 0)
        .count();
    c.check_complete(bound).await;
    c.check_taken_over("crawler_1", &["crawler_3"]).await;
    check_export(&c, &job).await;
    let s = c
        .wait_status("showing the fail-over", |s| {
            role(s, "crawler_1") == "dead-runner" && role(s, "crawler_3") == "runner"
        })
        .await;
    assert_eq!(s["group_state"]["fail_runner"][0], "crawler_1");
    assert!(s["jobs"][0]["complete"].as_bool().unwrap());

    // Restarted with its name, it rejoins as a backup, a member once.
    let back = c.node(1, &[]);
    let s = c
        .wait_status("rejoined", |s| role(s, "crawler_1") == "backup-runner")
        .await;
    let crawlers = s["group_state"]["current_crawler"].as_array().unwrap();
    assert_eq!(
        crawlers.iter().filter(|n| *n == "crawler_1").count(),
        1,
        "{s:#}"
    );
    drop(back);
    drop(nodes);
}

/// `results --format warc` merges every shard's stored pages, the dead
/// Runner's and its heir's, into files warcio accepts, each page once.
async fn check_export(c: &Cluster, job: &str) {
    let d = common::fresh_dir("cluster", "export");
    let out = d.join("cluster.warc.gz");
    let out = out.to_str().unwrap();
    let (code, jsonl, err) = c.run(&["results", "--store", &c.site.url, job]).await;
    assert_eq!(code, 0, "{err}");
    let pages = common::records(&jsonl);
    // Every page's fields, whether its shard was crawled before the kill or
    // after it by the backup: the page's title, as the record has it, and
    // the example processor's count of the words a reader sees, added by
    // the processor child of whichever node crawled the page.
    let pages_200: Vec<_> = pages.iter().filter(|r| r.status == Some(200)).collect();
    assert!(!pages_200.is_empty());
    for r in &pages_200 {
        let n = r
            .fields
            .as_ref()
            .and_then(|f| f.get("words"))
            .and_then(|w| w.as_u64());
        assert!(n.is_some_and(|n| n > 0), "{}: fields {:?}", r.url, r.fields);
        assert_eq!(r.error, None, "{}", r.url);
    }
    for r in pages_200 {
        let heading = r.fields.as_ref().and_then(|f| f.get("heading"));
        assert_eq!(
            heading.and_then(|v| v.as_str()),
            r.title.as_deref(),
            "{}: fields {:?}",
            r.url,
            r.fields
        );
        assert!(r.title.is_some(), "{} has a title", r.url);
    }
    let args = [
        "results",
        "--store",
        &c.site.url,
        "--format",
        "warc",
        "--out",
        out,
        job,
    ];
    let (code, _, err) = c.run(&args).await;
    assert_eq!(code, 0, "{err}");
    let recs = common::warc::check_files(std::path::Path::new(out));
    common::warc::check_pages(&recs, &pages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_hands_a_runners_shards_over_at_once_and_exits_0() {
    let c = Cluster::start("cl_term", 2, 1, 2, 6, 15, 30).await;
    let mut nodes: Vec<_> = (1..=3).map(|i| Some(c.node(i, &[]))).collect();
    c.formed().await;
    let (code, _, err) = c.submit(&[]).await;
    assert_eq!(code, 0, "{err}");
    c.wait_requests(2, 6).await;
    let leaving = nodes[1].take().unwrap();
    let asked = Instant::now();
    signal(&leaving, "-TERM");
    let code = exit_within(leaving, Duration::from_secs(30)).await;
    assert_eq!(code, 0, "a graceful leave exits 0: {}", c.node_log(2));
    let before = c.requests_from(3);
    c.wait_requests(3, before + 1).await;
    let handed = asked.elapsed();
    // What tells a graceful leave from a death is not this time (a death
    // is judged after update_timeout x heart_rhythm_timeout, 6 s here, too
    // close to any bound a busy machine keeps) but `fail_runner` below: a
    // Runner judged dead is listed there, one that left is not. The bound
    // only says the hand-over did not stall.
    assert!(
        handed < Duration::from_secs(30),
        "the backup started after {handed:?}"
    );
    let (code, _, err) = c.submit(&["--wait"]).await;
    assert_eq!(code, 0, "{err}");
    c.check_complete(6).await;
    let s = c.status().await;
    assert_eq!(role(&s, "crawler_3"), "runner");
    assert!(
        s["group_state"]["fail_runner"]
            .as_array()
            .unwrap()
            .is_empty(),
        "a leave is not a death (a Runner judged dead is listed here): {s:#}"
    );
    drop(nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_commands_refuse_bad_input_with_one_line() {
    let c = Cluster::start("cl_bad", 1, 0, 1, 1, 2, 0).await;
    let zk = c.zookeeper.clone();
    let group = c.group.clone();
    let sqlite = [
        "node",
        "--zookeeper",
        &zk,
        "--store",
        "state.db",
        "--group",
        &group,
        "--name",
        "c_1",
    ];
    let (code, _, err) = c.run(&sqlite).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a PostgreSQL database"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let node = c.node(1, &[]);
    c.formed().await;
    let mut other = vec!["node"];
    let args = c.where_args();
    other.extend(args.iter().map(String::as_str));
    other.extend(["--name", "crawler_2", "--runners", "3"]);
    let (code, _, err) = c.run(&other).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("runs with --runners 1 --backups 0"), "{err}");

    let mut twin = vec!["node"];
    twin.extend(args.iter().map(String::as_str));
    twin.extend(["--name", "crawler_1", "--runners", "1"]);
    let (code, _, err) = c.run(&twin).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a live node named crawler_1"), "{err}");

    let unreachable = [
        "status",
        "--zookeeper",
        &zk,
        "--store",
        "postgres://postgres@127.0.0.1:9/x",
        "--group",
        &group,
    ];
    let (code, _, err) = c.run(&unreachable).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("127.0.0.1:9"), "{err}");

    let mut bad_job = vec!["submit"];
    bad_job.extend(args.iter().map(String::as_str));
    bad_job.extend(["--include", "(", "http://127.0.0.1/"]);
    let (code, _, err) = c.run(&bad_job).await;
    assert_eq!(
        code, 2,
        "a bad job is refused before anything is written: {err}"
    );
    // A continuous job's bad revisit bounds: refused in one line.
    let (code, _, err) = c.submit(&["--continuous", "--revisit-max", "1m"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("revisit") && !err.contains("  "), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let s = c.status().await;
    assert!(s["jobs"].as_array().unwrap().is_empty(), "{s:#}");
    drop(node);
}
