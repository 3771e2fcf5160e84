//! One authority's state machine: its queue, retries, robots rules, timing,
//! failure run, and the counts that keep admission breadth-first.

use crawlkeeper_model::key::KeyMap;
use crawlkeeper_model::state::ROBOTS_MAX_AGE;
use crawlkeeper_model::{Authority, AuthorityState, RobotsSnapshot};
use tokio::time::Instant;
use tracing::warn;

use super::depth_queue::{DepthQueue, Queued};
use crate::config::PolitenessConfig;
use crate::pipeline::{Discovered, Request};
use crate::politeness::{MAX_DELAY, Timing};
use crate::robots::RobotsRules;

/// Index of an authority in the frontier.
pub type Slot = usize;

/// Smallest depth each queued (not yet started) URL was offered at.
pub type DepthMap = KeyMap<u32>;

pub(super) enum RobotsState {
    Unknown,
    Pending,
    Known(RobotsRules),
}

/// Where an authority is queued for its next start.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    /// In neither queue: busy, empty, or abandoned.
    None,
    /// In the ready ring.
    Ready,
    /// In the timer heap.
    Waiting,
}

pub(super) struct AuthoritySlot {
    pub authority: Authority,
    pub queue: DepthQueue,
    pub retries: Vec<(Instant, Request)>,
    pub in_flight: usize,
    /// Records of this authority's finished requests not yet durable. Each
    /// keeps its place among the authority's `per_host` until it is, so a
    /// `kill -9` costs at most `per_host` requests of the authority.
    pub committing: usize,
    pub robots: RobotsState,
    pub robots_snapshot: Option<RobotsSnapshot>,
    /// When the rules were fetched (ms since the Unix epoch), if known.
    pub robots_at_ms: Option<i64>,
    pub turn: Turn,
    pub not_before: Option<Instant>,
    pub timing: Timing,
    pub consecutive_failures: u32,
    pub abandoned: bool,
    /// Jobs of this authority not yet finished (queued, offered for
    /// admission, waiting for a retry, or in flight), by depth.
    pub outstanding: Vec<u32>,
    /// URLs found on this authority's pages, held until no shallower request of
    /// the authority is outstanding: (depth of the page, what it found, the
    /// page's token).
    pub held: Vec<(u32, Vec<Discovered>, Option<u64>)>,
    /// URLs of this authority left in the store, not loaded.
    pub stored: u64,
    /// A load from the store is under way.
    pub loading: bool,
    /// Other processes added URLs while a load was under way: the load's
    /// answer may not include them, so the store is asked again.
    pub news_pending: bool,
    /// Of a shard another process holds: its URLs are admitted to the
    /// store for that process, never queued or fetched here.
    pub foreign: bool,
}

impl AuthoritySlot {
    pub fn new(authority: Authority, respect_robots: bool) -> Self {
        Self {
            authority,
            queue: DepthQueue::default(),
            retries: Vec::new(),
            in_flight: 0,
            committing: 0,
            robots: if respect_robots {
                RobotsState::Unknown
            } else {
                RobotsState::Known(RobotsRules::AllowAll)
            },
            robots_snapshot: None,
            robots_at_ms: None,
            turn: Turn::None,
            not_before: None,
            timing: Timing::default(),
            consecutive_failures: 0,
            abandoned: false,
            outstanding: Vec::new(),
            held: Vec::new(),
            stored: 0,
            loading: false,
            news_pending: false,
            foreign: false,
        }
    }

