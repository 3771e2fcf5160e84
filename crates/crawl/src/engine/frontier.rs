//! The frontier: the authorities' state machines, and the two places an
//! authority waits its turn: the ready ring (may start now) and the timer
//! heap (may start at an instant). Pure data owned by the engine task: time
//! comes in as `now`, randomness from a seeded generator. Admission (dedup,
//! limits, breadth-first order, the store) is in `admission.rs`; it
//! decides, and changes the frontier's state (its fields are private to
//! this file) only through the methods here.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Duration;

use crawlkeeper_model::key::KeySet;
use crawlkeeper_model::{Authority, Partition};
use tokio::time::Instant;

use super::slot::{AuthoritySlot, DepthMap, RobotsState, Slot, Turn};
use crate::config::PolitenessConfig;
use crate::pipeline::{Discovered, Request};
use crate::politeness::retry_backoff;
use crate::robots::RobotsRules;
use crate::state::Resumed;

/// What the engine should start next.
pub enum Next {
    /// Fetch the robots.txt of an authority.
    Robots {
        /// The authority's slot.
        slot: Slot,
        /// The authority.
        authority: Authority,
    },
    /// Run a request with the authority's robots rules.
    Page {
        /// The authority's slot.
        slot: Slot,
        /// The request.
        request: Request,
        /// The rules to check the request against.
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
    /// Most requisites (frames aside) admitted in the crawl.
    pub max_requisites: Option<u64>,
    /// Fetch robots.txt first.
    pub respect_robots: bool,
    /// Most keys remembered in memory to skip store lookups.
    pub seen_cache: usize,
    /// Most URLs queued in memory; more stay in the store.
    pub max_queued: usize,
}

/// A URL on its way to the store: its slot, key and request, and the page that
/// found it.
pub(super) type Offer = (Slot, u128, Request, Option<u64>);

/// Per-authority queues with fair round-robin dispatch and politeness.
/// Its state changes only here: admission (`admission.rs`) decides, and
/// asks for each change by a method below.
pub struct Frontier {
    slots: Vec<AuthoritySlot>,
    index: HashMap<Authority, Slot>,
    ready: VecDeque<Slot>,
    waiting: BinaryHeap<Reverse<(Instant, Slot)>>,
    /// Keys of the URLs met (other shards' aside), remembered while the
    /// cache has room (`seen_cache`).
    seen: KeySet,
    /// Keys of other shards' URLs this crawl offered, with the smallest
    /// depth offered (a shorter path is offered again).
    foreign_depth: DepthMap,
    /// Keys of the URLs queued in memory, with the smallest depth each was
    /// offered at.
    queued_depth: DepthMap,
    /// URLs queued in memory.
    queued: usize,
    /// URLs of the job admitted (by every process, as last heard).
    admitted: u64,
    /// Requisites (frames aside) of the job admitted (by every process,
    /// as last heard).
    admitted_requisites: u64,
    /// URLs offered to the store and not yet answered.
    admitting: u64,
    /// Of those, the page requisites (`--max-pages` counts pages only).
    admitting_requisites: u64,
    /// Of those, the ones with a place in memory reserved.
    admitting_loaded: usize,
    limits: FrontierLimits,
    politeness: PolitenessConfig,
    /// URLs given up with their authority, not yet taken.
    skipped: Vec<(Slot, Request)>,
    /// URLs for the store, not yet taken.
    outbox: Vec<Offer>,
    /// Tokens of pages whose held URLs were triaged, not yet taken.
    released: Vec<u64>,
    /// Authorities whose URLs are to be loaded from the store.
    to_load: Vec<Slot>,
    /// Loads asked of the store and not yet answered.
    loads_in_flight: usize,
    /// The shards this crawl fetches, when it shares its job; URLs of
    /// other shards' authorities are admitted for their holders only.
    partition: Option<Partition>,
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
            admitted_requisites: 0,
            admitting: 0,
            admitting_requisites: 0,
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
            // Rules past their age are fetched again (requests in flight
            // under them finish; no new one starts until they are known).
            if s.robots_stale() {
                s.robots = RobotsState::Unknown;
            }
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
                    let Some(request) = s.take_request(now, &mut self.queued_depth) else {
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
                        request,
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
    /// a shallower request of the authority, that request could never start: the
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
        let mut requests = Vec::with_capacity(queued.len() + s.retries.len());
        for q in queued {
            self.queued_depth.remove(&q.key);
            requests.push(q.request);
        }
        requests.extend(s.retries.drain(..).map(|(_, j)| j));
        for j in &requests {
            s.count(j.depth, false);
        }
        self.skipped.extend(requests.into_iter().map(|j| (slot, j)));
        // URLs left in the store are loaded to be recorded as skipped too.
        self.want_load(slot);
    }

