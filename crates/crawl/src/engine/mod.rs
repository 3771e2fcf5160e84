//! The engine: owns the frontier and the counts, starts requests up to the
//! limits and as politeness allows, hands results and discovered URLs to
//! the state worker, and stops in order on completion, timeout or shutdown.
//!
//! One task (the caller of [`Engine::run`]) owns all scheduling state.
//! Requests run as spawned tasks that own nothing but their request; the state
//! worker owns the store and the sink. Both report back as events.

mod admission;
mod depth_queue;
mod frontier;
mod lease;
mod live;
mod outbox;
mod polls;
mod records;
mod slot;
mod tasks;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crawlkeeper_model::{Authority, CrawlRecord};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};
use tracing::{debug, error, info};
use url::Url;

pub use frontier::{Frontier, FrontierLimits, RequestReport};
pub use lease::{GatedFetcher, LeaseGate};
use polls::Polls;
pub use slot::Slot;
use tasks::TaskOutput;

use crate::config::{ConfigError, CrawlConfig};
use crate::pipeline::{Discovered, Pipeline, Processed, Request, url_key};
use crate::registry::Registry;
use crate::sink::{Sink, SinkError};
use crate::state::{
    BUSY_GROUP, Command, CrawlState, MemoryState, POLL_EVERY, Reply, Sharing, StateError,
    StateHandle, spawn_worker,
};
use crate::summary::{AuthorityStats, StopReason, Summary};
use frontier::Next;

/// How often progress is logged.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// What a running crawl can be told from outside (see [`Engine::controls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Take these shards of the job as well (their holder is gone) and
    /// crawl them with the others.
    TakeShards(Vec<u32>),
}

/// A crawl that cannot go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A seed is not a crawlable URL.
    #[error("seed '{0}' is not an http(s) URL with a host")]
    BadSeed(String),
    /// Records could not be written.
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// The crawl state could not be read or written.
    #[error(transparent)]
    State(#[from] StateError),
}

/// A configured crawl, ready to run.
pub struct Engine {
    config: CrawlConfig,
    pipeline: Arc<Pipeline>,
    frontier: Frontier,
    seeds: Vec<Url>,
    state: Option<(Box<dyn CrawlState>, Box<dyn Sink>)>,
    stats: Vec<AuthorityStats>,
    done: u64,
    /// Records handed to the store (or waiting for their page's links) and
    /// not yet durable: past [`Engine::commit_room`] of them, each keeps
    /// its worker busy.
    committing: usize,
    /// Records that may wait for a group commit without keeping a worker
    /// busy: a worker is not idle for a commit while the store gathers
    /// others into it (two groups' worth, a group being half the workers,
    /// or all of them while every worker is busy, when the state waits
    /// for group commits; else none).
    commit_room: usize,
    /// Finished pages by token, waiting to be sent with their links.
    pending_finish: HashMap<u64, PendingFinish>,
    /// The slot of each record sent to the store and not yet durable, in
    /// the order sent (the store answers in that order); `None` for records
    /// of URLs that were never requested, and when places are not held.
    unconfirmed: VecDeque<Option<Slot>>,
    /// Requests keep their authority's place until their record is durable
    /// (the state survives a crash).
    hold_places: bool,
    next_token: u64,
    pending_saves: Vec<Slot>,
    /// WARC records of robots.txt exchanges, for the next transaction.
    pending_archive: Vec<Vec<u8>>,
    /// How the job is shared with other processes, if it is.
    sharing: Option<Sharing>,
    /// With sharing: requests wait until the lease was confirmed lately.
    gate: Option<Arc<LeaseGate>>,
    /// A confirmation of the lease was asked for and not yet given.
    verifying: bool,
    polls: Polls,
    /// What the crawl is told from outside, if anything may tell it.
    control: Option<tokio::sync::mpsc::UnboundedReceiver<Control>>,
    /// Where the live snapshot goes, when it is watched.
    live: Option<live::Publisher>,
}

