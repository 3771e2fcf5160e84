//! A test bench for the machine with no I/O at all: nodes' machines are
//! driven by hand, their calls answered synchronously from the memory
//! backend's tree, the clock moved by the test. Items never run on their
//! own: the test finishes them.

use std::time::Duration;

use crawlkeeper_model::cluster::{Heartbeat, NodeName, NodeState, RunningContent, Task, TaskId};

use super::*;
use crate::coordinator::CreateMode;
use crate::memory::tree::{Change, Tree};

/// One simulated node.
pub(super) struct Sim {
    pub machine: Machine,
    session: u64,
    /// The items the node runs now, by position.
    pub running: std::collections::BTreeMap<usize, RunningContent>,
    /// How many times it was asked to halt its items.
    pub halted: usize,
    /// Every item it started, by task id.
    pub started: Vec<String>,
    pub aborted: usize,
    pub exit: Option<Result<Exit, NodeError>>,
    watching: Option<String>,
    /// Requests it sent, in order.
    pub sent: Vec<Call>,
    pub reconnects: Vec<Duration>,
    /// Paused: handles nothing until thawed (events wait).
    frozen: bool,
}

/// A failure to inject: the next call of `node` matching `when`.
struct Fault {
    node: usize,
    when: fn(&Call) -> bool,
    error: CoordError,
}

pub(super) struct World {
    tree: Tree,
    lock: Option<usize>,
    next_session: u64,
    pub nodes: Vec<Sim>,
    base: Instant,
    pub elapsed: Duration,
    faults: Vec<Fault>,
    /// Watches fired, waiting for delivery.
    changed: Vec<(usize, String)>,
}

pub(super) const GROUP: &str = "g";

pub(super) fn name(s: &str) -> NodeName {
    s.parse().expect("a test node name")
}

/// Settings with SmoothCrawler-Cluster's heartbeat defaults (500 ms, 2 s, 3).
pub(super) fn config(me: &str, runners: usize, backups: usize) -> NodeConfig {
    NodeConfig::new(GROUP, name(me), runners, backups)
}

pub(super) fn items(n: usize) -> Task {
    Task {
        running_content: (0..n)
            .map(|i| {
                RunningContent::get(TaskId::Int(i as i64 * 10), format!("http://127.0.0.1/{i}"))
            })
            .collect(),
        ..Task::default()
    }
}

pub(super) fn ok(status: u16) -> ItemOutcome {
    ItemOutcome {
        status_code: Some(status),
        response: None,
        error: None,
    }
}

impl World {
    pub fn new() -> Self {
        World {
            tree: Tree::default(),
            lock: None,
            next_session: 1,
            nodes: Vec::new(),
            base: Instant::now(),
            elapsed: Duration::ZERO,
            faults: Vec::new(),
            changed: Vec::new(),
        }
    }

    pub fn now(&self) -> Now {
        Now {
            mono: self.base + self.elapsed,
            wall: chrono::DateTime::from_timestamp(1_700_000_000, 0)
                .expect("a valid time")
                .naive_utc()
                + self.elapsed,
        }
    }

    pub fn layout(&self) -> Layout {
        Layout::new(GROUP).expect("a valid group")
    }

    /// Adds a node and starts it (registered and joined when it returns).
    pub fn add(&mut self, cfg: NodeConfig) -> usize {
        let mut machine = Machine::new(cfg, self.now().mono).expect("valid settings");
        let commands = machine.start(self.now());
        self.nodes.push(Sim {
            machine,
            session: self.next_session,
            running: Default::default(),
            halted: 0,
            started: Vec::new(),
            aborted: 0,
            exit: None,
            watching: None,
            sent: Vec::new(),
            reconnects: Vec::new(),
            frozen: false,
        });
        self.next_session += 1;
        let i = self.nodes.len() - 1;
        self.perform(i, commands);
        self.flush();
        i
    }

    /// Hands an event to a node and performs what it asks for.
    pub fn deliver(&mut self, i: usize, event: Event) {
        assert!(
            !self.nodes[i].machine.awaiting(),
            "outside events wait for answers"
        );
        let now = self.now();
        let commands = self.nodes[i].machine.handle(now, event);
        self.perform(i, commands);
        self.flush();
    }

    pub fn tick(&mut self, i: usize) {
        self.deliver(i, Event::Tick);
    }

