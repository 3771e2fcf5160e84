//! Crawl state kept in memory: for crawls that need no resume (the demo,
//! library users, tests). Same behaviour as a store, nothing durable.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

use crawlkeeper_model::key::{KeyMap, KeySet};
use crawlkeeper_model::revisit::RateMove;
use crawlkeeper_model::state::DUE_BATCH;
use crawlkeeper_model::{Authority, AuthorityState, FrontierEntry, JobCounts, NextFetch};

use super::{Batch, CrawlState, Resumed, StateError};

/// How long the worker may gather finished URLs before applying them.
/// Nothing is written, so a wait only spares wake-ups: at thousands of
/// pages a second the worker would otherwise wake for every page or two.
const MEMORY_WAIT: Duration = Duration::from_millis(2);

/// In-memory [`CrawlState`].
#[derive(Debug, Default)]
pub struct MemoryState {
    seen: KeySet,
    done: KeySet,
    errors: u64,
    requisites: u64,
    queued: HashMap<Authority, VecDeque<FrontierEntry>>,
    authorities: HashMap<Authority, AuthorityState>,
    /// A continuous crawl's finished URLs by due time, with whether
    /// their last record failed.
    revisits: BTreeMap<(i64, u128), (NextFetch, bool)>,
    /// Each scheduled key's due time.
    due_of: KeyMap<i64>,
    /// The job's rate histogram: pages by bucket.
    rates: BTreeMap<i16, i64>,
}

impl MemoryState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }
}

impl CrawlState for MemoryState {
    fn commit_wait(&self) -> Duration {
        MEMORY_WAIT
    }

    fn resume(&mut self) -> Result<Resumed, StateError> {
        Ok(Resumed {
            counts: JobCounts {
                seen: self.seen.len() as u64,
                done: self.done.len() as u64,
                errors: self.errors,
                requisites: self.requisites,
            },
            authorities: self.authorities.values().cloned().collect(),
            queued: self
                .queued
                .iter()
                .filter(|(_, q)| !q.is_empty())
                .map(|(a, q)| (a.clone(), q.len() as u64))
                .collect(),
            // Nothing outside this process can ask it to stop.
            stops: 0,
        })
    }

    fn apply(&mut self, batch: &mut Batch) -> Result<(), StateError> {
        batch.recorded.clear();
        for f in &batch.finished {
            let new = self.done.insert(f.key);
            let failed = f.record.error.is_some();
            if new && failed {
                self.errors += 1;
            }
            for (bucket, n) in f
                .moved
                .filter(|_| new)
                .into_iter()
                .flat_map(RateMove::deltas)
            {
                *self.rates.entry(bucket).or_default() += n;
            }
            if let (true, Some(next)) = (new, &f.next) {
                if let Some(before) = self.due_of.insert(f.key, next.due_ms) {
                    self.revisits.remove(&(before, f.key));
                }
                self.revisits
                    .insert((next.due_ms, f.key), ((**next).clone(), failed));
            }
            batch.recorded.push(new);
        }
        batch.admitted.clear();
        for (entry, authority, loaded) in &batch.admit {
            let new = self.seen.insert(entry.key);
            if new && entry.is_requisite() {
                self.requisites += 1;
            }
            if new && !loaded {
                self.queued
                    .entry(authority.clone())
                    .or_default()
                    .push_back(entry.clone());
            }
            batch.admitted.push(new);
        }
        batch.loaded.clear();
        for (authority, limit) in &batch.load {
            let q = self.queued.entry(authority.clone()).or_default();
            let n = (*limit).min(q.len());
            let mut out: Vec<FrontierEntry> = q.drain(..n).collect();
            out.sort_by_key(|e| e.depth);
            batch.loaded.push(out);
        }
        for a in &batch.authorities {
            self.authorities.insert(a.authority.clone(), a.clone());
        }
        self.requeue_due(batch);
        Ok(())
    }
}

impl MemoryState {
    /// Queues again the finished URLs due by `batch.due`.
    fn requeue_due(&mut self, batch: &mut Batch) {
        batch.requeued.clear();
        batch.next_due = None;
        batch.rates.clear();
        let Some(now) = batch.due else {
            return;
        };
        batch.rates = self
            .rates
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(b, n)| (*b, *n as u64))
            .collect();
        let mut requeued = HashMap::<Authority, u64>::new();
        for _ in 0..DUE_BATCH {
            let Some(entry) = self.revisits.first_entry() else {
                break;
            };
            if entry.key().0 > now {
                break;
            }
            let ((_, key), (next, failed)) = entry.remove_entry();
            self.due_of.remove(&key);
            self.done.remove(&key);
            if failed {
                self.errors = self.errors.saturating_sub(1);
            }
            let NextFetch {
                entry, authority, ..
            } = next;
            *requeued.entry(authority.clone()).or_default() += 1;
            self.queued.entry(authority).or_default().push_back(entry);
        }
        batch.requeued = requeued.into_iter().collect();
        batch.next_due = self.revisits.first_key_value().map(|((due, _), _)| *due);
    }
}
