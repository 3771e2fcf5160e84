//! The frontier: one state machine per authority (its queue, robots rules,
//! timing and error count), the seen set, and the two places an authority
//! waits its turn: the ready ring (may start now) and the timer heap (may
//! start at an instant). Pure data owned by the engine task: time comes in
//! as `now`, randomness from a seeded generator.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Duration;

use crawlkeeper_model::Authority;
use tokio::time::Instant;

use crate::config::PolitenessConfig;
use crate::pipeline::{Discovered, Job};
use crate::politeness::{Timing, retry_backoff};
use crate::robots::RobotsRules;
use crate::scope::Disposition;

/// Index of an authority in the frontier.
pub type Slot = usize;

/// The keys are already uniform 128-bit hashes: fold them, hash nothing again.
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(b);
        }
    }
    fn write_u128(&mut self, k: u128) {
        self.0 = (k as u64) ^ ((k >> 64) as u64);
    }
}

type SeenSet = HashSet<u128, BuildHasherDefault<KeyHasher>>;

enum RobotsState {
    Unknown,
    Pending,
    Known(RobotsRules),
}

/// Where an authority is queued for its next start.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// In neither queue: busy, empty, or abandoned.
    None,
    /// In the ready ring.
    Ready,
    /// In the timer heap.
    Waiting,
}

struct AuthoritySlot {
    authority: Authority,
    queue: VecDeque<Job>,
    retries: Vec<(Instant, Job)>,
    in_flight: usize,
    robots: RobotsState,
    turn: Turn,
    not_before: Option<Instant>,
    timing: Timing,
    consecutive_failures: u32,
    abandoned: bool,
}

impl AuthoritySlot {
    /// When this authority could start its next request, if it has one.
    fn next_at(&self, now: Instant) -> Option<Instant> {
        let gate = self.not_before.unwrap_or(now);
        if !self.queue.is_empty() {
            return Some(gate);
        }
        let due = self.retries.iter().map(|(at, _)| *at).min()?;
        Some(gate.max(due))
    }

    /// The job to start now: a due retry first, then the queue.
    fn take_job(&mut self, now: Instant) -> Option<Job> {
        let due = self
            .retries
            .iter()
            .enumerate()
            .filter(|(_, (at, _))| *at <= now)
            .min_by_key(|(_, (at, _))| *at)
            .map(|(i, _)| i);
        match due {
            Some(i) => Some(self.retries.swap_remove(i).1),
            None => self.queue.pop_front(),
        }
    }
}

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

/// Per-authority queues with fair round-robin dispatch and politeness.
pub struct Frontier {
    slots: Vec<AuthoritySlot>,
    index: HashMap<Authority, Slot>,
    ready: VecDeque<Slot>,
    waiting: BinaryHeap<Reverse<(Instant, Slot)>>,
    seen: SeenSet,
    admitted: u64,
    max_pages: Option<u64>,
    per_host: usize,
    respect_robots: bool,
    politeness: PolitenessConfig,
    skipped: Vec<(Slot, Job)>,
    rng: fastrand::Rng,
}

impl Frontier {
    /// An empty frontier.
    pub fn new(
        per_host: usize,
        max_pages: Option<u64>,
        respect_robots: bool,
        politeness: PolitenessConfig,
        seed: u64,
    ) -> Self {
        Self {
            slots: Vec::new(),
            index: HashMap::new(),
            ready: VecDeque::new(),
            waiting: BinaryHeap::new(),
            seen: SeenSet::default(),
            admitted: 0,
            max_pages,
            per_host,
            respect_robots,
            politeness,
            skipped: Vec::new(),
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// Offers a URL: queued if it is new and under the page limit. A new
    /// URL of an abandoned authority is kept for a skipped record.
    pub fn offer(&mut self, d: Discovered, now: Instant) -> Disposition {
        if self.seen.contains(&d.key) {
            return Disposition::Duplicate;
        }
        if self.max_pages.is_some_and(|max| self.admitted >= max) {
            return Disposition::OverLimit;
        }
        let Ok(authority) = Authority::of(&d.job.url) else {
            return Disposition::OutOfScope(crate::scope::ScopeReason::Scheme);
        };
        self.seen.insert(d.key);
        self.admitted += 1;
        let slot = self.slot_of(authority);
        if self.slots[slot].abandoned {
            self.skipped.push((slot, d.job));
            return Disposition::Skipped;
        }
        self.slots[slot].queue.push_back(d.job);
        self.wake(slot, now);
        Disposition::Queued
    }

    fn slot_of(&mut self, authority: Authority) -> Slot {
        match self.index.entry(authority) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let slot = self.slots.len();
                self.slots.push(AuthoritySlot {
                    authority: e.key().clone(),
                    queue: VecDeque::new(),
                    retries: Vec::new(),
                    in_flight: 0,
                    robots: if self.respect_robots {
                        RobotsState::Unknown
                    } else {
                        RobotsState::Known(RobotsRules::AllowAll)
                    },
                    turn: Turn::None,
                    not_before: None,
                    timing: Timing::default(),
                    consecutive_failures: 0,
                    abandoned: false,
                });
                e.insert(slot);
                slot
            }
        }
    }

    /// Gives `slot` its turn: in the ready ring if it may start now, in
    /// the timer heap if it must wait, nowhere if it has nothing to start.
    fn wake(&mut self, slot: Slot, now: Instant) {
        let s = &mut self.slots[slot];
        if s.turn != Turn::None || s.abandoned {
            return;
        }
        let has_room = match s.robots {
            RobotsState::Pending => false,
            RobotsState::Unknown => s.in_flight == 0,
            RobotsState::Known(_) => s.in_flight < self.per_host,
        };
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

    /// True when no authority can ever start anything without a request
    /// finishing first.
    pub fn is_idle(&self) -> bool {
        self.ready.is_empty() && self.waiting.is_empty()
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
                    if s.abandoned || s.not_before.is_some_and(|t| t > now) {
                        self.wake(slot, now);
                        continue;
                    }
                    let Some(job) = s.take_job(now) else {
                        self.wake(slot, now);
                        continue;
                    };
                    s.in_flight += 1;
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
                s.abandoned = true;
                let jobs: Vec<Job> = s
                    .queue
                    .drain(..)
                    .chain(s.retries.drain(..).map(|(_, j)| j))
                    .collect();
                self.skipped.extend(jobs.into_iter().map(|j| (slot, j)));
            }
        } else {
            s.consecutive_failures = 0;
        }
        self.wake(slot, now);
    }

    /// Queues `job` again after a retryable failure and returns `None`;
    /// hands it back when its retries are used up or its authority was
    /// abandoned.
    /// `after` is the server's `Retry-After`: it holds back the whole authority.
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
    pub fn robots_known(&mut self, slot: Slot, rules: RobotsRules, now: Instant) {
        let s = &mut self.slots[slot];
        s.timing
            .set_crawl_delay(rules.crawl_delay(), &self.politeness);
        s.robots = RobotsState::Known(rules);
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

    /// Whether `slot` was abandoned.
    pub fn is_abandoned(&self, slot: Slot) -> bool {
        self.slots[slot].abandoned
    }

    /// URLs queued (or waiting to be retried) and not yet started.
    pub fn pending(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| (s.queue.len() + s.retries.len()) as u64)
            .sum()
    }

    /// Distinct URLs seen so far.
    pub fn seen(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests;
