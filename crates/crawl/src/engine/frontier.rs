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

use super::depth_queue::{DepthQueue, Queued};
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
/// Smallest depth each queued (not yet started) URL was offered at.
type DepthMap = HashMap<u128, u32, BuildHasherDefault<KeyHasher>>;

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
    queue: DepthQueue,
    retries: Vec<(Instant, Job)>,
    in_flight: usize,
    robots: RobotsState,
    turn: Turn,
    not_before: Option<Instant>,
    timing: Timing,
    consecutive_failures: u32,
    abandoned: bool,
    /// Jobs of this authority not yet finished (queued, waiting for a
    /// retry, or in flight), by depth.
    outstanding: Vec<u32>,
    /// URLs found on this authority's pages, held until no shallower job of
    /// the authority is outstanding: (depth of the page, what it found).
    held: Vec<(u32, Vec<Discovered>)>,
}

impl AuthoritySlot {
    fn count(&mut self, depth: u32, up: bool) {
        let d = depth as usize;
        if self.outstanding.len() <= d {
            self.outstanding.resize(d + 1, 0);
        }
        if up {
            self.outstanding[d] += 1;
        } else {
            self.outstanding[d] = self.outstanding[d].saturating_sub(1);
        }
    }

    /// True while a job shallower than `depth` is outstanding.
    fn blocks(&self, depth: u32) -> bool {
        self.outstanding.iter().take(depth as usize).any(|&n| n > 0)
    }

    /// When this authority could start its next request, if it has one.
    fn next_at(&self, now: Instant) -> Option<Instant> {
        let gate = self.not_before.unwrap_or(now);
        if !self.queue.is_empty() {
            return Some(gate);
        }
        let due = self.retries.iter().map(|(at, _)| *at).min()?;
        Some(gate.max(due))
    }

    /// The job to start now: a due retry first, then the queue. A queued
    /// job takes the smallest depth it was offered at.
    fn take_job(&mut self, now: Instant, queued_depth: &mut DepthMap) -> Option<Job> {
        let due = self
            .retries
            .iter()
            .enumerate()
            .filter(|(_, (at, _))| *at <= now)
            .min_by_key(|(_, (at, _))| *at)
            .map(|(i, _)| i);
        match due {
            Some(i) => Some(self.retries.swap_remove(i).1),
            None => self.queue.pop().map(|Queued { key, mut job }| {
                if let Some(depth) = queued_depth.remove(&key) {
                    job.depth = job.depth.min(depth);
                }
                job
            }),
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
    queued_depth: DepthMap,
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
            queued_depth: DepthMap::default(),
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
    /// URL of an abandoned authority is kept for a skipped record. A URL
    /// still queued that is found again closer to a seed takes the smaller
    /// depth, so that depth limits do not depend on the order responses
    /// arrive in.
    pub fn offer(&mut self, d: Discovered, now: Instant) -> Disposition {
        if self.seen.contains(&d.key) {
            if let Some(depth) = self.queued_depth.get_mut(&d.key)
                && d.job.depth < *depth
            {
                let old = std::mem::replace(depth, d.job.depth);
                let slot = Authority::of(&d.job.url)
                    .ok()
                    .and_then(|a| self.index.get(&a).copied());
                if let Some(slot) = slot {
                    self.slots[slot].count(old, false);
                    self.slots[slot].count(d.job.depth, true);
                }
            }
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
        self.queued_depth.insert(d.key, d.job.depth);
        self.slots[slot].count(d.job.depth, true);
        self.slots[slot].queue.push(d.key, d.job);
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
                    queue: DepthQueue::default(),
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
                    outstanding: Vec::new(),
                    held: Vec::new(),
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
                    let Some(job) = s.take_job(now, &mut self.queued_depth) else {
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
                let queued: Vec<Queued> = s.queue.drain().collect();
                let mut jobs = Vec::with_capacity(queued.len() + s.retries.len());
                for Queued { key, job } in queued {
                    self.queued_depth.remove(&key);
                    jobs.push(job);
                }
                jobs.extend(s.retries.drain(..).map(|(_, j)| j));
                for j in &jobs {
                    s.count(j.depth, false);
                }
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

    /// URLs found on a page of `slot` at `depth`. They are offered at once
    /// unless a shallower job of the authority is still outstanding: then
    /// they wait for it, so that every URL is admitted at its smallest depth
    /// even when responses arrive out of order (breadth-first admission).
    pub fn offer_batch(&mut self, slot: Slot, depth: u32, batch: Vec<Discovered>, now: Instant) {
        if batch.is_empty() {
            return;
        }
        if self.slots[slot].blocks(depth) {
            self.slots[slot].held.push((depth, batch));
        } else {
            for d in batch {
                self.offer(d, now);
            }
        }
    }

    /// A job of `slot` at `depth` is finished (its record is written):
    /// batches that waited for it are offered.
    pub fn job_finished(&mut self, slot: Slot, depth: u32, now: Instant) {
        self.slots[slot].count(depth, false);
        self.release_held(slot, now);
    }

    fn release_held(&mut self, slot: Slot, now: Instant) {
        loop {
            let s = &mut self.slots[slot];
            let Some(i) = s.held.iter().position(|(depth, _)| !s.blocks(*depth)) else {
                return;
            };
            let (_, batch) = s.held.swap_remove(i);
            for d in batch {
                self.offer(d, now);
            }
        }
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

    /// URLs queued, waiting to be retried, or found and held back, not yet started.
    pub fn pending(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| {
                let held: usize = s.held.iter().map(|(_, b)| b.len()).sum();
                (s.queue.len() + s.retries.len() + held) as u64
            })
            .sum()
    }

    /// Distinct URLs seen so far.
    pub fn seen(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests;
