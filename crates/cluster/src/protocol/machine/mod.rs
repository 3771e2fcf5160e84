//! A cluster node's protocol as one pure state machine: events in,
//! commands out. It owns everything a node knows (its GroupState, its
//! task and the versions it last saw, the judgement of hearts, what it is
//! running) and decides everything a node does; a thin runtime
//! ([`crate::node`]) performs its [`Command`]s on a coordinator and feeds
//! the outcomes back as [`Event`]s. No I/O, no clock of its own (every
//! event comes with [`Now`]), so its tests script a whole life without a
//! coordinator.
//!
//! Contract with the runtime:
//! - [`Machine::start`], then [`Machine::handle`] for every event; each
//!   returns commands to perform **in order**. At most one of them asks
//!   for an answer ([`Command::Io`] or [`Command::Reconnect`]), and it is
//!   the last: the runtime performs it and hands the answer back
//!   ([`Event::Replied`], [`Event::Reconnected`]) before anything else.
//! - Outside events ([`Event::Tick`], [`Event::ItemDone`],
//!   [`Event::Changed`], [`Event::Session`], [`Event::Stop`]) are handed in
//!   only while no answer is awaited ([`Machine::awaiting`] is false).
//! - A batch of calls runs in order and stops at the first error; when a
//!   batch fails, the runtime releases the group lock if it holds it.
//!
//! | file | flows |
//! |---|---|
//! | `interface.rs` | events, commands, calls, replies |
//! | `mod.rs` | the agenda, errors and recovery |
//! | `membership.rs` | register, join, election, role, refresh, rejoin |
//! | `work.rs` | beat, the task watch, items started and recorded, queued tasks |
//! | `judge.rs` | hearts, fail-over with fencing, dead backups |
//! | `leave.rs` | graceful leave |

mod interface;
mod judge;
mod leave;
mod membership;
#[cfg(test)]
mod tests;
mod work;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::Duration;

use crawlkeeper_model::cluster::{GroupState, NodeName, Task};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

pub use self::interface::{Call, Command, Event, Exit, NodeError, Now, Reply};
use super::config::{ItemMode, NodeConfig};
use super::heart::HeartMonitor;
use super::roles::{self, Duty};
use super::task::ItemOutcome;
use crate::coordinator::{Op, OpResult, SessionState, Version};
use crate::error::{CoordError, ErrorClass};
use crate::metadata;
use crate::path::Layout;

/// Work to do next, in agenda order.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Register,
    Join,
    SyncRole,
    RefreshGroup,
    Duty,
    MaybeElect,
    Beat,
    Advance,
    Record(usize, ItemOutcome),
    ReloadTask,
    Rejoin,
    ClaimQueued,
    WatchTask,
    Judge,
    FailOver(Vec<NodeName>),
    CheckBackups,
    CheckPrimary,
    DropBackup(NodeName),
    Leave,
}

/// The answer awaited, with what the flow needs to go on.
#[derive(Debug)]
enum Flow {
    /// Nothing to do with the replies but go on with these steps.
    Ack(Vec<Step>),
    Reconnect,
    Register,
    JoinRead,
    JoinWrite(GroupState),
    Refresh(Duty),
    ElectRead,
    ElectWrite(GroupState),
    Beat,
    BeatConflict,
    StartItems(Vec<usize>, Task),
    Record(usize, ItemOutcome, Task),
    Reload,
    RejoinRead,
    ClaimList,
    ClaimRead(Vec<String>),
    ClaimTake(Task),
    Watch,
    Observe(Vec<NodeName>),
    FailOverRead(Vec<NodeName>),
    FailOverGather(judge::Gathering),
    FailOverCommit(GroupState),
    CheckBackups(Vec<NodeName>),
    CheckPrimary(NodeName),
    DropRead(NodeName),
    DropCommit(NodeName, GroupState),
    LeaveRead,
    LeaveGather(GroupState, Version, NodeName),
    Closing,
}

