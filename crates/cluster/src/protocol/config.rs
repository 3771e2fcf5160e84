//! A node's settings, with SmoothCrawler-Cluster's defaults.

use std::time::Duration;

use crawlkeeper_model::cluster::{Heartbeat, NodeName};

/// How a node joins and behaves in its group.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The group's name.
    pub group: String,
    /// This node's name (`<base><sep><index>`).
    pub name: NodeName,
    /// How many Runners the election makes (SmoothCrawler-Cluster's `runner`).
    pub runners: usize,
    /// How many Backup Runners are expected (SmoothCrawler-Cluster's `backup`).
    pub backups: usize,
    /// How long to wait for the expected members before electing anyway.
    pub formation_timeout: Duration,
    /// The heartbeat rules every node of the group uses (SmoothCrawler-Cluster's defaults:
    /// beat every 500 ms, late after 2 s, dead after 3 late checks).
    pub heartbeat: Heartbeat,
    /// How long to wait for the group lock.
    pub lock_timeout: Duration,
    /// How a Runner runs the items of its task.
    pub items: ItemMode,
    /// The coordinator session's timeout: after an outage, a Runner whose
    /// session lives is not judged by its silence until the longer of this
    /// and the heart limit has passed (its reconnection may lag ours).
    pub session_timeout: Duration,
    /// How long a graceful leave may wait for the coordinator: a node asked
    /// to stop that cannot reach it for this long (or whose session
    /// expired meanwhile) stops without leaving, as a crashed one would:
    /// its session lapses and the group judges it dead and fails its task
    /// over. It never registers again once asked to stop.
    pub leave_timeout: Duration,
}

/// How a Runner runs the items of its task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ItemMode {
    /// One at a time, in list order (SmoothCrawler-Cluster's Runner: each item a
    /// request). A Runner claims queued tasks only when it has nothing
    /// left to run; a leaving Runner first finishes its item.
    #[default]
    Sequential,
    /// Every pending item at once, each a long-running unit of work with a
    /// `task_id` of its own (a crawl job's shards). A Runner claims queued
    /// tasks even while busy, adding their items to its own task; a
    /// leaving Runner halts its items and hands them over unfinished.
    Concurrent,
}

impl NodeConfig {
    /// A config with SmoothCrawler-Cluster's heartbeat defaults.
    pub fn new(group: &str, name: NodeName, runners: usize, backups: usize) -> Self {
        NodeConfig {
            group: group.to_owned(),
            name,
            runners,
            backups,
            formation_timeout: Duration::from_secs(10),
            heartbeat: Heartbeat::default(),
            lock_timeout: Duration::from_secs(10),
            items: ItemMode::Sequential,
            session_timeout: Duration::from_secs(4),
            leave_timeout: Duration::from_secs(10),
        }
    }
}