/// Polls asked for by other processes' news go out at most this often.
const NEWS_EVERY: Duration = Duration::from_millis(100);

/// A finished page whose record goes to the store with its links.
struct PendingFinish {
    slot: Slot,
    request: Request,
    record: CrawlRecord,
    json: String,
    /// Its WARC records, encoded (empty when not archiving).
    archive: Vec<u8>,
    /// Its links wait for a shallower page of its authority.
    held: bool,
    /// In a continuous crawl: when it is fetched again.
    next: Option<Box<crawlkeeper_model::NextFetch>>,
    /// In a continuous crawl: how it moved in the job's rate histogram.
    moved: Option<crawlkeeper_model::revisit::RateMove>,
}

impl Engine {
    /// A crawl whose state lives in memory, writing records to `sink`.
    pub fn new(
        config: CrawlConfig,
        seeds: Vec<Url>,
        registry: &Registry,
        sink: Box<dyn Sink>,
    ) -> Result<Self, EngineError> {
        Self::with_state(config, seeds, registry, Box::new(MemoryState::new()), sink)
    }

    /// A crawl that keeps its state in `state` (resuming what is there)
    /// and writes each record to `sink` once it is durable. Every
    /// configuration problem is reported at once.
    pub fn with_state(
        config: CrawlConfig,
        seeds: Vec<Url>,
        registry: &Registry,
        state: Box<dyn CrawlState>,
        sink: Box<dyn Sink>,
    ) -> Result<Self, EngineError> {
        Ok(Self::configure(config, seeds, registry)?.attach(state, sink))
    }

    /// A crawl built and checked (configuration, seeds, every processor)
    /// without touching anything outside it, so that a caller can refuse
    /// bad input before it opens a store or a file. [`Engine::attach`]
    /// gives it its state and sink before [`Engine::run`].
    pub fn configure(
        config: CrawlConfig,
        seeds: Vec<Url>,
        registry: &Registry,
    ) -> Result<Self, EngineError> {
        let pipeline = registry.build(&config, &seeds)?;
        let frontier = Frontier::new(
            FrontierLimits {
                per_host: config.engine.per_host,
                max_pages: config.scope.max_pages,
                max_requisites: config.scope.requisite_limit(),
                respect_robots: config.scope.respect_robots,
                seen_cache: config.engine.seen_cache,
                max_queued: config.engine.max_queued,
            },
            config.politeness.clone(),
            fastrand::u64(..),
        );
        let mut normalized = Vec::with_capacity(seeds.len());
        for mut url in seeds {
            if !matches!(url.scheme(), "http" | "https") || Authority::of(&url).is_err() {
                return Err(EngineError::BadSeed(url.to_string()));
            }
            pipeline.normalizer().normalize(&mut url);
            normalized.push(url);
        }
        Ok(Self {
            config,
            pipeline: Arc::new(pipeline),
            frontier,
            seeds: normalized,
            state: None,
            stats: Vec::new(),
            done: 0,
            committing: 0,
            commit_room: 0,
            pending_finish: HashMap::new(),
            unconfirmed: VecDeque::new(),
            hold_places: false,
            next_token: 0,
            pending_saves: Vec::new(),
            pending_archive: Vec::new(),
            sharing: None,
            gate: None,
            verifying: false,
            polls: Polls::default(),
            control: None,
            live: None,
        })
    }

