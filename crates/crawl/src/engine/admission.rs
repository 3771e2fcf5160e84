//! Admission: which discovered URLs become jobs, in what order, and where
//! they wait. A URL is checked against the in-memory queue and key cache,
//! the page limit and its authority's state, then offered to the store,
//! which alone knows whether it is new. Links of a page wait while a
//! shallower job of its authority is outstanding (breadth-first admission),
//! so depth limits are exact whatever order responses arrive in. URLs past
//! the in-memory limit stay in the store and are loaded when there is room.

use crawlkeeper_model::Authority;
use tokio::time::Instant;

use super::frontier::Frontier;
use super::slot::Slot;
use crate::pipeline::{Discovered, Job};
use crate::scope::{Disposition, ScopeReason};
use crate::state::Resumed;

/// URLs loaded from the store at a time, per authority.
const LOAD_BATCH: usize = 1000;
/// An authority asks for more from the store below this many queued.
const LOW_WATER: usize = 64;

/// A URL to offer the store.
pub struct Outgoing {
    /// Its authority's slot.
    pub slot: Slot,
    /// Its dedup key.
    pub key: u128,
    /// The job.
    pub job: Job,
    /// Its authority.
    pub authority: Authority,
    /// Kept in memory (else left in the store).
    pub loaded: bool,
    /// The page that found it, whose record is stored with it.
    pub owner: Option<u64>,
}

impl Frontier {
    /// Decides what becomes of a discovered URL; one that may be new goes
    /// to the outbox for the store, tagged with the page that found it.
    pub fn triage(&mut self, d: Discovered, owner: Option<u64>) -> Disposition {
        if let Some(depth) = self.queued_depth.get_mut(&d.key) {
            if d.job.depth < *depth {
                let old = std::mem::replace(depth, d.job.depth);
                if let Some(&slot) = Authority::of(&d.job.url)
                    .ok()
                    .and_then(|a| self.index.get(&a))
                {
                    self.slots[slot].count(old, false);
                    self.slots[slot].count(d.job.depth, true);
                }
            }
            return Disposition::Duplicate;
        }
        if let Some(best) = self.foreign_depth.get_mut(&d.key) {
            // Another shard's: offered again only by a shorter path, which
            // the store takes while the URL still waits there.
            if d.job.depth >= *best {
                return Disposition::Duplicate;
            }
            *best = d.job.depth;
        } else if self.seen.contains(&d.key) {
            return Disposition::Duplicate;
        }
        if self
            .limits
            .max_pages
            .is_some_and(|max| self.admitted + self.admitting >= max)
        {
            return Disposition::OverLimit;
        }
        let Ok(authority) = Authority::of(&d.job.url) else {
            return Disposition::OutOfScope(ScopeReason::Scheme);
        };
        let slot = self.slot_of(authority);
        if self.seen.len() + self.foreign_depth.len() < self.limits.seen_cache {
            if self.slots[slot].foreign {
                self.foreign_depth.insert(d.key, d.job.depth);
            } else {
                self.seen.insert(d.key);
            }
        }
        if self.slots[slot].abandoned {
            self.skipped.push((slot, d.job));
            return Disposition::Skipped;
        }
        self.slots[slot].count(d.job.depth, true);
        self.admitting += 1;
        self.outbox.push((slot, d.key, d.job, owner));
        Disposition::Queued
    }

    /// URLs for the store, each marked whether it will be kept in memory.
    pub fn take_outbox(&mut self) -> Vec<Outgoing> {
        let items = std::mem::take(&mut self.outbox);
        items
            .into_iter()
            .map(|(slot, key, job, owner)| {
                let loaded = !self.slots[slot].foreign
                    && self.queued + self.admitting_loaded < self.limits.max_queued;
                if loaded {
                    self.admitting_loaded += 1;
                }
                Outgoing {
                    slot,
                    key,
                    job,
                    authority: self.slots[slot].authority.clone(),
                    loaded,
                    owner,
                }
            })
            .collect()
    }

    /// The store's answer for one offered URL.
    pub fn admitted(
        &mut self,
        slot: Slot,
        key: u128,
        job: Job,
        new: bool,
        loaded: bool,
        now: Instant,
    ) {
        self.admitting -= 1;
        if loaded {
            self.admitting_loaded -= 1;
        }
        let depth = job.depth;
        let s = &mut self.slots[slot];
        if !new {
            s.count(depth, false);
        } else if s.foreign {
            // Its shard's holder fetches it.
            s.count(depth, false);
            self.admitted += 1;
        } else if s.abandoned {
            s.count(depth, false);
            self.admitted += 1;
            self.skipped.push((slot, job));
        } else if loaded {
            self.admitted += 1;
            self.queued_depth.insert(key, depth);
            s.queue.push(key, job);
            self.queued += 1;
            self.wake(slot, now);
        } else {
            self.admitted += 1;
            s.stored += 1;
            s.count(depth, false);
            self.want_load(slot);
        }
        self.release_held(slot);
    }