/// First pause before opening a new session again after a failed attempt.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// Longest pause between attempts to open a new session.
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// One node's protocol state.
pub struct Machine {
    cfg: NodeConfig,
    layout: Layout,
    group: GroupState,
    task: Task,
    task_version: Version,
    beat_version: Version,
    monitor: HeartMonitor,
    /// Session evidence is ignored until then (after a (re)join).
    grace_until: Instant,
    /// Runners with a live session are not judged by their silence until
    /// then (after a coordinator outage).
    excused_until: Instant,
    joined_at: Instant,
    /// The items in flight, by position.
    running: BTreeSet<usize>,
    /// Outcomes whose recording failed: recorded before anything else.
    unrecorded: VecDeque<(usize, ItemOutcome)>,
    /// Queued tasks seen by this Runner, with when it first saw each (a
    /// task meant for another Runner waits for it a while).
    queue_seen: HashMap<String, Instant>,
    /// Leaving with concurrent items: they were asked to halt, and end
    /// unrecorded (handed over unfinished).
    halting: bool,
    connected: bool,
    watch_armed: bool,
    /// After an error: no automatic work until the next tick.
    quiet: bool,
    stopping: bool,
    /// When the node was asked to stop (the leave's deadline counts from it).
    stop_at: Option<Instant>,
    /// The time of the event being handled.
    now: Option<Instant>,
    joined_once: bool,
    /// Opening a new session: the next pause if this attempt fails.
    recovering: Option<Duration>,
    done: bool,
    agenda: VecDeque<Step>,
    flow: Option<Flow>,
}

impl Machine {
    /// A machine for a node with these settings; refuses invalid ones.
    pub fn new(cfg: NodeConfig, now: Instant) -> Result<Self, NodeError> {
        cfg.heartbeat.validate()?;
        let layout = Layout::new(&cfg.group)?;
        let hb = &cfg.heartbeat;
        Ok(Machine {
            monitor: HeartMonitor::new(hb.update_timeout, hb.heart_rhythm_timeout),
            layout,
            group: GroupState::default(),
            task: Task::default(),
            task_version: 0,
            beat_version: 0,
            grace_until: now,
            excused_until: now,
            joined_at: now,
            running: BTreeSet::new(),
            unrecorded: VecDeque::new(),
            queue_seen: HashMap::new(),
            halting: false,
            connected: true,
            watch_armed: false,
            quiet: false,
            stopping: false,
            stop_at: None,
            now: None,
            joined_once: false,
            recovering: None,
            done: false,
            agenda: VecDeque::new(),
            flow: None,
            cfg,
        })
    }

    /// This node's name.
    pub fn name(&self) -> &NodeName {
        &self.cfg.name
    }

    /// The GroupState as this node last saw it.
    pub fn group(&self) -> &GroupState {
        &self.group
    }

    /// This node's task as it last saw it.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// This node's duty in the GroupState it last saw.
    pub fn duty(&self) -> Duty {
        roles::duty(&self.group, &self.cfg.name)
    }

    /// The positions of the items in flight.
    pub fn running(&self) -> &BTreeSet<usize> {
        &self.running
    }

    /// How often the node beats: [`Event::Tick`] is due at this rate.
    pub fn update_time(&self) -> Duration {
        self.cfg.heartbeat.update_time
    }

    /// How long a graceful leave may wait for the coordinator.
    pub fn leave_timeout(&self) -> Duration {
        self.cfg.leave_timeout
    }

    /// Whether an answer is awaited (outside events must wait).
    pub fn awaiting(&self) -> bool {
        self.flow.is_some()
    }

    /// Whether the node's life is over.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Registers and joins the group: the first commands.
    pub fn start(&mut self, now: Now) -> Vec<Command> {
        let mut out = Vec::new();
        self.then([Step::Register, Step::Join]);
        self.pump(now, &mut out);
        out
    }

