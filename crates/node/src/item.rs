//! A shard of a job as an item of the seed's Task: `task_id` is
//! `<job>/<shard>`, `url` the job's first seed (for people reading the
//! task), `parameters` name the job and the shard. The crawl's progress is
//! in the store, never in the item.

use std::collections::BTreeMap;

use crawlkeeper_model::cluster::{RunningContent, TaskId};

/// One shard of one job.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardItem {
    /// The job's name in the store.
    pub job: String,
    /// The shard.
    pub shard: u32,
}

/// An item that is not a shard of a job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task item {0} is not a shard of a crawl job (parameters job and shard expected)")]
pub struct NotAShard(pub String);

impl ShardItem {
    /// The item that stands for this shard; `url` is shown to people.
    pub fn to_item(&self, url: &str) -> RunningContent {
        let parameters = BTreeMap::from([
            ("job".to_owned(), self.job.clone()),
            ("shard".to_owned(), self.shard.to_string()),
        ]);
        RunningContent {
            parameters: Some(parameters),
            ..RunningContent::get(self.task_id(), url)
        }
    }

    /// `<job>/<shard>`: the item's `task_id`.
    pub fn task_id(&self) -> TaskId {
        TaskId::Text(format!("{}/{}", self.job, self.shard))
    }

    /// The shard an item stands for.
    pub fn of(item: &RunningContent) -> Result<Self, NotAShard> {
        let bad = || NotAShard(item.task_id.to_string());
        let p = item.parameters.as_ref().ok_or_else(bad)?;
        let job = p.get("job").filter(|j| !j.is_empty()).ok_or_else(bad)?;
        let shard = p
            .get("shard")
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        Ok(ShardItem {
            job: job.clone(),
            shard,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_round_trips_through_its_item() {
        let s = ShardItem {
            job: "0123456789ab".into(),
            shard: 3,
        };
        let item = s.to_item("http://127.0.0.1/");
        assert_eq!(item.task_id.to_string(), "0123456789ab/3");
        assert_eq!(item.method, "GET");
        assert_eq!(ShardItem::of(&item), Ok(s));
        let plain = RunningContent::get(TaskId::Int(1), "http://127.0.0.1/");
        assert!(ShardItem::of(&plain).is_err());
    }
}
