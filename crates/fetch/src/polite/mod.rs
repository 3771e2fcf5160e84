//! Bounds on requests in flight that hold across every crawl of a process,
//! and (with a [`Politeness::share`]d lease keeper) across a cluster: per
//! host, and per IP address (hosts on one address share its bound).
//!
//! Every request enters a gate of its host and one of its address before
//! it is sent, and leaves them when its body is read ([`Permit`]). A
//! crawl's `--per-host` and `--per-ip` are the limits it enters with: a
//! request goes when fewer than its own limit are in flight at the key,
//! whichever crawl sent them. Waiting requests go in the order they came
//! (so crawls on a shared host take turns: each queues at most its own
//! `--per-host` there).
//!
//! Shared, a key's requests in this process are further bounded by what
//! the process was granted for it ([`Politeness::demand`] tells the
//! keeper what is wanted, [`Politeness::grant`] gives its answer): a
//! grant not confirmed for [`GRANT_LIFETIME`] (the keeper lost its
//! store) lets nothing more through until it is.

mod address;

pub use address::ADDRESS_TTL;
pub(crate) use address::AddressCache;

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

/// How long a grant lets requests through after the keeper last
/// confirmed it (from when the keeper asked).
pub const GRANT_LIFETIME: Duration = Duration::from_secs(2);

/// Shared: how long a key's places are kept after its last request, for
/// the next one (a host crawled at `--per-host 1` is idle between its
/// requests): asking again for every request would cost the store a
/// write and the request a round trip. Others waiting get them at once.
pub const LINGER: Duration = Duration::from_secs(2);

/// What a bound is kept on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// A host name (lower case), or an address written as a host.
    Host(String),
    /// The address a host resolved to.
    Ip(IpAddr),
}

impl std::fmt::Display for Key {
    /// `host:NAME` or `ip:ADDRESS`: how the keeper names it in the store.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Host(h) => write!(f, "host:{h}"),
            Self::Ip(ip) => write!(f, "ip:{ip}"),
        }
    }
}

/// What a shared key's requests want, for the keeper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    /// The key.
    pub key: Key,
    /// The smallest limit its requests came with (in flight or waiting).
    pub limit: u32,
    /// How many it could use at once now: in flight and waiting, within
    /// the limit.
    pub want: u32,
    /// How many are in flight now (what may be given back only once
    /// they end).
    pub in_flight: u32,
    /// Nothing is in flight or waiting: the places are kept for the next
    /// request ([`LINGER`]), to be given up at once if others wait.
    pub idle: bool,
}

/// One key's gate.
#[derive(Default)]
struct Gate {
    in_flight: u32,
    waiters: VecDeque<Waiter>,
    /// The smallest limit of the requests in flight now.
    in_flight_limit: Option<u32>,
    /// Shared: how many this process was granted (0 until the keeper
    /// answers).
    granted: u32,
    /// When a request last left, and the limit it came with.
    last_used: Option<(Instant, u32)>,
}

struct Waiter {
    limit: u32,
    tx: oneshot::Sender<Permit>,
}

/// The gates by key: a fast hash, seeded per process (the map holds only
/// keys with requests in flight or waiting, a few hundred at most).
type GateMap = HashMap<Key, Gate, foldhash::fast::RandomState>;

#[derive(Default)]
struct Gates {
    gates: GateMap,
    /// Shared: when the keeper's grants were last confirmed.
    confirmed: Option<Instant>,
}

/// The gates of a process (see the module's documentation).
#[derive(Default)]
pub struct Politeness {
    gates: Mutex<Gates>,
    /// A keeper grants what goes through (a cluster).
    shared: std::sync::atomic::AtomicBool,
    /// Wakes the keeper when a key is wanted that it has not granted.
    wanted: Notify,
}

impl std::fmt::Debug for Politeness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Politeness")
            .field("shared", &self.is_shared())
            .finish_non_exhaustive()
    }
}

/// A request's place at a key: it leaves the gate when dropped.
#[must_use = "the request holds its place while this lives"]
pub struct Permit {
    owner: Option<(Arc<Politeness>, Key)>,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Permit")
            .field(&self.owner.as_ref().map(|(_, k)| k))
            .finish()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((p, key)) = self.owner.take() {
            p.leave(&key);
        }
    }
}

