//! A cluster node: the thin async runtime that drives the protocol's
//! state machine ([`Machine`]) on a [`Coordinator`]. It decides nothing:
//! it turns clock ticks, finished items, fired watches, session changes
//! and a stop request into [`Event`]s, and performs the [`Command`]s that
//! come back (coordinator calls, items run through a [`TaskRunner`],
//! new sessions).
//!
//! What the node does (see [`crate::protocol::machine`]): it registers its
//! meta-data and an ephemeral `session` node, joins GroupState under the
//! group lock, takes part in the election; then every `update_time` it
//! beats and acts on its duty: a Runner runs its task's items (woken by a
//! watch on its task node, not by polling) and claims queued tasks when
//! idle; the judge (primary backup, or any Runner when no backup is left)
//! judges Runners' hearts and fails dead ones over in one transaction that
//! fences their task nodes; secondary backups watch the primary.
//!
//! | file | what it does |
//! |---|---|
//! | `mod.rs` | the node: start, the event loop, items, new sessions |
//! | `exec.rs` | performing a batch of coordinator calls |
//! | `runner.rs` | the [`TaskRunner`] trait |
//! | `submit.rs` | task submission |

mod exec;
mod runner;
mod submit;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crawlkeeper_model::cluster::{NodeName, RunningContent};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

pub use self::runner::{ItemOutcome, TaskRunner};
pub use self::submit::{Placement, Spread, SubmitError, share_out, spread, spread_among, submit};
use crate::coordinator::{Coordinator, SessionState, Watch};
use crate::error::CoordError;
use crate::lock::LockGuard;
pub use crate::protocol::config::{ItemMode, NodeConfig};
use crate::protocol::machine::{Command, Event, Machine, Now};
pub use crate::protocol::machine::{Exit, NodeError};

/// Opens a new session (at start, and after the session expired).
pub type Connect<C> =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<C, CoordError>> + Send>> + Send + Sync>;

type Result<T, E = NodeError> = std::result::Result<T, E>;

/// One member of a group.
pub struct ClusterNode<C: Coordinator, R: TaskRunner> {
    connect: Connect<C>,
    coord: C,
    state_rx: watch::Receiver<SessionState>,
    machine: Machine,
    runner: Arc<R>,
    /// The group lock, while the machine holds it.
    lock: Option<LockGuard<C>>,
    /// The watch the machine asked for, and its node.
    watch: Option<(String, Watch)>,
    /// The items in flight, with their positions by task.
    running: JoinSet<ItemOutcome>,
    positions: HashMap<tokio::task::Id, usize>,
}

fn now() -> Now {
    Now {
        mono: Instant::now(),
        wall: chrono::Utc::now().naive_utc(),
    }
}

impl<C: Coordinator, R: TaskRunner> ClusterNode<C, R> {
    /// Connects, registers and joins the group.
    pub async fn start(connect: Connect<C>, cfg: NodeConfig, runner: R) -> Result<Self> {
        let machine = Machine::new(cfg, Instant::now())?;
        let coord = connect().await?;
        let mut state_rx = coord.session_state();
        state_rx.mark_unchanged();
        let mut node = ClusterNode {
            connect,
            coord,
            state_rx,
            machine,
            runner: Arc::new(runner),
            lock: None,
            watch: None,
            running: JoinSet::new(),
            positions: HashMap::new(),
        };
        let commands = node.machine.start(now());
        match node.perform(commands).await {
            Some(Err(e)) => Err(e),
            Some(Ok(_)) => unreachable!("a node cannot leave before it runs"),
            None => Ok(node),
        }
    }

    /// This node's name.
    pub fn name(&self) -> &NodeName {
        self.machine.name()
    }

    /// The coordinator session in use.
    pub fn coordinator(&self) -> &C {
        &self.coord
    }

