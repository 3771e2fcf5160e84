//! The frontier: the authorities' state machines, and the two places an
//! authority waits its turn: the ready ring (may start now) and the timer
//! heap (may start at an instant). Pure data owned by the engine task: time
//! comes in as `now`, randomness from a seeded generator. Admission (dedup,
//! limits, breadth-first order, the store) is in `admission.rs`.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Duration;

use crawlkeeper_model::key::KeySet;
use crawlkeeper_model::{Authority, Partition};
use tokio::time::Instant;

use super::slot::{AuthoritySlot, DepthMap, RobotsState, Slot, Turn};
use crate::config::PolitenessConfig;
use crate::pipeline::Job;
use crate::politeness::retry_backoff;
use crate::robots::RobotsRules;

/// What the engine should start next.
pub enum Next {
    /// Fetch the robots.txt of an authority.
    Robots {
        /// The authority's slot.
        slot: Slot,
        /// The authority.
        authority: Authority,
    },
    /// Run a job with the authority's robots rules.
    Page {
        /// The authority's slot.
        slot: Slot,
        /// The job.
        job: Job,
        /// The rules to check the job against.
        robots: RobotsRules,
    },
}

/// How a request ended, as far as politeness is concerned.
#[derive(Debug, Clone, Copy)]
pub struct RequestReport {
    /// How long the response took, if one arrived.
    pub response_time: Option<Duration>,
    /// True for a failure worth a retry (timeout, connection, 429, 5xx).
    pub failed: bool,
}

/// Limits of the frontier.
#[derive(Debug, Clone)]
pub struct FrontierLimits {
    /// Requests in flight per authority.
    pub per_host: usize,
    /// Most URLs admitted in the crawl.
    pub max_pages: Option<u64>,
    /// Fetch robots.txt first.
    pub respect_robots: bool,
    /// Most keys remembered in memory to skip store lookups.
    pub seen_cache: usize,
    /// Most URLs queued in memory; more stay in the store.
    pub max_queued: usize,
}

/// Per-authority queues with fair round-robin dispatch and politeness.
pub struct Frontier {
    pub(super) slots: Vec<AuthoritySlot>,
    pub(super) index: HashMap<Authority, Slot>,
    ready: VecDeque<Slot>,
    waiting: BinaryHeap<Reverse<(Instant, Slot)>>,
    pub(super) seen: KeySet,
    /// Keys of other shards' URLs this crawl offered, with the smallest
    /// depth offered (a shorter path is offered again).
    pub(super) foreign_depth: DepthMap,
    pub(super) queued_depth: DepthMap,
    pub(super) queued: usize,
    pub(super) admitted: u64,
    pub(super) admitting: u64,
    pub(super) admitting_loaded: usize,
    pub(super) limits: FrontierLimits,
    pub(super) politeness: PolitenessConfig,
    pub(super) skipped: Vec<(Slot, Job)>,
    pub(super) outbox: Vec<(Slot, u128, Job, Option<u64>)>,
    pub(super) released: Vec<u64>,
    pub(super) to_load: Vec<Slot>,
    /// Loads asked of the store and not yet answered.
    pub(super) loads_in_flight: usize,
    /// The shards this crawl fetches, when it shares its job; URLs of
    /// other shards' authorities are admitted for their holders only.
    pub(super) partition: Option<Partition>,
    rng: fastrand::Rng,
}

impl Frontier {
    /// An empty frontier.
    pub fn new(limits: FrontierLimits, politeness: PolitenessConfig, seed: u64) -> Self {
        Self {
            slots: Vec::new(),
            index: HashMap::new(),
            ready: VecDeque::new(),
            waiting: BinaryHeap::new(),
            seen: KeySet::default(),
            foreign_depth: DepthMap::default(),
            queued_depth: DepthMap::default(),
            queued: 0,
            admitted: 0,
            admitting: 0,
            admitting_loaded: 0,
            limits,
            politeness,
            skipped: Vec::new(),
            outbox: Vec::new(),
            released: Vec::new(),
            to_load: Vec::new(),
            loads_in_flight: 0,
            partition: None,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// Fetches only the authorities of `partition`'s held shards.
    pub fn set_partition(&mut self, partition: Partition) {
        self.partition = Some(partition);
    }

    pub(super) fn slot_of(&mut self, authority: Authority) -> Slot {
        match self.index.entry(authority) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let slot = self.slots.len();
                let mut s = AuthoritySlot::new(e.key().clone(), self.limits.respect_robots);
                s.foreign = self.partition.as_ref().is_some_and(|p| !p.owns(e.key()));
                self.slots.push(s);
                e.insert(slot);
                slot
            }
        }
    }