    /// Moves the clock by `step` and ticks every live node, `times` times.
    pub fn run_for(&mut self, step: Duration, times: usize, nodes: &[usize]) {
        for _ in 0..times {
            self.elapsed += step;
            for &i in nodes {
                if self.nodes[i].exit.is_none() && !self.nodes[i].frozen {
                    self.tick(i);
                }
            }
        }
    }

    /// Finishes the item node `i` runs (its first, when it runs several).
    pub fn finish(&mut self, i: usize, outcome: ItemOutcome) {
        let (&position, _) = self.nodes[i]
            .running
            .first_key_value()
            .expect("an item running");
        self.finish_at(i, position, outcome);
    }

    /// Finishes the item at `position` that node `i` runs.
    pub fn finish_at(&mut self, i: usize, position: usize, outcome: ItemOutcome) {
        self.nodes[i]
            .running
            .remove(&position)
            .expect("that item running");
        self.deliver(
            i,
            Event::ItemDone {
                position,
                outcome: Some(outcome),
            },
        );
    }

    /// The process dies: its session's ephemeral nodes go when the session
    /// expires (at once here), and it never acts again.
    pub fn kill(&mut self, i: usize) {
        let session = self.nodes[i].session;
        let mut changes = Vec::new();
        for path in self.tree.owned_by(session) {
            self.tree
                .delete(&path, None, &mut changes)
                .expect("an ephemeral node");
        }
        self.nodes[i].exit = Some(Ok(Exit::Left));
        self.nodes[i].running.clear();
    }

    /// The process pauses (a long GC, a stopped VM): its session lives on,
    /// but it neither beats nor handles anything.
    pub fn freeze(&mut self, i: usize) {
        self.nodes[i].frozen = true;
    }

    /// The paused process goes on: events that waited are handled.
    pub fn thaw(&mut self, i: usize) {
        self.nodes[i].frozen = false;
        self.flush();
    }

    /// Fails node `i`'s next call matching `when` with `error`.
    pub fn fail_next(&mut self, i: usize, when: fn(&Call) -> bool, error: CoordError) {
        self.faults.push(Fault {
            node: i,
            when,
            error,
        });
    }

    /// Writes a node from outside (a submitter, an operator); watches fire.
    pub fn write<T: Serialize>(&mut self, path: &str, value: &T) {
        let mut changes = Vec::new();
        self.tree
            .set(path, &encode(value), None, &mut changes)
            .expect("the node exists");
        self.notify(changes);
        self.flush();
    }

    pub fn read<T: DeserializeOwned>(&self, path: &str) -> T {
        let node = self.tree.get(path).expect("the node exists");
        serde_json::from_slice(&node.data).expect("meta-data decodes")
    }

    pub fn group(&self) -> GroupState {
        self.read(&self.layout().group_state())
    }

    pub fn task(&self, node: &str) -> Task {
        self.read(&self.layout().task(&name(node)))
    }

    pub fn heart(&self, node: &str) -> Heartbeat {
        self.read(&self.layout().heartbeat(&name(node)))
    }

    pub fn role(&self, node: &str) -> crawlkeeper_model::cluster::CrawlerRole {
        self.read::<NodeState>(&self.layout().node_state(&name(node)))
            .role
    }

    fn perform(&mut self, i: usize, commands: Vec<Command>) {
        let mut queue = std::collections::VecDeque::from(commands);
        while let Some(command) = queue.pop_front() {
            let answer = match command {
                Command::Io(calls) => {
                    let result = self.serve(i, calls);
                    if result.is_err() && self.lock == Some(i) {
                        self.lock = None;
                    }
                    Event::Replied(result)
                }
                Command::Run { position, item } => {
                    self.nodes[i].started.push(item.task_id.to_string());
                    self.nodes[i].running.insert(position, item);
                    continue;
                }
                Command::Abort => {
                    self.nodes[i].aborted += 1;
                    self.nodes[i].running.clear();
                    continue;
                }
                Command::Halt => {
                    self.nodes[i].halted += 1;
                    continue;
                }
                Command::Reconnect { after } => {
                    self.nodes[i].reconnects.push(after);
                    if self.lock == Some(i) {
                        self.lock = None;
                    }
                    self.nodes[i].watching = None;
                    let session = self.next_session;
                    self.next_session += 1;
                    self.nodes[i].session = session;
                    match self.take_fault(i, &Call::Close) {
                        Some(e) => Event::Reconnected(Err(e)),
                        None => Event::Reconnected(Ok(())),
                    }
                }
                Command::Exit(exit) => {
                    self.nodes[i].exit = Some(exit);
                    return;
                }
            };
            let now = self.now();
            queue.extend(self.nodes[i].machine.handle(now, answer));
        }
    }

