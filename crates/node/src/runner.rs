//! [`CrawlRunner`]: the crawl engine as the cluster's task runner. Each
//! item is a shard of a job; the shards of one job held here are crawled
//! by one engine, sharing its workers. The first shard of a job starts its
//! engine (claiming, with take-over, every shard of the job given here by
//! then); later ones join the running engine ([`Control::TakeShards`]).
//! An item ends when its job is complete, cluster-wide.
//!
//! The store fences: shards are claimed with take-over (the coordinator
//! decided who holds them), so a zombie that held them fails its next
//! transaction, and its lease gate stops its requests.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};

use crawlkeeper_cluster::node::{ItemOutcome, TaskRunner};
use crawlkeeper_crawl::state::StateError;
use crawlkeeper_crawl::{Control, Engine, EngineError, Registry, StopReason};
use crawlkeeper_job::opening::{Outputs, Start, Wanted};
use crawlkeeper_job::{JobError, Location, Opening, open};
use crawlkeeper_model::Fence;
use crawlkeeper_model::cluster::RunningContent;
use crawlkeeper_store::Holder;
use crawlkeeper_store::location::scrub;
use tokio::sync::{mpsc, watch};

use crate::item::ShardItem;
use crate::view::NodeView;

/// What a node brings to every job it crawls.
#[derive(Debug, Clone)]
pub struct NodeSettings {
    /// The extractors, scopers and processors this node's jobs may name
    /// (the built-in ones, the operator's `--processor`s, a library
    /// user's own).
    pub registry: Arc<Registry>,
    /// The store every node of the cluster shares (`postgres://…`).
    pub store: String,
    /// Who this node is in the store's shard leases (`<name>@<host>:<pid>`).
    pub holder: Holder,
    /// Requests in flight at once, per job, on this node.
    pub max_workers: usize,
    /// The local address requests leave from, if not the system's choice.
    pub local_address: Option<IpAddr>,
}

/// How a job's engine ended here.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ended {
    /// The whole job is complete.
    Complete,
    /// Stopped before the end (its items were halted or dropped).
    Stopped,
    /// Another node took its shards over: it must stop.
    Fenced(Fence),
    /// It cannot go on (a bad job, the store refused, a timeout).
    Failed(String),
    /// This node cannot crawl the job (it lacks a processor the job
    /// uses): nothing was claimed, the shard waits for another Runner.
    Refused(String),
}

impl Ended {
    /// The same end with its text scrubbed of `location`'s password: why
    /// it ended goes to the log, the task in ZooKeeper and status pages.
    fn scrubbed(self, location: &str) -> Self {
        match self {
            Self::Failed(why) => Self::Failed(scrub(&why, location)),
            Self::Refused(why) => Self::Refused(scrub(&why, location)),
            other => other,
        }
    }
}

impl From<JobError> for Ended {
    fn from(e: JobError) -> Self {
        match e {
            JobError::Fenced { job, shard, by } => Self::Fenced(Fence { job, shard, by }),
            JobError::LacksProcessors { .. } => Self::Refused(e.to_string()),
            e => Self::Failed(e.to_string()),
        }
    }
}

/// A job's engine on this node.
struct JobRun {
    /// Which run of the job this is (a job may run again after a stop).
    run: u64,
    /// The shards it was given.
    shards: BTreeSet<u32>,
    /// It claimed its first shards: later ones go through `control`.
    started: bool,
    control: mpsc::UnboundedSender<Control>,
    end: watch::Receiver<Option<Ended>>,
    /// Items waiting for it to end.
    waiting: usize,
    /// Asked to stop: items that come now wait for a new run.
    stop: watch::Sender<bool>,
}

type Jobs = Arc<Mutex<HashMap<String, JobRun>>>;

/// Runs the shards of crawl jobs (the items of a concurrent Runner).
pub struct CrawlRunner {
    settings: Arc<NodeSettings>,
    jobs: Jobs,
    next_run: std::sync::atomic::AtomicU64,
    halt: watch::Sender<bool>,
    view: Arc<NodeView>,
}

impl CrawlRunner {
    /// A runner for a node with these settings.
    pub fn new(settings: NodeSettings) -> Self {
        Self {
            settings: Arc::new(settings),
            jobs: Jobs::default(),
            next_run: std::sync::atomic::AtomicU64::new(0),
            halt: watch::channel(false).0,
            view: Arc::default(),
        }
    }

    /// What this node's engines show (for its status page and metrics).
    pub fn view(&self) -> Arc<NodeView> {
        self.view.clone()
    }

    /// The job names and shards crawled here now.
    pub fn held(&self) -> Vec<(String, Vec<u32>)> {
        let mut held: Vec<_> = lock(&self.jobs)
            .iter()
            .map(|(job, r)| (job.clone(), r.shards.iter().copied().collect()))
            .collect();
        held.sort();
        held
    }

