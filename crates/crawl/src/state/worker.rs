//! The state worker: a thread that owns the [`CrawlState`] and the sink,
//! gathers the engine's commands into one transaction at a time (group
//! commit, waiting a little for more when the state asks for it, see
//! [`GroupPolicy`]), writes the records of newly finished URLs to the sink
//! after they are durable, and answers the engine.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crawlkeeper_model::{Authority, AuthorityState, FinishedUrl, FrontierEntry};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tracing::{debug, error, info, warn};
use url::Url;

use super::group::GroupPolicy;
use super::{Batch, CrawlState, Resumed, StateError};
use crate::pipeline::Request;
use crate::sink::Sink;

/// Most commands gathered into one transaction.
const MAX_COMMANDS: usize = 4096;
/// How long a lost store is retried before the crawl gives up.
const MAX_OUTAGE: Duration = Duration::from_secs(600);

/// A URL offered for admission.
#[derive(Debug)]
pub struct AdmitItem {
    /// The frontier slot of its authority.
    pub slot: usize,
    /// Its dedup key.
    pub key: u128,
    /// The request that would fetch it.
    pub request: Request,
    /// Its authority.
    pub authority: Authority,
    /// Whether the engine keeps it in memory (else it stays in the store).
    pub loaded: bool,
}

/// What the engine asks of the state worker.
#[derive(Debug)]
pub enum Command {
    /// Store a finished URL's record (and write it to the sink), with the
    /// URLs found on it, in the same transaction: a page is never done
    /// without its links.
    Finish(Box<FinishedUrl>, Vec<AdmitItem>),
    /// Admit URLs; the reply says which were new.
    Admit(Vec<AdmitItem>),
    /// Load queued URLs of an authority from the store.
    Load {
        /// The authority's slot.
        slot: usize,
        /// The authority.
        authority: Authority,
        /// Most URLs to load.
        limit: usize,
    },
    /// Save an authority's state.
    Save(AuthorityState),
    /// Ask for URLs other processes added to the held shards, and whether
    /// the job is complete; `sweep` when the engine holds nothing in
    /// memory (see [`Batch::sweep`]).
    Poll {
        /// Nothing is held in memory.
        sweep: bool,
        /// A continuous crawl: queue again the URLs due at or before this
        /// time (see [`Batch::due`]).
        due: Option<i64>,
    },
    /// Confirm that the held shards are still this process's.
    Verify,
    /// Archive these encoded records (a robots.txt exchange) with the next
    /// transaction.
    Archive(Vec<u8>),
    /// Take more shards of the job and resume them.
    TakeShards(Vec<u32>),
    /// Flush everything and stop.
    Close,
}

/// The answer to [`Command::Poll`].
#[derive(Debug, Default)]
pub struct Polled {
    /// Authorities of the held shards with URLs other processes added,
    /// and how many of their URLs are queued in the store.
    pub news: Vec<(Authority, u64)>,
    /// Whether any URL of the job is queued or held anywhere; `None` when
    /// the state does not say.
    pub open: Option<bool>,
    /// URLs admitted to the whole job, when the state counts them.
    pub job_seen: Option<u64>,
    /// Requisites admitted to the whole job, when the state counts them.
    pub job_requisites: Option<u64>,
    /// With `due`: authorities with URLs queued again, and how many.
    pub requeued: Vec<(Authority, u64)>,
    /// With `due`: the earliest due time left.
    pub next_due: Option<i64>,
    /// With `due`: the job's rate histogram (pages by bucket).
    pub rates: Vec<(i16, u64)>,
    /// How many times the job was asked to stop so far, when the state
    /// counts them.
    pub stops: Option<u64>,
}

/// What the state worker answers.
#[derive(Debug)]
pub enum Reply {
    /// What earlier runs left (always the first reply).
    Resumed(Resumed),
    /// This many finished URLs are durable.
    Finished(usize),
    /// Each offered URL, and whether it was new.
    Admitted(Vec<(AdmitItem, bool)>),
    /// URLs loaded from the store for a slot.
    Loaded {
        /// The slot they belong to.
        slot: usize,
        /// Their keys and requests, shallowest first.
        requests: Vec<(u128, Request)>,
        /// True when the store may have more.
        more: bool,
    },
    /// What a poll found.
    Polled(Polled),
    /// A transaction that began at this instant committed: the held
    /// shards were this process's then.
    Confirmed(Instant),
    /// Shards taken, with what their earlier holder left.
    ShardsTaken(Vec<u32>, Resumed),
    /// Everything is flushed; the worker has stopped.
    Closed,
    /// The state cannot be written: the crawl must stop.
    Failed(StateError),
}

