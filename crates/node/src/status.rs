//! What the cluster looks like: the GroupState, every member's NodeState,
//! Heartbeat and Task (SmoothCrawler-Cluster's objects, by their field names), and each
//! job's shards as the store holds them. Hearts and rates are judged by
//! progress between two looks `window` apart on this process's own clock:
//! a heartbeat whose version moved is beating, whatever its time stamp
//! says; clocks are never compared.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crawlkeeper_cluster::{Coordinator, Layout, MetaError, metadata};
use crawlkeeper_model::cluster::{GroupState, Heartbeat, NodeName, NodeState, Task};
use crawlkeeper_store::{JobInfo, ShardInfo, Store, StoreError};
use serde::Serialize;

use crate::continuing::Continuing;
use crate::tasks::{TaskAt, complete, members, pending_shards, tasks_of};

/// How a member's heart looked between two looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pulse {
    /// Its heartbeat was refreshed meanwhile.
    Beating,
    /// Its session is there, its heartbeat was not refreshed.
    Silent,
    /// No session: the process is gone (or left).
    Gone,
}

/// One member.
#[derive(Debug, Clone, Serialize)]
pub struct MemberStatus {
    /// Its name.
    pub name: String,
    /// Its NodeState (group and role).
    pub state: Option<NodeState>,
    /// Its Heartbeat as last written.
    pub heartbeat: Option<Heartbeat>,
    /// Its heart, judged by progress.
    pub pulse: Pulse,
    /// Its Task.
    pub task: Option<Task>,
    /// The shards its task holds unfinished, as `<job>/<shard>`.
    pub shards: Vec<String>,
    /// The processors it runs, by name (what jobs may `--use` on it).
    pub processors: Vec<String>,
    /// It renders pages (`--render` jobs) with a browser of its own.
    pub browser: bool,
}

/// One shard of a job.
#[derive(Debug, Clone, Serialize)]
pub struct ShardStatus {
    /// The shard.
    pub shard: u32,
    /// Its lease holder in the store (`<node>@<host>:<pid>`).
    pub holder: Option<String>,
    /// Whether the holder's process is alive.
    pub live: bool,
    /// How many times the lease was taken.
    pub generation: u64,
    /// Who the coordinator says holds it (a member, or `queued`).
    pub assigned: Option<String>,
    /// URLs of its hosts admitted, finished, pending, failed.
    pub seen: u64,
    /// Finished.
    pub done: u64,
    /// Admitted and not finished.
    pub pending: u64,
    /// Finished with an error.
    pub errors: u64,
    /// Pages finished per second between the two looks.
    pub pages_per_second: f64,
}

/// One job.
#[derive(Debug, Clone, Serialize)]
pub struct JobStatus {
    /// Its name.
    pub name: String,
    /// Its seeds.
    pub seeds: Vec<String>,
    /// When it was created.
    pub created_at: String,
    /// Whether it is over: every URL finished, or a continuous job
    /// stopped and its Runners ended.
    pub complete: bool,
    /// A continuous job's revisits (`None`: a one-shot job).
    pub continuous: Option<Continuing>,
    /// Its shards.
    pub shards: Vec<ShardStatus>,
    /// Pages finished per second between the two looks.
    pub pages_per_second: f64,
}

/// The whole cluster.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterStatus {
    /// The group's name.
    pub group: String,
    /// Its GroupState, once formed.
    pub group_state: Option<GroupState>,
    /// Every member that ever registered.
    pub members: Vec<MemberStatus>,
    /// Tasks waiting in the queue, with the shards they hold.
    pub queued: Vec<String>,
    /// Jobs in the store.
    pub jobs: Vec<JobStatus>,
    /// Disagreements worth a look.
    pub warnings: Vec<String>,
}

/// A status failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatusError {
    /// The coordinator failed or holds what does not decode.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

/// A member as seen once: name, NodeState, Heartbeat with its version,
/// whether its session is there.
type MemberLook = (
    NodeName,
    Option<NodeState>,
    Option<(Heartbeat, crawlkeeper_cluster::Version)>,
    bool,
);

/// One look at the coordinator.
struct CoordLook {
    group: Option<GroupState>,
    members: Vec<MemberLook>,
    tasks: Vec<(TaskAt, Task)>,
    offers: BTreeMap<NodeName, crate::offer::Offer>,
}