    /// Queues `request` again after a retryable failure and returns `None`;
    /// hands it back when its retries are used up or its authority was
    /// abandoned. `after` is the server's `Retry-After`: it holds back the
    /// whole authority.
    pub fn retry(
        &mut self,
        slot: Slot,
        mut request: Request,
        now: Instant,
        after: Option<Duration>,
    ) -> Option<Request> {
        if self.slots[slot].abandoned || request.attempts >= self.politeness.retries {
            return Some(request);
        }
        request.attempts += 1;
        let backoff = retry_backoff(self.politeness.retry_base, request.attempts, self.rng.f64());
        let s = &mut self.slots[slot];
        if let Some(after) = after {
            let until = now + after;
            s.not_before = Some(s.not_before.map_or(until, |t| t.max(until)));
        }
        s.retries
            .push((now + backoff.max(after.unwrap_or_default()), request));
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
        s.robots_at_ms = Some(chrono::Utc::now().timestamp_millis());
        s.in_flight = s.in_flight.saturating_sub(1);
        self.wake(slot, now);
    }

    /// URLs given up with their authority, since the last call.
    pub fn take_skipped(&mut self) -> Vec<(Slot, Request)> {
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

    /// Tokens of pages whose held URLs were triaged since the last call.
    pub fn take_released(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.released)
    }

    /// Admissions of the whole job, as the store counts them (other
    /// processes admit too): the page limit is judged on these.
    pub fn job_admitted(&mut self, seen: u64) {
        self.admitted = self.admitted.max(seen);
    }

    /// Requisites admitted to the whole job, as the store counts them.
    pub fn job_admitted_requisites(&mut self, requisites: u64) {
        self.admitted_requisites = self.admitted_requisites.max(requisites);
    }

    /// Takes back what earlier runs of the job left.
    pub fn restore(&mut self, resumed: &Resumed) {
        self.admitted = resumed.counts.pages();
        self.admitted_requisites = resumed.counts.requisites;
        self.restore_authorities(resumed);
    }

    /// Takes shards of the job (a holder that is gone left them): their
    /// authorities are fetched here from now on, resuming what was left.
    pub fn take_shards(&mut self, shards: &[u32], resumed: &Resumed) {
        let Some(partition) = &mut self.partition else {
            return;
        };
        partition.held.extend_from_slice(shards);
        partition.held.sort_unstable();
        partition.held.dedup();
        let partition = partition.clone();
        for s in &mut self.slots {
            if s.foreign && partition.owns(&s.authority) {
                s.foreign = false;
            }
        }
        self.restore_authorities(resumed);
    }

    /// The saved state and queued counts of resumed authorities.
    fn restore_authorities(&mut self, resumed: &Resumed) {
        for saved in &resumed.authorities {
            let slot = self.slot_of(saved.authority.clone());
            let s = &mut self.slots[slot];
            s.restore(saved);
            if let RobotsState::Known(rules) = &s.robots {
                let rules = rules.clone();
                s.take_crawl_delay(&rules, &self.politeness);
            }
        }
        for (authority, count) in &resumed.queued {
            let slot = self.slot_of(authority.clone());
            self.slots[slot].stored = *count;
            self.want_load(slot);
        }
    }

