//! A cluster node: the thin async runtime that applies the protocol's pure
//! decisions ([`crate::protocol`]) on a [`Coordinator`].
//!
//! Life: register the node's meta-data and an ephemeral `session` node;
//! join GroupState under the group lock (by name, never twice); take part
//! in the election; then, every `update_time`: beat, and act on its duty —
//! a Runner runs its task's items (woken by a watch on its task node, not
//! by polling) and claims queued tasks when idle; the judge (primary
//! backup, or the smallest Runner when no backup is left) judges Runners'
//! hearts and fails dead ones over; secondary backups watch the primary.
//!
//! Every write of a task is a compare-and-set on the version its writer
//! last saw, and a take-over bumps the task's epoch and rewrites the dead
//! Runner's task node in the same transaction, so a Runner declared dead
//! that is still alive fails its next write, stops, and rejoins as a backup.

mod config;
mod runner;
mod submit;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crawlkeeper_model::cluster::{
    CrawlerRole, GroupState, HeartState, Heartbeat, NodeName, NodeState, ResultDetail, Task,
    TaskState,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use self::config::NodeConfig;
pub use self::runner::{ItemOutcome, TaskRunner};
pub use self::submit::{Placement, SubmitError, submit};
use crate::coordinator::{Coordinator, CreateMode, Op, SessionState, Version, Watch};
use crate::error::CoordError;
use crate::lock::Lock;
use crate::metadata::{self, MetaError};
use crate::path::Layout;
use crate::protocol::heart::{HeartMonitor, Verdict};
use crate::protocol::roles::{self, Duty};
use crate::protocol::{group, task as progress};

/// Opens a new session (at start, and after the session expired).
pub type Connect<C> =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<C, CoordError>> + Send>> + Send + Sync>;

/// Why a node stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Meta-data could not be read or written.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The coordinator failed for good.
    #[error(transparent)]
    Coord(#[from] CoordError),
}

/// How a node's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It left on request, its task handed over.
    Left,
}

type Result<T, E = NodeError> = std::result::Result<T, E>;

fn encode<T: serde::Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("meta-data objects always serialize")
}

/// A running item: its position and the runner's future.
struct Running {
    position: usize,
    handle: JoinHandle<ItemOutcome>,
}

/// One member of a group.
pub struct ClusterNode<C: Coordinator, R: TaskRunner> {
    connect: Connect<C>,
    coord: C,
    cfg: NodeConfig,
    layout: Layout,
    runner: Arc<R>,
    group: GroupState,
    task: Task,
    task_version: Version,
    beat_version: Version,
    monitor: HeartMonitor,
    /// Session evidence is ignored until then (after a (re)join).
    grace_until: Instant,
    joined_at: Instant,
    running: Option<Running>,
    /// An outcome whose recording failed (connection lost): recorded later.
    unrecorded: Option<(usize, ItemOutcome)>,
    state_rx: watch::Receiver<SessionState>,
}

fn name_of(me: &NodeName) -> String {
    me.to_string()
}

impl<C: Coordinator, R: TaskRunner> ClusterNode<C, R> {
    /// Connects, registers and joins the group.
    pub async fn start(connect: Connect<C>, cfg: NodeConfig, runner: R) -> Result<Self> {
        cfg.heartbeat
            .validate()
            .map_err(|e| CoordError::Backend(e.to_string()))?;
        let coord = connect().await?;
        let layout = Layout::new(&cfg.group)?;
        let monitor = HeartMonitor::new(
            cfg.heartbeat.update_timeout,
            cfg.heartbeat.heart_rhythm_timeout,
        );
        let state_rx = coord.session_state();
        let mut node = ClusterNode {
            connect,
            coord,
            layout,
            runner: Arc::new(runner),
            group: GroupState::default(),
            task: Task::default(),
            task_version: 0,
            beat_version: 0,
            monitor,
            grace_until: Instant::now(),
            joined_at: Instant::now(),
            running: None,
            unrecorded: None,
            state_rx,
            cfg,
        };
        node.register().await?;
        node.join().await?;
        Ok(node)
    }

    /// This node's name.
    pub fn name(&self) -> &NodeName {
        &self.cfg.name
    }

    /// The coordinator session in use.
    pub fn coordinator(&self) -> &C {
        &self.coord
    }

