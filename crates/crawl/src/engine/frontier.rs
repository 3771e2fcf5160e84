//! The frontier: per-authority queues, the seen set and the ready ring.
//! Pure data owned by the engine task; no I/O, no clock.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crawlkeeper_model::Authority;

use crate::pipeline::{Discovered, Job};
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

struct AuthoritySlot {
    authority: Authority,
    queue: VecDeque<Job>,
    in_flight: usize,
    robots: RobotsState,
    scheduled: bool,
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

/// Per-authority queues with fair round-robin dispatch.
pub struct Frontier {
    slots: Vec<AuthoritySlot>,
    index: HashMap<Authority, Slot>,
    ready: VecDeque<Slot>,
    seen: SeenSet,
    admitted: u64,
    max_pages: Option<u64>,
    per_host: usize,
    respect_robots: bool,
}

impl Frontier {
    /// An empty frontier.
    pub fn new(per_host: usize, max_pages: Option<u64>, respect_robots: bool) -> Self {
        Self {
            slots: Vec::new(),
            index: HashMap::new(),
            ready: VecDeque::new(),
            seen: SeenSet::default(),
            admitted: 0,
            max_pages,
            per_host,
            respect_robots,
        }
    }

    /// Offers a URL: queued if it is new and under the page limit.
    pub fn offer(&mut self, d: Discovered) -> Disposition {
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
        self.slots[slot].queue.push_back(d.job);
        self.wake(slot);
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
                    in_flight: 0,
                    robots: if self.respect_robots {
                        RobotsState::Unknown
                    } else {
                        RobotsState::Known(RobotsRules::AllowAll)
                    },
                    scheduled: false,
                });
                e.insert(slot);
                slot
            }
        }
    }

    /// Puts `slot` in the ready ring if it has work it may start now.
    fn wake(&mut self, slot: Slot) {
        let s = &mut self.slots[slot];
        let can_start = match s.robots {
            RobotsState::Pending => false,
            RobotsState::Unknown => s.in_flight == 0,
            RobotsState::Known(_) => s.in_flight < self.per_host,
        };
        if !s.scheduled && !s.queue.is_empty() && can_start {
            s.scheduled = true;
            self.ready.push_back(slot);
        }
    }

    /// The next thing to start, round-robin over ready authorities.
    pub fn next_start(&mut self) -> Option<Next> {
        while let Some(slot) = self.ready.pop_front() {
            let s = &mut self.slots[slot];
            s.scheduled = false;
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
                    let Some(job) = s.queue.pop_front() else {
                        continue;
                    };
                    s.in_flight += 1;
                    self.wake(slot);
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

    /// A request of `slot` finished.
    pub fn finished(&mut self, slot: Slot) {
        let s = &mut self.slots[slot];
        s.in_flight = s.in_flight.saturating_sub(1);
        self.wake(slot);
    }

    /// The robots.txt request of `slot` finished with `rules`.
    pub fn robots_known(&mut self, slot: Slot, rules: RobotsRules) {
        self.slots[slot].robots = RobotsState::Known(rules);
        self.finished(slot);
    }

    /// The authority of `slot`.
    pub fn authority(&self, slot: Slot) -> &Authority {
        &self.slots[slot].authority
    }

    /// URLs queued and not yet started.
    pub fn pending(&self) -> u64 {
        self.slots.iter().map(|s| s.queue.len() as u64).sum()
    }

    /// Distinct URLs seen so far.
    pub fn seen(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::url_key;
    use url::Url;

    fn offer(f: &mut Frontier, url: &str) -> Disposition {
        let url = Url::parse(url).unwrap();
        f.offer(Discovered {
            key: url_key(&url),
            job: Job::seed(url),
        })
    }

    fn take_page(f: &mut Frontier) -> (Slot, String) {
        match f.next_start() {
            Some(Next::Page { slot, job, .. }) => (slot, job.url.to_string()),
            Some(Next::Robots { .. }) => panic!("expected a page, got robots"),
            None => panic!("expected a page, got nothing"),
        }
    }

    #[test]
    fn duplicates_and_limits() {
        let mut f = Frontier::new(1, Some(2), false);
        assert_eq!(offer(&mut f, "http://a.test/1"), Disposition::Queued);
        assert_eq!(offer(&mut f, "http://a.test/1"), Disposition::Duplicate);
        assert_eq!(offer(&mut f, "http://a.test/2"), Disposition::Queued);
        assert_eq!(offer(&mut f, "http://a.test/3"), Disposition::OverLimit);
        assert_eq!(f.seen(), 2);
    }

    #[test]
    fn robots_first_then_one_request_at_a_time_per_host() {
        let mut f = Frontier::new(1, None, true);
        offer(&mut f, "http://a.test/1");
        offer(&mut f, "http://a.test/2");
        let Some(Next::Robots { slot, .. }) = f.next_start() else {
            panic!("robots.txt comes first");
        };
        assert!(
            f.next_start().is_none(),
            "nothing else until robots is known"
        );
        f.robots_known(slot, RobotsRules::AllowAll);
        let (slot, url) = take_page(&mut f);
        assert_eq!(url, "http://a.test/1");
        assert!(f.next_start().is_none(), "per_host = 1");
        f.finished(slot);
        assert_eq!(take_page(&mut f).1, "http://a.test/2");
    }

    #[test]
    fn authorities_take_turns() {
        let mut f = Frontier::new(2, None, false);
        for i in 0..3 {
            offer(&mut f, &format!("http://a.test/{i}"));
            offer(&mut f, &format!("http://b.test/{i}"));
        }
        let order: Vec<String> = (0..4).map(|_| take_page(&mut f).1).collect();
        assert_eq!(
            order,
            [
                "http://a.test/0",
                "http://b.test/0",
                "http://a.test/1",
                "http://b.test/1"
            ]
        );
        assert!(f.next_start().is_none(), "both authorities at per_host = 2");
        assert_eq!(f.pending(), 2);
    }
}
