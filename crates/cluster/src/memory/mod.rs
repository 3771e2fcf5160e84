//! `MemoryCoordinator`: the embedded backend. One [`MemoryEnsemble`] plays
//! the server; each [`MemoryCoordinator`] is a session on it. Everything
//! runs in one process, sessions expire on tokio time, and faults can be
//! injected, so cluster tests run deterministically on a paused clock.
//!
//! Session life, as with ZooKeeper: a healthy session never expires. A
//! session that stops refreshing ([`MemoryCoordinator::freeze`], a pause
//! its owner does not notice) or loses its connection
//! ([`MemoryCoordinator::cut_off`], a partition) expires when its timeout
//! has passed: its ephemeral nodes go and others' watches fire. A frozen
//! owner learns of the expiry at its next operation; a cut-off owner sees
//! `Suspended` at once, and `Expired` (or `Connected` again) when healed.
//! [`MemoryCoordinator::expire`] expires a session at once (a crash).

pub(crate) mod tree;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use self::tree::{Change, Tree};
use crate::coordinator::{
    Coordinator, CreateMode, Op, OpResult, SessionState, Value, Version, Watch, WatchEvent,
};
use crate::error::{CoordError, Result};
use crate::path;

/// The in-memory "server": a tree and the sessions on it.
#[derive(Clone, Default)]
pub struct MemoryEnsemble {
    inner: Arc<Mutex<Ensemble>>,
}

#[derive(Default)]
struct Ensemble {
    tree: Tree,
    sessions: HashMap<u64, Session>,
    next_session: u64,
    data_watches: HashMap<String, Vec<Watcher>>,
    child_watches: HashMap<String, Vec<Watcher>>,
}

struct Watcher {
    session: u64,
    tx: oneshot::Sender<WatchEvent>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Alive,
    /// Expired while its owner could not tell (frozen, or cut off).
    ExpiredUnseen,
    Expired,
    Closed,
}

struct Session {
    timeout: Duration,
    state: watch::Sender<SessionState>,
    status: Status,
    frozen: bool,
    cut: bool,
    /// Bumped by every freeze, cut and heal: a pending expiry checks it.
    generation: u64,
    delay: Duration,
    failures: Vec<CoordError>,
    /// Events for a cut-off session, delivered when it heals.
    deferred: Vec<(oneshot::Sender<WatchEvent>, WatchEvent)>,
    /// Watches of a session expired without its owner knowing.
    orphaned: Vec<oneshot::Sender<WatchEvent>>,
}

