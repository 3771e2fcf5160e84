//! `crawlkeeper node` processes, a group of them in a database of its
//! own, and what `status --json` says of them.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::lab::{Database, Lab};
use super::{Beat, DEADLINE, JOB, MAX_WORKERS};

/// A line a node wrote on stderr, stamped when this process read it.
#[derive(Debug, Clone)]
pub(super) struct Line {
    /// When it was read.
    pub(super) at: Instant,
    /// The line, colours removed.
    pub(super) text: String,
}

/// A `crawlkeeper node` process; killed on drop.
pub(super) struct Node {
    /// `crawler_<i>`.
    pub(super) name: String,
    /// The address it sends from.
    pub(super) address: IpAddr,
    /// The process.
    pub(super) child: Child,
    /// Its stderr so far.
    pub(super) lines: Arc<Mutex<Vec<Line>>>,
}

impl Node {
    /// Its process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, then reaps it.
    pub(super) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Its lines read after `from`.
    pub(super) fn lines_after(&self, from: Instant) -> Vec<Line> {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().filter(|l| l.at >= from).cloned().collect()
    }

    /// The last lines it wrote, for an error message.
    pub(super) fn tail(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let from = lines.len().saturating_sub(8);
        lines[from..]
            .iter()
            .map(|l| format!("  {}: {}", self.name, l.text))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads `stderr` line by line on a thread of its own, stamping each line.
pub(super) fn collect_lines(stderr: impl Read + Send + 'static) -> Arc<Mutex<Vec<Line>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for text in BufReader::new(stderr).lines() {
            let Ok(text) = text else { break };
            let line = Line {
                at: Instant::now(),
                text: strip_ansi(&text),
            };
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    });
    lines
}

/// `text` without terminal colour sequences.
pub(super) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A group of nodes in its own database.
pub(super) struct Group<'a> {
    /// The lab the group runs in.
    pub(super) lab: &'a Lab,
    /// The group's name (`--group`).
    pub(super) name: String,
    /// The group's database.
    pub(super) db: Database,
    /// `--runners`.
    pub(super) runners: u32,
    /// `--backups`.
    pub(super) backups: u32,
    /// `crawler_1 …`, in order.
    pub(super) nodes: Vec<Node>,
}

impl<'a> Group<'a> {
    /// Starts `runners + backups` nodes `crawler_1 …`.
    pub(super) fn start(
        lab: &'a Lab,
        what: &str,
        runners: u32,
        backups: u32,
        beat: &Beat,
    ) -> Result<Self> {
        let name = lab.unique(what);
        let db = lab.database(&name)?;
        let mut group = Self {
            lab,
            name,
            db,
            runners,
            backups,
            nodes: Vec::new(),
        };
        for i in 1..=runners + backups {
            let node = group.spawn_node(i, beat)?;
            group.nodes.push(node);
        }
        Ok(group)
    }

