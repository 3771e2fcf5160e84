//! A node's settings, with the seed's defaults.

use std::time::Duration;

use crawlkeeper_model::cluster::{Heartbeat, NodeName};

/// How a node joins and behaves in its group.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The group's name.
    pub group: String,
    /// This node's name (`<base><sep><index>`).
    pub name: NodeName,
    /// How many Runners the election makes (the seed's `runner`).
    pub runners: usize,
    /// How many Backup Runners are expected (the seed's `backup`).
    pub backups: usize,
    /// How long to wait for the expected members before electing anyway.
    pub formation_timeout: Duration,
    /// The heartbeat rules every node of the group uses (seed defaults:
    /// beat every 500 ms, late after 2 s, dead after 3 late checks).
    pub heartbeat: Heartbeat,
    /// How long to wait for the group lock.
    pub lock_timeout: Duration,
}

impl NodeConfig {
    /// A config with the seed's heartbeat defaults.
    pub fn new(group: &str, name: NodeName, runners: usize, backups: usize) -> Self {
        NodeConfig {
            group: group.to_owned(),
            name,
            runners,
            backups,
            formation_timeout: Duration::from_secs(10),
            heartbeat: Heartbeat::default(),
            lock_timeout: Duration::from_secs(10),
        }
    }
}