    fn session_path(&self) -> String {
        format!("{}/session", self.layout.node(&self.cfg.name))
    }

    fn queue(&self) -> String {
        format!("{}/queue", self.layout.root())
    }

    /// Creates (or takes back) the node's meta-data and its session node.
    async fn register(&mut self) -> Result<()> {
        let me = self.cfg.name.clone();
        let c = &self.coord;
        c.create_all(&self.layout.node(&me)).await?;
        c.create_all(&format!("{}/group", self.layout.root()))
            .await?;
        c.create_all(&self.queue()).await?;
        let state = NodeState {
            group: self.cfg.group.clone(),
            role: CrawlerRole::Initial,
        };
        put(c, &self.layout.node_state(&me), &state).await?;
        match metadata::read::<Task>(c, &self.layout.task(&me)).await? {
            Some((t, v)) => (self.task, self.task_version) = (t, v),
            None => {
                metadata::create(
                    c,
                    &self.layout.task(&me),
                    &Task::default(),
                    CreateMode::Persistent,
                )
                .await?;
                (self.task, self.task_version) = (Task::default(), 0);
            }
        }
        let beat = Heartbeat {
            healthy_state: HeartState::Newborn,
            ..self.cfg.heartbeat.clone()
        };
        self.beat_version = put(c, &self.layout.heartbeat(&me), &beat).await?;
        let session = self.session_path();
        loop {
            match c.create(&session, b"", CreateMode::Ephemeral).await {
                Ok(_) => break,
                // Our previous session's node, not yet expired.
                Err(CoordError::NodeExists(_)) => match c.delete(&session, None).await {
                    Ok(()) | Err(CoordError::NoNode(_)) => {}
                    Err(e) => return Err(e.into()),
                },
                Err(e) => return Err(e.into()),
            }
        }
        self.state_rx = c.session_state();
        Ok(())
    }

    /// Joins GroupState under the lock: by name, never twice.
    async fn join(&mut self) -> Result<()> {
        let me = self.cfg.name.clone();
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        let (mut g, version) = match metadata::read::<GroupState>(&self.coord, &path).await? {
            Some(found) => found,
            None => {
                metadata::create(
                    &self.coord,
                    &path,
                    &GroupState::default(),
                    CreateMode::Persistent,
                )
                .await?;
                (GroupState::default(), 0)
            }
        };
        if !g.is_member(&me) {
            if roles::formed(&g) {
                group::join_late(&mut g, &me);
            } else {
                group::join_forming(&mut g, &me);
            }
            metadata::write(&self.coord, &path, &g, Some(version)).await?;
        }
        guard.release().await?;
        self.group = g;
        self.joined_at = Instant::now();
        self.reset_judgement();
        self.sync_role().await?;
        Ok(())
    }

    fn reset_judgement(&mut self) {
        let hb = &self.cfg.heartbeat;
        self.monitor = HeartMonitor::new(hb.update_timeout, hb.heart_rhythm_timeout);
        self.grace_until = Instant::now() + hb.update_timeout * hb.heart_rhythm_timeout;
    }

    /// Writes this node's role as its duty says.
    async fn sync_role(&self) -> Result<()> {
        let role = match roles::duty(&self.group, &self.cfg.name) {
            Duty::Runner => CrawlerRole::Runner,
            Duty::PrimaryBackup | Duty::SecondaryBackup => CrawlerRole::BackupRunner,
            Duty::Outside if roles::formed(&self.group) => return Ok(()),
            Duty::Outside => CrawlerRole::Initial,
        };
        let state = NodeState {
            group: self.cfg.group.clone(),
            role,
        };
        put(&self.coord, &self.layout.node_state(&self.cfg.name), &state).await?;
        Ok(())
    }

