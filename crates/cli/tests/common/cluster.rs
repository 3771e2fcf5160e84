//! A cluster of real `crawlkeeper node` processes on the ZooKeeper the
//! test script started and a PostgreSQL database of the test's own, with
//! the test site: each node sends its requests from a loopback address of
//! its own (`--bind-address 127.0.1.<index>`), so the site's request log
//! tells which node asked.

use std::net::{IpAddr, Ipv4Addr};
use std::process::Stdio;
use std::time::Duration;

use crawlkeeper_testsite::zookeeper::shared_address;
use serde_json::Value;
use tokio::process::{Child, Command};

use super::sharded::{DEADLINE, Sharded};

/// The job's crawl options: the whole site, one request per host at once.
pub const JOB: &[&str] = &[
    "--follow",
    "--scope",
    "any",
    "--depth",
    "1000",
    "--per-host",
    "1",
];

/// A group of nodes crawling a site with hosts linking to each other.
pub struct Cluster {
    pub site: Sharded,
    pub group: String,
    pub zookeeper: String,
    pub runners: u32,
    pub backups: u32,
}

impl Cluster {
    /// A site of `hosts` × `pages` answering after `delay_ms`, a database
    /// and a group name of the test's own; a job of `shards` shards.
    pub async fn start(
        name: &str,
        runners: u32,
        backups: u32,
        shards: u32,
        hosts: usize,
        pages: u32,
        delay_ms: u64,
    ) -> Self {
        let site = Sharded::start(name, shards, hosts, pages, delay_ms).await;
        Self {
            site,
            group: format!("{name}-{}", std::process::id()),
            zookeeper: shared_address(),
            runners,
            backups,
        }
    }

    /// The arguments every cluster command takes.
    pub fn where_args(&self) -> Vec<String> {
        [
            "--zookeeper",
            &self.zookeeper,
            "--store",
            &self.site.url,
            "--group",
            &self.group,
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// The loopback address node `crawler_<i>` sends from.
    pub fn address(i: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 1, i as u8))
    }

    /// Starts node `crawler_<i>`.
    pub fn node(&self, i: u32, extra: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
            .arg("node")
            .args(self.where_args())
            .args(["--name", &format!("crawler_{i}")])
            .args(["--runners", &self.runners.to_string()])
            .args(["--backups", &self.backups.to_string()])
            .args(["--session-timeout", "2s", "--formation-timeout", "3s"])
            .args(["--bind-address", &Self::address(i).to_string()])
            .args(extra)
            .current_dir(&self.site.dir)
            .env_remove("RUST_LOG")
            .env_remove("CRAWLKEEPER_MAX_WORKERS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the node starts")
    }

    /// Runs a command of the binary; its code, stdout and stderr.
    pub async fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = tokio::time::timeout(
            DEADLINE,
            Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
                .args(args)
                .env_remove("RUST_LOG")
                .stdin(Stdio::null())
                .output(),
        )
        .await
        .expect("the command ends within the deadline")
        .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Submits the job (host 0 as its seed) and returns its name.
    pub async fn submit(&self, extra: &[&str]) -> (i32, String, String) {
        let mut args = vec!["submit".to_owned()];
        args.extend(self.where_args());
        args.extend(JOB.iter().map(|s| (*s).to_owned()));
        args.extend(["--shards".to_owned(), self.site.shards.to_string()]);
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args.push(self.site.site.url(0, "/"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&args).await
    }

    /// `status --json`.
    pub async fn status(&self) -> Value {
        let mut args = vec!["status".to_owned()];
        args.extend(self.where_args());
        args.extend(["--json", "--window", "200ms"].map(str::to_owned));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = self.run(&args).await;
        assert_eq!(code, 0, "status failed: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("status JSON {out:?}: {e}"))
    }

    /// Waits until `check` holds for the status, within the deadline.
    pub async fn wait_status(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let end = tokio::time::Instant::now() + DEADLINE;
        loop {
            let s = self.status().await;
            if check(&s) {
                return s;
            }
            assert!(
                tokio::time::Instant::now() < end,
                "never {what} within {DEADLINE:?}: {s:#}"
            );
        }
    }

    /// Waits until the group is formed with every expected member.
    pub async fn formed(&self) -> Value {
        let total = (self.runners + self.backups) as usize;
        self.wait_status("formed", |s| {
            let g = &s["group_state"];
            g["current_runner"].as_array().map_or(0, Vec::len) == self.runners as usize
                && g["current_crawler"].as_array().map_or(0, Vec::len) == total
        })
        .await
    }

    /// Page requests from node `i` so far.
    pub fn requests_from(&self, i: u32) -> usize {
        let me = Self::address(i);
        self.site
            .site
            .log()
            .entries()
            .iter()
            .filter(|e| e.peer == me && e.target != "/robots.txt")
            .count()
    }

    /// Waits until node `i` has made `n` page requests.
    pub async fn wait_requests(&self, i: u32, n: usize) {
        let log = self.site.site.log().clone();
        tokio::time::timeout(DEADLINE, async {
            let mut seen = log.len();
            while self.requests_from(i) < n {
                seen += 1;
                log.wait_for(seen).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("node {i} made fewer than {n} requests within {DEADLINE:?}"));
    }

    /// Checks a complete crawl by the site's log and the store: every page
    /// requested, at most `repeats` requests more than one per page, never
    /// two at once on a host, every URL with one result.
    pub async fn check_complete(&self, repeats: usize) {
        let everyone: Vec<String> = self
            .site
            .site
            .log()
            .entries()
            .iter()
            .map(|e| e.user_agent.clone())
            .collect();
        let agents: Vec<&str> = everyone.iter().map(String::as_str).collect();
        let holders: Vec<&[&str]> = (0..self.site.shards).map(|_| agents.as_slice()).collect();
        self.site.check_log(&holders, repeats);
        let results = self.site.results().await;
        let twice: Vec<_> = results.iter().filter(|(_, n)| **n != 1).collect();
        assert!(
            twice.is_empty(),
            "URLs without exactly one result: {twice:?}"
        );
        assert_eq!(
            results
                .keys()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>(),
            self.site.expected_urls()
        );
    }
}

/// The role a node has in a status.
pub fn role(status: &Value, node: &str) -> String {
    status["members"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["name"] == node)
        .map(|m| m["state"]["role"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default()
}

/// Waits for `child` to exit within `limit`: its code and stderr.
pub async fn exit_within(child: Child, limit: Duration) -> (i32, String) {
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .expect("the process ends in time")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