    /// Gives `shard` to its job's engine (started if none runs); returns
    /// how to learn of the engine's end, and the interest to drop when the
    /// item is no longer waited for (`None`: an engine that is stopping;
    /// wait for its end, then join again).
    fn join(&self, shard: &ShardItem) -> (watch::Receiver<Option<Ended>>, Option<Interest>) {
        let mut jobs = lock(&self.jobs);
        if let Some(r) = jobs.get_mut(&shard.job) {
            if *r.stop.borrow() {
                return (r.end.clone(), None);
            }
            let new = r.shards.insert(shard.shard);
            if new {
                self.view.shards_started.fetch_add(1, Relaxed);
            }
            if new && r.started {
                let _ = r.control.send(Control::TakeShards(vec![shard.shard]));
            }
            r.waiting += 1;
            let interest = Interest {
                jobs: self.jobs.clone(),
                job: shard.job.clone(),
                run: r.run,
            };
            return (r.end.clone(), Some(interest));
        }
        let run = self.next_run.fetch_add(1, Relaxed);
        self.view.shards_started.fetch_add(1, Relaxed);
        let (control, controls) = mpsc::unbounded_channel();
        let (ended, end) = watch::channel(None);
        let (stop, stopped) = watch::channel(false);
        jobs.insert(
            shard.job.clone(),
            JobRun {
                run,
                shards: BTreeSet::from([shard.shard]),
                started: false,
                control,
                end: end.clone(),
                waiting: 1,
                stop,
            },
        );
        let drive = Drive {
            settings: self.settings.clone(),
            jobs: self.jobs.clone(),
            job: shard.job.clone(),
            run,
            halt: self.halt.subscribe(),
            stopped,
            view: self.view.clone(),
        };
        tokio::spawn(drive.run(controls, ended));
        let interest = Interest {
            jobs: self.jobs.clone(),
            job: shard.job.clone(),
            run,
        };
        (end, Some(interest))
    }
}

fn lock(jobs: &Jobs) -> MutexGuard<'_, HashMap<String, JobRun>> {
    // The map is changed in single statements: a panic leaves it whole.
    jobs.lock().unwrap_or_else(|p| p.into_inner())
}

/// An item waiting for its job's engine; dropped with the item (its node
/// lost the task or ends), the last one stops the engine.
struct Interest {
    jobs: Jobs,
    job: String,
    run: u64,
}

impl Drop for Interest {
    fn drop(&mut self) {
        let mut jobs = lock(&self.jobs);
        if let Some(r) = jobs.get_mut(&self.job)
            && r.run == self.run
        {
            r.waiting -= 1;
            if r.waiting == 0 {
                r.stop.send_replace(true);
            }
        }
    }
}

impl TaskRunner for CrawlRunner {
    async fn run(&self, item: &RunningContent) -> ItemOutcome {
        let shard = match ShardItem::of(item) {
            Ok(s) => s,
            Err(e) => return failed(e.to_string()),
        };
        loop {
            let (mut end, interest) = self.join(&shard);
            let ended = match end.wait_for(Option::is_some).await {
                Ok(e) => e.clone().unwrap_or(Ended::Stopped),
                Err(_) => Ended::Failed("the job's engine ended without a word".into()),
            };
            drop(interest);
            match ended {
                Ended::Complete => {
                    return ItemOutcome {
                        status_code: None,
                        response: Some(format!("job {} complete", shard.job)),
                        error: None,
                    };
                }
                Ended::Failed(why) => return failed(why),
                Ended::Fenced(fence) => return failed(format!("fenced: {fence}")),
                // The shard stays this node's task, unclaimed, until the
                // node stops: then a Runner that runs the processor takes
                // it over (`status` names what is lacking meanwhile).
                Ended::Refused(_) => {
                    let mut halt = self.halt.subscribe();
                    let _ = halt.wait_for(|h| *h).await;
                    return failed("halted".into());
                }
                Ended::Stopped if *self.halt.borrow() => return failed("halted".into()),
                // An engine that was stopping when this item came: run again.
                Ended::Stopped => continue,
            }
        }
    }

    fn halt(&self) {
        self.halt.send_replace(true);
    }
}

fn failed(why: String) -> ItemOutcome {
    ItemOutcome {
        status_code: None,
        response: None,
        error: Some(why),
    }
}

/// One run of a job's engine, from claiming its shards to its end.
struct Drive {
    settings: Arc<NodeSettings>,
    jobs: Jobs,
    job: String,
    run: u64,
    halt: watch::Receiver<bool>,
    stopped: watch::Receiver<bool>,
    view: Arc<NodeView>,
}