    pub fn count(&mut self, depth: u32, up: bool) {
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

    /// True when another request may start: nothing in flight before the
    /// robots.txt is known, then fewer than `per_host` requests in flight
    /// or with records not yet durable.
    pub fn has_room(&self, per_host: usize) -> bool {
        match self.robots {
            RobotsState::Pending => false,
            RobotsState::Unknown => self.in_flight == 0,
            RobotsState::Known(_) => self.in_flight + self.committing < per_host,
        }
    }

    /// True while a request shallower than `depth` is outstanding.
    pub fn blocks(&self, depth: u32) -> bool {
        self.outstanding.iter().take(depth as usize).any(|&n| n > 0)
    }

    /// When this authority could start its next request, if it has one.
    pub fn next_at(&self, now: Instant) -> Option<Instant> {
        let gate = self.not_before.unwrap_or(now);
        if !self.queue.is_empty() {
            return Some(gate);
        }
        let due = self.retries.iter().map(|(at, _)| *at).min()?;
        Some(gate.max(due))
    }

    /// The request to start now: a due retry first, then the queue. A queued
    /// request takes the smallest depth it was offered at.
    pub fn take_request(&mut self, now: Instant, queued_depth: &mut DepthMap) -> Option<Request> {
        let due = self
            .retries
            .iter()
            .enumerate()
            .filter(|(_, (at, _))| *at <= now)
            .min_by_key(|(_, (at, _))| *at)
            .map(|(i, _)| i);
        match due {
            Some(i) => Some(self.retries.swap_remove(i).1),
            None => self.queue.pop().map(|Queued { key, mut request }| {
                if let Some(depth) = queued_depth.remove(&key) {
                    request.depth = request.depth.min(depth);
                }
                request
            }),
        }
    }

    /// Takes the `Crawl-delay` of `rules`, capped; an out-of-range value is
    /// logged here, once per authority (rules are learnt once per run).
    pub fn take_crawl_delay(&mut self, rules: &RobotsRules, politeness: &PolitenessConfig) {
        if let Some(sent) = self.timing.set_crawl_delay(rules.crawl_delay(), politeness) {
            warn!(
                authority = %self.authority,
                crawl_delay = sent,
                cap = %crawlkeeper_model::format_duration(politeness.max_crawl_delay),
                "robots.txt Crawl-delay past the cap; using the cap"
            );
        }
    }

    /// Whether the rules are too old to use now ([`ROBOTS_MAX_AGE`]): they
    /// are fetched again. Reads the clock only for known rules.
    pub fn robots_stale(&self) -> bool {
        matches!(self.robots, RobotsState::Known(_))
            && self
                .robots_at_ms
                .is_some_and(|at| robots_expired(at, chrono::Utc::now().timestamp_millis()))
    }

    /// What must survive a restart.
    pub fn saved(&self) -> AuthorityState {
        AuthorityState {
            authority: self.authority.clone(),
            robots: self.robots_snapshot.clone(),
            robots_at_ms: self.robots_at_ms,
            delay_ms: u64::try_from(self.timing.adaptive.as_millis()).unwrap_or(u64::MAX),
            consecutive_failures: self.consecutive_failures,
            abandoned: self.abandoned,
        }
    }

    /// Takes back what an earlier run saved.
    pub fn restore(&mut self, saved: &AuthorityState) {
        let stale = saved
            .robots_at_ms
            .is_some_and(|at| robots_expired(at, chrono::Utc::now().timestamp_millis()));
        if let (Some(snapshot), false) = (&saved.robots, stale) {
            self.robots_at_ms = saved.robots_at_ms;
            self.robots = RobotsState::Known(RobotsRules::from_snapshot(snapshot));
            self.robots_snapshot = Some(snapshot.clone());
        }
        // A stored value is trusted no more than a fresh one: clamped.
        self.timing.adaptive = std::time::Duration::from_millis(saved.delay_ms).min(MAX_DELAY);
        self.consecutive_failures = saved.consecutive_failures;
        self.abandoned = saved.abandoned;
    }
}

/// Whether robots.txt rules fetched at `fetched_ms` are past
/// [`ROBOTS_MAX_AGE`] at `now_ms`.
fn robots_expired(fetched_ms: i64, now_ms: i64) -> bool {
    now_ms.saturating_sub(fetched_ms) > ROBOTS_MAX_AGE.as_millis() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(age: Option<std::time::Duration>) -> AuthorityState {
        let now = chrono::Utc::now().timestamp_millis();
        AuthorityState {
            authority: Authority::try_from("http://a.test".to_owned()).unwrap(),
            robots: Some(RobotsSnapshot::Body("User-agent: *\nDisallow: /x\n".into())),
            robots_at_ms: age.map(|a| now - a.as_millis() as i64),
            delay_ms: 0,
            consecutive_failures: 0,
            abandoned: false,
        }
    }

    fn restored(age: Option<std::time::Duration>) -> AuthoritySlot {
        let state = saved(age);
        let mut slot = AuthoritySlot::new(state.authority.clone(), true);
        slot.restore(&state);
        slot
    }

    #[test]
    fn robots_rules_older_than_a_day_are_fetched_again() {
        let hour = std::time::Duration::from_secs(3600);
        let fresh = restored(Some(hour));
        assert!(matches!(fresh.robots, RobotsState::Known(_)));
        assert!(!fresh.robots_stale());
        let old = restored(Some(25 * hour));
        assert!(matches!(old.robots, RobotsState::Unknown), "not restored");
        // Known rules that age past the bound while the crawl runs.
        let mut aging = restored(Some(hour));
        aging.robots_at_ms = aging.robots_at_ms.map(|at| at - 24 * 3_600_000);
        assert!(aging.robots_stale());
        // Saved before the time was kept: used as they are.
        let unknown_age = restored(None);
        assert!(matches!(unknown_age.robots, RobotsState::Known(_)));
        assert!(!unknown_age.robots_stale());
    }
}