async fn look_coord(c: &impl Coordinator, layout: &Layout) -> Result<CoordLook, MetaError> {
    let group = metadata::read::<GroupState>(c, &layout.group_state())
        .await?
        .map(|(g, _)| g);
    let mut seen = Vec::new();
    let mut offers = BTreeMap::new();
    for name in members(c, layout).await? {
        offers.insert(name.clone(), crate::offer::read(c, layout, &name).await?);
        let state = metadata::read::<NodeState>(c, &layout.node_state(&name))
            .await?
            .map(|(s, _)| s);
        let beat = metadata::read::<Heartbeat>(c, &layout.heartbeat(&name)).await?;
        let session = c
            .exists(&layout.session(&name))
            .await
            .map_err(MetaError::from)?
            .is_some();
        seen.push((name, state, beat, session));
    }
    let tasks = tasks_of(c, layout).await?;
    Ok(CoordLook {
        group,
        members: seen,
        tasks,
        offers,
    })
}

/// Each job, its shards and (a continuous job) its revisits.
type StoreLook = Vec<(JobInfo, Vec<ShardInfo>, Option<Continuing>)>;

fn look_store(store: &mut dyn Store) -> Result<StoreLook, StoreError> {
    let mut out = Vec::new();
    for job in store.jobs()? {
        let shards = store.shards(&job)?;
        let continuous = crate::continuing::read(store, &job)?;
        out.push((job, shards, continuous));
    }
    Ok(out)
}

/// Looks at the cluster twice, `window` apart, and says what it saw.
pub async fn status(
    c: &impl Coordinator,
    group: &str,
    store: Box<dyn Store>,
    window: Duration,
) -> Result<ClusterStatus, StatusError> {
    // Released off the async threads however this returns (a bad group
    // name included: dropping a PostgreSQL client here would panic).
    let mut store = crate::Releasing(Some(store));
    let layout = Layout::new(group).map_err(MetaError::from)?;
    let first_store = store_look(&mut store).await?;
    let first = look_coord(c, &layout).await?;
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let second = look_coord(c, &layout).await?;
    let last_store = store_look(&mut store).await?;
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    let (assigned, queued) = assignments(&second);
    let members = member_statuses(&first, &second);
    let seen = Seen {
        second: &second,
        assigned: &assigned,
        done_before: done_counts(&first_store),
        secs,
    };
    let mut warnings = Vec::new();
    let mut jobs: Vec<JobStatus> = last_store
        .into_iter()
        .map(|(job, shards, continuous)| seen.job(job, shards, continuous, &mut warnings))
        .collect();
    order_jobs(&mut jobs);
    Ok(ClusterStatus {
        group: group.to_owned(),
        group_state: second.group,
        members,
        queued,
        jobs,
        warnings,
    })
}

/// Who each unfinished shard is given to in the coordinator (a node's
/// name, or `queued`), and the queued ones as `job/shard`.
fn assignments(look: &CoordLook) -> (BTreeMap<(String, u32), String>, Vec<String>) {
    let mut assigned = BTreeMap::new();
    let mut queued = Vec::new();
    for (holder, task) in &look.tasks {
        for s in pending_shards(task) {
            let who = match holder {
                TaskAt::Node(n) => n.to_string(),
                TaskAt::Queued(_) => {
                    queued.push(format!("{}/{}", s.job, s.shard));
                    "queued".to_owned()
                }
            };
            assigned.insert((s.job, s.shard), who);
        }
    }
    (assigned, queued)
}

/// The members as the second look saw them, each one's pulse judged by
/// whether its heartbeat moved since the first.
fn member_statuses(first: &CoordLook, second: &CoordLook) -> Vec<MemberStatus> {
    let before: BTreeMap<&NodeName, crawlkeeper_cluster::Version> = first
        .members
        .iter()
        .filter_map(|(n, _, b, _)| Some((n, b.as_ref()?.1)))
        .collect();
    second
        .members
        .iter()
        .map(|(name, state, beat, session)| {
            let moved = beat
                .as_ref()
                .zip(before.get(name))
                .is_some_and(|((_, v), b)| v != b);
            let pulse = match (moved, session) {
                (true, _) => Pulse::Beating,
                (false, true) => Pulse::Silent,
                (false, false) => Pulse::Gone,
            };
            let task = second.tasks.iter().find_map(|(h, t)| match h {
                TaskAt::Node(n) if n == name => Some(t.clone()),
                _ => None,
            });
            let shards = task
                .as_ref()
                .map(|t| {
                    pending_shards(t)
                        .into_iter()
                        .map(|s| format!("{}/{}", s.job, s.shard))
                        .collect()
                })
                .unwrap_or_default();
            MemberStatus {
                name: name.to_string(),
                state: state.clone(),
                heartbeat: beat.as_ref().map(|(b, _)| b.clone()),
                pulse,
                task,
                shards,
                processors: second
                    .offers
                    .get(name)
                    .map(|o| o.processors.clone())
                    .unwrap_or_default(),
                browser: second.offers.get(name).is_some_and(|o| o.browser),
            }
        })
        .collect()
}