impl Drive {
    async fn run(
        self,
        mut controls: mpsc::UnboundedReceiver<Control>,
        ended: watch::Sender<Option<Ended>>,
    ) {
        // Shards given in the same moment are claimed together.
        tokio::task::yield_now().await;
        let shards: Vec<u32> = {
            let mut jobs = lock(&self.jobs);
            match jobs.get_mut(&self.job) {
                Some(r) if r.run == self.run => {
                    r.started = true;
                    r.shards.iter().copied().collect()
                }
                _ => Vec::new(),
            }
        };
        let settings = self.settings.clone();
        let job = self.job.clone();
        let starting = shards.clone();
        let preparing =
            tokio::task::spawn_blocking(move || prepare(&settings, &job, shards.clone()));
        // A node told to stop while it claims its shards (a round trip or
        // more per shard) stops now: the claim finishes, or not, behind it
        // and its engine is dropped unstarted.
        let (mut halt, mut stopped) = (self.halt.clone(), self.stopped.clone());
        let told = async move {
            tokio::select! {
                _ = halt.wait_for(|h| *h) => {}
                _ = stopped.wait_for(|s| *s) => {}
            }
        };
        let prepared = tokio::select! {
            p = preparing => Some(p),
            () = told => None,
        };
        let outcome = match prepared {
            None => Ended::Stopped,
            Some(Ok(Ok(mut engine))) => {
                // Before any request of them: who held which shard when can
                // be read from the nodes' logs (later shards: "took shards").
                tracing::info!(job = %self.job, shards = ?starting, "crawling shards");
                self.view.watch(&self.job, engine.live());
                let to_engine = engine.controls();
                tokio::spawn(async move {
                    while let Some(c) = controls.recv().await {
                        let _ = to_engine.send(c);
                    }
                });
                let mut halt = self.halt.clone();
                let mut stopped = self.stopped.clone();
                let shutdown = async move {
                    tokio::select! {
                        _ = halt.wait_for(|h| *h) => {}
                        _ = stopped.wait_for(|s| *s) => {}
                    }
                };
                match engine.run(shutdown).await {
                    Ok(summary) => match summary.stop {
                        // A continuous job asked to stop is at its end.
                        StopReason::Finished | StopReason::Stopped => Ended::Complete,
                        StopReason::Interrupted => Ended::Stopped,
                        StopReason::Timeout => Ended::Failed(format!(
                            "the job's run timeout passed with {} URLs queued here",
                            summary.pending
                        )),
                    },
                    Err(e) => engine_failure(e),
                }
            }
            Some(Ok(Err(ended))) => ended,
            Some(Err(e)) => Ended::Failed(format!("the job could not start: {e}")),
        };
        let outcome = outcome.scrubbed(&self.settings.store);
        match &outcome {
            Ended::Complete => tracing::info!(job = %self.job, "job complete"),
            Ended::Stopped => tracing::info!(job = %self.job, "stopped crawling the job"),
            Ended::Fenced(fence) => {
                self.view.fenced.fetch_add(1, Relaxed);
                tracing::warn!(job = %self.job, why = %format_args!("fenced: {fence}"), "job failed here");
            }
            Ended::Failed(why) => {
                self.view.failed.fetch_add(1, Relaxed);
                tracing::warn!(job = %self.job, %why, "job failed here");
            }
            Ended::Refused(why) => {
                tracing::warn!(job = %self.job, %why, "job refused here");
            }
        }
        let mut jobs = lock(&self.jobs);
        if jobs.get(&self.job).is_some_and(|r| r.run == self.run) {
            jobs.remove(&self.job);
        }
        ended.send_replace(Some(outcome));
    }
}

fn engine_failure(e: EngineError) -> Ended {
    match e {
        EngineError::State(StateError::Fenced(fence)) => Ended::Fenced(fence),
        e => Ended::Failed(e.to_string()),
    }
}

/// Opens the job (see [`crawlkeeper_job::open()`]): its stored options
/// and seeds, its `shards` claimed with take-over, and builds the engine
/// with the state attached. Blocking.
fn prepare(settings: &NodeSettings, job: &str, shards: Vec<u32>) -> Result<Engine, Ended> {
    let opening = Opening {
        location: Location::Store(settings.store.clone()),
        wanted: Wanted::Stored(job.to_owned()),
        start: Start::Resume,
        shards,
        holder: settings.holder.clone(),
        take_over: true,
        outputs: Outputs::none(),
        runs: Some(settings.registry.capabilities()),
    };
    let opened = open(&opening).map_err(Ended::from)?;
    for note in &opened.notes {
        tracing::info!(job, %note, "job opened");
    }
    let mut config = opened.config;
    config.engine.max_workers = settings.max_workers;
    config.fetch.local_address = settings.local_address;
    let engine = Engine::configure(config, opened.seeds, &settings.registry)
        .map_err(|e| Ended::Failed(e.to_string()))?;
    // A stop ends a cluster job for good: a Runner that takes its shards
    // over after the stop ends at once, and the job is complete.
    Ok(engine.attach(opened.state, opened.sink).stopped_for_good())
}