    /// URLs found on page `owner` of `slot` at `depth`. They are triaged at
    /// once unless a shallower job of the authority is still outstanding:
    /// then they wait for it, so that every URL is admitted at its smallest
    /// depth. Returns true when they wait (the page's token is given back
    /// by [`Frontier::take_released`] when they go).
    pub fn offer_batch(
        &mut self,
        slot: Slot,
        depth: u32,
        batch: Vec<Discovered>,
        owner: Option<u64>,
    ) -> bool {
        if !batch.is_empty() && self.slots[slot].blocks(depth) {
            self.slots[slot].held.push((depth, batch, owner));
            return true;
        }
        for d in batch {
            self.triage(d, owner);
        }
        false
    }

    /// A job of `slot` at `depth` is finished: batches that waited for it
    /// are triaged.
    pub fn job_finished(&mut self, slot: Slot, depth: u32) {
        self.slots[slot].count(depth, false);
        self.release_held(slot);
    }

    fn release_held(&mut self, slot: Slot) {
        loop {
            let s = &mut self.slots[slot];
            let Some(i) = s.held.iter().position(|(depth, _, _)| !s.blocks(*depth)) else {
                return;
            };
            let (_, batch, owner) = s.held.swap_remove(i);
            self.release(batch, owner);
        }
    }

    pub(super) fn release(&mut self, batch: Vec<Discovered>, owner: Option<u64>) {
        for d in batch {
            self.triage(d, owner);
        }
        if let Some(token) = owner {
            self.released.push(token);
        }
    }

    /// Releases every held batch now, whatever waits: for a stop, or when
    /// waiting could never end because the pages that wait fill every worker.
    pub fn release_all_held(&mut self) {
        for slot in 0..self.slots.len() {
            for (_, batch, owner) in std::mem::take(&mut self.slots[slot].held) {
                self.release(batch, owner);
            }
        }
    }

    /// Tokens of pages whose held URLs were triaged since the last call.
    pub fn take_released(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.released)
    }

    /// Asks for more of `slot`'s URLs from the store when it runs low.
    pub(super) fn want_load(&mut self, slot: Slot) {
        let s = &self.slots[slot];
        if s.stored > 0 && !s.loading && s.queue.len() < LOW_WATER && !self.to_load.contains(&slot)
        {
            self.to_load.push(slot);
        }
    }

    /// Loads to ask of the store now that there is room in memory:
    /// (slot, authority, limit).
    pub fn take_loads(&mut self) -> Vec<(Slot, Authority, usize)> {
        let mut out = Vec::new();
        let mut keep = Vec::new();
        for slot in std::mem::take(&mut self.to_load) {
            let room = self
                .limits
                .max_queued
                .saturating_sub(self.queued + self.admitting_loaded);
            let s = &mut self.slots[slot];
            if s.stored == 0 || s.loading {
                continue;
            }
            if room == 0 && !s.abandoned {
                keep.push(slot);
                continue;
            }
            s.loading = true;
            self.loads_in_flight += 1;
            let limit = if s.abandoned {
                LOAD_BATCH
            } else {
                room.min(LOAD_BATCH)
            };
            out.push((slot, s.authority.clone(), limit));
        }
        self.to_load = keep;
        out
    }

    /// URLs loaded from the store for `slot`; `more` when it may have others.
    pub fn loaded(&mut self, slot: Slot, jobs: Vec<(u128, Job)>, more: bool, now: Instant) {
        let s = &mut self.slots[slot];
        s.loading = false;
        self.loads_in_flight -= 1;
        s.stored = if more || std::mem::take(&mut s.news_pending) {
            s.stored.saturating_sub(jobs.len() as u64).max(1)
        } else {
            0
        };
        for (key, job) in jobs {
            let s = &mut self.slots[slot];
            if s.abandoned {
                self.skipped.push((slot, job));
                continue;
            }
            s.count(job.depth, true);
            self.queued_depth.insert(key, job.depth);
            s.queue.push(key, job);
            self.queued += 1;
        }
        self.wake(slot, now);
        self.want_load(slot);
    }

    /// Other processes added URLs of `authority` to the store: `queued`
    /// of them wait there now, to be loaded.
    pub fn news(&mut self, authority: Authority, queued: u64) {
        let slot = self.slot_of(authority);
        let s = &mut self.slots[slot];
        if s.foreign || queued == 0 {
            return;
        }
        s.stored = s.stored.max(queued);
        if s.loading {
            s.news_pending = true;
        }
        self.want_load(slot);
    }

    /// Admissions of the whole job, as the store counts them (other
    /// processes admit too): the page limit is judged on these.
    pub fn job_admitted(&mut self, seen: u64) {
        self.admitted = self.admitted.max(seen);
    }

    /// Takes back what earlier runs of the job left.
    pub fn restore(&mut self, resumed: &Resumed) {
        self.admitted = resumed.counts.seen;
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
            if let super::slot::RobotsState::Known(rules) = &s.robots {
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
}