    /// A sender of [`Control`]s to this crawl once it runs (messages sent
    /// before are taken when it starts).
    pub fn controls(&mut self) -> tokio::sync::mpsc::UnboundedSender<Control> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.control = Some(rx);
        tx
    }

    /// Makes WARC records of every page (and robots.txt) with `archiver`;
    /// the fetcher must capture the exchanges (`config.fetch.capture`), and
    /// the sink writes them ([`Sink::before_commit`]).
    pub fn archive(mut self, archiver: crate::archive::Archiver) -> Self {
        if let Some(p) = Arc::get_mut(&mut self.pipeline) {
            p.archiver = Some(Arc::new(archiver));
        }
        self
    }

    /// A snapshot of the running crawl, made a few times a second (and
    /// once more when the run ends).
    pub fn live(&mut self) -> tokio::sync::watch::Receiver<Arc<crate::live::LiveCrawl>> {
        let (publisher, rx) = live::Publisher::new();
        self.live = Some(publisher);
        rx
    }

    /// Makes any stop request of the job (`crawlkeeper stop`) end this
    /// run, also one made before it began: a cluster's continuous job,
    /// which a stop ends for good whoever holds its shards then. Without,
    /// only requests made while it runs stop it (a crawl started again
    /// goes on).
    pub fn stopped_for_good(mut self) -> Self {
        self.polls.for_good = true;
        self
    }

    /// The crawl's configuration.
    pub fn config(&self) -> &CrawlConfig {
        &self.config
    }

    /// Gives the crawl the state it resumes and keeps, and the sink its
    /// durable records go to.
    pub fn attach(mut self, state: Box<dyn CrawlState>, sink: Box<dyn Sink>) -> Self {
        self.state = Some((state, sink));
        self
    }

    /// Runs the crawl until nothing is left, the run timeout expires or
    /// `shutdown` completes. In-flight requests get the shutdown grace to
    /// finish; every record received is made durable and written out.
    ///
    /// On a multi-threaded runtime, run it as a spawned task
    /// (`tokio::spawn(engine.run(stop))`) rather than in `block_on`: each
    /// request that ends wakes the engine, and a task is woken on the
    /// worker that ran the request, where the thread of `block_on` is
    /// woken by a system call and a context switch (this and the
    /// in-memory state's group wait took a crawl from 1.2 context switches
    /// a page to 0.16: `scripts/cpu-counts.sh stat`).
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<Summary, EngineError> {
        let started = Instant::now();
        let deadline = started + self.config.engine.run_timeout;
        let (mut state, sink) = self
            .state
            .take()
            .ok_or_else(|| StateError::Fatal("no state attached to the engine".into()))?;
        self.hold_places = state.survives_crash();
        // A group commit gathers up to half the workers' records while the
        // workers fetch on (all of them while every worker is busy), and
        // the next group gathers while one is applied: two groups' records
        // may wait without holding workers.
        let group_target = (self.config.engine.max_workers / 2).max(1);
        if !state.commit_wait().is_zero() {
            self.commit_room = 2 * group_target * BUSY_GROUP;
        }
        self.sharing = state.sharing();
        if let Some(sharing) = &self.sharing {
            self.frontier.set_partition(sharing.partition.clone());
            let gate = Arc::new(LeaseGate::new(sharing.lease_bound));
            let Some(pipeline) = Arc::get_mut(&mut self.pipeline) else {
                return Err(
                    StateError::Fatal("the pipeline is shared before the run".into()).into(),
                );
            };
            pipeline.wrap_fetcher(|inner| {
                Arc::new(GatedFetcher {
                    inner,
                    gate: gate.clone(),
                })
            });
            self.gate = Some(gate);
        }
        let continuous = self.config.revisit.is_some();
        let mut poll_tick = tokio::time::interval(match &self.sharing {
            Some(s) => s.poll_every,
            None if continuous => POLL_EVERY,
            None => Duration::from_secs(3600),
        });
        poll_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut wakeups = state.wakeups();
        let mut control = self.control.take();
        let mut store = spawn_worker(state, sink, group_target);
        match store.rx.recv().await {
            Some(Reply::Resumed(resumed)) => {
                if resumed.counts.seen > 0 {
                    info!(
                        done = resumed.counts.done,
                        pending = resumed.counts.pending(),
                        "resuming the crawl"
                    );
                }
                self.frontier.restore(&resumed);
                if !self.polls.for_good {
                    self.polls.stops_before = resumed.stops;
                }
                self.polls.stopping |= resumed.stops > self.polls.stops_before;
                if let Some(live) = &mut self.live {
                    live.done_before = resumed.counts.done;
                }
            }
            Some(Reply::Failed(e)) => return Err(e.into()),
            _ => return Err(StateError::Fatal("state worker stopped".into()).into()),
        }
        for url in std::mem::take(&mut self.seeds) {
            self.frontier.triage(
                Discovered {
                    key: url_key(&url),
                    request: Request::seed(url),
                },
                None,
            );
        }
        let mut tasks: JoinSet<TaskOutput> = JoinSet::new();
        let mut progress = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
        let mut live_tick = tokio::time::interval(live::LIVE_EVERY);
        let watched = self.live.is_some();
        tokio::pin!(shutdown);
        let stop = loop {
            let now = Instant::now();
            self.frontier.release_due(now);
            self.send_to_store(&store)?;
            if self.gate.as_ref().is_none_or(|g| g.is_open()) {
                self.dispatch(&mut tasks, now);
                store.workers_busy(tasks.len() >= self.config.engine.max_workers);
            } else if !self.verifying {
                // Nothing goes out until the lease is confirmed again.
                self.verifying = true;
                store
                    .tx
                    .send(Command::Verify)
                    .map_err(|_| StateError::Fatal("state worker stopped".into()))?;
            }
            if tasks.is_empty() && self.waiting_forever() {
                // Every worker holds a page waiting for a shallower one that
                // cannot start: let the waiting links go.
                self.frontier.release_all_held();
                continue;
            }
            let idle = tasks.is_empty() && self.committing == 0 && self.frontier.is_idle();
            if self.polls.stopping {
                break StopReason::Stopped;
            }
            // A continuous crawl is never complete: it waits for its due URLs.
            if idle && !continuous && (self.sharing.is_none() || self.polls.complete) {
                break StopReason::Finished;
            }
            let news_due = self.polls.due
                && self
                    .polls
                    .sent_at
                    .is_none_or(|at| now.duration_since(at) >= NEWS_EVERY);
            if !self.polls.in_flight && ((idle && !self.polls.sent_idle) || news_due) {
                // Done here (is the whole job?), or told of news.
                self.poll(&store, idle)?;
            }
            let news_wait = (self.polls.due && !self.polls.in_flight)
                .then(|| self.polls.sent_at.map(|at| at + NEWS_EVERY))
                .flatten();
            let wake = self.frontier.next_wake();
            let polling = self.sharing.is_some() || continuous;
            tokio::select! {
                biased;
                () = &mut shutdown => break StopReason::Interrupted,
                () = sleep_until(deadline) => break StopReason::Timeout,
                Some(reply) = store.rx.recv() => self.on_reply(reply)?,
                Some(joined) = tasks.join_next() => self.complete(joined)?,
                () = sleep_until(wake.unwrap_or(deadline)), if wake.is_some() => {}
                () = sleep_until(news_wait.unwrap_or(deadline)), if news_wait.is_some() => {}
                Some(()) = async { wakeups.as_mut()?.recv().await }, if wakeups.is_some() => {
                    self.polls.due = true;
                }
                Some(c) = async { control.as_mut()?.recv().await }, if control.is_some() => {
                    match c {
                        Control::TakeShards(shards) => store
                            .tx
                            .send(Command::TakeShards(shards))
                            .map_err(|_| StateError::Fatal("state worker stopped".into()))?,
                    }
                }
                _ = poll_tick.tick(), if polling => {
                    if !self.polls.in_flight {
                        let idle = tasks.is_empty() && self.committing == 0 && self.frontier.is_idle();
                        self.poll(&store, idle)?;
                    }
                }
                _ = progress.tick() => self.log_progress(started),
                _ = live_tick.tick(), if watched => {
                    self.publish_live(started, tasks.len(), &store.commits, true);
                }
            }
            // Take every event that is already there before deciding again.
            while let Ok(reply) = store.rx.try_recv() {
                self.on_reply(reply)?;
            }
            while let Some(joined) = tasks.try_join_next() {
                self.complete(joined)?;
            }
        };
        if stop != StopReason::Finished {
            store.closing();
            info!(
                ?stop,
                in_flight = tasks.len(),
                "stopping: waiting for in-flight requests"
            );
            let grace = Instant::now() + self.config.engine.shutdown_grace;
            loop {
                tokio::select! {
                    () = sleep_until(grace) => break,
                    Some(reply) = store.rx.recv() => self.on_reply(reply)?,
                    joined = tasks.join_next() => match joined {
                        Some(joined) => self.complete(joined)?,
                        None => break,
                    },
                }
            }
            tasks.abort_all();
        }
        self.close(&mut store).await?;
        self.publish_live(started, 0, &store.commits, false);
        let authorities: BTreeMap<Authority, AuthorityStats> = self
            .stats
            .iter()
            .enumerate()
            .filter(|(_, s)| **s != AuthorityStats::default())
            .map(|(slot, s)| (self.frontier.authority(slot).clone(), s.clone()))
            .collect();
        Ok(Summary {
            authorities,
            elapsed: started.elapsed(),
            stop,
            pending: self.frontier.pending() + tasks.len() as u64,
        })
    }

    /// True when every busy worker holds a page whose links wait, so that
    /// nothing can start.
    fn waiting_forever(&self) -> bool {
        let held = self.pending_finish.values().filter(|p| p.held).count();
        held > 0
            && held == self.committing
            && self.committing >= self.config.engine.max_workers + self.commit_room
    }

    /// Sends the last records and waits until everything is durable.
    async fn close(&mut self, store: &mut StateHandle) -> Result<(), EngineError> {
        store.closing();
        self.frontier.release_all_held();
        self.send_to_store(store)?;
        let _ = store.tx.send(Command::Close);
        while let Some(reply) = store.rx.recv().await {
            match reply {
                Reply::Closed => return Ok(()),
                Reply::Failed(e) => return Err(e.into()),
                // Admissions and loads that arrive now stay in the store.
                Reply::Finished(n) => self.committing -= n,
                _ => {}
            }
        }
        Err(StateError::Fatal("state worker stopped before closing".into()).into())
    }

    /// Counts a record that is on its way to the store.
    fn record(&mut self, slot: Slot, record: &CrawlRecord) {
        self.stats_of(slot).add(record);
        if let Some(live) = &mut self.live {
            live.observe(record);
        }
        self.done += 1;
        self.committing += 1;
    }

    /// Starts requests while there are free workers and ready authorities.
    /// A worker is busy until its record is durable, but for
    /// [`Engine::commit_room`] records waiting in a group commit: at most
    /// that many more pages are unrecorded at a kill.
    fn dispatch(&mut self, tasks: &mut JoinSet<TaskOutput>, now: Instant) {
        let max = self.config.engine.max_workers;
        while tasks.len() < max && tasks.len() + self.committing < max + self.commit_room {
            let Some(next) = self.frontier.next_start(now) else {
                break;
            };
            let pipeline = self.pipeline.clone();
            match next {
                Next::Robots { slot, authority } => {
                    tasks.spawn(tasks::robots(pipeline, slot, authority));
                }
                Next::Page {
                    slot,
                    request,
                    robots,
                } => {
                    let rule = self.config.revisit.as_ref().map(|r| r.rule(self.polls.mu));
                    tasks.spawn(tasks::page(pipeline, slot, request, robots, rule));
                }
            }
        }
    }

    fn on_reply(&mut self, reply: Reply) -> Result<(), EngineError> {
        let now = Instant::now();
        match reply {
            Reply::Finished(n) => {
                self.committing -= n;
                let n = n.min(self.unconfirmed.len());
                for slot in self.unconfirmed.drain(..n).flatten() {
                    self.frontier.record_durable(slot, now);
                }
            }
            Reply::Admitted(pairs) => {
                for (item, new) in pairs {
                    self.frontier.admitted(
                        item.slot,
                        item.key,
                        item.request,
                        new,
                        item.loaded,
                        now,
                    );
                }
            }
            Reply::Loaded {
                slot,
                requests,
                more,
            } => self.frontier.loaded(slot, requests, more, now),
            Reply::Polled(polled) => self.on_polled(polled),
            Reply::ShardsTaken(shards, resumed) => {
                info!(?shards, "took shards");
                self.frontier.take_shards(&shards, &resumed);
                // The job is not known complete any more.
                self.polls.sent_idle = false;
                self.polls.complete = false;
            }
            Reply::Confirmed(began) => {
                self.verifying = false;
                if let Some(gate) = &self.gate {
                    gate.confirm(began);
                }
            }
            Reply::Failed(e) => return Err(e.into()),
            Reply::Resumed(_) | Reply::Closed => {
                return Err(
                    StateError::Fatal("unexpected reply from the state worker".into()).into(),
                );
            }
        }
        Ok(())
    }

    fn complete(
        &mut self,
        joined: Result<TaskOutput, tokio::task::JoinError>,
    ) -> Result<(), EngineError> {
        let output = match joined {
            Ok(o) => o,
            Err(e) => {
                // Panics are caught inside the task, so this is a cancellation.
                error!(error = %e, "request task ended abnormally");
                return Ok(());
            }
        };
        let now = Instant::now();
        match output {
            TaskOutput::Robots {
                slot,
                rules,
                snapshot,
                sitemapped,
                archive,
            } => {
                self.frontier.robots_known(slot, rules, snapshot, now);
                self.pending_saves.push(slot);
                if !sitemapped.is_empty() {
                    debug!(
                        authority = %self.frontier.authority(slot),
                        files = sitemapped.len(),
                        "sitemap files named"
                    );
                    // At depth 1, as links of a seed.
                    self.frontier.offer_batch(slot, 0, sitemapped, None);
                }
                if !archive.is_empty() {
                    self.pending_archive.push(archive);
                }
            }
            TaskOutput::Page {
                slot,
                request,
                processed,
                json,
                next,
                moved,
            } => {
                let Processed {
                    record,
                    discovered,
                    retry,
                    archive,
                    ..
                } = *processed;
                let report = RequestReport {
                    response_time: record.response_ms.map(Duration::from_millis),
                    failed: retry.is_some(),
                };
                self.frontier.request_done(slot, now, report);
                if report.failed {
                    self.stats_of(slot).note_failure(&record);
                }
                let depth = request.depth;
                let request = match retry {
                    Some(hint) => match self.frontier.retry(slot, request, now, hint.after) {
                        None => {
                            self.stats_of(slot).retries += 1;
                            return Ok(());
                        }
                        Some(request) => request,
                    },
                    None => request,
                };
                self.record(slot, &record);
                let token = self.next_token;
                self.next_token += 1;
                // Its own links first: they are shallower than any it releases.
                let held = self
                    .frontier
                    .offer_batch(slot, depth, discovered, Some(token));
                self.pending_finish.insert(
                    token,
                    PendingFinish {
                        slot,
                        request,
                        record,
                        json,
                        archive,
                        held,
                        next,
                        moved,
                    },
                );
                if self.hold_places {
                    self.frontier.record_pending(slot);
                }
                self.frontier.job_finished(slot, depth);
            }
        }
        Ok(())
    }

    fn stats_of(&mut self, slot: Slot) -> &mut AuthorityStats {
        if self.stats.len() <= slot {
            self.stats.resize(slot + 1, AuthorityStats::default());
        }
        &mut self.stats[slot]
    }

    fn log_progress(&self, started: Instant) {
        let secs = started.elapsed().as_secs_f64();
        info!(
            done = self.done,
            queued = self.frontier.pending(),
            cached = self.frontier.cached_keys(),
            rate = format!("{:.0}/s", self.done as f64 / secs),
            "progress"
        );
    }
}