/// The engine's side of the worker.
pub struct StateHandle {
    /// Commands to the worker (sending never blocks).
    pub tx: Sender<Command>,
    /// Replies from the worker.
    pub rx: UnboundedReceiver<Reply>,
    /// What the worker's commits cost, counted as they happen.
    pub commits: Arc<CommitStats>,
    /// Set when the engine stops: shards asked for and not taken yet are
    /// left to their next holder (a node leaving with hundreds of shards
    /// to claim would otherwise claim them all, one transaction each,
    /// before it could close).
    closing: Arc<AtomicBool>,
    /// Whether every worker of the engine is busy (see [`GroupPolicy`]).
    busy: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StateHandle {
    /// Tells the worker the engine is stopping: it takes no more shards.
    pub fn closing(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Tells the worker whether every worker of the engine is busy: its
    /// commits may then wait longer to gather more (see [`GroupPolicy`]).
    pub fn workers_busy(&self, busy: bool) {
        self.busy.store(busy, Ordering::Relaxed);
    }
}

/// Commits of the crawl state: how many, how long they took, how many
/// finished URLs they carried.
#[derive(Debug, Default)]
pub struct CommitStats {
    /// Transactions committed.
    pub commits: AtomicU64,
    /// Their time, in nanoseconds.
    pub nanos: AtomicU64,
    /// Finished URLs they carried.
    pub pages: AtomicU64,
}

impl CommitStats {
    fn add(&self, pages: usize, took: std::time::Duration) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
        self.pages.fetch_add(pages as u64, Ordering::Relaxed);
    }
}

impl Drop for StateHandle {
    fn drop(&mut self) {
        let _ = self.tx.send(Command::Close);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the worker thread for `state`, writing records to `sink`. A
/// commit waits for at most `group_target` finished URLs (when the state
/// asks for group commit at all, [`CrawlState::commit_wait`]); the engine
/// gives a fraction of its workers, so that waiting never starves it.
pub fn spawn_worker(
    state: Box<dyn CrawlState>,
    sink: Box<dyn Sink>,
    group_target: usize,
) -> StateHandle {
    let (tx, commands) = channel();
    let (replies, rx) = unbounded_channel();
    let policy = GroupPolicy::new(state.commit_wait(), group_target);
    let commits = Arc::new(CommitStats::default());
    let counted = commits.clone();
    let closing = Arc::new(AtomicBool::new(false));
    let stopping = closing.clone();
    let busy = Arc::new(AtomicBool::new(false));
    let engine_busy = busy.clone();
    let thread = std::thread::Builder::new()
        .name("crawl-state".into())
        .spawn(move || {
            let inbox = Inbox {
                commands,
                peeked: None,
                busy: engine_busy,
            };
            run(state, sink, policy, inbox, replies, &counted, &stopping)
        })
        // Spawning a thread only fails when the OS is out of resources.
        .expect("the state thread starts");
    StateHandle {
        tx,
        rx,
        commits,
        closing,
        busy,
        thread: Some(thread),
    }
}

/// Commands that arrived during a commit and were not taken yet.
struct Inbox {
    commands: Receiver<Command>,
    /// One command taken to see whether more were waiting.
    peeked: Option<Command>,
    /// Whether every worker of the engine is busy.
    busy: Arc<AtomicBool>,
}

impl Inbox {
    /// The next command, waiting for it; `None` once the engine is gone.
    fn recv(&mut self) -> Option<Command> {
        self.peeked.take().or_else(|| self.commands.recv().ok())
    }

    /// True when no command is waiting.
    fn is_empty(&mut self) -> bool {
        if self.peeked.is_none() {
            self.peeked = self.commands.try_recv().ok();
        }
        self.peeked.is_none()
    }

    /// The commands of the next transaction: every one waiting now, and,
    /// when `policy` says to wait, every one that arrived by its deadline
    /// (the worker sleeps meanwhile, so that the engine's sends do not wake
    /// it one by one), up to [`MAX_COMMANDS`].
    fn gather(&mut self, first: Command, policy: &mut GroupPolicy) -> Vec<Command> {
        let mut gathered = vec![first];
        self.drain(&mut gathered);
        let finished = gathered.iter().filter(|c| is_finish(c)).count();
        policy.set_busy(self.busy.load(Ordering::Relaxed));
        // Loads feed the frontier and Close ends the run: never held back.
        if !gathered.iter().any(is_urgent)
            && gathered.len() < MAX_COMMANDS
            && let Some(deadline) = policy.deadline(finished, Instant::now())
        {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            self.drain(&mut gathered);
        }
        let finished = gathered.iter().filter(|c| is_finish(c)).count();
        policy.observe(finished, Instant::now());
        gathered
    }

    /// Takes the commands waiting now, up to [`MAX_COMMANDS`] in all.
    fn drain(&mut self, gathered: &mut Vec<Command>) {
        while gathered.len() < MAX_COMMANDS {
            match self.commands.try_recv() {
                Ok(c) => gathered.push(c),
                Err(_) => break,
            }
        }
    }
}

fn is_finish(c: &Command) -> bool {
    matches!(c, Command::Finish(..))
}

fn is_urgent(c: &Command) -> bool {
    // A poll of a busy engine may wait with the records it comes with.
    matches!(
        c,
        Command::Load { .. }
            | Command::Close
            | Command::Poll { sweep: true, .. }
            | Command::Verify
            | Command::TakeShards(_)
    )
}

fn run(
    mut state: Box<dyn CrawlState>,
    mut sink: Box<dyn Sink>,
    mut policy: GroupPolicy,
    mut inbox: Inbox,
    replies: UnboundedSender<Reply>,
    commits: &CommitStats,
    closing: &AtomicBool,
) {
    let mut began = Instant::now();
    let resumed = with_retry(|| {
        began = Instant::now();
        state.resume()
    });
    match resumed {
        Ok(r) => {
            let _ = replies.send(Reply::Resumed(r));
            let _ = replies.send(Reply::Confirmed(began));
        }
        Err(e) => {
            let _ = replies.send(Reply::Failed(e));
            return;
        }
    }
    while let Some(first) = inbox.recv() {
        let gathered = inbox.gather(first, &mut policy);
        let mut batch = Batch::default();
        let mut admits = Vec::new();
        let mut loads = Vec::new();
        let mut take: Vec<Vec<u32>> = Vec::new();
        let mut extra: Vec<Vec<u8>> = Vec::new();
        let mut close = false;
        for c in gathered {
            match c {
                Command::Finish(f, items) => {
                    batch.finished.push(*f);
                    admit_into(&mut batch, &mut admits, items);
                }
                Command::Admit(items) => admit_into(&mut batch, &mut admits, items),
                Command::Load {
                    slot,
                    authority,
                    limit,
                } => {
                    batch.load.push((authority, limit));
                    loads.push((slot, limit));
                }
                Command::Save(a) => batch.authorities.push(a),
                Command::Poll { sweep, due } => {
                    batch.poll = true;
                    batch.sweep |= sweep;
                    batch.due = batch.due.max(due);
                }
                Command::Verify => batch.verify = true,
                Command::Archive(bytes) => extra.push(bytes),
                Command::TakeShards(shards) => take.push(shards),
                Command::Close => close = true,
            }
        }
        for shards in take {
            if closing.load(Ordering::Acquire) {
                debug!(?shards, "not taking shards: the engine is stopping");
                continue;
            }
            match with_retry(|| state.take_shards(&shards)) {
                Ok(resumed) => {
                    let _ = replies.send(Reply::ShardsTaken(shards, resumed));
                }
                Err(e) => {
                    error!(error = %e, ?shards, "cannot take shards; stopping");
                    let _ = replies.send(Reply::Failed(e));
                    return;
                }
            }
        }
        let applying = Instant::now();
        let mut began = applying;
        let transact = !batch.is_empty();
        if transact || !extra.is_empty() {
            let mut attempts = 0;
            match with_retry(|| {
                // Archives first: a result never commits without its records.
                sink.before_commit(&batch.finished, &extra, attempts > 0)
                    .map_err(|e| StateError::Fatal(e.to_string()))?;
                attempts += 1;
                began = Instant::now();
                if !transact {
                    return Ok(());
                }
                state.apply(&mut batch)
            }) {
                Ok(()) => {
                    if transact {
                        commits.add(batch.finished.len(), began.elapsed());
                        let _ = replies.send(Reply::Confirmed(began));
                    }
                }
                Err(e) => {
                    if !matches!(e, StateError::Fenced(_)) {
                        error!(error = %e, "cannot write the crawl state; stopping");
                    }
                    // Nothing committed: what the archive wrote for it goes.
                    let _ = sink.before_commit(&[], &[], true);
                    let _ = replies.send(Reply::Failed(e));
                    return;
                }
            }
        }

        if !batch.finished.is_empty() {
            policy.observe_apply(applying.elapsed());
            // Durable now: the engine may reuse the workers before the
            // records reach the sink (the output is brought up to date on
            // resume).
            let _ = replies.send(Reply::Finished(batch.finished.len()));
        }
        if !admits.is_empty() {
            let pairs = admits
                .into_iter()
                .zip(batch.admitted.iter().copied())
                .collect();
            let _ = replies.send(Reply::Admitted(pairs));
        }
        for ((slot, limit), entries) in loads.into_iter().zip(batch.loaded.drain(..)) {
            let more = entries.len() >= limit;
            let requests = entries.into_iter().filter_map(request_of).collect();
            let _ = replies.send(Reply::Loaded {
                slot,
                requests,
                more,
            });
        }
        // After the loads: news found after a load of the same transaction
        // must reach a slot that is no longer loading.
        if batch.poll {
            let _ = replies.send(Reply::Polled(Polled {
                news: std::mem::take(&mut batch.news),
                open: batch.open,
                job_seen: batch.job_seen,
                job_requisites: batch.job_requisites,
                requeued: std::mem::take(&mut batch.requeued),
                next_due: batch.next_due,
                rates: std::mem::take(&mut batch.rates),
                stops: batch.stops,
            }));
        }
        let written = batch
            .finished
            .iter()
            .zip(recorded(&batch))
            .filter(|(_, new)| *new)
            .try_for_each(|(f, _)| sink.write_json(&f.record, &f.json));
        // Flush when there is nothing more to do right away, and at the end.
        let flushed = written.and_then(|()| {
            if close || inbox.is_empty() {
                sink.flush()
            } else {
                Ok(())
            }
        });
        if let Err(e) = flushed {
            let _ = replies.send(Reply::Failed(StateError::Fatal(e.to_string())));
            return;
        }
        if close {
            let _ = replies.send(Reply::Closed);
            return;
        }
    }
}

/// Adds `items` to the batch's admissions, keeping them for the reply.
fn admit_into(batch: &mut Batch, admits: &mut Vec<AdmitItem>, items: Vec<AdmitItem>) {
    for item in items {
        batch.admit.push((
            entry_of(item.key, &item.request),
            item.authority.clone(),
            item.loaded,
        ));
        admits.push(item);
    }
}

/// Whether each finished URL was recorded for the first time; a store
/// that does not say is taken as yes.
fn recorded(batch: &Batch) -> impl Iterator<Item = bool> + '_ {
    (0..batch.finished.len()).map(|i| batch.recorded.get(i).copied().unwrap_or(true))
}

/// Runs `op`, retrying with backoff while the store is unavailable.
fn with_retry<T>(mut op: impl FnMut() -> Result<T, StateError>) -> Result<T, StateError> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(200);
    loop {
        match op() {
            Err(StateError::Unavailable(why)) if started.elapsed() < MAX_OUTAGE => {
                warn!(
                    error = %why,
                    retry_in = ?backoff,
                    "crawl state store unavailable; retrying (the crawl waits, nothing is lost)"
                );
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
            Err(StateError::Unavailable(why)) => {
                return Err(StateError::Fatal(format!(
                    "store unavailable for more than {MAX_OUTAGE:?}: {why}"
                )));
            }
            other => {
                if started.elapsed() > Duration::from_secs(1) {
                    info!(after = ?started.elapsed(), "crawl state store is back");
                }
                return other;
            }
        }
    }
}

/// The stored form of a request.
pub fn entry_of(key: u128, request: &Request) -> FrontierEntry {
    FrontierEntry {
        key,
        url: request.url.to_string(),
        depth: request.depth,
        parent: request.parent.as_deref().map(str::to_owned),
        redirect_chain: request
            .redirect_chain
            .iter()
            .map(|u| u.to_string())
            .collect(),
        known: request.known.as_deref().cloned(),
    }
}

/// The job of a stored entry; `None` (logged) if its URL no longer parses.
pub fn request_of(e: FrontierEntry) -> Option<(u128, Request)> {
    match Url::parse(&e.url) {
        Ok(url) => Some((
            e.key,
            Request {
                url,
                depth: e.depth,
                parent: e.parent.map(Arc::from),
                redirect_chain: e.redirect_chain.into_iter().map(Arc::from).collect(),
                attempts: 0,
                known: e.known.map(Arc::new),
            },
        )),
        Err(err) => {
            error!(url = %e.url, error = %err, "stored URL does not parse; skipping it");
            None
        }
    }
}
