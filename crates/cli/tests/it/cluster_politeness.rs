//! Politeness that holds across jobs: two jobs on one host, both with
//! `--per-host 1`, never have two requests in flight there at once (from
//! the site's own log), and take turns.

use crate::common::cluster::{Cluster, JOB};

/// Submits a job of the cluster's options with `seed`, as user agent
/// `agent` (so that the site's log tells the jobs apart).
async fn submit(c: &Cluster, agent: &str, seed: &str) -> String {
    let mut options = JOB.to_vec();
    options.extend(["--user-agent", agent]);
    let (code, job, err) = c.submit_job(&options, &[seed]).await;
    assert_eq!(code, 0, "{err}");
    job.trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_jobs_on_one_host_share_its_bound_and_take_turns() {
    let c = Cluster::start("clp_jobs", 1, 0, 1, 1, 30, 20).await;
    let node = c.node_logged(1, &[]);
    c.formed().await;
    let a = submit(&c, "job-a", &c.site.site.url(0, "/")).await;
    let b = submit(&c, "job-b", &c.site.site.url(0, "/p/0")).await;
    assert_ne!(a, b, "two jobs");
    c.wait_status("both jobs complete", |s| {
        let jobs = s["jobs"].as_array().unwrap();
        jobs.len() == 2 && jobs.iter().all(|j| j["complete"].as_bool() == Some(true))
    })
    .await;
    let log = c.site.site.log();
    assert_eq!(
        log.max_in_flight(0),
        1,
        "two jobs with --per-host 1 on one host: one request at a time"
    );
    // Both crawled the whole site (30 pages; job a its index too).
    let agents: Vec<String> = log
        .entries()
        .into_iter()
        .filter(|e| e.target != "/robots.txt")
        .map(|e| e.user_agent)
        .collect();
    let count = |a: &str| agents.iter().filter(|x| x.as_str() == a).count();
    assert_eq!((count("job-a"), count("job-b")), (31, 30), "{agents:?}");
    // While both had pages left, they took turns: never more than two
    // of one job's requests in a row before the other's next.
    let both = agents
        .iter()
        .rposition(|x| x == "job-a")
        .min(agents.iter().rposition(|x| x == "job-b"))
        .unwrap();
    let start = agents
        .iter()
        .position(|x| x == "job-b")
        .unwrap()
        .max(agents.iter().position(|x| x == "job-a").unwrap());
    let mut run = 0;
    for pair in agents[start..=both].windows(2) {
        run = if pair[0] == pair[1] { run + 1 } else { 0 };
        assert!(run < 2, "one job ran ahead: {agents:?}");
    }
    drop(node);
}