impl MemoryEnsemble {
    /// An empty tree with no sessions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens a session with this timeout.
    pub fn connect(&self, session_timeout: Duration) -> MemoryCoordinator {
        let mut e = self.lock();
        e.next_session += 1;
        let id = e.next_session;
        let (state, _) = watch::channel(SessionState::Connected);
        e.sessions.insert(
            id,
            Session {
                timeout: session_timeout,
                state,
                status: Status::Alive,
                frozen: false,
                cut: false,
                generation: 0,
                delay: Duration::ZERO,
                failures: Vec::new(),
                deferred: Vec::new(),
                orphaned: Vec::new(),
            },
        );
        MemoryCoordinator {
            ensemble: self.clone(),
            id,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Ensemble> {
        // A panic while holding the lock leaves plain data: keep going.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Ensemble {
    fn session(&mut self, id: u64) -> &mut Session {
        self.sessions
            .get_mut(&id)
            .expect("a coordinator's session is never removed")
    }

    /// Fails the operation if the session cannot run it now.
    fn gate(&mut self, id: u64) -> Result<()> {
        let s = self.session(id);
        match s.status {
            Status::Alive => {}
            Status::ExpiredUnseen if s.cut => return Err(CoordError::ConnectionLoss),
            Status::ExpiredUnseen => {
                self.notice_expiry(id);
                return Err(CoordError::SessionExpired);
            }
            Status::Expired => return Err(CoordError::SessionExpired),
            Status::Closed => return Err(CoordError::Closed),
        }
        if s.cut {
            return Err(CoordError::ConnectionLoss);
        }
        if let Some(e) = s.failures.pop() {
            return Err(e);
        }
        Ok(())
    }

    /// Tells the owner its session expired.
    fn notice_expiry(&mut self, id: u64) {
        let s = self.session(id);
        s.status = Status::Expired;
        s.state.send_replace(SessionState::Expired);
        for tx in s.orphaned.drain(..) {
            let _ = tx.send(WatchEvent::Session(SessionState::Expired));
        }
    }

    /// Ends a session on the "server": its ephemeral nodes go, and its
    /// watches end (now if the owner can tell, else when it notices).
    fn end_session(&mut self, id: u64, outcome: SessionState, owner_knows: bool) {
        let mut changes = Vec::new();
        for p in self.tree.owned_by(id) {
            let _ = self.tree.delete(&p, None, &mut changes);
        }
        let mut own = Vec::new();
        for map in [&mut self.data_watches, &mut self.child_watches] {
            for list in map.values_mut() {
                let (mine, others): (Vec<_>, Vec<_>) =
                    list.drain(..).partition(|w| w.session == id);
                *list = others;
                own.extend(mine.into_iter().map(|w| w.tx));
            }
        }
        let s = self.session(id);
        s.deferred.clear();
        if owner_knows {
            s.status = if outcome == SessionState::Closed {
                Status::Closed
            } else {
                Status::Expired
            };
            s.state.send_replace(outcome);
            for tx in own {
                let _ = tx.send(WatchEvent::Session(outcome));
            }
        } else {
            s.status = Status::ExpiredUnseen;
            s.orphaned.extend(own);
        }
        self.fire(changes);
    }

    fn fire(&mut self, changes: Vec<Change>) {
        for change in changes {
            let (map, path, event) = match change {
                Change::Data(p, e) => (&mut self.data_watches, p, e),
                Change::Children(p, e) => (&mut self.child_watches, p, e),
            };
            let Some(list) = map.remove(&path) else {
                continue;
            };
            for w in list {
                match self.sessions.get_mut(&w.session) {
                    Some(s) if s.cut => s.deferred.push((w.tx, event)),
                    _ => {
                        let _ = w.tx.send(event);
                    }
                }
            }
        }
    }

    fn watch(&mut self, id: u64, path: &str, children: bool) -> Watch {
        let (tx, rx) = oneshot::channel();
        let map = if children {
            &mut self.child_watches
        } else {
            &mut self.data_watches
        };
        map.entry(path.to_owned())
            .or_default()
            .push(Watcher { session: id, tx });
        Watch::new(async move {
            rx.await
                .unwrap_or(WatchEvent::Session(SessionState::Closed))
        })
    }
}

/// A session on a [`MemoryEnsemble`], with fault injection for tests.
#[derive(Clone)]
pub struct MemoryCoordinator {
    ensemble: MemoryEnsemble,
    id: u64,
}

impl MemoryCoordinator {
    /// A session on a new ensemble of its own.
    pub fn standalone(session_timeout: Duration) -> Self {
        MemoryEnsemble::new().connect(session_timeout)
    }

    /// The ensemble this session is on (to open more sessions).
    pub fn ensemble(&self) -> &MemoryEnsemble {
        &self.ensemble
    }

    /// The session's id.
    pub fn session_id(&self) -> u64 {
        self.id
    }

    /// Runs an operation: applies injected delays and failures, then `f`
    /// under the ensemble's lock, then fires the watches it raised.
    async fn run<T>(
        &self,
        f: impl FnOnce(&mut Ensemble, &mut Vec<Change>) -> Result<T>,
    ) -> Result<T> {
        let delay = {
            let mut e = self.ensemble.lock();
            e.gate(self.id)?;
            e.session(self.id).delay
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let mut e = self.ensemble.lock();
        if !delay.is_zero() {
            e.gate(self.id)?;
        }
        let mut changes = Vec::new();
        let out = f(&mut e, &mut changes)?;
        e.fire(changes);
        Ok(out)
    }

    /// Expires the session now, as the server does when a process dies:
    /// ephemeral nodes go, others' watches fire, the owner sees `Expired`.
    pub fn expire(&self) {
        let mut e = self.ensemble.lock();
        if e.session(self.id).status == Status::Alive {
            e.end_session(self.id, SessionState::Expired, true);
        }
    }

    /// Stops the session's refreshes without its owner knowing (a long
    /// pause): unless [`unfreeze`](Self::unfreeze)d, it expires after its
    /// timeout, and the owner learns it at its next operation.
    pub fn freeze(&self) {
        let mut e = self.ensemble.lock();
        let s = e.session(self.id);
        s.frozen = true;
        self.arm_expiry(s);
    }

    /// Resumes refreshes of a frozen session that has not expired yet.
    pub fn unfreeze(&self) {
        let mut e = self.ensemble.lock();
        let s = e.session(self.id);
        s.frozen = false;
        s.generation += 1;
    }

    /// Cuts the session off (a partition): operations fail with
    /// `ConnectionLoss`, the owner sees `Suspended`, events wait; it
    /// expires after its timeout unless [`heal`](Self::heal)ed.
    pub fn cut_off(&self) {
        let mut e = self.ensemble.lock();
        let s = e.session(self.id);
        if s.cut || matches!(s.status, Status::Expired | Status::Closed) {
            return;
        }
        s.cut = true;
        s.state.send_replace(SessionState::Suspended);
        self.arm_expiry(s);
    }

    /// Reconnects a cut-off session: `Connected` with its waiting events if
    /// it is still alive, else `Expired`.
    pub fn heal(&self) {
        let mut e = self.ensemble.lock();
        let s = e.session(self.id);
        if !s.cut {
            return;
        }
        s.cut = false;
        s.generation += 1;
        match s.status {
            Status::Alive => {
                s.state.send_replace(SessionState::Connected);
                for (tx, ev) in s.deferred.drain(..) {
                    let _ = tx.send(ev);
                }
                if s.frozen {
                    self.arm_expiry(s);
                }
            }
            Status::ExpiredUnseen => e.notice_expiry(self.id),
            Status::Expired | Status::Closed => {}
        }
    }

    /// Delays every later operation of this session by `delay` (zero: none).
    pub fn delay_operations(&self, delay: Duration) {
        self.ensemble.lock().session(self.id).delay = delay;
    }

    /// Fails the next `count` operations of this session with `error`.
    pub fn fail_operations(&self, count: usize, error: CoordError) {
        let mut e = self.ensemble.lock();
        let s = e.session(self.id);
        s.failures.extend(std::iter::repeat_n(error, count));
    }

    /// Schedules the expiry of a session that stopped refreshing.
    fn arm_expiry(&self, s: &mut Session) {
        s.generation += 1;
        let generation = s.generation;
        let timeout = s.timeout;
        let weak: Weak<Mutex<Ensemble>> = Arc::downgrade(&self.ensemble.inner);
        let id = self.id;
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            let Some(inner) = weak.upgrade() else { return };
            let mut e = inner.lock().unwrap_or_else(|p| p.into_inner());
            let s = e.session(id);
            if s.generation == generation && s.status == Status::Alive && (s.frozen || s.cut) {
                tracing::debug!(session = id, "memory coordinator: session expired");
                e.end_session(id, SessionState::Expired, false);
            }
        });
    }
}

impl Coordinator for MemoryCoordinator {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        let id = self.id;
        self.run(|e, c| e.tree.create(path, data, mode, id, c))
            .await
    }

    async fn get(&self, path: &str) -> Result<Value> {
        path::check(path)?;
        self.run(|e, _| {
            e.tree
                .get(path)
                .map(|n| (n.data.clone(), n.version))
                .ok_or_else(|| CoordError::NoNode(path.to_owned()))
        })
        .await
    }

    async fn exists(&self, path: &str) -> Result<Option<Version>> {
        path::check(path)?;
        self.run(|e, _| Ok(e.tree.get(path).map(|n| n.version)))
            .await
    }

    async fn set(&self, path: &str, data: &[u8], expected: Option<Version>) -> Result<Version> {
        self.run(|e, c| e.tree.set(path, data, expected, c)).await
    }

    async fn delete(&self, path: &str, expected: Option<Version>) -> Result<()> {
        self.run(|e, c| e.tree.delete(path, expected, c)).await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        path::check(path)?;
        self.run(|e, _| e.tree.children(path)).await
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        let id = self.id;
        self.run(|e, c| e.tree.multi(ops, id, c)).await
    }

    async fn get_and_watch(&self, path: &str) -> Result<(Option<Value>, Watch)> {
        path::check(path)?;
        let id = self.id;
        self.run(|e, _| {
            let value = e.tree.get(path).map(|n| (n.data.clone(), n.version));
            Ok((value, e.watch(id, path, false)))
        })
        .await
    }

    async fn children_and_watch(&self, path: &str) -> Result<(Vec<String>, Watch)> {
        path::check(path)?;
        let id = self.id;
        self.run(|e, _| {
            let children = e.tree.children(path)?;
            Ok((children, e.watch(id, path, true)))
        })
        .await
    }

    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.ensemble.lock().session(self.id).state.subscribe()
    }

    async fn close(&self) -> Result<()> {
        let mut e = self.ensemble.lock();
        match e.session(self.id).status {
            Status::Alive => {
                e.end_session(self.id, SessionState::Closed, true);
                Ok(())
            }
            Status::Closed => Ok(()),
            Status::Expired | Status::ExpiredUnseen => Err(CoordError::SessionExpired),
        }
    }
}

#[cfg(test)]
mod tests;