    /// Runs until `stop` turns true, then leaves the group gracefully.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) -> Result<Exit> {
        let mut tick = tokio::time::interval(self.machine.update_time());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stop_sent = false;
        let mut stop_open = true;
        let mut session_open = true;
        // Once asked to stop, the node is gone by then whatever the
        // coordinator does: a request or a reconnection that hangs cannot
        // hold the stop up (the machine gives up at its leave timeout; this
        // bounds the runtime's awaits too).
        let mut gone_by: Option<tokio::time::Instant> = None;
        loop {
            let event = if !stop_sent && *stop.borrow() {
                stop_sent = true;
                let grace = self.machine.leave_timeout() + self.machine.update_time() * 4;
                gone_by = Some(tokio::time::Instant::now() + grace);
                Event::Stop
            } else {
                let running = async {
                    match self.running.join_next_with_id().await {
                        Some(Ok((id, outcome))) => (id, Some(outcome)),
                        Some(Err(e)) => (e.id(), None),
                        None => std::future::pending().await,
                    }
                };
                let watched = async {
                    match self.watch.as_mut() {
                        Some((_, w)) => {
                            w.await;
                        }
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = tick.tick() => Event::Tick,
                    (id, outcome) = running => match self.positions.remove(&id) {
                        Some(position) => Event::ItemDone { position, outcome },
                        None => continue,
                    },
                    () = watched => {
                        let (path, _) = self.watch.take().expect("a watch fired");
                        Event::Changed(path)
                    }
                    changed = self.state_rx.changed(), if session_open => match changed {
                        Ok(()) => Event::Session(*self.state_rx.borrow_and_update()),
                        Err(_) => {
                            session_open = false;
                            continue;
                        }
                    },
                    changed = stop.changed(), if stop_open && !stop_sent => {
                        if changed.is_err() {
                            stop_open = false;
                        }
                        continue;
                    }
                }
            };
            let commands = self.machine.handle(now(), event);
            let performed = match gone_by {
                Some(at) => match tokio::time::timeout_at(at, self.perform(commands)).await {
                    Ok(performed) => performed,
                    Err(_) => {
                        tracing::warn!("the coordinator held the leave up; stopping without it");
                        self.lock = None;
                        self.abort_items();
                        return Ok(Exit::Abandoned);
                    }
                },
                None => self.perform(commands).await,
            };
            if let Some(exit) = performed {
                return exit;
            }
        }
    }

    /// Performs commands in order, handing every answer back to the
    /// machine, until it awaits nothing; `Some` when the node's life ended.
    async fn perform(&mut self, commands: Vec<Command>) -> Option<Result<Exit>> {
        let mut queue = std::collections::VecDeque::from(commands);
        while let Some(command) = queue.pop_front() {
            let answer = match command {
                Command::Io(calls) => {
                    let result = self.batch(calls).await;
                    if result.is_err() {
                        // A failed batch releases the lock (dropping the
                        // guard deletes its node when it can).
                        self.lock = None;
                    }
                    Event::Replied(result)
                }
                Command::Run { position, item } => {
                    self.start_item(position, item);
                    continue;
                }
                Command::Abort => {
                    self.abort_items();
                    continue;
                }
                Command::Halt => {
                    self.runner.halt();
                    continue;
                }
                Command::Reconnect { after } => Event::Reconnected(self.reconnect(after).await),
                Command::Exit(exit) => {
                    self.lock = None;
                    self.abort_items();
                    return Some(exit);
                }
            };
            queue.extend(self.machine.handle(now(), answer));
        }
        None
    }

    fn start_item(&mut self, position: usize, item: RunningContent) {
        let runner = self.runner.clone();
        let handle = self.running.spawn(async move { runner.run(&item).await });
        self.positions.insert(handle.id(), position);
    }

    /// Cancels every item in flight (none reports back).
    fn abort_items(&mut self) {
        self.running.abort_all();
        self.running.detach_all();
        self.positions.clear();
    }

    /// Drops the session (its lock and watch with it) and opens a new one.
    async fn reconnect(&mut self, after: std::time::Duration) -> Result<(), CoordError> {
        self.lock = None;
        self.watch = None;
        tokio::time::sleep(after).await;
        let coord = (self.connect)().await?;
        self.state_rx = coord.session_state();
        self.state_rx.mark_unchanged();
        self.coord = coord;
        Ok(())
    }
}
