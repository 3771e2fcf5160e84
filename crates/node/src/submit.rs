//! A job submitted to a cluster: written to the store (its spec, seeds
//! and shard count), then each of its shards given to a Runner as a task
//! item ([`crawlkeeper_cluster::node::spread_among`], weighing each shard
//! by its seeds' hosts so that the Runners get about as many), under the
//! group lock so
//! that two submissions of one job, or a fail-over, never give a shard
//! twice. Submitting a job again places only the shards no member holds
//! or waits for (a submission cut short is finished this way).

use std::collections::BTreeSet;
use std::time::Duration;

use crawlkeeper_cluster::node::{Placement, SubmitError, spread_among};
use crawlkeeper_cluster::{CoordError, Coordinator, Layout, Lock, MetaError, metadata};
use crawlkeeper_model::Authority;
use crawlkeeper_model::cluster::{GroupState, NodeName, RunningContent, Task};
use crawlkeeper_model::shard::shard_of;
use crawlkeeper_store::{JobInfo, JobSpec, Store, StoreError};

use crate::item::ShardItem;
use crate::tasks::{complete, pending_shards, tasks_of};

/// How long a submission waits for the group lock.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// A submission refused or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitJobError {
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The coordinator refused the shards.
    #[error(transparent)]
    Submit(#[from] SubmitError),
    /// Meta-data could not be read.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The coordinator failed.
    #[error(transparent)]
    Coord(#[from] CoordError),
    /// No live Runner runs every processor the job uses.
    #[error(
        "no live Runner runs {what}: {runners}; start a node with --processor NAME=COMMAND for it"
    )]
    NoProcessor {
        /// The processors, quoted.
        what: String,
        /// What each live Runner runs.
        runners: String,
    },
    /// More shards than a task can hold ([`MAX_SHARDS`]).
    #[error("a cluster job has at most {MAX_SHARDS} shards, not {0}")]
    TooManyShards(u32),
}

/// What a submission did.
#[derive(Debug)]
pub struct Submitted {
    /// The job as the store holds it.
    pub job: JobInfo,
    /// The shards placed now, and where.
    pub placed: Vec<(u32, Placement)>,
    /// Shards some member held or waited for already.
    pub already: Vec<u32>,
}

/// The most shards a cluster job may have: every shard is an item of one
/// task, and a task must fit in a ZooKeeper node beside its results
/// ([`crawlkeeper_cluster::protocol::task::MAX_TASK_BYTES`]); items are
/// bounded ([`ShardItem::to_item`]), so this many always fit.
pub const MAX_SHARDS: u32 = 1024;

/// Writes `spec` to `store` (or finds it there) and gives every shard no
/// member has to the Runners of `group`, under the group lock. A job this
/// call wrote is removed again when its shards cannot be given, so that
/// a failed submission leaves nothing listed. Blocking store work runs on
/// the blocking pool.
pub async fn submit_job<C: Coordinator + Clone>(
    c: &C,
    group: &str,
    store: Box<dyn Store>,
    spec: JobSpec,
) -> Result<Submitted, SubmitJobError> {
    let mut store = crate::Releasing(Some(store));
    if spec.shards > MAX_SHARDS {
        return Err(SubmitJobError::TooManyShards(spec.shards));
    }
    let layout = Layout::new(group)?;
    let lock = Lock::new(c.clone(), layout.group_lock());
    let guard = lock.acquire(LOCK_WAIT).await?;
    let result = match capable_runners(c, &layout, &crate::offer::used_by(&spec.options)).await {
        Ok(capable) => write_and_place(c, group, &layout, &mut store, spec, capable).await,
        Err(e) => Err(e),
    };
    guard.release().await?;
    result
}

