//! `NodeState`: one node's group and role (SmoothCrawler-Cluster's path `node/<name>/state`).

use serde::{Deserialize, Serialize};

/// A node's role, with SmoothCrawler-Cluster's wire strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CrawlerRole {
    /// Registered, before the election.
    #[serde(rename = "initial")]
    Initial,
    /// Runs tasks.
    #[serde(rename = "runner")]
    Runner,
    /// Stands by to take over a dead Runner's task.
    #[serde(rename = "backup-runner")]
    BackupRunner,
    /// A Runner found dead.
    #[serde(rename = "dead-runner")]
    DeadRunner,
    /// A Backup Runner found dead.
    #[serde(rename = "dead-backup-runner")]
    DeadBackupRunner,
}

impl CrawlerRole {
    /// The wire string (`backup-runner`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            CrawlerRole::Initial => "initial",
            CrawlerRole::Runner => "runner",
            CrawlerRole::BackupRunner => "backup-runner",
            CrawlerRole::DeadRunner => "dead-runner",
            CrawlerRole::DeadBackupRunner => "dead-backup-runner",
        }
    }
}

impl std::fmt::Display for CrawlerRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node's state in its group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    /// The group's name.
    pub group: String,
    /// The node's role.
    pub role: CrawlerRole,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_smoothcrawler_clusters_example_and_every_role() {
        let example = r#"{"role": "runner", "group": "sc-crawler-cluster"}"#;
        let n: NodeState = serde_json::from_str(example).unwrap();
        assert_eq!(
            n,
            NodeState {
                group: "sc-crawler-cluster".into(),
                role: CrawlerRole::Runner
            }
        );
        assert_eq!(
            serde_json::to_value(&n).unwrap(),
            serde_json::from_str::<serde_json::Value>(example).unwrap()
        );
        for role in [
            CrawlerRole::Initial,
            CrawlerRole::Runner,
            CrawlerRole::BackupRunner,
            CrawlerRole::DeadRunner,
            CrawlerRole::DeadBackupRunner,
        ] {
            let text = serde_json::to_string(&role).unwrap();
            assert_eq!(text, format!("\"{role}\""));
            assert_eq!(serde_json::from_str::<CrawlerRole>(&text).unwrap(), role);
        }
    }

    #[test]
    fn an_unknown_role_is_a_clear_error() {
        let err = serde_json::from_str::<NodeState>(r#"{"role": "leader", "group": "g"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown variant `leader`"), "{err}");
    }
}