    /// Every authority's state, by slot, to be read (the live snapshot).
    pub(super) fn hosts(&self) -> &[AuthoritySlot] {
        &self.slots
    }
}

/// The changes admission (`admission.rs`) makes: it decides, these keep
/// the counts and queues that go with each decision.
impl Frontier {
    /// Whether the discovered URL is known here already: queued in memory
    /// (it keeps the smaller of the two depths), another shard's offered
    /// at no greater depth, or among the keys remembered. Another shard's
    /// URL met at a smaller depth is noted at it, and offered again.
    pub(super) fn is_known(&mut self, d: &Discovered) -> bool {
        if let Some(depth) = self.queued_depth.get_mut(&d.key) {
            if d.request.depth < *depth {
                let old = std::mem::replace(depth, d.request.depth);
                if let Some(&slot) = Authority::of(&d.request.url)
                    .ok()
                    .and_then(|a| self.index.get(&a))
                {
                    self.slots[slot].count(old, false);
                    self.slots[slot].count(d.request.depth, true);
                }
            }
            return true;
        }
        if let Some(best) = self.foreign_depth.get_mut(&d.key) {
            // Another shard's: offered again only by a shorter path, which
            // the store takes while the URL still waits there.
            if d.request.depth >= *best {
                return true;
            }
            *best = d.request.depth;
        } else if self.seen.contains(&d.key) {
            return true;
        }
        false
    }

    /// Whether the page limit is reached, URLs offered to the store and
    /// not yet answered counted in.
    pub(super) fn at_page_limit(&self) -> bool {
        self.limits
            .max_pages
            .is_some_and(|max| self.admitted + self.admitting - self.admitting_requisites >= max)
    }

    /// Whether the requisite limit is reached, requisites offered to the
    /// store and not yet answered counted in.
    pub(super) fn at_requisite_limit(&self) -> bool {
        self.limits
            .max_requisites
            .is_some_and(|max| self.admitted_requisites + self.admitting_requisites >= max)
    }

    /// Remembers the key of a URL of `slot` met at `depth`, while there is
    /// room for it.
    pub(super) fn remember(&mut self, slot: Slot, key: u128, depth: u32) {
        if self.seen.len() + self.foreign_depth.len() < self.limits.seen_cache {
            if self.slots[slot].foreign {
                self.foreign_depth.insert(key, depth);
            } else {
                self.seen.insert(key);
            }
        }
    }

    /// Gives `request` up with its abandoned authority (to be recorded as
    /// skipped: [`Frontier::take_skipped`]).
    pub(super) fn skip(&mut self, slot: Slot, request: Request) {
        self.skipped.push((slot, request));
    }

    /// Offers `request` to the store (see [`Frontier::take_offers`]); it is
    /// outstanding at its depth from now on.
    pub(super) fn offer(&mut self, slot: Slot, key: u128, request: Request, owner: Option<u64>) {
        self.slots[slot].count(request.depth, true);
        self.admitting += 1;
        if !request.counts_as_page() {
            self.admitting_requisites += 1;
        }
        self.outbox.push((slot, key, request, owner));
    }

    /// The URLs offered since the last call.
    pub(super) fn take_offers(&mut self) -> Vec<Offer> {
        std::mem::take(&mut self.outbox)
    }

    /// Places in memory not taken by queued URLs nor reserved for URLs on
    /// their way to the store.
    pub(super) fn room(&self) -> usize {
        self.limits
            .max_queued
            .saturating_sub(self.queued + self.admitting_loaded)
    }

    /// Reserves a place in memory for an offered URL of `slot`, if it may
    /// have one: there is room, and its authority is fetched here.
    pub(super) fn reserve_place(&mut self, slot: Slot) -> bool {
        let reserved = !self.slots[slot].foreign && self.room() > 0;
        if reserved {
            self.admitting_loaded += 1;
        }
        reserved
    }

    /// The store answered for an offered URL (`loaded`: with a place
    /// reserved), which it took as new (`new`) or knew already.
    pub(super) fn answered(&mut self, new: bool, loaded: bool, requisite: bool) {
        self.admitting -= 1;
        if loaded {
            self.admitting_loaded -= 1;
        }
        if requisite {
            self.admitting_requisites -= 1;
            if new {
                self.admitted_requisites += 1;
            }
        } else if new {
            self.admitted += 1;
        }
    }

    /// Counts a request of `slot` at `depth` as outstanding (`up`), or as no
    /// longer.
    pub(super) fn count(&mut self, slot: Slot, depth: u32, up: bool) {
        self.slots[slot].count(depth, up);
    }

    /// Queues `request` of `slot` in memory under `key`.
    pub(super) fn enqueue(&mut self, slot: Slot, key: u128, request: Request) {
        self.queued_depth.insert(key, request.depth);
        self.slots[slot].queue.push(key, request);
        self.queued += 1;
    }