    /// Handles one event; returns the commands it calls for.
    pub fn handle(&mut self, now: Now, event: Event) -> Vec<Command> {
        let mut out = Vec::new();
        if self.done {
            return out;
        }
        self.now = Some(now.mono);
        match event {
            Event::Replied(result) => {
                let flow = self.flow.take().expect("a reply answers a call");
                match result {
                    Ok(replies) => self.on_reply(flow, replies, now, &mut out),
                    Err(e) => self.on_error(flow, e, &mut out),
                }
            }
            Event::Reconnected(result) => {
                self.flow = None;
                match result {
                    Ok(()) => {
                        self.connected = true;
                        self.then([Step::Register, Step::Join, Step::Advance]);
                    }
                    Err(e) => self.fail(e, &mut out),
                }
            }
            Event::Tick
                if self.leave_overdue() && (!self.connected || self.recovering.is_some()) =>
            {
                self.abandon(&mut out);
            }
            Event::Tick => self.on_tick(),
            Event::Session(state) => self.on_session(state, now, &mut out),
            Event::ItemDone { position, outcome } => {
                let ours = self.running.remove(&position);
                if self.halting || !ours {
                    // Halted for a leave (handed over unfinished), or no
                    // longer this node's item.
                    self.pump(now, &mut out);
                    return out;
                }
                let outcome = outcome.unwrap_or_else(|| ItemOutcome {
                    status_code: None,
                    response: None,
                    error: Some("the task runner panicked".into()),
                });
                self.then([Step::Record(position, outcome)]);
                self.agenda.push_back(Step::Advance);
            }
            Event::Changed(path) => {
                if path == self.layout.task(&self.cfg.name) {
                    self.watch_armed = false;
                    self.then([Step::ReloadTask, Step::Advance]);
                }
            }
            Event::Stop => {
                self.stopping = true;
                self.stop_at = Some(now.mono);
                if self.cfg.items == ItemMode::Concurrent && !self.running.is_empty() {
                    self.halting = true;
                    out.push(Command::Halt);
                }
            }
        }
        self.pump(now, &mut out);
        out
    }

    fn on_tick(&mut self) {
        self.quiet = false;
        if !self.connected || self.recovering.is_some() || !self.joined_once {
            return;
        }
        if self.stopping {
            self.then([Step::Beat]);
        } else {
            self.then([Step::Beat, Step::RefreshGroup, Step::Duty, Step::Advance]);
        }
    }

    fn on_session(&mut self, state: SessionState, now: Now, out: &mut Vec<Command>) {
        match state {
            SessionState::Connected => {
                if !self.connected {
                    // Back from an outage: judge afresh, nobody died of it.
                    // The others' sessions live on the server's clock: a
                    // Runner reconnecting later than us is waited for as
                    // long as its session may last.
                    self.reset_judgement(now.mono);
                    let hb = &self.cfg.heartbeat;
                    let limit = hb.update_timeout * hb.heart_rhythm_timeout;
                    self.excused_until = now.mono + limit.max(self.cfg.session_timeout);
                }
                self.connected = true;
            }
            SessionState::Suspended => self.connected = false,
            SessionState::Expired => {
                self.connected = false;
                self.fail(CoordError::SessionExpired, out);
            }
            SessionState::Closed => {}
        }
    }

    /// Starts steps until one awaits an answer or the agenda is empty; then
    /// the idle work: keep the task watched, leave when asked.
    fn pump(&mut self, now: Now, out: &mut Vec<Command>) {
        while self.flow.is_none() && !self.done {
            if let Some(step) = self.agenda.pop_front() {
                self.begin(step, now, out);
                continue;
            }
            if self.quiet || self.recovering.is_some() || !self.joined_once {
                return;
            }
            if self.stopping && self.running.is_empty() {
                self.begin(Step::Leave, now, out);
            } else if !self.watch_armed && !self.stopping {
                self.begin(Step::WatchTask, now, out);
            } else {
                return;
            }
        }
    }

    fn begin(&mut self, step: Step, now: Now, out: &mut Vec<Command>) {
        match step {
            Step::Register => self.register(out),
            Step::Join => self.join(out),
            Step::SyncRole => self.sync_role(out),
            Step::RefreshGroup => self.refresh_group(out),
            Step::Duty => self.act_on_duty(),
            Step::MaybeElect => self.maybe_elect(now, out),
            Step::Beat => self.beat(now, out),
            Step::Advance => self.advance(out),
            Step::Record(position, outcome) => self.record(position, outcome, out),
            Step::ReloadTask => self.reload_task(out),
            Step::Rejoin => self.rejoin(out),
            Step::ClaimQueued => self.claim_queued(out),
            Step::WatchTask => self.watch_task(out),
            Step::Judge => self.judge(now, out),
            Step::FailOver(dead) => self.fail_over(dead, out),
            Step::CheckBackups => self.check_backups(now, out),
            Step::CheckPrimary => self.check_primary(now, out),
            Step::DropBackup(b) => self.drop_backup(b, out),
            Step::Leave => self.leave(out),
        }
    }