/// Each shard's pages done at the first look.
fn done_counts(look: &StoreLook) -> BTreeMap<(String, u32), u64> {
    look.iter()
        .flat_map(|(j, shards, _)| {
            shards
                .iter()
                .map(move |s| ((j.name.clone(), s.shard), s.counts.done))
        })
        .collect()
}

/// What the two looks saw, for judging each job and shard.
struct Seen<'a> {
    /// The coordinator at the second look.
    second: &'a CoordLook,
    /// Who each unfinished shard is given to.
    assigned: &'a BTreeMap<(String, u32), String>,
    /// Each shard's pages done at the first look.
    done_before: BTreeMap<(String, u32), u64>,
    /// Seconds between the looks.
    secs: f64,
}

impl Seen<'_> {
    /// A job's status, its shards' rates over the window, and a warning
    /// for each shard the coordinator and the store disagree on or that
    /// waits for a processor its node does not run.
    fn job(
        &self,
        job: JobInfo,
        shards: Vec<ShardInfo>,
        continuous: Option<Continuing>,
        warnings: &mut Vec<String>,
    ) -> JobStatus {
        let pending = self.assigned.keys().any(|(name, _)| *name == job.name);
        let is_complete = complete(&job, pending);
        let needed = crate::offer::used_by(&job.options);
        let shards: Vec<ShardStatus> = shards
            .into_iter()
            .map(|s| {
                let key = (job.name.clone(), s.shard);
                let was = self.done_before.get(&key).copied().unwrap_or(s.counts.done);
                let owner = self.assigned.get(&key).cloned();
                if !is_complete {
                    self.warn(&job.name, &s, owner.as_deref(), &needed, warnings);
                }
                ShardStatus {
                    shard: s.shard,
                    holder: s.holder,
                    live: s.live,
                    generation: s.generation,
                    assigned: owner,
                    seen: s.counts.seen,
                    done: s.counts.done,
                    pending: s.counts.pending(),
                    errors: s.counts.errors,
                    pages_per_second: s.counts.done.saturating_sub(was) as f64 / self.secs,
                }
            })
            .collect();
        let pages_per_second = shards.iter().map(|s| s.pages_per_second).sum();
        JobStatus {
            name: job.name,
            seeds: job.seeds,
            created_at: job.created_at,
            complete: is_complete,
            continuous,
            shards,
            pages_per_second,
        }
    }

    /// The warnings of an unfinished shard given to `owner`.
    fn warn(
        &self,
        job: &str,
        s: &ShardInfo,
        owner: Option<&str>,
        needed: &[String],
        warnings: &mut Vec<String>,
    ) {
        let Some(owner) = owner.filter(|o| *o != "queued") else {
            return;
        };
        let lease_node = s.holder.as_deref().map(|h| {
            crawlkeeper_store::Holder::from(h)
                .name()
                .unwrap_or(h)
                .to_owned()
        });
        if let Some(node) = &lease_node
            && owner != node
        {
            warnings.push(format!(
                "job {job} shard {}: the coordinator gives it to {owner}, the store's lease is {node}'s",
                s.shard
            ));
        }
        if let Ok(node) = owner.parse::<NodeName>()
            && let Some(offer) = self.second.offers.get(&node)
        {
            let lacking = crate::offer::lacking(needed, offer);
            if !lacking.is_empty() {
                warnings.push(format!(
                    "job {job} shard {} waits: {owner} does not run processor {}; a Runner that runs it takes the shard when {owner} stops",
                    s.shard,
                    lacking.join(", ")
                ));
            }
        }
    }
}

/// Running jobs first, then complete ones, the most recent first in each
/// (`jobs` as the store lists them, oldest first): a page opens on what
/// is being crawled.
pub fn order_jobs(jobs: &mut [JobStatus]) {
    jobs.reverse();
    // Stable: the most recent stays first among equals.
    jobs.sort_by_key(|j| j.complete);
}

