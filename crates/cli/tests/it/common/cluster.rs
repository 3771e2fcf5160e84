//! A cluster of real `crawlkeeper node` processes on the ZooKeeper the
//! test script started and a PostgreSQL database of the test's own, with
//! the test site: each node sends its requests from a loopback address of
//! its own (`--bind-address 127.0.1.<index>`), so the site's request log
//! tells which node asked.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use crawlkeeper_testsite::LogEntry;
use crawlkeeper_testsite::zookeeper::shared_address;
use serde_json::Value;
use tokio::process::{Child, Command};

use super::sharded::{DEADLINE, Sharded};
use super::writers::Writers;

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

/// Node options for a ZooKeeper outage ([`Cluster::through_outages`]):
/// hearts every 100 ms, late after 500 ms, dead after two late checks.
pub const FAST_HEARTS: &[&str] = &[
    "--update-time",
    "100ms",
    "--update-timeout",
    "500ms",
    "--heart-rhythm-timeout",
    "2",
];

/// Halts the test's own ZooKeeper server `zk` (its clients see an
/// outage): returns when it is down.
pub async fn halt_zookeeper(zk: &std::sync::Arc<crawlkeeper_testsite::zookeeper::ZkServer>) {
    let zk = zk.clone();
    tokio::task::spawn_blocking(move || zk.halt())
        .await
        .unwrap();
}

/// Starts `zk` again after [`halt_zookeeper`]: returns when it serves.
pub async fn restart_zookeeper(zk: &std::sync::Arc<crawlkeeper_testsite::zookeeper::ZkServer>) {
    let zk = zk.clone();
    tokio::task::spawn_blocking(move || zk.restart())
        .await
        .unwrap();
}

/// How long a Runner's heart may stay silent with [`FAST_HEARTS`].
pub const HEART_LIMIT: Duration = Duration::from_millis(2 * 500);