    /// Runs until `stop` turns true, then leaves the group gracefully.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) -> Result<Exit> {
        let mut tick = tokio::time::interval(self.cfg.heartbeat.update_time);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut task_watch: Option<Watch> = None;
        loop {
            if *stop.borrow() {
                return self.leave().await;
            }
            if task_watch.is_none() {
                task_watch = self.arm_task_watch().await;
            }
            let running = async {
                match self.running.as_mut() {
                    Some(r) => (&mut r.handle).await.ok(),
                    None => std::future::pending().await,
                }
            };
            let watch_fired = async {
                match task_watch.take() {
                    Some(w) => {
                        w.changed().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let outcome = tokio::select! {
                _ = tick.tick() => Step::Tick,
                o = running => Step::Item(o),
                () = watch_fired => Step::TaskChanged,
                _ = stop.changed() => Step::Stop,
            };
            let result = match outcome {
                Step::Tick => self.on_tick().await,
                Step::Item(o) => self.on_item(o).await,
                Step::TaskChanged => self.reload_task().await,
                Step::Stop => Ok(()),
            };
            if let Err(e) = result {
                self.on_error(e).await?;
                task_watch = None;
            }
            if let Err(e) = self.advance().await {
                self.on_error(e).await?;
                task_watch = None;
            }
        }
    }

    async fn arm_task_watch(&mut self) -> Option<Watch> {
        match self
            .coord
            .get_and_watch(&self.layout.task(&self.cfg.name))
            .await
        {
            Ok((Some((bytes, version)), w)) => {
                if version != self.task_version
                    && let Ok(t) = serde_json::from_slice::<Task>(&bytes)
                {
                    self.adopt_task(t, version);
                }
                Some(w)
            }
            _ => None,
        }
    }

    /// A task read from our node: ours, or taken from us.
    fn adopt_task(&mut self, t: Task, version: Version) {
        self.task = t;
        self.task_version = version;
    }

    fn fenced(&self) -> bool {
        self.task
            .owner
            .as_ref()
            .is_some_and(|o| o != &self.cfg.name)
    }

    async fn reload_task(&mut self) -> Result<()> {
        if let Some((t, v)) =
            metadata::read::<Task>(&self.coord, &self.layout.task(&self.cfg.name)).await?
        {
            self.adopt_task(t, v);
        }
        if self.fenced() {
            return self.rejoin_as_backup().await;
        }
        Ok(())
    }

    /// Declared dead while alive: stop the item, drop the task, join again.
    async fn rejoin_as_backup(&mut self) -> Result<()> {
        tracing::warn!(node = %self.cfg.name, "this node lost its task to a take-over; rejoining as a backup");
        if let Some(r) = self.running.take() {
            r.handle.abort();
        }
        self.unrecorded = None;
        // The take-over rewrote our task node (no items, epoch + 1, in the
        // same transaction that declared us dead): take that version.
        if let Some((t, v)) =
            metadata::read::<Task>(&self.coord, &self.layout.task(&self.cfg.name)).await?
        {
            self.adopt_task(t, v);
        }
        self.register().await?;
        self.join().await
    }

    /// Starts the next item when this node runs and has one.
    async fn advance(&mut self) -> Result<()> {
        if let Some((position, outcome)) = self.unrecorded.take() {
            self.record_item(position, Some(outcome)).await?;
        }
        if self.running.is_some() || roles::duty(&self.group, &self.cfg.name) != Duty::Runner {
            return Ok(());
        }
        let Some(position) = progress::next_item(&self.task) else {
            return Ok(());
        };
        let mut t = self.task.clone();
        progress::start_item(&mut t, position);
        t.owner = Some(self.cfg.name.clone());
        self.write_task(t).await?;
        let item = self.task.running_content[position].clone();
        let runner = self.runner.clone();
        let handle = tokio::spawn(async move { runner.run(&item).await });
        self.running = Some(Running { position, handle });
        Ok(())
    }

    /// Writes our task with compare-and-set; a conflict means someone else
    /// wrote it: re-read, and stop if it was taken over.
    async fn write_task(&mut self, t: Task) -> Result<()> {
        let path = self.layout.task(&self.cfg.name);
        match metadata::write(&self.coord, &path, &t, Some(self.task_version)).await {
            Ok(v) => {
                self.task = t;
                self.task_version = v;
                Ok(())
            }
            Err(MetaError::Coord(CoordError::BadVersion(_))) => self.reload_task().await,
            Err(e) => Err(e.into()),
        }
    }

    async fn on_item(&mut self, outcome: Option<ItemOutcome>) -> Result<()> {
        match self.running.take() {
            Some(r) => self.record_item(r.position, outcome).await,
            None => Ok(()),
        }
    }

    async fn record_item(&mut self, position: usize, outcome: Option<ItemOutcome>) -> Result<()> {
        let Some(o) = outcome else { return Ok(()) }; // aborted
        let Some(item) = self.task.running_content.get(position) else {
            return Ok(()); // the task was taken from us meanwhile
        };
        let detail = ResultDetail {
            task_id: item.task_id.clone(),
            state: if o.error.is_some() {
                TaskState::Error
            } else {
                TaskState::Done
            },
            status_code: o.status_code,
            response: o.response,
            error_msg: o.error,
        };
        let mut t = self.task.clone();
        if progress::record(&mut t, position, detail) {
            self.write_task(t).await?;
        }
        Ok(())
    }

    async fn on_tick(&mut self) -> Result<()> {
        if self.state_rx.has_changed().unwrap_or(false) {
            let s = *self.state_rx.borrow_and_update();
            if s == SessionState::Expired {
                return Err(CoordError::SessionExpired.into());
            }
            if s == SessionState::Connected {
                // Back from an outage: judge afresh, nobody died of it.
                self.reset_judgement();
            }
        }
        if *self.state_rx.borrow() != SessionState::Connected {
            return Ok(());
        }
        self.beat().await?;
        self.refresh_group().await?;
        if !roles::formed(&self.group) {
            return self.maybe_elect().await;
        }
        match roles::duty(&self.group, &self.cfg.name) {
            Duty::Runner => {
                // With no backup left, every Runner judges the others (the
                // fail-over re-reads GroupState under the lock, so the
                // first to act wins and the others find nothing to do).
                if self.group.current_backup.is_empty() {
                    self.judge().await?;
                }
                self.claim_queued().await
            }
            Duty::PrimaryBackup => {
                self.judge().await?;
                self.check_backups().await
            }
            Duty::SecondaryBackup => self.check_primary().await,
            Duty::Outside => Ok(()),
        }
    }

    async fn beat(&mut self) -> Result<()> {
        let path = self.layout.heartbeat(&self.cfg.name);
        let beat = Heartbeat {
            heart_rhythm_time: Some(chrono_now()),
            healthy_state: HeartState::Healthy,
            task_state: self.task.running_status,
            ..self.cfg.heartbeat.clone()
        };
        match metadata::write(&self.coord, &path, &beat, Some(self.beat_version)).await {
            Ok(v) => {
                self.beat_version = v;
                Ok(())
            }
            Err(MetaError::Coord(CoordError::BadVersion(_))) => {
                // Someone wrote our heart: declared dead.
                let Some((hb, v)) = metadata::read::<Heartbeat>(&self.coord, &path).await? else {
                    return Ok(());
                };
                self.beat_version = v;
                if hb.healthy_state == HeartState::Asystole {
                    self.rejoin_as_backup().await?;
                }
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn refresh_group(&mut self) -> Result<()> {
        let before = roles::duty(&self.group, &self.cfg.name);
        if let Some((g, _)) =
            metadata::read::<GroupState>(&self.coord, &self.layout.group_state()).await?
        {
            self.group = g;
        }
        let now = roles::duty(&self.group, &self.cfg.name);
        if now != before {
            self.reset_judgement();
            self.sync_role().await?;
            if now == Duty::Runner {
                self.reload_task().await?;
            }
        }
        if now == Duty::Outside
            && roles::formed(&self.group)
            && !self.group.is_member(&self.cfg.name)
        {
            // Dropped from the group (declared dead): join again.
            if self.running.is_some() || !self.task.running_content.is_empty() {
                self.reload_task().await?;
            }
            self.join().await?;
        }
        Ok(())
    }

    async fn maybe_elect(&mut self) -> Result<()> {
        let expected = self.cfg.runners + self.cfg.backups;
        let waited = self.joined_at.elapsed();
        if !roles::ready_to_elect(
            self.group.current_crawler.len(),
            expected,
            waited,
            self.cfg.formation_timeout,
        ) {
            return Ok(());
        }
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        if let Some((g, v)) = metadata::read::<GroupState>(&self.coord, &path).await?
            && !roles::formed(&g)
        {
            let elected = group::elect(&g.current_crawler, self.cfg.runners);
            metadata::write(&self.coord, &path, &elected, Some(v)).await?;
            tracing::info!(runners = ?elected.current_runner, backups = ?elected.current_backup, "election");
            self.group = elected;
        }
        guard.release().await?;
        self.sync_role().await
    }

    async fn claim_queued(&mut self) -> Result<()> {
        if self.running.is_some() || progress::next_item(&self.task).is_some() {
            return Ok(());
        }
        let queue = self.queue();
        let Some(first) = self.coord.children(&queue).await?.into_iter().next() else {
            return Ok(());
        };
        let item_path = crate::path::join(&queue, &first);
        let Some((mut t, v)) = metadata::read::<Task>(&self.coord, &item_path).await? else {
            return Ok(());
        };
        t.owner = Some(self.cfg.name.clone());
        let ops = [
            Op::Delete {
                path: item_path,
                version: Some(v),
            },
            Op::Set {
                path: self.layout.task(&self.cfg.name),
                data: encode(&t),
                version: Some(self.task_version),
            },
        ];
        match self.coord.multi(&ops).await {
            Ok(results) => {
                if let Some(crate::OpResult::Set(version)) = results.get(1) {
                    self.adopt_task(t, *version);
                }
                Ok(())
            }
            Err(CoordError::BadVersion(_) | CoordError::NoNode(_)) => Ok(()), // another Runner got it
            Err(e) => Err(e.into()),
        }
    }

    /// Judges the Runners' hearts; fails dead ones over.
    async fn judge(&mut self) -> Result<()> {
        let now = Instant::now();
        let me = self.cfg.name.clone();
        let runners: Vec<NodeName> = self
            .group
            .current_runner
            .iter()
            .filter(|r| **r != me)
            .cloned()
            .collect();
        self.monitor.track(&runners, now);
        for r in &runners {
            if let Some(v) = self.coord.exists(&self.layout.heartbeat(r)).await? {
                self.monitor.observe(r, v, now);
            }
            let session = format!("{}/session", self.layout.node(r));
            if now >= self.grace_until && self.coord.exists(&session).await?.is_none() {
                self.monitor.session_gone(r);
            }
        }
        let dead: Vec<NodeName> = self
            .monitor
            .check(now)
            .into_iter()
            .filter(|(_, v)| *v == Verdict::Dead)
            .map(|(n, _)| n)
            .collect();
        if dead.is_empty() {
            return Ok(());
        }
        self.fail_over(&dead).await
    }

    /// Replaces dead Runners under the lock, in one transaction: each is
    /// marked `dead-runner` / `Asystole`, its task node fenced (epoch + 1,
    /// owner = heir, no items), its task given to its heir or queued, and
    /// GroupState updated.
    async fn fail_over(&mut self, dead: &[NodeName]) -> Result<()> {
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        let Some((mut g, gv)) = metadata::read::<GroupState>(&self.coord, &path).await? else {
            guard.release().await?;
            return Ok(());
        };
        let mut ops = Vec::new();
        for (d, heir) in roles::heirs(&g, dead) {
            let Some((t, tv)) = metadata::read::<Task>(&self.coord, &self.layout.task(&d)).await?
            else {
                continue;
            };
            let epoch = t.epoch + 1;
            // Fenced: a new epoch and owner. A task that moves on leaves an
            // empty node behind; a finished one keeps its record here.
            let fenced = match progress::take_over(&t) {
                Some(_) => Task {
                    epoch,
                    owner: heir.clone(),
                    ..Task::default()
                },
                None => Task {
                    epoch,
                    owner: heir.clone(),
                    ..t.clone()
                },
            };
            ops.push(Op::Set {
                path: self.layout.task(&d),
                data: encode(&fenced),
                version: Some(tv),
            });
            ops.push(Op::Set {
                path: self.layout.node_state(&d),
                data: encode(&NodeState {
                    group: self.cfg.group.clone(),
                    role: CrawlerRole::DeadRunner,
                }),
                version: None,
            });
            let hb = metadata::read::<Heartbeat>(&self.coord, &self.layout.heartbeat(&d))
                .await?
                .map(|(h, _)| h)
                .unwrap_or_else(|| self.cfg.heartbeat.clone());
            let hb = Heartbeat {
                healthy_state: HeartState::Asystole,
                task_state: t.running_status,
                ..hb
            };
            ops.push(Op::Set {
                path: self.layout.heartbeat(&d),
                data: encode(&hb),
                version: None,
            });
            let taken = progress::take_over(&t).map(|t| Task {
                epoch,
                owner: heir.clone(),
                ..t
            });
            self.hand_over(&mut ops, heir.as_ref(), taken, epoch)
                .await?;
            match heir {
                Some(h) => {
                    tracing::warn!(dead = %d, heir = %h, "runner dead; backup takes over its task");
                    group::replace_runner(&mut g, &d, &h);
                }
                None => {
                    tracing::warn!(dead = %d, "runner dead and no backup left; its task goes to the queue");
                    group::drop_runner(&mut g, &d);
                }
            }
        }
        if !ops.is_empty() {
            ops.push(Op::Set {
                path: path.clone(),
                data: encode(&g),
                version: Some(gv),
            });
            self.coord.multi(&ops).await?;
            self.group = g;
        }
        guard.release().await?;
        if roles::duty(&self.group, &self.cfg.name) == Duty::Runner {
            self.reload_task().await?;
        }
        self.sync_role().await
    }

    /// Adds the operations that give `task` (what is left of a Runner's
    /// task, if anything) to `heir` as a Runner, or, with no heir, to the
    /// queue; all under the new `epoch`.
    async fn hand_over(
        &self,
        ops: &mut Vec<Op>,
        heir: Option<&NodeName>,
        task: Option<Task>,
        epoch: u64,
    ) -> Result<()> {
        match heir {
            Some(h) => {
                let (_, hv) = self.coord.get(&self.layout.task(h)).await?;
                let given = Task {
                    epoch,
                    owner: Some(h.clone()),
                    ..task.unwrap_or_default()
                };
                ops.push(Op::Set {
                    path: self.layout.task(h),
                    data: encode(&given),
                    version: Some(hv),
                });
                ops.push(Op::Set {
                    path: self.layout.node_state(h),
                    data: encode(&NodeState {
                        group: self.cfg.group.clone(),
                        role: CrawlerRole::Runner,
                    }),
                    version: None,
                });
            }
            None => {
                if let Some(t) = task {
                    ops.push(Op::Create {
                        path: crate::path::join(&self.queue(), "task-"),
                        data: encode(&Task {
                            epoch,
                            owner: None,
                            ..t
                        }),
                        mode: CreateMode::PersistentSequential,
                    });
                }
            }
        }
        Ok(())
    }

    /// The primary backup records backups whose session is gone.
    async fn check_backups(&mut self) -> Result<()> {
        if Instant::now() < self.grace_until {
            return Ok(());
        }
        let me = self.cfg.name.clone();
        for b in self.group.current_backup.clone() {
            if b != me
                && self
                    .coord
                    .exists(&format!("{}/session", self.layout.node(&b)))
                    .await?
                    .is_none()
            {
                self.drop_dead_backup(&b).await?;
            }
        }
        Ok(())
    }

    /// A secondary backup takes the primary's place when its session is gone.
    async fn check_primary(&mut self) -> Result<()> {
        if Instant::now() < self.grace_until {
            return Ok(());
        }
        let primary = self
            .group
            .current_backup
            .iter()
            .find(|b| b.index() == self.group.standby_id)
            .cloned();
        if let Some(p) = primary
            && self
                .coord
                .exists(&format!("{}/session", self.layout.node(&p)))
                .await?
                .is_none()
        {
            self.drop_dead_backup(&p).await?;
        }
        Ok(())
    }

    async fn drop_dead_backup(&mut self, b: &NodeName) -> Result<()> {
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        if let Some((mut g, gv)) = metadata::read::<GroupState>(&self.coord, &path).await?
            && g.current_backup.contains(b)
            && self
                .coord
                .exists(&format!("{}/session", self.layout.node(b)))
                .await?
                .is_none()
        {
            group::drop_backup(&mut g, b);
            let hb = metadata::read::<Heartbeat>(&self.coord, &self.layout.heartbeat(b))
                .await?
                .map(|(h, _)| h)
                .unwrap_or_else(|| self.cfg.heartbeat.clone());
            let ops = [
                Op::Set {
                    path: self.layout.node_state(b),
                    data: encode(&NodeState {
                        group: self.cfg.group.clone(),
                        role: CrawlerRole::DeadBackupRunner,
                    }),
                    version: None,
                },
                Op::Set {
                    path: self.layout.heartbeat(b),
                    data: encode(&Heartbeat {
                        healthy_state: HeartState::Asystole,
                        ..hb
                    }),
                    version: None,
                },
                Op::Set {
                    path: path.clone(),
                    data: encode(&g),
                    version: Some(gv),
                },
            ];
            self.coord.multi(&ops).await?;
            tracing::warn!(dead = %b, "backup runner dead");
            self.group = g;
        }
        guard.release().await?;
        self.sync_role().await
    }

    /// Coordinator trouble: retry later on a lost connection; on an
    /// expired session, open a new one, register again and go on.
    async fn on_error(&mut self, e: NodeError) -> Result<()> {
        let coord_error = match &e {
            NodeError::Coord(c) | NodeError::Meta(MetaError::Coord(c)) => Some(c.clone()),
            NodeError::Meta(MetaError::Decode { .. }) => None,
        };
        match coord_error {
            Some(c) if c.is_retryable() => {
                tracing::debug!(node = %self.cfg.name, error = %c, "coordinator trouble; retrying");
                Ok(())
            }
            Some(CoordError::SessionExpired) => {
                tracing::warn!(node = %self.cfg.name, "coordinator session expired; registering again");
                let mut pause = Duration::from_millis(100);
                loop {
                    match self.reconnect().await {
                        Ok(()) => return Ok(()),
                        Err(e) if matches!(&e, NodeError::Coord(c) if !c.is_retryable() && *c != CoordError::SessionExpired) =>
                        {
                            return Err(e);
                        }
                        Err(_) => {
                            tokio::time::sleep(pause).await;
                            pause = (pause * 2).min(Duration::from_secs(5));
                        }
                    }
                }
            }
            _ => Err(e),
        }
    }

    async fn reconnect(&mut self) -> Result<()> {
        self.coord = (self.connect)().await?;
        self.register().await?;
        self.join().await
    }

    /// Leaves on request: finishes the current item, hands the task over at
    /// once (to the primary backup, or to the queue), records the leave.
    async fn leave(mut self) -> Result<Exit> {
        if let Some(r) = self.running.take() {
            let outcome = r.handle.await.ok();
            self.record_item(r.position, outcome).await?;
        }
        let me = self.cfg.name.clone();
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        if let Some((mut g, gv)) = metadata::read::<GroupState>(&self.coord, &path).await? {
            let mut ops = Vec::new();
            let unfinished = progress::take_over(&self.task);
            if g.current_runner.contains(&me) {
                let heir = roles::heirs(&g, std::slice::from_ref(&me))
                    .into_iter()
                    .next()
                    .and_then(|(_, h)| h);
                let epoch = self.task.epoch + 1;
                ops.push(Op::Set {
                    path: self.layout.task(&me),
                    data: encode(&Task {
                        epoch,
                        owner: heir.clone(),
                        ..Task::default()
                    }),
                    version: Some(self.task_version),
                });
                group::leave(&mut g, &me);
                self.hand_over(&mut ops, heir.as_ref(), unfinished, epoch)
                    .await?;
                if let Some(h) = &heir {
                    group::promote(&mut g, h);
                }
            } else {
                group::leave(&mut g, &me);
            }
            ops.push(Op::Set {
                path: path.clone(),
                data: encode(&g),
                version: Some(gv),
            });
            let hb = Heartbeat {
                healthy_state: HeartState::ApparentDeath,
                task_state: self.task.running_status,
                heart_rhythm_time: Some(chrono_now()),
                ..self.cfg.heartbeat.clone()
            };
            ops.push(Op::Set {
                path: self.layout.heartbeat(&me),
                data: encode(&hb),
                version: None,
            });
            self.coord.multi(&ops).await?;
            tracing::info!(node = %name_of(&me), "left the group; task handed over");
        }
        guard.release().await?;
        self.coord.close().await?;
        Ok(Exit::Left)
    }
}

enum Step {
    Tick,
    Item(Option<ItemOutcome>),
    TaskChanged,
    Stop,
}

/// Writes a value whether or not the node exists.
async fn put<T: serde::Serialize>(c: &impl Coordinator, path: &str, v: &T) -> Result<Version> {
    match metadata::write(c, path, v, None).await {
        Ok(version) => Ok(version),
        Err(MetaError::Coord(CoordError::NoNode(_))) => {
            metadata::create(c, path, v, CreateMode::Persistent).await?;
            Ok(0)
        }
        Err(e) => Err(e.into()),
    }
}

fn chrono_now() -> chrono::NaiveDateTime {
    chrono::Utc::now().naive_utc()
}