impl Politeness {
    /// Gates bounded in this process only.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// From now on a keeper grants what goes through: nothing does until
    /// it has ([`Politeness::grant`]).
    pub fn share(&self) {
        self.shared
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether a keeper grants what goes through.
    pub fn is_shared(&self) -> bool {
        self.shared.load(std::sync::atomic::Ordering::Acquire)
    }

    fn lock(&self) -> MutexGuard<'_, Gates> {
        // Every change is a few statements that leave the map whole.
        self.gates.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a place at `key` for a request whose crawl allows `limit`
    /// in flight there (at least 1).
    pub async fn enter(self: &Arc<Self>, key: Key, limit: u32) -> Permit {
        let limit = limit.max(1);
        let rx = {
            let mut g = self.lock();
            let shared = self.is_shared();
            let valid = g.valid(shared);
            let gate = g.gates.entry(key.clone()).or_default();
            if gate.waiters.is_empty() && gate.room(limit, shared, valid) {
                gate.admit(limit);
                return self.permit(key);
            }
            let (tx, rx) = oneshot::channel();
            gate.waiters.push_back(Waiter { limit, tx });
            rx
        };
        if self.is_shared() {
            self.wanted.notify_one();
        }
        // The sender lives in the gate until it sends a permit: a closed
        // channel cannot happen while `self` lives.
        match rx.await {
            Ok(permit) => permit,
            Err(_) => self.permit(key),
        }
    }

    fn permit(self: &Arc<Self>, key: Key) -> Permit {
        Permit {
            owner: Some((self.clone(), key)),
        }
    }

    fn leave(self: &Arc<Self>, key: &Key) {
        let mut g = self.lock();
        if let Some(gate) = g.gates.get_mut(key) {
            gate.in_flight = gate.in_flight.saturating_sub(1);
            if gate.in_flight == 0 {
                let limit = gate.in_flight_limit.take().unwrap_or(1);
                gate.last_used = Some((Instant::now(), limit));
            }
        }
        self.wake(&mut g, key);
    }

    /// Lets the waiters of `key` in, in order, while there is room; drops
    /// an idle local gate.
    fn wake(self: &Arc<Self>, g: &mut Gates, key: &Key) {
        let shared = self.is_shared();
        let valid = g.valid(shared);
        let Some(gate) = g.gates.get_mut(key) else {
            return;
        };
        while let Some(front) = gate.waiters.front() {
            if !gate.room(front.limit, shared, valid) {
                break;
            }
            let Some(w) = gate.waiters.pop_front() else {
                break;
            };
            gate.admit(w.limit);
            if let Err(mut permit) = w.tx.send(self.permit(key.clone())) {
                // The request gave up waiting: its place is free again
                // (left here, not through the permit: the lock is held).
                permit.owner = None;
                gate.in_flight -= 1;
            }
        }
        if gate.in_flight == 0 && gate.waiters.is_empty() && (!shared || gate.granted == 0) {
            g.gates.remove(key);
        }
    }

    /// Shared: what every key wanted or held here wants now, for the
    /// keeper; waits until some key is wanted when none is.
    pub async fn demand(&self) -> Vec<Want> {
        loop {
            let notified = self.wanted.notified();
            let wants = self.wants();
            if !wants.is_empty() {
                return wants;
            }
            notified.await;
        }
    }

    /// Shared: waits until a key is wanted that was not granted yet (at
    /// once if one was since the last wait).
    pub async fn wanted(&self) {
        self.wanted.notified().await;
    }

    fn wants(&self) -> Vec<Want> {
        let g = self.lock();
        let mut wants: Vec<Want> = g
            .gates
            .iter()
            .map(|(key, gate)| {
                let asked = gate.in_flight + gate.waiters.len() as u32;
                let lingering = gate
                    .last_used
                    .filter(|(at, _)| asked == 0 && at.elapsed() < LINGER);
                if let Some((_, limit)) = lingering {
                    return Want {
                        key: key.clone(),
                        limit,
                        want: gate.granted.min(limit),
                        in_flight: 0,
                        idle: true,
                    };
                }
                let limit = gate
                    .waiters
                    .iter()
                    .map(|w| w.limit)
                    .chain(gate.in_flight_limit)
                    .min()
                    .unwrap_or(1);
                Want {
                    key: key.clone(),
                    limit,
                    want: asked.min(limit),
                    in_flight: gate.in_flight,
                    idle: false,
                }
            })
            .collect();
        wants.sort_by(|a, b| a.key.cmp(&b.key));
        wants
    }

    /// Shared: the keeper's answer to the demand it read when it asked at
    /// `asked`: how many each key may have in flight here. Keys left out
    /// are granted nothing.
    pub fn grant(self: &Arc<Self>, asked: Instant, grants: &[(Key, u32)]) {
        let mut g = self.lock();
        g.confirmed = Some(asked);
        let granted: HashMap<&Key, u32> = grants.iter().map(|(k, n)| (k, *n)).collect();
        let keys: Vec<Key> = g.gates.keys().cloned().collect();
        for key in keys {
            if let Some(gate) = g.gates.get_mut(&key) {
                gate.granted = granted.get(&key).copied().unwrap_or(0);
            }
            self.wake(&mut g, &key);
        }
    }

    /// Shared: the keeper could not renew the grants (its store failed):
    /// nothing more goes through until it has.
    pub fn lapse(&self) {
        self.lock().confirmed = None;
    }

    /// How many requests are in flight at `key` in this process.
    pub fn in_flight(&self, key: &Key) -> u32 {
        self.lock().gates.get(key).map_or(0, |g| g.in_flight)
    }
}

impl Gates {
    /// Whether the grants may still be used (always, unshared).
    fn valid(&self, shared: bool) -> bool {
        !shared
            || self
                .confirmed
                .is_some_and(|at| at.elapsed() < GRANT_LIFETIME)
    }
}

impl Gate {
    fn room(&self, limit: u32, shared: bool, valid: bool) -> bool {
        let mut cap = limit.min(self.in_flight_limit.unwrap_or(u32::MAX));
        if shared {
            cap = if valid { cap.min(self.granted) } else { 0 };
        }
        self.in_flight < cap
    }

    fn admit(&mut self, limit: u32) {
        self.in_flight += 1;
        self.in_flight_limit = Some(self.in_flight_limit.map_or(limit, |l| l.min(limit)));
    }
}

#[cfg(test)]
mod tests;