/// Runs `f` on the store, on the blocking pool.
async fn on_store<T: Send + 'static>(
    store: &mut crate::Releasing,
    f: impl FnOnce(&mut dyn Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let mut s = store
        .0
        .take()
        .ok_or_else(|| StoreError::Backend("the store was lost".to_owned()))?;
    let (out, s) = tokio::task::spawn_blocking(move || (f(s.as_mut()), s))
        .await
        .map_err(|e| StoreError::Backend(e.to_string()))?;
    store.0 = Some(s);
    out
}

/// The live Runners that run every processor in `needed` (`None`: any
/// Runner will do), or why none does.
async fn capable_runners(
    c: &impl Coordinator,
    layout: &Layout,
    needed: &[String],
) -> Result<Option<BTreeSet<NodeName>>, SubmitJobError> {
    if needed.is_empty() {
        return Ok(None);
    }
    let runners = metadata::read::<GroupState>(c, &layout.group_state())
        .await?
        .map(|(g, _)| g.current_runner)
        .unwrap_or_default();
    let mut capable = BTreeSet::new();
    let mut seen = Vec::new();
    for r in runners {
        if c.exists(&layout.session(&r)).await?.is_none() {
            continue;
        }
        let offer = crate::offer::read(c, layout, &r).await?;
        if crate::offer::lacking(needed, &offer).is_empty() {
            capable.insert(r);
        } else {
            let runs = match offer.processors.as_slice() {
                [] => "no processor".to_owned(),
                p => p.join(", "),
            };
            let browser = if offer.browser {
                ""
            } else {
                " and has no browser"
            };
            seen.push(format!("{r} runs {runs}{browser}"));
        }
    }
    if capable.is_empty() {
        let what = needed
            .iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(" and ");
        let runners = if seen.is_empty() {
            "no Runner is live".to_owned()
        } else {
            seen.join("; ")
        };
        return Err(SubmitJobError::NoProcessor { what, runners });
    }
    Ok(Some(capable))
}

async fn write_and_place(
    c: &impl Coordinator,
    group: &str,
    layout: &Layout,
    store: &mut crate::Releasing,
    spec: JobSpec,
    capable: Option<BTreeSet<NodeName>>,
) -> Result<Submitted, SubmitJobError> {
    let (job, created) = on_store(store, move |s| {
        let created = s.find_job(&spec.name)?.is_none();
        Ok((s.open_job(&spec)?, created))
    })
    .await?;
    match place(c, group, layout, &job, capable.as_ref()).await {
        Ok((placed, already)) => Ok(Submitted {
            job,
            placed,
            already,
        }),
        Err(e) => {
            if created {
                let name = job.name.clone();
                if let Err(d) = on_store(store, move |s| s.delete_job(&name)).await {
                    tracing::warn!(job = %job.name, error = %d, "cannot remove the job whose submission failed");
                }
            }
            Err(e)
        }
    }
}

async fn place(
    c: &impl Coordinator,
    group: &str,
    layout: &Layout,
    job: &JobInfo,
    capable: Option<&BTreeSet<NodeName>>,
) -> Result<(Vec<(u32, Placement)>, Vec<u32>), SubmitJobError> {
    let held: BTreeSet<u32> = tasks_of(c, layout)
        .await?
        .iter()
        .flat_map(|(_, task)| pending_shards(task))
        .filter(|s| s.job == job.name)
        .map(|s| s.shard)
        .collect();
    let url = job.seeds.first().cloned().unwrap_or_default();
    let missing: Vec<u32> = (0..job.shards).filter(|s| !held.contains(s)).collect();
    if missing.is_empty() || complete(job, !held.is_empty()) {
        return Ok((Vec::new(), held.into_iter().collect()));
    }
    let task = Task {
        running_content: missing
            .iter()
            .map(|&shard| {
                ShardItem {
                    job: job.name.clone(),
                    shard,
                }
                .to_item(&url)
            })
            .collect(),
        ..Task::default()
    };
    let hosts = seed_hosts_per_shard(&job.seeds, job.shards);
    let weight = |item: &RunningContent| shard_weight(&hosts, item);
    let eligible = |r: &NodeName| capable.is_none_or(|c| c.contains(r));
    let placed = spread_among(c, group, task, eligible, weight)
        .await?
        .into_iter()
        .filter_map(|(id, placement)| {
            let item: ShardItem = id.to_string().parse().ok()?;
            Some((item.shard, placement))
        })
        .collect();
    Ok((placed, held.into_iter().collect()))
}