    /// Delivers fired watches.
    fn flush(&mut self) {
        let mut waiting = Vec::new();
        while let Some((i, path)) = self.changed.pop() {
            if self.nodes[i].frozen {
                waiting.push((i, path));
            } else if self.nodes[i].exit.is_none() && !self.nodes[i].machine.awaiting() {
                self.deliver(i, Event::Changed(path));
            }
        }
        self.changed.extend(waiting);
    }

    fn take_fault(&mut self, i: usize, call: &Call) -> Option<CoordError> {
        let at = self
            .faults
            .iter()
            .position(|f| f.node == i && (f.when)(call))?;
        Some(self.faults.remove(at).error)
    }

    fn serve(&mut self, i: usize, calls: Vec<Call>) -> Result<Vec<Reply>, CoordError> {
        let mut replies = Vec::new();
        for call in calls {
            self.nodes[i].sent.push(call.clone());
            if let Some(e) = self.take_fault(i, &call) {
                return Err(e);
            }
            replies.push(self.one(i, call)?);
        }
        Ok(replies)
    }

    fn one(&mut self, i: usize, call: Call) -> Result<Reply, CoordError> {
        let session = self.nodes[i].session;
        let mut changes = Vec::new();
        let reply = match call {
            Call::Lock { dir, .. } => match self.lock {
                Some(holder) if holder != i => {
                    return Err(CoordError::LockTimeout {
                        path: dir,
                        waited: Duration::ZERO,
                    });
                }
                _ => {
                    self.lock = Some(i);
                    Reply::Done
                }
            },
            Call::Unlock => {
                self.lock = None;
                Reply::Done
            }
            Call::CreateAll(path) => {
                let mut at = String::new();
                for part in path.split('/').filter(|p| !p.is_empty()) {
                    at = format!("{at}/{part}");
                    match self
                        .tree
                        .create(&at, b"", CreateMode::Persistent, 0, &mut changes)
                    {
                        Ok(_) | Err(CoordError::NodeExists(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
                Reply::Done
            }
            Call::Get(path) => Reply::Value(self.get(&path)),
            Call::GetOrCreate { path, data } => {
                if self.get(&path).is_none() {
                    self.tree
                        .create(&path, &data, CreateMode::Persistent, 0, &mut changes)?;
                }
                Reply::Value(self.get(&path))
            }
            Call::GetAndWatch(path) => {
                self.nodes[i].watching = Some(path.clone());
                Reply::Value(self.get(&path))
            }
            Call::Exists(path) => Reply::Exists(self.tree.get(&path).map(|n| n.version)),
            Call::Children(path) => Reply::Children(self.tree.children(&path)?),
            Call::Set {
                path,
                data,
                version,
            } => Reply::Version(self.tree.set(&path, &data, version, &mut changes)?),
            Call::Put { path, data } => match self.tree.set(&path, &data, None, &mut changes) {
                Ok(v) => Reply::Version(v),
                Err(CoordError::NoNode(_)) => {
                    self.tree
                        .create(&path, &data, CreateMode::Persistent, 0, &mut changes)?;
                    Reply::Version(0)
                }
                Err(e) => return Err(e),
            },
            Call::Ephemeral(path) => {
                if self.tree.get(&path).is_some() {
                    self.tree.delete(&path, None, &mut changes)?;
                }
                self.tree
                    .create(&path, b"", CreateMode::Ephemeral, session, &mut changes)?;
                Reply::Done
            }
            Call::Multi(ops) => Reply::Multi(self.tree.multi(&ops, session, &mut changes)?),
            Call::Close => {
                let mut gone = Vec::new();
                for path in self.tree.owned_by(session) {
                    self.tree.delete(&path, None, &mut gone)?;
                }
                Reply::Done
            }
        };
        self.notify(changes);
        Ok(reply)
    }

    /// Fires the data watches `changes` reach (delivered by `flush`).
    fn notify(&mut self, changes: Vec<Change>) {
        for change in changes {
            if let Change::Data(path, _) = change {
                for (n, sim) in self.nodes.iter_mut().enumerate() {
                    if sim.watching.as_deref() == Some(path.as_str()) {
                        sim.watching = None;
                        self.changed.push((n, path.clone()));
                    }
                }
            }
        }
    }

    fn get(&self, path: &str) -> Option<(Vec<u8>, Version)> {
        self.tree.get(path).map(|n| (n.data.clone(), n.version))
    }
}
