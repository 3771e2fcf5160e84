//! A job crawled by several `crawlkeeper crawl --shards N --shard I`
//! processes sharing a PostgreSQL database of the test's own, judged from
//! the test site's request log: each process has its own user agent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crawlkeeper_model::shard_of;
use crawlkeeper_testsite::{SiteConfig, TestSite};
use tokio::process::{Child, Command};

use super::pg::{admin, postgres_url};
use super::writers::Writers;

/// The longest any wait of these tests may take.
pub const DEADLINE: Duration = Duration::from_secs(180);

/// A job of `shards` shards on a site whose hosts link to each other, in a
/// database of its own.
pub struct Sharded {
    pub site: TestSite,
    pub shards: u32,
    pub url: String,
    pub dir: PathBuf,
    pages: u32,
    db: String,
}

impl Sharded {
    /// `hosts` hosts of `pages` pages, each page linking to the same page
    /// of the next host, answering after `delay_ms`.
    pub async fn start(name: &str, shards: u32, hosts: usize, pages: u32, delay_ms: u64) -> Self {
        let mut config = SiteConfig::uniform(hosts, pages);
        for h in &mut config.hosts {
            h.cross_links = true;
            h.delay = Duration::from_millis(delay_ms);
        }
        let site = TestSite::start(config).await.unwrap();
        let db = format!("ck_{name}_{}", std::process::id());
        admin(format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
        admin(format!("CREATE DATABASE {db}")).await;
        let dir =
            std::env::temp_dir().join(format!("crawlkeeper-shards-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self {
            site,
            shards,
            url: postgres_url(&db),
            dir,
            pages,
            db,
        }
    }

    /// The command crawling `shard`, as user agent `agent` (its output
    /// goes to `<agent>.jsonl`), only host 0 given as a seed.
    pub fn process(&self, shard: u32, agent: &str, extra: &[&str]) -> Command {
        self.process_of(&shard.to_string(), agent, extra)
    }

    /// The command crawling the shards `shards` (`0,2`) in one process.
    pub fn process_of(&self, shards: &str, agent: &str, extra: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"));
        c.current_dir(&self.dir)
            .args(["crawl", "--follow", "--scope", "any", "--depth", "1000"])
            .args(["--per-host", "1", "--store", &self.url])
            .args(["--shards", &self.shards.to_string(), "--shard", shards])
            .args(["--user-agent", agent, "--out", &format!("{agent}.jsonl")])
            .args(extra)
            .arg(self.site.url(0, "/"))
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    /// The host (IP) of site host `i`.
    pub fn host(&self, i: usize) -> String {
        url::Url::parse(self.site.origin(i))
            .unwrap()
            .host_str()
            .unwrap()
            .to_owned()
    }

    /// The shard of site host `i`.
    pub fn shard_of(&self, i: usize) -> u32 {
        shard_of(&self.host(i), self.shards)
    }

    /// Every page a complete crawl requests, by host: `/` on host 0 and
    /// every page on every host (robots.txt aside).
    pub fn expected(&self) -> BTreeMap<usize, BTreeSet<String>> {
        (0..self.site.hosts())
            .map(|h| {
                let pages = 0..self.site_pages();
                let mut set: BTreeSet<String> = pages.map(|i| format!("/p/{i}")).collect();
                if h == 0 {
                    set.insert("/".to_owned());
                }
                (h, set)
            })
            .collect()
    }

    fn site_pages(&self) -> u32 {
        self.pages
    }

    /// Page requests (robots.txt aside): (host, target) → user agents, in
    /// the order they arrived.
    pub fn requests(&self) -> BTreeMap<(usize, String), Vec<String>> {
        let mut m: BTreeMap<(usize, String), Vec<String>> = BTreeMap::new();
        for e in self.site.log().entries() {
            if e.target != "/robots.txt" {
                m.entry((e.host, e.target)).or_default().push(e.user_agent);
            }
        }
        m
    }

    /// Requests that arrived from `agent`.
    pub fn requests_from(&self, agent: &str) -> usize {
        self.site
            .log()
            .entries()
            .iter()
            .filter(|e| e.user_agent == agent)
            .count()
    }

    /// Waits until `agent` has made `n` requests.
    pub async fn wait_for_agent(&self, agent: &str, n: usize) {
        let log = self.site.log().clone();
        tokio::time::timeout(DEADLINE, async {
            let mut seen = log.len();
            while self.requests_from(agent) < n {
                seen += 1;
                log.wait_for(seen).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{agent} made fewer than {n} requests within {DEADLINE:?}"));
    }

    /// Waits until `agent` has made `n` requests and every host of
    /// `hosts` is answering one: with `--per-host 1` its process can start
    /// nothing until a response arrives (no request is on its way out).
    pub async fn wait_until_all_busy(&self, agent: &str, n: usize, hosts: &[usize]) {
        let log = self.site.log().clone();
        tokio::time::timeout(DEADLINE, async {
            let mut seen = log.len();
            while self.requests_from(agent) < n || hosts.iter().any(|&h| log.in_flight(h) == 0) {
                seen += 1;
                log.wait_for(seen).await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!("{agent} never kept {hosts:?} busy at once within {DEADLINE:?}")
        });
    }

    /// Every URL of `crawlkeeper results`, with how many records each has.
    pub async fn results(&self) -> BTreeMap<String, usize> {
        let out = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
            .args(["results", "--store", &self.url])
            .output()
            .await
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut m = BTreeMap::new();
        for r in super::records(&String::from_utf8(out.stdout).unwrap()) {
            *m.entry(r.url).or_default() += 1;
        }
        m
    }

    /// Checks who stored each result (see [`Writers::check`]), and returns
    /// the writers for checks of a test's own.
    pub async fn check_writers(&self) -> Writers {
        let writers = Writers::read(&self.url).await;
        writers.check();
        writers
    }

    /// The URLs of a complete crawl, as records name them.
    pub fn expected_urls(&self) -> BTreeSet<String> {
        self.expected()
            .into_iter()
            .flat_map(|(h, paths)| {
                let origin = self.site.origin(h).to_owned();
                paths.into_iter().map(move |p| format!("{origin}{p}"))
            })
            .collect()
    }

    /// Checks the log of a complete crawl: every page requested, each by
    /// its host's shard holder only (`holders[shard]` lists the agents
    /// that held it), at most `repeats` requests more than one per page in
    /// all, and never two at once on a host.
    pub fn check_log(&self, holders: &[&[&str]], repeats: usize) {
        self.check_log_allowing(holders, repeats, &[]);
    }

    /// [`Self::check_log`], requests for `allowed` paths on any host
    /// aside (a browser's own `/favicon.ico`).
    pub fn check_log_allowing(&self, holders: &[&[&str]], repeats: usize, allowed: &[&str]) {
        let requests = self.requests();
        let mut extra = 0;
        for (h, paths) in self.expected() {
            let allowed = holders[self.shard_of(h) as usize];
            for p in &paths {
                let agents = requests
                    .get(&(h, p.clone()))
                    .unwrap_or_else(|| panic!("host {h} {p} was never requested"));
                assert!(
                    agents.iter().all(|a| allowed.contains(&a.as_str())),
                    "host {h} (shard {}) {p} requested by {agents:?}, not only by {allowed:?}",
                    self.shard_of(h)
                );
                extra += agents.len() - 1;
            }
            assert!(
                self.site.log().max_in_flight(h) <= 1,
                "host {h} had {} requests at once with --per-host 1",
                self.site.log().max_in_flight(h)
            );
        }
        let unexpected: Vec<_> = requests
            .keys()
            .filter(|(h, p)| !self.expected()[h].contains(p) && !allowed.contains(&p.as_str()))
            .collect();
        assert!(
            unexpected.is_empty(),
            "requests outside the site: {unexpected:?}"
        );
        assert!(
            extra <= repeats,
            "{extra} repeated requests, more than {repeats}"
        );
    }
}

impl Drop for Sharded {
    fn drop(&mut self) {
        let db = self.db.clone();
        // Best effort, on a thread of its own (the test's runtime may be gone).
        let _ = std::thread::spawn(move || {
            if let Ok(mut c) = postgres::Client::connect(&postgres_url("postgres"), postgres::NoTls)
            {
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
            }
        })
        .join();
    }
}

/// Waits for `child` to exit within the deadline: its code and stderr.
pub async fn exit_of(child: Child) -> (i32, String) {
    let out = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("the process ends within the deadline")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
