//! A shard of a job as an item of SmoothCrawler-Cluster's Task: `task_id` is
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

impl std::fmt::Display for ShardItem {
    /// `<job>/<shard>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.job, self.shard)
    }
}

impl std::str::FromStr for ShardItem {
    type Err = NotAShard;

    /// Reads `<job>/<shard>` (a job's name never holds a `/`).
    fn from_str(s: &str) -> Result<Self, NotAShard> {
        let bad = || NotAShard(s.to_owned());
        let (job, shard) = s.rsplit_once('/').ok_or_else(bad)?;
        if job.is_empty() || job.contains('/') {
            return Err(bad());
        }
        Ok(Self {
            job: job.to_owned(),
            shard: shard.parse().map_err(|_| bad())?,
        })
    }
}

/// An item that is not a shard of a job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task item {0} is not a shard of a crawl job (parameters job and shard expected)")]
pub struct NotAShard(pub String);

/// The longest `url` an item carries: a longer seed is shown by its
/// origin, so that [`crate::submit::MAX_SHARDS`] items always fit in a task.
pub const MAX_ITEM_URL: usize = 96;

/// What an item shows of `seed`: the seed, or its origin when the seed is
/// longer than [`MAX_ITEM_URL`], or a stand-in when even that is.
fn shown_url(seed: &str) -> String {
    if seed.len() <= MAX_ITEM_URL {
        return seed.to_owned();
    }
    let origin = url::Url::parse(seed)
        .ok()
        .and_then(|u| Some(format!("{}://{}/", u.scheme(), u.host_str()?)))
        .filter(|o| o.len() <= MAX_ITEM_URL);
    origin.unwrap_or_else(|| "http://seed-too-long.invalid/".to_owned())
}

impl ShardItem {
    /// The item that stands for this shard; `url` (the job's first seed)
    /// is shown to people, cut to its origin when long.
    pub fn to_item(&self, url: &str) -> RunningContent {
        let url = shown_url(url);
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
        TaskId::Text(self.to_string())
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
        assert_eq!(ShardItem::of(&item), Ok(s.clone()));
        let plain = RunningContent::get(TaskId::Int(1), "http://127.0.0.1/");
        assert!(ShardItem::of(&plain).is_err());
        assert_eq!(item.task_id.to_string().parse(), Ok(s));
        for bad in ["", "/3", "job", "job/", "job/x", "a/b/3", "job/-1"] {
            assert!(bad.parse::<ShardItem>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_most_shards_fit_in_a_task_whatever_the_seed() {
        use crawlkeeper_cluster::protocol::task::{MAX_TASK_BYTES, accept};
        use crawlkeeper_model::cluster::Task;
        let long_path = format!("http://a.test/{}", "p".repeat(4000));
        let long_host = format!("https://{}.test:8443/x", "h".repeat(200));
        for seed in [
            "http://127.0.0.1/".to_owned(),
            format!("http://a.test/{}", "p".repeat(MAX_ITEM_URL - 14)),
            long_path,
            long_host,
        ] {
            let task = Task {
                running_content: (0..crate::submit::MAX_SHARDS)
                    .map(|shard| {
                        ShardItem {
                            job: "0123456789ab".into(),
                            shard,
                        }
                        .to_item(&seed)
                    })
                    .collect(),
                ..Task::default()
            };
            let size = serde_json::to_vec(&task).unwrap().len();
            assert!(size <= MAX_TASK_BYTES, "{size} bytes");
            let task = accept(task).expect("a valid task");
            assert!(task.running_content[0].url.len() <= MAX_ITEM_URL);
        }
        let item = ShardItem {
            job: "j".into(),
            shard: 0,
        };
        let long = format!("http://a.test/{}", "p".repeat(200));
        assert_eq!(item.to_item(&long).url, "http://a.test/");
    }
}