/// How many distinct hosts of `seeds` fall in each of `shards` shards: the
/// weight [`spread_among`] balances, so that the Runners' shares of a job
/// seeded with many sites hold about as many sites each (a hash splits
/// unevenly: the cluster benchmark's 400 hosts in three shards of up to
/// 143, where a third is 134).
fn seed_hosts_per_shard(seeds: &[String], shards: u32) -> Vec<u64> {
    let hosts: BTreeSet<String> = seeds
        .iter()
        .filter_map(|s| url::Url::parse(s).ok())
        .filter_map(|u| Authority::of(&u).ok())
        .map(|a| a.host().to_owned())
        .collect();
    let mut count = vec![0u64; shards.max(1) as usize];
    for host in &hosts {
        count[shard_of(host, shards) as usize] += 1;
    }
    count
}

/// The weight of a shard's task item: its seeds' hosts (`hosts`, by
/// shard); 0 for an item that names no shard of the job.
fn shard_weight(hosts: &[u64], item: &RunningContent) -> u64 {
    item.task_id
        .to_string()
        .parse::<ShardItem>()
        .ok()
        .and_then(|i| hosts.get(i.shard as usize).copied())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawlkeeper_cluster::MemoryCoordinator;

    /// A group of live Runners `names`, each with an empty Task.
    async fn live_runners(c: &MemoryCoordinator, group: &str, names: &[&str]) -> Vec<NodeName> {
        let layout = Layout::new(group).unwrap();
        let runners: Vec<NodeName> = names.iter().map(|n| n.parse().unwrap()).collect();
        let state = GroupState {
            current_runner: runners.clone(),
            ..GroupState::default()
        };
        c.create_all(&layout.group_state()).await.unwrap();
        metadata::write(c, &layout.group_state(), &state, None)
            .await
            .unwrap();
        for r in &runners {
            c.create_all(&layout.session(r)).await.unwrap();
            c.create_all(&layout.task(r)).await.unwrap();
            let task = Task {
                owner: Some(r.clone()),
                ..Task::default()
            };
            metadata::write(c, &layout.task(r), &task, None)
                .await
                .unwrap();
        }
        runners
    }

    #[tokio::test]
    async fn a_jobs_shards_are_placed_so_each_runner_gets_about_as_many_seed_hosts() {
        let c = MemoryCoordinator::standalone(Duration::from_secs(4));
        let runners = live_runners(&c, "g", &["spider-1", "spider-2"]).await;
        // Seeds of 6 hosts in shard 0, 1 in shard 1 and 5 in shard 2:
        // round robin would give the first Runner shards 0 and 2 (11
        // hosts) and the second shard 1 (1 host).
        let mut wanted = [6, 1, 5];
        let seeds: Vec<String> = (1..=250)
            .map(|i| format!("127.0.0.{i}"))
            .filter(|h| {
                let left = &mut wanted[shard_of(h, 3) as usize];
                let take = *left > 0;
                *left -= u32::from(take);
                take
            })
            .map(|h| format!("http://{h}/"))
            .collect();
        assert_eq!(wanted, [0, 0, 0], "enough hosts in each shard");
        let hosts = seed_hosts_per_shard(&seeds, 3);
        // (A SQLite store keeps jobs of one shard: the job is the store's
        // answer as `place` gets it.)
        let job = JobInfo {
            id: crawlkeeper_store::JobId(1),
            name: "0123456789ab".into(),
            created_at: String::new(),
            seeds,
            options: "{}".into(),
            shards: 3,
            counts: Default::default(),
            stops: 0,
        };
        let layout = Layout::new("g").unwrap();
        let (placed, already) = place(&c, "g", &layout, &job, None).await.unwrap();
        assert_eq!((placed.len(), already.len()), (3, 0));
        let mut shares = Vec::new();
        for r in &runners {
            let (task, _) = metadata::read::<Task>(&c, &layout.task(r))
                .await
                .unwrap()
                .unwrap();
            shares.push(
                task.running_content
                    .iter()
                    .map(|item| shard_weight(&hosts, item))
                    .sum::<u64>(),
            );
        }
        assert_eq!(shares, [6, 6], "each Runner's seed hosts");
    }

    #[test]
    fn a_shard_item_weighs_its_shards_hosts() {
        let hosts = [4, 0, 9];
        let item = |shard| {
            ShardItem {
                job: "0123456789ab".into(),
                shard,
            }
            .to_item("http://127.0.0.1/")
        };
        assert_eq!(shard_weight(&hosts, &item(0)), 4);
        assert_eq!(shard_weight(&hosts, &item(2)), 9);
        assert_eq!(shard_weight(&hosts, &item(7)), 0, "no such shard");
    }

    #[test]
    fn a_shard_weighs_its_seeds_distinct_hosts() {
        let seeds: Vec<String> = (1..=40)
            .flat_map(|i| {
                [
                    format!("http://127.0.0.{i}/"),
                    format!("https://127.0.0.{i}:8443/a"),
                ]
            })
            .chain(["not a url".to_owned(), "mailto:x@y".to_owned()])
            .collect();
        let count = seed_hosts_per_shard(&seeds, 3);
        assert_eq!(count.iter().sum::<u64>(), 40, "one per host: {count:?}");
        for (shard, n) in count.iter().enumerate() {
            let expect = (1..=40)
                .filter(|i| shard_of(&format!("127.0.0.{i}"), 3) == shard as u32)
                .count() as u64;
            assert_eq!(*n, expect, "shard {shard}");
        }
        assert_eq!(seed_hosts_per_shard(&[], 2), vec![0, 0]);
    }

    fn spec() -> JobSpec {
        JobSpec {
            name: "0123456789ab".into(),
            seeds: vec!["http://127.0.0.1/".into()],
            options: "{}".into(),
            shards: 1,
        }
    }

    fn state_file(name: &str) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("crawlkeeper-node-{name}-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        path
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_submission_failing_after_the_store_write_leaves_no_job_listed() {
        let path = state_file("rollback");
        let open = || crawlkeeper_store::open(path.to_str().unwrap()).unwrap();
        // No group has formed: placing the shards fails after the job was
        // written.
        let c = MemoryCoordinator::standalone(Duration::from_secs(4));
        let err = submit_job(&c, "g", open(), spec()).await.unwrap_err();
        assert!(
            matches!(err, SubmitJobError::Submit(SubmitError::NoGroup(_))),
            "{err}"
        );
        assert!(open().jobs().unwrap().is_empty(), "the job was removed");
        // A job submitted before is kept when a later submission fails.
        let mut store = open();
        store.open_job(&spec()).unwrap();
        drop(store);
        submit_job(&c, "g", open(), spec()).await.unwrap_err();
        assert_eq!(open().jobs().unwrap().len(), 1, "the earlier job stays");
        // Too many shards: refused before anything is written.
        let big = JobSpec {
            shards: MAX_SHARDS + 1,
            name: "ba9876543210".into(),
            ..spec()
        };
        let err = submit_job(&c, "g", open(), big).await.unwrap_err();
        assert!(err.to_string().contains("at most 1024 shards"), "{err}");
        assert_eq!(open().jobs().unwrap().len(), 1);
        let _ = std::fs::remove_file(&path);
    }
}