    /// Gives `slot` its turn: in the ready ring if it may start now, in
    /// the timer heap if it must wait, nowhere if it has nothing to start.
    pub(super) fn wake(&mut self, slot: Slot, now: Instant) {
        let s = &mut self.slots[slot];
        if s.turn != Turn::None || s.abandoned {
            return;
        }
        let has_room = s.has_room(self.limits.per_host);
        let Some(at) = s.next_at(now).filter(|_| has_room) else {
            return;
        };
        if at <= now {
            s.turn = Turn::Ready;
            self.ready.push_back(slot);
        } else {
            s.turn = Turn::Waiting;
            self.waiting.push(Reverse((at, slot)));
        }
    }

    /// Moves authorities whose wait is over to the ready ring.
    pub fn release_due(&mut self, now: Instant) {
        while let Some(Reverse((at, slot))) = self.waiting.peek().copied() {
            if at > now {
                break;
            }
            self.waiting.pop();
            self.slots[slot].turn = Turn::None;
            self.wake(slot, now);
        }
    }

    /// The next instant an authority's wait ends.
    pub fn next_wake(&self) -> Option<Instant> {
        self.waiting.peek().map(|Reverse((at, _))| *at)
    }

    /// True when nothing can start, be admitted or be loaded until a
    /// request or the store answers.
    pub fn is_idle(&self) -> bool {
        self.ready.is_empty()
            && self.waiting.is_empty()
            && self.outbox.is_empty()
            && self.to_load.is_empty()
            && self.admitting == 0
            && self.loads_in_flight == 0
    }

    /// The next thing to start, round-robin over ready authorities.
    pub fn next_start(&mut self, now: Instant) -> Option<Next> {
        while let Some(slot) = self.ready.pop_front() {
            let s = &mut self.slots[slot];
            s.turn = Turn::None;
            match &s.robots {
                RobotsState::Unknown => {
                    s.robots = RobotsState::Pending;
                    s.in_flight += 1;
                    return Some(Next::Robots {
                        slot,
                        authority: s.authority.clone(),
                    });
                }
                RobotsState::Pending => continue,
                RobotsState::Known(rules) => {
                    let rules = rules.clone();
                    // Room may have gone since the turn was given (a
                    // finished request's record still on its way).
                    if s.abandoned
                        || s.not_before.is_some_and(|t| t > now)
                        || !s.has_room(self.limits.per_host)
                    {
                        self.wake(slot, now);
                        continue;
                    }
                    let before = s.queue.len();
                    let Some(job) = s.take_job(now, &mut self.queued_depth) else {
                        self.wake(slot, now);
                        continue;
                    };
                    if s.queue.len() < before {
                        self.queued -= 1;
                    }
                    s.in_flight += 1;
                    self.want_load(slot);
                    self.wake(slot, now);
                    return Some(Next::Page {
                        slot,
                        job,
                        robots: rules,
                    });
                }
            }
        }
        None
    }

    /// A page request of `slot` ended: updates the delay before its next
    /// request and its run of failures, abandoning it at the limit.
    pub fn request_done(&mut self, slot: Slot, now: Instant, report: RequestReport) {
        let random = self.rng.f64();
        let s = &mut self.slots[slot];
        s.in_flight = s.in_flight.saturating_sub(1);
        if let Some(rt) = report.response_time {
            let delay = s.timing.after_response(&self.politeness, rt, random);
            s.not_before = Some(s.not_before.map_or(now + delay, |t| t.max(now + delay)));
        }
        if report.failed {
            s.consecutive_failures += 1;
            if s.consecutive_failures >= self.politeness.max_host_errors && !s.abandoned {
                self.abandon(slot);
            }
        } else {
            s.consecutive_failures = 0;
        }
        self.wake(slot, now);
    }

    /// The record of a finished request of `slot` is on its way to the
    /// store: until it is durable it keeps its place among the authority's
    /// `per_host`.
    pub fn record_pending(&mut self, slot: Slot) {
        self.slots[slot].committing += 1;
        self.unstick(slot);
    }