async fn store_look(held: &mut crate::Releasing) -> Result<StoreLook, StatusError> {
    let Some(mut store) = held.0.take() else {
        return Err(StoreError::Backend("the store was let go".into()).into());
    };
    let (look, store) = tokio::task::spawn_blocking(move || {
        let look = look_store(store.as_mut());
        (look, store)
    })
    .await
    .map_err(|e| StoreError::Backend(e.to_string()))?;
    held.0 = Some(store);
    Ok(look?)
}

impl std::fmt::Display for ClusterStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "group {}", self.group)?;
        match &self.group_state {
            Some(g) => {
                let names = |v: &[NodeName]| {
                    v.iter()
                        .map(NodeName::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                writeln!(
                    f,
                    "  runners [{}]  backups [{}]  standby_id {}  fail_runner [{}]  fail_backup [{}]",
                    names(&g.current_runner),
                    names(&g.current_backup),
                    g.standby_id,
                    names(&g.fail_runner),
                    names(&g.fail_backup)
                )?;
            }
            None => writeln!(f, "  not formed yet")?,
        }
        writeln!(f, "members")?;
        for m in &self.members {
            let role = m.state.as_ref().map_or("-", |s| s.role.as_str());
            let heart = m
                .heartbeat
                .as_ref()
                .and_then(|h| serde_json::to_value(h.healthy_state).ok())
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "-".to_owned());
            let task = m.task.as_ref().map_or("-", |t| t.running_status.as_str());
            let pulse = match m.pulse {
                Pulse::Beating => "beating",
                Pulse::Silent => "silent",
                Pulse::Gone => "gone",
            };
            writeln!(
                f,
                "  {:<16} {:<20} heart {:<14} {:<10} task {:<10} shards [{}]{}",
                m.name,
                role,
                heart,
                format!("({pulse})"),
                task,
                m.shards.join(", "),
                if m.processors.is_empty() {
                    String::new()
                } else {
                    format!(" runs [{}]", m.processors.join(", "))
                }
            )?;
        }
        if !self.queued.is_empty() {
            writeln!(f, "queued shards [{}]", self.queued.join(", "))?;
        }
        if self.jobs.is_empty() {
            writeln!(f, "jobs: none submitted")?;
        } else {
            writeln!(f, "jobs")?;
        }
        for j in &self.jobs {
            let state = match (&j.continuous, j.complete) {
                (_, true) => "complete",
                (Some(c), false) if c.stopping => "stopping",
                (Some(_), false) => "continuous",
                (None, false) => "running",
            };
            writeln!(
                f,
                "  {} {state} {:.0} pages/s  {}",
                j.name,
                j.pages_per_second,
                j.seeds.first().map_or("", String::as_str)
            )?;
            if let Some(c) = &j.continuous {
                match c.freshness {
                    Some(fresh) => writeln!(
                        f,
                        "    freshness {:.1}% expected, over {} pages with estimated change rates",
                        fresh * 100.0,
                        c.estimated_pages
                    )?,
                    None => writeln!(
                        f,
                        "    freshness not estimated yet (a page's change rate needs two fetches)"
                    )?,
                }
            }
            for s in &j.shards {
                writeln!(
                    f,
                    "    shard {:<3} holder {:<36} {:<4} gen {:<3} assigned {:<14} seen {} done {} pending {} errors {}  {:.0}/s",
                    s.shard,
                    s.holder.as_deref().unwrap_or("-"),
                    if s.live { "live" } else { "gone" },
                    s.generation,
                    s.assigned.as_deref().unwrap_or("-"),
                    s.seen,
                    s.done,
                    s.pending,
                    s.errors,
                    s.pages_per_second
                )?;
            }
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, complete: bool) -> JobStatus {
        JobStatus {
            name: name.to_owned(),
            seeds: Vec::new(),
            created_at: String::new(),
            complete,
            continuous: None,
            shards: Vec::new(),
            pages_per_second: 0.0,
        }
    }

    #[test]
    fn running_jobs_come_first_then_the_most_recent() {
        // Oldest first, as the store lists them.
        let mut jobs = vec![
            job("a-done", true),
            job("b-running", false),
            job("c-done", true),
            job("d-running", false),
            job("e-done", true),
        ];
        order_jobs(&mut jobs);
        let names: Vec<_> = jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(
            names,
            ["d-running", "b-running", "e-done", "c-done", "a-done"]
        );
    }
}
