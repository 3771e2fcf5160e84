//! Admission: which discovered URLs become requests, in what order, and where
//! they wait. A URL is checked against the in-memory queue and key cache,
//! the page limit and its authority's state, then offered to the store,
//! which alone knows whether it is new. Links of a page wait while a
//! shallower request of its authority is outstanding (breadth-first admission),
//! so depth limits are exact whatever order responses arrive in. URLs past
//! the in-memory limit stay in the store and are loaded when there is room.
//!
//! These are the decisions; the frontier's state changes only in
//! `frontier.rs`, by the methods each decision calls.

use crawlkeeper_model::Authority;
use tokio::time::Instant;

use super::frontier::Frontier;
use super::slot::Slot;
use crate::pipeline::{Discovered, Request};
use crate::scope::{Disposition, ScopeReason};

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
    /// The request.
    pub request: Request,
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
        if self.is_known(&d) {
            return Disposition::Duplicate;
        }
        // A page's requisites are part of it: `--max-pages` counts pages
        // (and frames); `--max-requisites` counts the others.
        let page = d.request.counts_as_page();
        if (page && self.at_page_limit()) || (!page && self.at_requisite_limit()) {
            return Disposition::OverLimit;
        }
        let Ok(authority) = Authority::of(&d.request.url) else {
            return Disposition::OutOfScope(ScopeReason::Scheme);
        };
        let slot = self.slot_of(authority);
        self.remember(slot, d.key, d.request.depth);
        if self.is_abandoned(slot) {
            self.skip(slot, d.request);
            return Disposition::Skipped;
        }
        self.offer(slot, d.key, d.request, owner);
        Disposition::Queued
    }

    /// URLs for the store, each marked whether it will be kept in memory.
    pub fn take_outbox(&mut self) -> Vec<Outgoing> {
        self.take_offers()
            .into_iter()
            .map(|(slot, key, request, owner)| {
                let loaded = self.reserve_place(slot);
                Outgoing {
                    slot,
                    key,
                    request,
                    authority: self.authority(slot).clone(),
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
        request: Request,
        new: bool,
        loaded: bool,
        now: Instant,
    ) {
        self.answered(new, loaded, !request.counts_as_page());
        let depth = request.depth;
        if !new {
            self.count(slot, depth, false);
        } else if self.is_foreign(slot) {
            // Its shard's holder fetches it.
            self.count(slot, depth, false);
        } else if self.is_abandoned(slot) {
            self.count(slot, depth, false);
            self.skip(slot, request);
        } else if loaded {
            self.enqueue(slot, key, request);
            self.wake(slot, now);
        } else {
            self.leave_in_store(slot);
            self.count(slot, depth, false);
            self.want_load(slot);
        }
        self.release_held(slot);
    }

    /// URLs found on page `owner` of `slot` at `depth`. They are triaged at
    /// once unless a shallower request of the authority is still outstanding:
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
        if !batch.is_empty() && self.blocks(slot, depth) {
            self.hold(slot, depth, batch, owner);
            return true;
        }
        for d in batch {
            self.triage(d, owner);
        }
        false
    }

    /// A request of `slot` at `depth` is finished: batches that waited for it
    /// are triaged.
    pub fn job_finished(&mut self, slot: Slot, depth: u32) {
        self.count(slot, depth, false);
        self.release_held(slot);
    }

    fn release_held(&mut self, slot: Slot) {
        while let Some((batch, owner)) = self.take_unblocked(slot) {
            self.release(batch, owner);
        }
    }

    pub(super) fn release(&mut self, batch: Vec<Discovered>, owner: Option<u64>) {
        for d in batch {
            self.triage(d, owner);
        }
        if let Some(token) = owner {
            self.note_released(token);
        }
    }

    /// Releases every held batch now, whatever waits: for a stop, or when
    /// waiting could never end because the pages that wait fill every worker.
    pub fn release_all_held(&mut self) {
        for slot in 0..self.hosts().len() {
            for (_, batch, owner) in self.take_held(slot) {
                self.release(batch, owner);
            }
        }
    }

    /// Asks for more of `slot`'s URLs from the store when it runs low.
    pub(super) fn want_load(&mut self, slot: Slot) {
        if self.may_load(slot) && self.queued_of(slot) < LOW_WATER {
            self.ask_load(slot);
        }
    }

    /// Loads to ask of the store now that there is room in memory:
    /// (slot, authority, limit).
    pub fn take_loads(&mut self) -> Vec<(Slot, Authority, usize)> {
        let mut out = Vec::new();
        let mut keep = Vec::new();
        for slot in self.take_load_requests() {
            let room = self.room();
            if !self.may_load(slot) {
                continue;
            }
            let abandoned = self.is_abandoned(slot);
            if room == 0 && !abandoned {
                keep.push(slot);
                continue;
            }
            self.start_load(slot);
            let limit = if abandoned {
                LOAD_BATCH
            } else {
                room.min(LOAD_BATCH)
            };
            out.push((slot, self.authority(slot).clone(), limit));
        }
        self.defer_loads(keep);
        out
    }

    /// URLs loaded from the store for `slot`; `more` when it may have others.
    pub fn loaded(&mut self, slot: Slot, requests: Vec<(u128, Request)>, more: bool, now: Instant) {
        self.load_answered(slot, requests.len(), more);
        for (key, request) in requests {
            if self.is_abandoned(slot) {
                self.skip(slot, request);
                continue;
            }
            self.count(slot, request.depth, true);
            self.enqueue(slot, key, request);
        }
        self.wake(slot, now);
        self.want_load(slot);
    }

    /// Other processes added URLs of `authority` to the store: `queued`
    /// of them wait there now, to be loaded.
    pub fn news(&mut self, authority: Authority, queued: u64) {
        let slot = self.slot_of(authority);
        if self.is_foreign(slot) || queued == 0 {
            return;
        }
        self.stored_elsewhere(slot, queued);
        self.want_load(slot);
    }

    /// `more` URLs of `authority` were due again and are queued in the
    /// store (a continuous crawl), to be loaded.
    pub fn requeued(&mut self, authority: Authority, more: u64) {
        let slot = self.slot_of(authority);
        if self.is_foreign(slot) || more == 0 {
            return;
        }
        self.stored_more(slot, more);
        self.want_load(slot);
    }
}