    fn on_reply(&mut self, flow: Flow, replies: Vec<Reply>, now: Now, out: &mut Vec<Command>) {
        let mut r = replies.into_iter();
        match flow {
            Flow::Ack(steps) => self.then(steps),
            Flow::Reconnect => unreachable!("a reconnection is answered by Reconnected"),
            Flow::Register => self.registered(r, out),
            Flow::JoinRead => self.join_read(r, out),
            Flow::JoinWrite(g) => self.joined(g, now),
            Flow::Refresh(before) => self.refreshed(before, next(&mut r), now, out),
            Flow::ElectRead => self.elect_read(r, out),
            Flow::ElectWrite(g) => {
                tracing::info!(runners = ?g.current_runner, backups = ?g.current_backup, "election");
                self.group = g;
                self.then([Step::SyncRole]);
            }
            Flow::Beat => self.beat_version = next(&mut r).version(),
            Flow::BeatConflict => self.beat_conflict(next(&mut r), out),
            Flow::StartItems(positions, t) => self.items_started(positions, t, next(&mut r), out),
            Flow::Record(_, _, t) => self.adopt(t, next(&mut r).version()),
            Flow::Reload => self.reloaded(next(&mut r), out),
            Flow::RejoinRead => self.rejoin_read(next(&mut r), out),
            Flow::ClaimList => self.claim_list(next(&mut r), now, out),
            Flow::ClaimRead(paths) => self.claim_read(paths, r, now, out),
            Flow::ClaimTake(t) => self.claimed(t, next(&mut r)),
            Flow::Watch => self.watched(next(&mut r)),
            Flow::Observe(runners) => self.observed(runners, r, now),
            Flow::FailOverRead(dead) => self.fail_over_read(dead, r, out),
            Flow::FailOverGather(g) => self.fail_over_gathered(g, r, out),
            Flow::FailOverCommit(g) => self.failed_over(g),
            Flow::CheckBackups(names) => self.backups_checked(names, r),
            Flow::CheckPrimary(p) => {
                if next(&mut r).exists().is_none() {
                    self.then([Step::DropBackup(p)]);
                }
            }
            Flow::DropRead(b) => self.drop_read(b, r, out),
            Flow::DropCommit(b, g) => {
                tracing::warn!(dead = %b, "backup runner dead");
                self.group = g;
                self.then([Step::SyncRole]);
            }
            Flow::LeaveRead => self.leave_read(r, now, out),
            Flow::LeaveGather(g, gv, heir) => {
                let heir_version = next(&mut r).value().map(|(_, v)| v);
                self.leave_commit(g, gv, Some((heir, heir_version)), now, out);
            }
            Flow::Closing => {
                tracing::info!(node = %self.cfg.name, "left the group; task handed over");
                self.done = true;
                out.push(Command::Exit(Ok(Exit::Left)));
            }
        }
    }

    /// An error answered a call: some are outcomes a flow expects (a
    /// lost compare-and-set), the rest go to [`Machine::fail`].
    fn on_error(&mut self, flow: Flow, e: CoordError, out: &mut Vec<Command>) {
        let conflict = matches!(e, CoordError::BadVersion(_));
        match flow {
            Flow::Beat if conflict => {
                let path = self.layout.heartbeat(&self.cfg.name);
                self.io(Flow::BeatConflict, vec![Call::Get(path)], out);
            }
            Flow::StartItems(..) if conflict => self.then([Step::ReloadTask, Step::Advance]),
            Flow::Record(position, outcome, _) => {
                // Kept, and recorded first when the node goes on.
                self.unrecorded.push_front((position, outcome));
                if conflict {
                    self.then([Step::ReloadTask]);
                } else {
                    self.fail(e, out);
                }
            }
            Flow::ClaimTake(_) if conflict || matches!(e, CoordError::NoNode(_)) => {
                // Another Runner claimed it first.
            }
            _ => self.fail(e, out),
        }
    }

