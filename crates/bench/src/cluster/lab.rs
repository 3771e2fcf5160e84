//! What every run of the cluster benchmark shares: the binaries, the
//! site's runtime, ZooKeeper, PostgreSQL; the site of one run and its
//! database.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crawlkeeper_testsite::zookeeper::ZkServer;
use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::proc::binaries_dir;

/// What every run shares.
pub(super) struct Lab {
    /// The release `crawlkeeper` binary.
    pub(super) crawlkeeper: PathBuf,
    /// The runtime the sites are served on.
    pub(super) rt: tokio::runtime::Runtime,
    /// The ZooKeeper server of this benchmark run.
    pub(super) zk: ZkServer,
    /// `postgres://…` without the database.
    pub(super) server: String,
    /// Names handed out so far.
    pub(super) runs: Mutex<u32>,
}

impl Lab {
    /// Finds the binaries and starts ZooKeeper; `postgres` names a database on the server.
    pub(super) fn start(postgres: &str) -> Result<Self> {
        let crawlkeeper = binaries_dir()?.join("crawlkeeper");
        let (server, _) = postgres
            .rsplit_once('/')
            .context("--postgres is not a URL with a database")?;
        // The site's runtime: one thread, as the test site binary's default.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let zk = ZkServer::start();
        Ok(Self {
            crawlkeeper,
            rt,
            zk,
            server: server.to_owned(),
            runs: Mutex::new(0),
        })
    }

    /// A name unique in this benchmark run.
    pub(super) fn unique(&self, what: &str) -> String {
        let mut n = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        *n += 1;
        format!("ck_bench_{what}_{}_{}", std::process::id(), *n)
    }

    /// Serves `hosts` × `pages` (20 links a page) answering after `delay_ms`.
    pub(super) fn site(
        &self,
        hosts: usize,
        pages: u32,
        delay_ms: u64,
        cross_links: bool,
    ) -> Result<Site> {
        let mut config = SiteConfig::uniform(hosts, pages);
        for h in &mut config.hosts {
            h.links = 20;
            h.delay = Duration::from_millis(delay_ms);
            h.cross_links = cross_links;
        }
        let site = self.rt.block_on(TestSite::start(config))?;
        Ok(Site { site, pages })
    }

    /// A fresh database; dropped with the value.
    pub(super) fn database(&self, name: &str) -> Result<Database> {
        Database::create(&self.server, name)
    }
}

/// The test site, served on the lab's runtime.
pub(super) struct Site {
    /// The served site and its request log.
    pub(super) site: TestSite,
    /// Pages per host.
    pub(super) pages: u32,
}

impl Site {
    /// Every host's `/`.
    pub(super) fn seeds(&self) -> Vec<String> {
        (0..self.site.hosts())
            .map(|h| self.site.url(h, "/"))
            .collect()
    }

    /// Page requests a complete crawl makes (robots.txt aside).
    pub(super) fn expected_pages(&self) -> usize {
        (self.pages as usize + 1) * self.site.hosts()
    }

    /// Distinct pages requested so far, and the first and last request's
    /// arrival.
    pub(super) fn pages_requested(&self) -> (usize, Option<(Instant, Instant)>) {
        let entries = self.site.log().entries();
        let pages: BTreeSet<(usize, &str)> = entries
            .iter()
            .filter(|e| e.target != "/robots.txt")
            .map(|e| (e.host, e.target.as_str()))
            .collect();
        let first = entries.iter().map(|e| e.at).min();
        let last = entries.iter().map(|e| e.at).max();
        (pages.len(), first.zip(last))
    }

    /// Page requests from `peer` so far.
    pub(super) fn requests_from(&self, peer: IpAddr) -> usize {
        let entries = self.site.log().entries();
        entries
            .iter()
            .filter(|e| e.peer == peer && e.target != "/robots.txt")
            .count()
    }
}

/// A database of one run on the PostgreSQL server.
pub(super) struct Database {
    /// The server's `postgres` database, where databases are made.
    pub(super) admin: String,
    /// The database's name.
    pub(super) name: String,
    /// Its URL, the nodes' `--store`.
    pub(super) url: String,
}

impl Database {
    /// Drops `name` if it exists and creates it afresh.
    pub(super) fn create(server: &str, name: &str) -> Result<Self> {
        let admin = format!("{server}/postgres");
        let db = Self {
            admin,
            name: name.to_owned(),
            url: format!("{server}/{name}"),
        };
        db.execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))?;
        db.execute(&format!("CREATE DATABASE {name}"))?;
        Ok(db)
    }

    /// Deadlocks PostgreSQL found in this database so far (from its
    /// statistics, which each session flushes at its end at the latest).
    pub(super) fn deadlocks(&self) -> Result<i64> {
        let mut c = postgres::Client::connect(&self.admin, postgres::NoTls)
            .with_context(|| format!("connecting to {}", self.admin))?;
        let row = c.query_one(
            "SELECT coalesce(deadlocks, 0) FROM pg_stat_database WHERE datname = $1",
            &[&self.name],
        )?;
        Ok(row.get(0))
    }

    /// The backends connected to this database now, by process id (the
    /// nodes' and their clients' sessions; the server's shared processes,
    /// its WAL writer and checkpointer, are not among them). Read from the
    /// processes' titles (`postgres: <cluster>: <user> <database> <client>
    /// <state>`), not asked of the server: sampling it every few
    /// milliseconds would add its own queries to the server's CPU.
    pub(super) fn backends(&self) -> Result<Vec<u32>> {
        backends_of(&self.name)
    }

    /// Runs `sql` on the `postgres` database.
    pub(super) fn execute(&self, sql: &str) -> Result<()> {
        let mut c = postgres::Client::connect(&self.admin, postgres::NoTls)
            .with_context(|| format!("connecting to {}", self.admin))?;
        // One statement per call: CREATE DATABASE runs outside a transaction.
        c.batch_execute(sql)?;
        Ok(())
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = self.execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ));
    }
}

/// The backends serving database `name` now (see [`Database::backends`]).
pub(super) fn backends_of(name: &str) -> Result<Vec<u32>> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").context("reading /proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // A process gone meanwhile has no title: not a backend.
        let Ok(title) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let title = String::from_utf8_lossy(&title);
        let mut words = title.split_whitespace();
        if words.next() == Some("postgres:") && words.nth(2) == Some(name) {
            pids.push(pid);
        }
    }
    Ok(pids)
}