    /// A URL of `slot` was left in the store, to be loaded later.
    pub(super) fn leave_in_store(&mut self, slot: Slot) {
        self.slots[slot].stored += 1;
    }

    /// Whether `slot` is of a shard another process holds.
    pub(super) fn is_foreign(&self, slot: Slot) -> bool {
        self.slots[slot].foreign
    }

    /// Whether a request of `slot` shallower than `depth` is outstanding.
    pub(super) fn blocks(&self, slot: Slot, depth: u32) -> bool {
        self.slots[slot].blocks(depth)
    }

    /// Holds `batch`, found on page `owner` of `slot` at `depth`, until no
    /// shallower request of the authority is outstanding.
    pub(super) fn hold(
        &mut self,
        slot: Slot,
        depth: u32,
        batch: Vec<Discovered>,
        owner: Option<u64>,
    ) {
        self.slots[slot].held.push((depth, batch, owner));
    }

    /// Takes out a batch of `slot` held for a request no longer outstanding.
    pub(super) fn take_unblocked(&mut self, slot: Slot) -> Option<(Vec<Discovered>, Option<u64>)> {
        let s = &mut self.slots[slot];
        let i = s.held.iter().position(|(depth, _, _)| !s.blocks(*depth))?;
        let (_, batch, owner) = s.held.swap_remove(i);
        Some((batch, owner))
    }

    /// Takes out every batch `slot` holds.
    pub(super) fn take_held(&mut self, slot: Slot) -> Vec<(u32, Vec<Discovered>, Option<u64>)> {
        std::mem::take(&mut self.slots[slot].held)
    }

    /// The held URLs of page `token` were triaged (its token is given back
    /// by [`Frontier::take_released`]).
    pub(super) fn note_released(&mut self, token: u64) {
        self.released.push(token);
    }

    /// URLs of `slot` queued in memory.
    pub(super) fn queued_of(&self, slot: Slot) -> usize {
        self.slots[slot].queue.len()
    }

    /// Whether URLs of `slot` wait in the store and none are being loaded.
    pub(super) fn may_load(&self, slot: Slot) -> bool {
        let s = &self.slots[slot];
        s.stored > 0 && !s.loading
    }

    /// Asks for a load of `slot` (see [`Frontier::take_load_requests`]),
    /// unless one is asked already.
    pub(super) fn ask_load(&mut self, slot: Slot) {
        if !self.to_load.contains(&slot) {
            self.to_load.push(slot);
        }
    }

    /// The loads asked for since the last call.
    pub(super) fn take_load_requests(&mut self) -> Vec<Slot> {
        std::mem::take(&mut self.to_load)
    }

    /// Loads taken by [`Frontier::take_load_requests`] and not started,
    /// asked for again.
    pub(super) fn defer_loads(&mut self, slots: Vec<Slot>) {
        self.to_load = slots;
    }

    /// A load of `slot` was asked of the store.
    pub(super) fn start_load(&mut self, slot: Slot) {
        self.slots[slot].loading = true;
        self.loads_in_flight += 1;
    }

    /// The store answered a load of `slot` with `got` URLs; `more` when it
    /// may have others.
    pub(super) fn load_answered(&mut self, slot: Slot, got: usize, more: bool) {
        let s = &mut self.slots[slot];
        s.loading = false;
        self.loads_in_flight -= 1;
        s.stored = if more || std::mem::take(&mut s.news_pending) {
            s.stored.saturating_sub(got as u64).max(1)
        } else {
            0
        };
    }

    /// `more` URLs of `slot` were queued in the store again (due for a
    /// revisit), besides those it held.
    pub(super) fn stored_more(&mut self, slot: Slot, more: u64) {
        let s = &mut self.slots[slot];
        s.stored = s.stored.saturating_add(more);
        if s.loading {
            s.news_pending = true;
        }
    }

    /// Other processes left `queued` URLs of `slot` in the store.
    pub(super) fn stored_elsewhere(&mut self, slot: Slot, queued: u64) {
        let s = &mut self.slots[slot];
        s.stored = s.stored.max(queued);
        if s.loading {
            s.news_pending = true;
        }
    }
}

#[cfg(test)]
mod tests;