    /// Coordinator trouble outside what a flow expects: the agenda is
    /// dropped (the next tick starts afresh). A lost connection is waited
    /// out; an expired session is replaced by a new one (registering and
    /// joining again, with backoff while that fails); anything else fatal
    /// ends the node. Before the node first joined, every error ends it.
    fn fail(&mut self, e: CoordError, out: &mut Vec<Command>) {
        self.agenda.clear();
        self.flow = None;
        self.watch_armed = false;
        self.quiet = true;
        let fatal = e.class() == ErrorClass::Fatal && e != CoordError::SessionExpired;
        if self.stopping && (e == CoordError::SessionExpired || self.leave_overdue()) {
            // Registering again only to leave would hold the stop up for
            // as long as the coordinator is away.
            return self.abandon(out);
        }
        if let Some(pause) = self.recovering {
            if fatal {
                return self.exit(NodeError::Coord(e), out);
            }
            tracing::debug!(node = %self.cfg.name, error = %e, "new session failed; retrying");
            self.recovering = Some((pause * 2).min(LONGEST_PAUSE));
            return self.reconnect(pause, out);
        }
        if !self.joined_once || fatal {
            return self.exit(NodeError::Coord(e), out);
        }
        if e == CoordError::SessionExpired {
            tracing::warn!(node = %self.cfg.name, "coordinator session expired; registering again");
            self.recovering = Some(FIRST_PAUSE);
            return self.reconnect(Duration::ZERO, out);
        }
        tracing::debug!(node = %self.cfg.name, error = %e, "coordinator trouble; retrying");
    }

    /// True once a node asked to stop has waited its leave timeout.
    fn leave_overdue(&self) -> bool {
        match (self.stop_at, self.now) {
            (Some(at), Some(now)) => now.saturating_duration_since(at) >= self.cfg.leave_timeout,
            _ => false,
        }
    }

    /// Stops without leaving (see [`Exit::Abandoned`]).
    fn abandon(&mut self, out: &mut Vec<Command>) {
        tracing::warn!(
            node = %self.cfg.name,
            "could not reach the coordinator to leave; stopping without handing the task over \
             (the group will judge this node dead and fail its task over)"
        );
        self.done = true;
        self.agenda.clear();
        self.flow = None;
        out.push(Command::Exit(Ok(Exit::Abandoned)));
    }

    fn reconnect(&mut self, after: Duration, out: &mut Vec<Command>) {
        self.connected = false;
        self.flow = Some(Flow::Reconnect);
        out.push(Command::Reconnect { after });
    }

    fn exit(&mut self, why: NodeError, out: &mut Vec<Command>) {
        self.done = true;
        self.agenda.clear();
        self.flow = None;
        out.push(Command::Exit(Err(why)));
    }

    /// Puts steps at the front of the agenda, in this order.
    fn then(&mut self, steps: impl IntoIterator<Item = Step, IntoIter: DoubleEndedIterator>) {
        for step in steps.into_iter().rev() {
            self.agenda.push_front(step);
        }
    }

    /// Sends a batch and awaits its answer in `flow`.
    fn io(&mut self, flow: Flow, calls: Vec<Call>, out: &mut Vec<Command>) {
        debug_assert!(self.flow.is_none(), "one answer awaited at a time");
        self.flow = Some(flow);
        out.push(Command::Io(calls));
    }

    fn lock(&self) -> Call {
        Call::Lock {
            dir: self.layout.group_lock(),
            timeout: self.cfg.lock_timeout,
        }
    }

    /// Decodes a meta-data object; a value that does not decode ends the
    /// node (something else wrote the group's meta-data).
    fn decode<T: DeserializeOwned>(
        &mut self,
        path: &str,
        bytes: &[u8],
        out: &mut Vec<Command>,
    ) -> Option<T> {
        match metadata::decode(path, bytes) {
            Ok(v) => Some(v),
            Err(e) => {
                self.exit(e.into(), out);
                None
            }
        }
    }

    fn reset_judgement(&mut self, now: Instant) {
        let hb = &self.cfg.heartbeat;
        self.monitor = HeartMonitor::new(hb.update_timeout, hb.heart_rhythm_timeout);
        self.grace_until = now + hb.update_timeout * hb.heart_rhythm_timeout;
    }
}

fn next(replies: &mut impl Iterator<Item = Reply>) -> Reply {
    replies
        .next()
        .expect("the runtime answers every call of a batch")
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("meta-data objects always serialize")
}

/// A compare-and-set of a meta-data object.
fn set(path: String, value: &impl Serialize, version: Option<Version>) -> Call {
    Call::Set {
        path,
        data: encode(value),
        version,
    }
}

/// A compare-and-set inside a transaction.
fn set_op(path: String, value: &impl Serialize, version: Option<Version>) -> Op {
    Op::Set {
        path,
        data: encode(value),
        version,
    }
}
