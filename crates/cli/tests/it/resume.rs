//! Durable state, end to end with the real binary: interrupt and resume,
//! `kill -9` at random moments, `--fresh`, `jobs` and `results`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crawlkeeper_model::CrawlRecord;
use crawlkeeper_testsite::{SiteConfig, TestSite};
use tokio::process::Command;

use crate::common;

use common::signal;

fn dir(name: &str) -> PathBuf {
    common::fresh_dir("resume", name)
}

fn crawl(dir: &Path, site: &TestSite, extra: &[&str]) -> Command {
    common::crawl_in(dir, &site.url(0, "/"), extra)
}

async fn finish(mut c: Command) -> i32 {
    let out = c.output().await.unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        matches!(code, 0 | 130 | 137),
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    code
}

fn records(path: &Path) -> Vec<CrawlRecord> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

/// Page requests (robots.txt aside) by target.
fn requests(site: &TestSite) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for t in site.log().targets(0) {
        if t != "/robots.txt" {
            *m.entry(t).or_default() += 1;
        }
    }
    m
}

fn site_config(pages: u32, delay_ms: u64) -> SiteConfig {
    let mut c = SiteConfig::uniform(1, pages);
    c.hosts[0].delay = Duration::from_millis(delay_ms);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_crawl_resumes_without_fetching_anything_twice() {
    let site = TestSite::start(site_config(300, 10)).await.unwrap();
    let d = dir("interrupt");
    let child = crawl(&d, &site, &["--per-host", "4"]).spawn().unwrap();
    common::arrived(site.log(), 40).await;
    signal(&child, "-INT");
    assert_eq!(
        child.wait_with_output().await.unwrap().status.code(),
        Some(130)
    );
    let partial = records(&d.join("out.jsonl")).len();
    assert!((35..301).contains(&partial), "{partial}");
    assert_eq!(finish(crawl(&d, &site, &["--per-host", "4"])).await, 0);
    let recs = records(&d.join("out.jsonl"));
    let urls: BTreeSet<&str> = recs.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(recs.len(), 301, "every page once in the output");
    assert_eq!(urls.len(), 301);
    let reqs = requests(&site);
    assert_eq!(reqs.len(), 301);
    assert!(
        reqs.values().all(|&n| n == 1),
        "a page was fetched twice: {reqs:?}"
    );
    let robots = site
        .log()
        .targets(0)
        .iter()
        .filter(|t| *t == "/robots.txt")
        .count();
    assert_eq!(robots, 1, "robots.txt is kept across runs");
    // Once finished, running again fetches nothing.
    let before = site.log().len();
    assert_eq!(finish(crawl(&d, &site, &[])).await, 0);
    assert_eq!(site.log().len(), before);
    assert_eq!(records(&d.join("out.jsonl")).len(), 301);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_random_moments_loses_nothing_and_refetches_only_in_flight_pages() {
    // Two hosts, 4 requests each at most: at most 8 requests are in flight
    // (fewer than the 50 workers), so a kill may cost at most 8 repeats.
    let mut config = SiteConfig::uniform(2, 750);
    for host in &mut config.hosts {
        host.delay = Duration::from_millis(2);
    }
    let site = TestSite::start(config).await.unwrap();
    let d = dir("kill9");
    let in_flight = 2 * 4;
    let second = site.url(1, "/");
    let args = ["--per-host", "4", "--max-load", "100", second.as_str()];
    // Where each run's requests start in the site's log.
    let mut runs = Vec::new();
    for round in 0..12u64 {
        let from = site.log().len();
        runs.push(from);
        let child = crawl(&d, &site, &args).spawn().unwrap();
        // Let it get some way, a different way each round.
        let target = from + 20 + (round * 37 % 90) as usize;
        common::arrived(site.log(), target).await;
        signal(&child, "-KILL");
        let out = child.wait_with_output().await.unwrap();
        assert_eq!(out.status.code(), None, "killed by a signal");
    }
    runs.push(site.log().len());
    assert_eq!(finish(crawl(&d, &site, &args)).await, 0);

    // A kill lost the pages its run requested that a later run requested
    // again: at most the requests in flight when it struck.
    let entries = site.log().entries();
    let run_of = |i: usize| runs.iter().rposition(|&from| from <= i).unwrap();
    let mut last_run: HashMap<(usize, &str), usize> = HashMap::new();
    let mut per_run: Vec<BTreeSet<(usize, &str)>> = vec![BTreeSet::new(); runs.len()];
    for (i, e) in entries.iter().enumerate() {
        if e.target == "/robots.txt" {
            continue;
        }
        let page = (e.host, e.target.as_str());
        assert!(per_run[run_of(i)].insert(page), "{page:?} twice in one run");
        last_run.insert(page, run_of(i));
    }
    let lost: Vec<usize> = per_run[..runs.len() - 1]
        .iter()
        .enumerate()
        .map(|(k, pages)| pages.iter().filter(|p| last_run[*p] > k).count())
        .collect();
    eprintln!("requests repeated because of each kill: {lost:?}");
    for (kill, &n) in lost.iter().enumerate() {
        assert!(
            n <= in_flight,
            "kill {kill} cost {n} repeated requests, more than the {in_flight} in flight: {lost:?}"
        );
    }

    let expected = 2 * 751;
    let recs = records(&d.join("out.jsonl"));
    let urls: BTreeSet<&str> = recs.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls.len(), expected, "every reachable page has a record");
    assert_eq!(recs.len(), expected, "and only one");
    assert!(recs.iter().all(|r| r.status == Some(200)));

    let results = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .current_dir(&d)
        .args(["results", "--state", "state.db"])
        .output()
        .await
        .unwrap();
    assert!(results.status.success());
    let stored = String::from_utf8(results.stdout).unwrap();
    assert_eq!(stored.lines().count(), expected, "one result row per page");
    assert_eq!(last_run.len(), expected, "every page was requested");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_starts_over_and_jobs_and_results_read_the_store() {
    let site = TestSite::start(site_config(20, 0)).await.unwrap();
    let d = dir("fresh");
    assert_eq!(finish(crawl(&d, &site, &[])).await, 0);
    assert_eq!(requests(&site).len(), 21);
    assert_eq!(finish(crawl(&d, &site, &["--fresh"])).await, 0);
    assert!(
        requests(&site).values().all(|&n| n == 2),
        "--fresh fetched everything again"
    );
    assert_eq!(
        records(&d.join("out.jsonl")).len(),
        21,
        "and rewrote the output"
    );
    // A finished job run again says so, and how to start over; it fetches
    // nothing.
    let again = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .current_dir(&d)
        .args([
            "crawl",
            "--follow",
            "--out",
            "out.jsonl",
            "--state",
            "state.db",
        ])
        .arg(site.url(0, "/"))
        .env_remove("RUST_LOG")
        .output()
        .await
        .unwrap();
    assert_eq!(again.status.code(), Some(0));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("complete already (21 URLs done)") && err.contains("--fresh"),
        "{err}"
    );
    assert!(requests(&site).values().all(|&n| n == 2), "nothing fetched");

    let jobs = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .current_dir(&d)
        .args(["jobs", "--state", "state.db"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8(jobs.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let fields: Vec<&str> = lines[1].split_whitespace().collect();
    let job = fields[0].to_owned();
    assert_eq!(&fields[2..6], ["21", "21", "0", "0"], "{text}");
    assert!(lines[1].ends_with(&site.url(0, "/")));

    let out = d.join("export.jsonl");
    let status = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .current_dir(&d)
        .args(["results", "--state", "state.db", &job, "--out"])
        .arg(&out)
        .status()
        .await
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(d.join("out.jsonl")).unwrap()
    );
    // A SQLite file is written by one process at a time: no lease names
    // the writer of a result, and --writer says so.
    let with_writer = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .current_dir(&d)
        .args(["results", "--state", "state.db", &job, "--writer"])
        .output()
        .await
        .unwrap();
    assert!(with_writer.status.success());
    let lines = String::from_utf8(with_writer.stdout).unwrap();
    assert_eq!(lines.lines().count(), 21);
    for line in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["url"].is_string() && v["writer"].is_null(), "{line}");
    }
    let warc = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .current_dir(&d)
        .args([
            "results", "--state", "state.db", "--writer", "--format", "warc",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(warc.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&warc.stderr).contains("--writer"));
    let missing = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .current_dir(&d)
        .args(["results", "--state", "state.db", "nosuchjob"])
        .output()
        .await
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains(&job));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_on_the_same_job_is_refused() {
    let site = TestSite::start(site_config(400, 20)).await.unwrap();
    let d = dir("locked");
    let first = crawl(&d, &site, &[]).spawn().unwrap();
    common::arrived(site.log(), 3).await;
    let second = crawl(&d, &site, &[]).output().await.unwrap();
    assert_eq!(
        second.status.code(),
        Some(2),
        "refused before anything is written"
    );
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("being crawled by another process"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    signal(&first, "-INT");
    first.wait_with_output().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_a_state_file_is_a_clear_error() {
    let site = TestSite::start(site_config(5, 0)).await.unwrap();
    let d = dir("notdb");
    std::fs::write(
        d.join("state.db"),
        "this is not a database, and it stays untouched",
    )
    .unwrap();
    let out = crawl(&d, &site, &[]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("state.db"), "{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("state.db")).unwrap(),
        "this is not a database, and it stays untouched"
    );
    assert!(site.log().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_memory_limits_spill_to_the_store_and_lose_nothing() {
    let site = TestSite::start(site_config(400, 2)).await.unwrap();
    let d = dir("spill");
    // 8 URLs queued in memory and 10 keys cached: nearly everything waits in
    // the store and nearly every duplicate is answered by it.
    let args = [
        "--per-host",
        "4",
        "--max-workers",
        "8",
        "--max-queued",
        "8",
        "--seen-cache",
        "10",
    ];
    let child = crawl(&d, &site, &args).spawn().unwrap();
    common::arrived(site.log(), 150).await;
    signal(&child, "-KILL");
    child.wait_with_output().await.unwrap();
    assert_eq!(finish(crawl(&d, &site, &args)).await, 0);
    let recs = records(&d.join("out.jsonl"));
    let urls: BTreeSet<&str> = recs.iter().map(|r| r.url.as_str()).collect();
    assert_eq!((recs.len(), urls.len()), (401, 401));
    let reqs = requests(&site);
    assert_eq!(reqs.len(), 401);
    let extra: usize = reqs.values().map(|n| n - 1).sum();
    assert!(extra <= 8, "only what was in flight at the kill: {extra}");
}
