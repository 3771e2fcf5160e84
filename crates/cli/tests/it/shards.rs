//! One job, several processes: `crawl --shards N --shard I` on a shared
//! PostgreSQL database, with real processes and real signals, judged from
//! the test site's request log (each process has its own user agent).

use crate::common;

use std::collections::BTreeSet;

use common::sharded::{Sharded, exit_of};
use common::signal;

async fn every_process_crawls_its_own_hosts(name: &str, shards: u32) {
    let job = Sharded::start(name, shards, 6, 40, 3).await;
    let agents: Vec<String> = (0..shards).map(|i| format!("shard-{i}")).collect();
    let children: Vec<_> = (0..shards)
        .map(|i| job.process(i, &agents[i as usize], &[]).spawn().unwrap())
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let (code, stderr) = exit_of(child).await;
        assert_eq!(code, 0, "shard {i}: {stderr}");
    }
    let holders: Vec<Vec<&str>> = agents.iter().map(|a| vec![a.as_str()]).collect();
    let holders: Vec<&[&str]> = holders.iter().map(Vec::as_slice).collect();
    job.check_log(&holders, 0);
    let results = job.results().await;
    assert!(results.values().all(|&n| n == 1), "a URL has two records");
    assert_eq!(
        results
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>(),
        job.expected_urls()
    );
    // Each process's output holds its shard's records: together, the job's.
    let mut outputs = 0;
    for a in &agents {
        outputs +=
            common::records(&std::fs::read_to_string(job.dir.join(format!("{a}.jsonl"))).unwrap())
                .len();
    }
    assert_eq!(outputs, results.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_crawl_one_job_each_url_once() {
    every_process_crawls_its_own_hosts("two", 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_crawl_one_job_each_url_once() {
    every_process_crawls_its_own_hosts("three", 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_taken_over_is_fenced_and_sends_nothing_after_it_resumes() {
    let job = Sharded::start("zombie", 2, 4, 60, 20).await;
    let zero: Vec<usize> = (0..4).filter(|&h| job.shard_of(h) == 0).collect();
    let old = job.process(0, "old", &[]).spawn().unwrap();
    let old_pid = old.id().unwrap();
    let other = job.process(1, "other", &[]).spawn().unwrap();
    // Paused while each of its hosts answers it: no request of its is on
    // its way out (one in the microseconds between the lease check and
    // the socket would still go out after SIGCONT; see docs/guide/durable-state.md).
    job.wait_until_all_busy("old", 10, &zero).await;
    signal(&old, "-STOP");
    let before = job.requests_from("old");
    // The paused process still holds its lock: a plain start is refused.
    let refused = job.process(0, "refused", &[]).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is held by") && stderr.contains("--take-over"),
        "{stderr}"
    );
    let heir = job.process(0, "new", &["--take-over"]).spawn().unwrap();
    let heir_pid = heir.id().unwrap();
    job.wait_for_agent("new", 10).await;
    let resumed_at = std::time::Instant::now();
    signal(&old, "-CONT");
    let (code, stderr) = exit_of(old).await;
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("shard 0 of job")
            && stderr.contains("was taken over by")
            && stderr.contains("stopping"),
        "{stderr}"
    );
    let late: Vec<_> = job
        .site
        .log()
        .entries()
        .into_iter()
        .filter(|e| e.user_agent == "old" && e.at >= resumed_at)
        .map(|e| e.target)
        .collect();
    assert!(
        late.is_empty(),
        "the fenced process sent {late:?} after SIGCONT"
    );
    assert_eq!(
        job.requests_from("old"),
        before,
        "nothing from it while paused either"
    );
    for (who, child) in [("new", heir), ("other", other)] {
        let (code, stderr) = exit_of(child).await;
        assert_eq!(code, 0, "{who}: {stderr}");
    }
    // What the paused process had in flight is fetched again: at most a
    // request per host of its shard.
    job.check_log(&[&["old", "new"], &["other"]], zero.len());
    let results = job.results().await;
    assert!(results.values().all(|&n| n == 1), "a URL has two records");
    assert_eq!(results.len(), job.expected_urls().len());
    // Who stored what, from the database: nothing under the paused
    // process's lease once the heir took the shard, and its own output
    // holds only records the store took from it, before then.
    let writers = job.check_writers().await;
    let taken = writers.takes_by_pid(old_pid);
    assert_eq!(taken.len(), 1, "{:?}", writers.takes);
    let heir = format!(":{heir_pid}");
    writers.check_taken_over(taken[0], |holder| holder.ends_with(&heir));
    let stored: BTreeSet<&str> = writers
        .stored_under(taken[0])
        .map(|r| r.url.as_str())
        .collect();
    let output = std::fs::read_to_string(job.dir.join("old.jsonl")).unwrap();
    for record in common::records(&output) {
        assert!(
            stored.contains(record.url.as_str()),
            "old.jsonl holds {}, which the store did not take from it",
            record.url
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_killed_and_restarted_again_and_again_completes_the_job() {
    let job = Sharded::start("kill", 2, 4, 60, 10).await;
    let zero = (0..4).filter(|&h| job.shard_of(h) == 0).count();
    let other = job.process(1, "other", &[]).spawn().unwrap();
    let kills = 3;
    let mut agents = Vec::new();
    for k in 0..kills {
        let agent = format!("run-{k}");
        let child = job.process(0, &agent, &[]).spawn().unwrap();
        job.wait_for_agent(&agent, 15).await;
        signal(&child, "-KILL");
        exit_of(child).await;
        agents.push(agent);
    }
    // Restarted without a flag: the killed process's session, and lock, are gone.
    let last = job.process(0, "last", &[]).spawn().unwrap();
    let (code, stderr) = exit_of(last).await;
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = exit_of(other).await;
    assert_eq!(code, 0, "{stderr}");
    agents.push("last".to_owned());
    let zero_agents: Vec<&str> = agents.iter().map(String::as_str).collect();
    // Each kill costs at most the requests in flight: one per host of the shard.
    job.check_log(&[&zero_agents, &["other"]], kills * zero);
    let results = job.results().await;
    assert!(results.values().all(|&n| n == 1), "a URL has two records");
    assert_eq!(results.len(), job.expected_urls().len());
    // The shard's output file resumed with each restart: every record of
    // shard 0 once.
    let out = common::records(&std::fs::read_to_string(job.dir.join("last.jsonl")).unwrap());
    let expected_zero: usize = job
        .expected()
        .iter()
        .filter(|(h, _)| job.shard_of(**h) == 0)
        .map(|(_, p)| p.len())
        .sum();
    assert_eq!(out.len(), expected_zero);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_limit_holds_for_the_whole_job() {
    let job = Sharded::start("limit", 2, 4, 40, 1).await;
    let children: Vec<_> = (0..2)
        .map(|i| {
            job.process(i, &format!("limited-{i}"), &["--max-pages", "30"])
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let (code, stderr) = exit_of(child).await;
        assert_eq!(code, 0, "{stderr}");
    }
    let results = job.results().await;
    assert_eq!(
        results.len(),
        30,
        "--max-pages counts both processes' pages"
    );
    assert!(results.values().all(|&n| n == 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_shows_each_shard_with_its_holder() {
    let job = Sharded::start("jobs", 2, 2, 5, 0).await;
    for i in 0..2 {
        let (code, stderr) = exit_of(job.process(i, &format!("j{i}"), &[]).spawn().unwrap()).await;
        assert_eq!(code, 0, "{stderr}");
    }
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .args(["jobs", "--store", &job.url])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let shard_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("shard "))
        .collect();
    assert_eq!(shard_lines.len(), 2, "{text}");
    assert!(
        shard_lines[0].contains("0/2") && shard_lines[1].contains("1/2"),
        "{text}"
    );
    assert!(
        shard_lines
            .iter()
            .all(|l| l.contains("last held by") && l.contains("(gone, generation 1)")),
        "{text}"
    );
    let total: u64 = shard_lines
        .iter()
        .map(|l| l.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        total as usize,
        job.expected_urls().len(),
        "the shards' seen counts add up: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharding_options_are_checked_before_anything_is_written() {
    let dir = common::temp_path("shard-options");
    std::fs::create_dir_all(&dir).unwrap();
    // Never connected to: every case is refused before the store is opened.
    let pg = "postgres://nobody@127.0.0.1:9/none";
    for (args, needle) in [
        (
            &["--shards", "2", "--shard", "0"][..],
            "postgres:// --store",
        ),
        (
            &["--shards", "2", "--shard", "0", "--no-state"][..],
            "postgres:// --store",
        ),
        (&["--shards", "3", "--store", pg][..], "needs --shard"),
        (
            &["--shards", "3", "--shard", "3", "--store", pg][..],
            "not a shard",
        ),
        (
            &["--shards", "2", "--shard", "1", "--store", pg, "--fresh"][..],
            "--fresh",
        ),
        (&["--take-over"][..], "--take-over needs"),
        (
            &["--shards", "0", "--shard", "0", "--store", pg][..],
            "--shards",
        ),
    ] {
        let mut all = vec!["crawl", "http://127.0.0.1:9/"];
        all.extend_from_slice(args);
        let r = common::run_in(&dir, &all, None).await;
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
        assert!(
            !dir.join("crawlkeeper.db").exists(),
            "{args:?} made a state file"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_may_hold_several_shards() {
    let job = Sharded::start("several", 3, 6, 30, 2).await;
    let a = job.process_of("2,0", "a", &[]).spawn().unwrap();
    let b = job.process(1, "b", &[]).spawn().unwrap();
    for (who, child) in [("a", a), ("b", b)] {
        let (code, stderr) = exit_of(child).await;
        assert_eq!(code, 0, "{who}: {stderr}");
    }
    job.check_log(&[&["a"], &["b"], &["a"]], 0);
    let results = job.results().await;
    assert!(results.values().all(|&n| n == 1));
    assert_eq!(results.len(), job.expected_urls().len());
    // a's output holds the records of both its shards.
    let a_records = common::records(&std::fs::read_to_string(job.dir.join("a.jsonl")).unwrap());
    let in_a: usize = job
        .expected()
        .iter()
        .filter(|(h, _)| job.shard_of(**h) != 1)
        .map(|(_, p)| p.len())
        .sum();
    assert_eq!(a_records.len(), in_a);
}
