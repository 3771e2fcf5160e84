//! `GroupState`: who is in a group and in which role (SmoothCrawler-Cluster's path
//! `group/<group>/state`). Written only under the group's lock.

use serde::{Deserialize, Serialize};

use super::name::NodeName;
use super::wire;

/// The membership of one group, as SmoothCrawler-Cluster writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupState {
    /// Members, Runners and Backup Runners together.
    pub total_crawler: u32,
    /// How many members run tasks.
    pub total_runner: u32,
    /// How many members stand by.
    pub total_backup: u32,
    /// The index of the primary Backup Runner (the one that watches the
    /// Runners), written as a string like SmoothCrawler-Cluster (`"3"`).
    #[serde(with = "wire::u32_text")]
    pub standby_id: u32,
    /// Every live member.
    pub current_crawler: Vec<NodeName>,
    /// Live members in the Runner role.
    pub current_runner: Vec<NodeName>,
    /// Live members in the Backup Runner role.
    pub current_backup: Vec<NodeName>,
    /// Members that died.
    pub fail_crawler: Vec<NodeName>,
    /// Runners that died.
    pub fail_runner: Vec<NodeName>,
    /// Backup Runners that died.
    pub fail_backup: Vec<NodeName>,
}

impl GroupState {
    /// Whether `name` is a live member.
    pub fn is_member(&self, name: &NodeName) -> bool {
        self.current_crawler.contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of SmoothCrawler-Cluster's GroupState documentation.
    const SEED_EXAMPLE: &str = r#"{
        "total_crawler": 3,
        "total_runner": 2,
        "total_backup": 1,
        "current_crawler": ["spider_1", "spider_2", "spider_3"],
        "current_runner": ["spider_1", "spider_2"],
        "current_backup": ["spider_3"],
        "standby_id": "3",
        "fail_crawler": [],
        "fail_runner": [],
        "fail_backup": []
    }"#;

    #[test]
    fn round_trips_smoothcrawler_clusters_example() {
        let g: GroupState = serde_json::from_str(SEED_EXAMPLE).unwrap();
        assert_eq!((g.total_crawler, g.total_runner, g.total_backup), (3, 2, 1));
        assert_eq!(g.standby_id, 3);
        assert_eq!(g.current_runner[1].to_string(), "spider_2");
        assert!(g.is_member(&"spider_3".parse().unwrap()));
        let written = serde_json::to_value(&g).unwrap();
        assert_eq!(
            written,
            serde_json::from_str::<serde_json::Value>(SEED_EXAMPLE).unwrap()
        );
        assert_eq!(written["standby_id"], "3");
    }

    #[test]
    fn bad_values_are_clear_errors() {
        let bad = SEED_EXAMPLE.replace(r#""standby_id": "3""#, r#""standby_id": "three""#);
        let err = serde_json::from_str::<GroupState>(&bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("must be an integer"), "{err}");
        let bad = SEED_EXAMPLE.replace("\"spider_3\"]", "\"spider\"]");
        let err = serde_json::from_str::<GroupState>(&bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid node name \"spider\""), "{err}");
    }
}