/// A group of nodes crawling a site with hosts linking to each other.
pub struct Cluster {
    pub site: Sharded,
    pub group: String,
    pub zookeeper: String,
    pub runners: u32,
    pub backups: u32,
    /// The nodes' `--session-timeout` (2s unless changed).
    pub session_timeout: String,
    /// The job's seeds are every host's root, not host 0's alone.
    pub every_host_seeded: bool,
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
            session_timeout: "2s".to_owned(),
            every_host_seeded: false,
        }
    }

    /// The same cluster whose job starts on every host at once: a shard's
    /// hosts are then all busy from the start, not found one after another
    /// along the site's ring of cross-host links.
    pub fn seeding_every_host(mut self) -> Self {
        self.every_host_seeded = true;
        self
    }

    /// The same cluster on `zk`, a ZooKeeper server of the test's own
    /// that it may halt and restart, with sessions that outlive an outage
    /// (20 s); its nodes are to be started with [`FAST_HEARTS`], so that a
    /// heart goes silent for longer than [`HEART_LIMIT`] in one.
    pub fn through_outages(mut self, zk: &crawlkeeper_testsite::zookeeper::ZkServer) -> Self {
        self.zookeeper = zk.address().to_owned();
        self.session_timeout = "20s".to_owned();
        self
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

    /// Starts node `crawler_<i>`, its stderr kept in its log (see
    /// [`Self::node_logged`]): a pipe nobody reads would stall a node that
    /// writes more than the pipe holds.
    pub fn node(&self, i: u32, extra: &[&str]) -> Child {
        self.node_logged(i, extra)
    }

    /// Starts node `crawler_<i>` with its stderr appended to
    /// `crawler_<i>.log` in the test's directory (see [`Self::node_log`]):
    /// a node that runs long never blocks on a full pipe, and a failing
    /// test can show what the node said.
    pub fn node_logged(&self, i: u32, extra: &[&str]) -> Child {
        self.node_logged_with(i, extra, &[])
    }

    /// [`Self::node_logged`] with these environment variables too
    /// (`RUST_LOG=debug`).
    pub fn node_logged_with(&self, i: u32, extra: &[&str], env: &[(&str, &str)]) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.node_log_path(i))
            .unwrap();
        self.node_command(i, extra)
            .envs(env.iter().copied())
            .env("NO_COLOR", "1")
            .stderr(log)
            .spawn()
            .expect("the node starts")
    }

    fn node_command(&self, i: u32, extra: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"));
        c.arg("node")
            .args(self.where_args())
            .args(["--name", &format!("crawler_{i}")])
            .args(["--runners", &self.runners.to_string()])
            .args(["--backups", &self.backups.to_string()])
            .args(["--session-timeout", &self.session_timeout])
            .args(["--formation-timeout", "3s"])
            .args(["--bind-address", &Self::address(i).to_string()])
            .args(extra)
            .current_dir(&self.site.dir)
            .env_remove("RUST_LOG")
            .env_remove("CRAWLKEEPER_MAX_WORKERS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        c
    }

    fn node_log_path(&self, i: u32) -> std::path::PathBuf {
        self.site.dir.join(format!("crawler_{i}.log"))
    }

    /// When each node took which shard, from the nodes' own logs ("crawling
    /// shards" as an engine starts, "took shards" as it is given more), by
    /// the address the node sends from.
    pub fn holdings(&self) -> BTreeMap<IpAddr, Vec<(SystemTime, u32)>> {
        let mut held: BTreeMap<IpAddr, Vec<(SystemTime, u32)>> = BTreeMap::new();
        for i in 1..=(self.runners + self.backups + 2) {
            for line in self.node_log(i).lines() {
                if !(line.contains("crawling shards") || line.contains("took shards")) {
                    continue;
                }
                let Some(at) = line
                    .split_whitespace()
                    .next()
                    .and_then(|t| humantime::parse_rfc3339(t).ok())
                else {
                    continue;
                };
                let Some(list) = line
                    .split_once("shards=[")
                    .and_then(|(_, rest)| rest.split_once(']'))
                    .map(|(list, _)| list)
                else {
                    continue;
                };
                for shard in list.split(',').filter_map(|s| s.trim().parse::<u32>().ok()) {
                    held.entry(Self::address(i)).or_default().push((at, shard));
                }
            }
        }
        held
    }

    /// Every page request came from a node that had taken its host's shard
    /// before the request arrived (by the nodes' logs and the site's wall
    /// clock, one machine's clock).
    pub fn check_holders(&self) {
        let held = self.holdings();
        let mut wrong = Vec::new();
        for e in self.site.site.log().entries() {
            if e.target == "/robots.txt" {
                continue;
            }
            let shard = self.site.shard_of(e.host);
            let took = held
                .get(&e.peer)
                .is_some_and(|takes| takes.iter().any(|(at, s)| *s == shard && *at <= e.wall));
            if !took {
                wrong.push(format!(
                    "host {} {} from {} (shard {shard})",
                    e.host, e.target, e.peer
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "requests from a node that had not taken the shard: {wrong:?}; holdings {held:?}"
        );
    }

    /// What node `crawler_<i>`, started with [`Self::node_logged`], wrote
    /// to its stderr so far (every run of it).
    pub fn node_log(&self, i: u32) -> String {
        std::fs::read_to_string(self.node_log_path(i)).unwrap_or_default()
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
        if self.every_host_seeded {
            // A page every complete crawl requests anyway, so the site's
            // log holds no request a crawl from host 0 alone would not make.
            let others = 1..self.site.site.hosts();
            args.extend(others.map(|h| self.site.site.url(h, "/p/0")));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&args).await
    }

    /// Submits a job of `options` with `seeds`, outside the site's job.
    pub async fn submit_job(&self, options: &[&str], seeds: &[&str]) -> (i32, String, String) {
        let mut args = vec!["submit".to_owned()];
        args.extend(self.where_args());
        args.extend(options.iter().map(|s| (*s).to_owned()));
        args.extend(seeds.iter().map(|s| (*s).to_owned()));
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

    /// Waits until the group is formed with every expected member, each
    /// past its election (its NodeState is written after GroupState).
    pub async fn formed(&self) -> Value {
        let total = (self.runners + self.backups) as usize;
        self.wait_status("formed", |s| {
            let g = &s["group_state"];
            let elected = |role: &str| {
                s["members"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|m| m["state"]["role"] == role)
                    .count()
            };
            g["current_runner"].as_array().map_or(0, Vec::len) == self.runners as usize
                && g["current_crawler"].as_array().map_or(0, Vec::len) == total
                && elected("runner") == self.runners as usize
                && elected("backup-runner") == self.backups as usize
        })
        .await
    }

    /// Page requests from node `i` so far.
    pub fn requests_from(&self, i: u32) -> usize {
        self.page_requests(i, |_| true)
    }

    /// Page requests from node `i` to any of `hosts`.
    pub fn requests_to(&self, i: u32, hosts: &[usize]) -> usize {
        self.page_requests(i, |e| hosts.contains(&e.host))
    }

    /// Page requests (robots.txt aside) from node `i` that `keep` keeps.
    fn page_requests(&self, i: u32, keep: impl Fn(&LogEntry) -> bool) -> usize {
        let me = Self::address(i);
        self.site
            .site
            .log()
            .entries()
            .iter()
            .filter(|e| e.peer == me && e.target != "/robots.txt" && keep(e))
            .count()
    }

    /// Requests (robots.txt too) from node `i` that arrived at or after
    /// `at`: their hosts and targets.
    pub fn requests_since(&self, i: u32, at: Instant) -> Vec<(usize, String)> {
        let me = Self::address(i);
        self.site
            .site
            .log()
            .entries()
            .into_iter()
            .filter(|e| e.peer == me && e.at >= at)
            .map(|e| (e.host, e.target))
            .collect()
    }

    /// When node `i` first asked any of `hosts` at or after `at`.
    pub fn first_request_to(&self, i: u32, hosts: &[usize], at: Instant) -> Option<Instant> {
        let me = Self::address(i);
        self.site
            .site
            .log()
            .entries()
            .iter()
            .find(|e| e.peer == me && e.at >= at && hosts.contains(&e.host))
            .map(|e| e.at)
    }

    /// The site's hosts in shard `shard`.
    pub fn hosts_of(&self, shard: u32) -> Vec<usize> {
        (0..self.site.site.hosts())
            .filter(|&h| self.site.shard_of(h) == shard)
            .collect()
    }

    /// Every page request a complete crawl makes.
    pub fn total_pages(&self) -> usize {
        self.site.expected().values().map(|p| p.len()).sum()
    }

    /// Waits until `check` holds for the site's log, within the deadline;
    /// it is looked at again each time a request arrives.
    pub async fn wait_log(&self, what: &str, check: impl Fn() -> bool) {
        let log = self.site.site.log().clone();
        tokio::time::timeout(DEADLINE, async {
            let mut seen = log.len();
            while !check() {
                seen += 1;
                log.wait_for(seen).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("never {what} within {DEADLINE:?}"));
    }

    /// Waits until node `i` has made `n` page requests and each of
    /// `hosts` is answering one, then stops `child` (SIGSTOP) at once:
    /// with `--per-host 1` none of its requests to them can be on its way
    /// out (past the lease gate, not yet on the wire) when it stops.
    pub async fn stop_while_busy(&self, child: &Child, i: u32, n: usize, hosts: &[usize]) {
        let log = self.site.site.log().clone();
        self.wait_log("the node keeping its hosts busy", || {
            self.requests_from(i) >= n && hosts.iter().all(|&h| log.in_flight(h) > 0)
        })
        .await;
        send(child, libc::SIGSTOP);
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

    /// Checks, from the database, that every shard node `from` took was
    /// taken again by one of `heirs`, with nothing stored under `from`'s
    /// lease from then on.
    pub async fn check_taken_over(&self, from: &str, heirs: &[&str]) -> Writers {
        let writers = self.site.check_writers().await;
        let taken = writers.takes_by_node(from);
        assert!(!taken.is_empty(), "{from} never took a shard");
        for take in taken {
            writers.check_taken_over(take, |holder| {
                heirs.iter().any(|h| holder.starts_with(&format!("{h}@")))
            });
        }
        writers
    }

    /// Checks a complete crawl by the site's log and the store: every page
    /// requested, at most `repeats` requests more than one per page, never
    /// two at once on a host, every URL with one result, stored under the
    /// lease of its shard current then.
    pub async fn check_complete(&self, repeats: usize) {
        self.check_complete_allowing(repeats, &[]).await;
    }

    /// [`Self::check_complete`], requests for `allowed` paths aside.
    pub async fn check_complete_allowing(&self, repeats: usize, allowed: &[&str]) {
        let everyone: Vec<String> = self
            .site
            .site
            .log()
            .entries()
            .iter()
            .map(|e| e.user_agent.clone())
            .collect();
        let agents: Vec<&str> = everyone.iter().map(String::as_str).collect();
        // The nodes share a user agent: who may fetch a shard's hosts is
        // checked by address and time below, not by agent here.
        let holders: Vec<&[&str]> = (0..self.site.shards).map(|_| agents.as_slice()).collect();
        self.site.check_log_allowing(&holders, repeats, allowed);
        self.check_holders();
        self.site.check_writers().await;
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

/// The shards of the job a node's task holds unfinished, in a status.
pub fn shards_of(status: &Value, node: &str) -> Vec<u32> {
    status["members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["name"] == node)
        .flat_map(|m| m["shards"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s.as_str()?.rsplit_once('/')?.1.parse().ok())
        .collect()
}

/// Checks that a status names every one of `nodes` once in `members` and
/// once in `group_state.current_crawler`.
pub fn check_members(status: &Value, nodes: &[&str]) {
    let members: Vec<&str> = status["members"]
        .as_array()
        .unwrap_or_else(|| panic!("no members: {status:#}"))
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    let crawlers: Vec<&str> = status["group_state"]["current_crawler"]
        .as_array()
        .unwrap_or_else(|| panic!("no current_crawler: {status:#}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for n in nodes {
        assert_eq!(
            members.iter().filter(|m| *m == n).count(),
            1,
            "{n} is not one member: {status:#}"
        );
        assert_eq!(
            crawlers.iter().filter(|m| *m == n).count(),
            1,
            "{n} is not one current crawler: {status:#}"
        );
    }
}

/// Checks that `status` lists no Runner as failed (`fail_runner`): none
/// was judged dead (`what`: of what it should not have died).
pub fn check_nobody_died(status: &Value, what: &str) {
    let fail = &status["group_state"]["fail_runner"];
    assert!(
        fail.as_array().is_some_and(Vec::is_empty),
        "nobody died of {what}: {status:#}"
    );
}

/// Sends `sig` (`libc::SIGKILL`, …) to `child` from this process, at once
/// (no `kill` command started in between).
pub fn send(child: &Child, sig: libc::c_int) {
    let pid = child.id().expect("the process runs") as libc::pid_t;
    // SAFETY: kill(2) on a child process of ours, which has not been waited for.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
}

/// Waits for `child` to exit within `limit`: its exit code (a node's
/// stderr is in its log, [`Cluster::node_log`]).
pub async fn exit_within(mut child: Child, limit: Duration) -> i32 {
    let status = tokio::time::timeout(limit, child.wait())
        .await
        .unwrap_or_else(|_| panic!("the process did not end within {limit:?}"))
        .unwrap();
    status.code().unwrap_or(-1)
}
