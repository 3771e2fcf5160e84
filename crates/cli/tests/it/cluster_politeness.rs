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

/// Waits until both jobs are complete, then checks from the site's log
/// that its listener never had two requests in flight at once (`what`).
async fn both_complete_one_at_a_time(c: &Cluster, what: &str) {
    c.wait_status("both jobs complete", |s| {
        let js = s["jobs"].as_array().unwrap();
        js.len() == 2 && js.iter().all(|j| j["complete"].as_bool() == Some(true))
    })
    .await;
    let most = c.site.site.log().max_in_flight(0);
    assert_eq!(most, 1, "{what}: one request at a time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_jobs_on_one_host_share_its_bound_and_take_turns() {
    let c = Cluster::start("clp_jobs", 1, 0, 1, 1, 30, 20).await;
    let node = c.node_logged(1, &[]);
    c.formed().await;
    let a = submit(&c, "job-a", &c.site.site.url(0, "/")).await;
    let b = submit(&c, "job-b", &c.site.site.url(0, "/p/0")).await;
    assert_ne!(a, b, "two jobs");
    both_complete_one_at_a_time(&c, "two jobs with --per-host 1 on one host").await;
    let log = c.site.site.log();
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

/// Pages of each host in the per-IP test: enough that the killed Runner
/// has work left.
const PAGES: u32 = 40;

/// Three host names, one in each of a 3-shard job's shards.
fn names_one_per_shard() -> Vec<String> {
    let mut names: Vec<Option<String>> = vec![None; 3];
    for k in 0.. {
        let name = format!("h{k}.test");
        let shard = crawlkeeper_model::shard::shard_of(&name, 3) as usize;
        names[shard].get_or_insert(name);
        if names.iter().all(Option::is_some) {
            break;
        }
    }
    names.into_iter().flatten().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_on_one_address_share_its_bound_across_nodes_and_jobs_through_a_kill() {
    // One listener: three host names resolve to its address (shared
    // hosting), each name in a shard of its own, so that both Runners
    // crawl hosts of that address, for two jobs at once.
    let c = Cluster::start("clp_ip", 2, 1, 3, 1, PAGES, 30).await;
    let address = c.site.site.addr(0);
    let names = names_one_per_shard();
    let mut options: Vec<String> = [
        "--follow",
        "--per-host",
        "1",
        "--per-ip",
        "1",
        "--shards",
        "3",
    ]
    .map(str::to_owned)
    .to_vec();
    for n in &names {
        options.extend(["--resolve".to_owned(), format!("{n}={}", address.ip())]);
    }
    let seeds = |path: &str| -> Vec<String> {
        names
            .iter()
            .map(|n| format!("http://{n}:{}{path}", address.port()))
            .collect()
    };
    let nodes: Vec<_> = (1..=3).map(|i| c.node_logged(i, &[])).collect();
    c.formed().await;
    let mut jobs = Vec::new();
    for (agent, path) in [("job-a", "/p/0"), ("job-b", "/p/1")] {
        let mut o: Vec<&str> = options.iter().map(String::as_str).collect();
        o.extend(["--user-agent", agent]);
        let s = seeds(path);
        let s: Vec<&str> = s.iter().map(String::as_str).collect();
        let (code, job, err) = c.submit_job(&o, &s).await;
        assert_eq!(code, 0, "{err}");
        jobs.push(job.trim().to_owned());
    }
    // Both Runners under way, then one killed: its shards go to the
    // backup, whose requests wait for the dead one's places to come back.
    c.wait_log("both Runners under way", || {
        c.requests_from(1) >= 3 && c.requests_from(2) >= 3
    })
    .await;
    let mut nodes = nodes.into_iter();
    let killed = nodes.next().unwrap();
    crate::common::cluster::send(&killed, libc::SIGKILL);
    let killed_at = std::time::Instant::now();
    drop(killed);
    both_complete_one_at_a_time(
        &c,
        "three hosts on one address, --per-ip 1, two jobs, three nodes",
    )
    .await;
    // Every page of the three hosts, for each job, stored once.
    for job in &jobs {
        let (code, out, err) = c.run(&["results", job, "--store", &c.site.url]).await;
        assert_eq!(code, 0, "{err}");
        let mut urls: Vec<String> = crate::common::records(&out)
            .into_iter()
            .map(|r| r.url)
            .collect();
        let total = urls.len();
        urls.sort();
        urls.dedup();
        assert_eq!(urls.len(), total, "one result per URL");
        for n in &names {
            assert!(
                urls.iter().filter(|u| u.contains(n.as_str())).count() >= PAGES as usize,
                "{n}: {urls:?}"
            );
        }
    }
    // The crawl went on after the kill, on the other nodes, and every
    // shard the dead one held was taken over.
    let after: usize = (2..=3).map(|i| c.requests_since(i, killed_at).len()).sum();
    assert!(after > 0, "nothing was crawled after the kill");
    c.check_taken_over("crawler_1", &["crawler_2", "crawler_3"])
        .await;
    drop(nodes);
}