    /// A record of `slot` is durable: its place is free.
    pub fn record_durable(&mut self, slot: Slot, now: Instant) {
        let s = &mut self.slots[slot];
        s.committing = s.committing.saturating_sub(1);
        self.wake(slot, now);
    }

    /// When every place of `slot` is taken by a page whose links wait for
    /// a shallower job of the authority, that job could never start: the
    /// links go now (exact depth yields to progress, as in
    /// [`Frontier::release_all_held`]), their pages' records go to the
    /// store, and the places free up as they become durable.
    fn unstick(&mut self, slot: Slot) {
        let s = &mut self.slots[slot];
        if s.held.is_empty() || s.held.len() < self.limits.per_host {
            return;
        }
        tracing::debug!(authority = %s.authority, held = s.held.len(), "releasing held links: every place waits");
        for (_, batch, owner) in std::mem::take(&mut s.held) {
            self.release(batch, owner);
        }
    }

    fn abandon(&mut self, slot: Slot) {
        let s = &mut self.slots[slot];
        s.abandoned = true;
        let queued: Vec<_> = s.queue.drain().collect();
        self.queued -= queued.len();
        let mut jobs = Vec::with_capacity(queued.len() + s.retries.len());
        for q in queued {
            self.queued_depth.remove(&q.key);
            jobs.push(q.job);
        }
        jobs.extend(s.retries.drain(..).map(|(_, j)| j));
        for j in &jobs {
            s.count(j.depth, false);
        }
        self.skipped.extend(jobs.into_iter().map(|j| (slot, j)));
        // URLs left in the store are loaded to be recorded as skipped too.
        self.want_load(slot);
    }

    /// Queues `job` again after a retryable failure and returns `None`;
    /// hands it back when its retries are used up or its authority was
    /// abandoned. `after` is the server's `Retry-After`: it holds back the
    /// whole authority.
    pub fn retry(
        &mut self,
        slot: Slot,
        mut job: Job,
        now: Instant,
        after: Option<Duration>,
    ) -> Option<Job> {
        if self.slots[slot].abandoned || job.attempts >= self.politeness.retries {
            return Some(job);
        }
        job.attempts += 1;
        let backoff = retry_backoff(self.politeness.retry_base, job.attempts, self.rng.f64());
        let s = &mut self.slots[slot];
        if let Some(after) = after {
            let until = now + after;
            s.not_before = Some(s.not_before.map_or(until, |t| t.max(until)));
        }
        s.retries
            .push((now + backoff.max(after.unwrap_or_default()), job));
        if s.turn == Turn::None {
            self.wake(slot, now);
        }
        None
    }

    /// The robots.txt request of `slot` finished with `rules`.
    pub fn robots_known(
        &mut self,
        slot: Slot,
        rules: RobotsRules,
        snapshot: Option<crawlkeeper_model::RobotsSnapshot>,
        now: Instant,
    ) {
        let s = &mut self.slots[slot];
        s.take_crawl_delay(&rules, &self.politeness);
        s.robots = RobotsState::Known(rules);
        s.robots_snapshot = snapshot;
        s.in_flight = s.in_flight.saturating_sub(1);
        self.wake(slot, now);
    }

    /// URLs given up with their authority, since the last call.
    pub fn take_skipped(&mut self) -> Vec<(Slot, Job)> {
        std::mem::take(&mut self.skipped)
    }

    /// The authority of `slot`.
    pub fn authority(&self, slot: Slot) -> &Authority {
        &self.slots[slot].authority
    }

    /// The state of `slot` that must survive a restart.
    pub fn saved(&self, slot: Slot) -> crawlkeeper_model::AuthorityState {
        self.slots[slot].saved()
    }

    /// Whether `slot` was abandoned.
    pub fn is_abandoned(&self, slot: Slot) -> bool {
        self.slots[slot].abandoned
    }

    /// URLs not yet started: queued in memory or in the store, waiting for a
    /// retry, or found and held back.
    pub fn pending(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| {
                let held: usize = s.held.iter().map(|(_, b, _)| b.len()).sum();
                (s.queue.len() + s.retries.len() + held) as u64 + s.stored
            })
            .sum()
    }

    /// Keys remembered in memory.
    pub fn cached_keys(&self) -> usize {
        self.seen.len() + self.foreign_depth.len()
    }
}

#[cfg(test)]
mod tests;
