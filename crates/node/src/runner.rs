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
use crawlkeeper_crawl::state::{LEASE_BOUND, Sharing};
use crawlkeeper_crawl::{
    Control, CrawlConfig, Engine, EngineError, JsonlSink, Registry, StopReason,
};
use crawlkeeper_job::StoreState;
use crawlkeeper_model::Partition;
use crawlkeeper_model::cluster::RunningContent;
use crawlkeeper_store::Claim;
use crawlkeeper_store::location::scrub;
use tokio::sync::{mpsc, watch};
use url::Url;

use crate::item::ShardItem;
use crate::view::NodeView;

/// What a node brings to every job it crawls.
#[derive(Debug, Clone)]
pub struct NodeSettings {
    /// The store every node of the cluster shares (`postgres://…`).
    pub store: String,
    /// Who this node is in the store's shard leases (`<name>@<host>:<pid>`).
    pub holder: String,
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
    /// It cannot go on (fenced, a bad job, the store refused).
    Failed(String),
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
                        StopReason::Finished => Ended::Complete,
                        StopReason::Interrupted => Ended::Stopped,
                        StopReason::Timeout => Ended::Failed(format!(
                            "the job's run timeout passed with {} URLs queued here",
                            summary.pending
                        )),
                    },
                    Err(e) => Ended::Failed(engine_failure(e)),
                }
            }
            Some(Ok(Err(why))) => Ended::Failed(why),
            Some(Err(e)) => Ended::Failed(format!("the job could not start: {e}")),
        };
        // Why it failed goes to the log, the task in ZooKeeper and status
        // pages: never with the store's password.
        let outcome = match outcome {
            Ended::Failed(why) => Ended::Failed(scrub(&why, &self.settings.store)),
            other => other,
        };
        match &outcome {
            Ended::Complete => tracing::info!(job = %self.job, "job complete"),
            Ended::Stopped => tracing::info!(job = %self.job, "stopped crawling the job"),
            Ended::Failed(why) => {
                let count = if why.starts_with("fenced") {
                    &self.view.fenced
                } else {
                    &self.view.failed
                };
                count.fetch_add(1, Relaxed);
                tracing::warn!(job = %self.job, %why, "job failed here");
            }
        }
        let mut jobs = lock(&self.jobs);
        if jobs.get(&self.job).is_some_and(|r| r.run == self.run) {
            jobs.remove(&self.job);
        }
        ended.send_replace(Some(outcome));
    }
}

fn engine_failure(e: EngineError) -> String {
    match e {
        EngineError::State(crawlkeeper_crawl::state::StateError::Fenced(why)) => {
            format!("fenced: {why}")
        }
        e => e.to_string(),
    }
}

/// Opens the store, reads the job, claims `shards` with take-over and
/// builds the engine with the state attached. Blocking.
fn prepare(settings: &NodeSettings, job: &str, shards: Vec<u32>) -> Result<Engine, String> {
    let mut store = crawlkeeper_store::open(&settings.store)
        .map_err(|e| scrub(&e.to_string(), &settings.store))?;
    let info = store
        .find_job(job)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("job {job} is not in the store"))?;
    let mut config: CrawlConfig = serde_json::from_str(&info.options)
        .map_err(|e| format!("job {job}: its stored options do not read: {e}"))?;
    config.engine.max_workers = settings.max_workers;
    config.fetch.local_address = settings.local_address;
    let seeds = info
        .seeds
        .iter()
        .map(|s| Url::parse(s).map_err(|e| format!("job {job}: seed {s:?}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let engine = Engine::configure(config.clone(), seeds, &Registry::builtin())
        .map_err(|e| e.to_string())?;
    let partition = Partition::new(info.shards, shards.clone())
        .ok_or_else(|| format!("job {job} has no shards {shards:?}"))?;
    let live = store
        .shards(&info)
        .map_err(|e| e.to_string())?
        .iter()
        .any(|s| shards.contains(&s.shard) && s.live);
    let claim = Claim {
        shards,
        holder: settings.holder.clone(),
        take_over: true,
    };
    store.claim(&info, &claim).map_err(|e| e.to_string())?;
    if live {
        // A displaced live holder sends nothing once its lease's last
        // confirmation is older than the bound.
        std::thread::sleep(LEASE_BOUND);
    }
    let max_pages = config.scope.max_pages;
    let state = StoreState::shared(store, info, Sharing::new(partition), max_pages)
        .map_err(|e| e.to_string())?
        .with_holder(settings.holder.clone())
        .keeping_archives(config.archive.store_bodies);
    Ok(engine.attach(Box::new(state), Box::new(JsonlSink::new(std::io::sink()))))
}