    /// The arguments every cluster command takes.
    pub(super) fn where_args(&self) -> Vec<String> {
        [
            "--zookeeper",
            self.lab.zk.address(),
            "--store",
            &self.db.url,
            "--group",
            &self.name,
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Starts node `crawler_<i>` with `beat`'s settings.
    pub(super) fn spawn_node(&self, i: u32, beat: &Beat) -> Result<Node> {
        let name = format!("crawler_{i}");
        let address = node_address(i);
        let mut child = Command::new(&self.lab.crawlkeeper)
            .arg("node")
            .args(self.where_args())
            .args(["--name", &name])
            .args(["--runners", &self.runners.to_string()])
            .args(["--backups", &self.backups.to_string()])
            .args(beat.node_args())
            .args(["--formation-timeout", "5s", "--max-workers", MAX_WORKERS])
            .args(["--bind-address", &address.to_string()])
            .env_remove("RUST_LOG")
            .env_remove("CRAWLKEEPER_MAX_WORKERS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting a node")?;
        let lines = collect_lines(child.stderr.take().context("no stderr")?);
        Ok(Node {
            name,
            address,
            child,
            lines,
        })
    }

    /// The node named `name`.
    pub(super) fn node(&self, name: &str) -> Result<&Node> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .with_context(|| format!("no node {name}"))
    }

    /// Runs `crawlkeeper ARGS`; fails unless it exits 0.
    pub(super) fn command(&self, args: &[String]) -> Result<String> {
        let out = Command::new(&self.lab.crawlkeeper)
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            bail!(
                "crawlkeeper {} failed: {}\n{}",
                args.first().map_or("", String::as_str),
                String::from_utf8_lossy(&out.stderr).trim(),
                self.tails()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `status --json`.
    pub(super) fn status(&self) -> Result<Value> {
        let mut args = vec!["status".to_owned()];
        args.extend(self.where_args());
        args.extend(["--json", "--window", "200ms"].map(str::to_owned));
        let out = self.command(&args)?;
        serde_json::from_str(&out).with_context(|| format!("status JSON {out:?}"))
    }

    /// Waits until `check` holds for the status.
    pub(super) fn wait_status(&self, what: &str, check: impl Fn(&Value) -> bool) -> Result<Value> {
        let end = Instant::now() + DEADLINE;
        loop {
            let s = self.status()?;
            if check(&s) {
                return Ok(s);
            }
            if Instant::now() > end {
                bail!("never {what} within {DEADLINE:?}: {s:#}\n{}", self.tails());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every node is a member and knows its role.
    pub(super) fn formed(&self) -> Result<Value> {
        let total = (self.runners + self.backups) as usize;
        let runners = self.runners as usize;
        self.wait_status("formed", |s| {
            let g = &s["group_state"];
            let count = |k: &str| g[k].as_array().map_or(0, Vec::len);
            count("current_runner") == runners
                && count("current_crawler") == total
                && with_role(s, "runner").len() == runners
                && with_role(s, "backup-runner").len() == total - runners
        })
    }

    /// Submits the job (`shards` shards, every seed) and returns its name.
    pub(super) fn submit(&self, seeds: &[String], shards: u32, wait: bool) -> Result<String> {
        let mut args = vec!["submit".to_owned(), "--quiet".to_owned()];
        args.extend(self.where_args());
        args.extend(JOB.iter().map(|s| (*s).to_owned()));
        args.extend(["--shards".to_owned(), shards.to_string()]);
        if wait {
            args.push("--wait".to_owned());
        }
        args.extend(seeds.iter().cloned());
        Ok(self.command(&args)?.trim().to_owned())
    }

    /// Kills every node, then reads the deadlocks PostgreSQL found in the
    /// group's database (the nodes' sessions flush their statistics as
    /// they end).
    pub(super) fn stop(&mut self) -> Result<i64> {
        for node in &mut self.nodes {
            node.kill();
        }
        std::thread::sleep(Duration::from_millis(300));
        self.db.deadlocks()
    }

    /// The last lines of every node.
    pub(super) fn tails(&self) -> String {
        self.nodes
            .iter()
            .map(Node::tail)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The loopback address node `crawler_<i>` sends from (apart from the
/// site's hosts, which use 127.0.0.x and, past 250 hosts, 127.0.1.x …).
pub(super) fn node_address(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 9, i as u8))
}

/// The role of `node` in a status.
pub(super) fn role(status: &Value, node: &str) -> String {
    member(status, node)
        .and_then(|m| m["state"]["role"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The member `node` of a status.
pub(super) fn member<'v>(status: &'v Value, node: &str) -> Option<&'v Value> {
    status["members"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == node)
}

/// Names of the members with `wanted` role.
pub(super) fn with_role(status: &Value, wanted: &str) -> Vec<String> {
    status["members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["state"]["role"] == wanted)
        .filter_map(|m| m["name"].as_str().map(str::to_owned))
        .collect()
}

/// The shards ZooKeeper gives `node` (`<job>/<shard>` items of its task)
/// and those whose PostgreSQL lease `node` holds.
pub(super) fn shards_of(status: &Value, node: &str) -> (BTreeSet<u32>, BTreeSet<u32>) {
    let assigned = member(status, node)
        .and_then(|m| m["shards"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str()?.rsplit_once('/')?.1.parse().ok())
        .collect();
    let prefix = format!("{node}@");
    let leased = status["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|j| j["shards"].as_array().into_iter().flatten())
        .filter(|s| s["holder"].as_str().is_some_and(|h| h.starts_with(&prefix)))
        .filter_map(|s| s["shard"].as_u64().and_then(|v| u32::try_from(v).ok()))
        .collect();
    (assigned, leased)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_sequences_are_stripped() {
        assert_eq!(
            strip_ansi("\u{1b}[2m2025\u{1b}[0m \u{1b}[33m WARN\u{1b}[0m runner dead"),
            "2025  WARN runner dead"
        );
    }
}
