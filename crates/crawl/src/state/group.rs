//! When the state worker holds a commit back to gather more finished URLs
//! into it (group commit with a bounded wait).
//!
//! Each transaction of a store has a fixed cost (its log write, locks,
//! statements to begin and end it, SQLite's page-cache sweep at commit) on
//! top of a cost per row. At tens of thousands of pages per second the
//! worker, left to itself, commits nearly every page alone: it is idle
//! when the page arrives, so its transaction holds one page, and the fixed
//! cost is paid per page. The policy lets it wait a little for more pages,
//! but only when the recent rate says that a few more will arrive within
//! the wait, and no longer than the target number should take to arrive:
//! a slow crawl (many hosts, long delays) commits at once, as before.
//! Waiting never weakens durability: a page's record is durable before its
//! authority's place frees, either way; it only delays the moment. The
//! engine lets up to two targets' worth of records (a target is half its
//! workers: one group gathers while the one before is applied) wait
//! without keeping a worker busy, so a wait does not idle the fetching.
//!
//! While every worker is busy the crawl is bound by its workers, not by
//! its hosts' places: a record that waits longer delays only its host's
//! next request, and another host's request takes the worker. Then a
//! group may gather a record from every worker (twice the target, the
//! engine's room for waiting records doubling with it) for up to
//! [`BUSY_FACTOR`] times the wait, still no longer than those records take
//! to arrive: about one response time of the crawl's hosts. A crawl
//! bound by its hosts (fewer requests in flight than workers) keeps the
//! shorter wait and the smaller group, since there each host's next
//! request waits for the record before it.

use std::time::{Duration, Instant};

/// Fewest finished URLs a wait should be expected to gather; below this
/// rate the worker commits at once.
const MIN_EXPECTED: f64 = 2.0;
/// Weight of the newest rate sample.
const ALPHA: f64 = 0.25;
/// Shortest wait worth a sleep.
const MIN_WAIT: Duration = Duration::from_micros(50);
/// How many times longer the wait may be while every worker is busy.
/// With the stores' 10 ms, 60 ms: a group of a Runner of 50 workers on
/// 50 ms responses gathers 33–34 pages where 30 ms for half the workers
/// gathered 19, and PostgreSQL's CPU per page falls a fifth (`bench
/// cluster --parts scale`, session 25).
pub const BUSY_FACTOR: u32 = 6;
/// How many times more records a group may gather while every worker is
/// busy: one from each worker.
pub const BUSY_GROUP: usize = 2;

/// The group-commit policy of one worker.
#[derive(Debug, Clone)]
pub struct GroupPolicy {
    max_wait: Duration,
    target: usize,
    /// Finished URLs per second, smoothed.
    rate: f64,
    last: Option<Instant>,
    /// How long a transaction takes to apply, smoothed (seconds).
    apply: f64,
    /// Whether every worker of the engine is busy.
    busy: bool,
}

impl GroupPolicy {
    /// A policy that waits at most `max_wait` (zero: never), and no longer
    /// than `target` finished URLs should take to arrive.
    pub fn new(max_wait: Duration, target: usize) -> Self {
        Self {
            max_wait,
            target: target.max(1),
            rate: 0.0,
            last: None,
            apply: 0.0,
            busy: false,
        }
    }

    /// Notes whether every worker of the engine is busy (see the module's
    /// note): the wait may then be [`BUSY_FACTOR`] times longer.
    pub fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
    }

    /// The longest wait now.
    fn max_wait(&self) -> Duration {
        if self.busy {
            self.max_wait * BUSY_FACTOR
        } else {
            self.max_wait
        }
    }

    /// The most finished URLs a group gathers now.
    fn target(&self) -> usize {
        if self.busy {
            self.target * BUSY_GROUP
        } else {
            self.target
        }
    }

    /// Notes that a transaction with `finished` URLs was gathered at `now`.
    pub fn observe(&mut self, finished: usize, now: Instant) {
        if let Some(last) = self.last {
            let secs = now.duration_since(last).as_secs_f64().max(1e-6);
            self.rate = (1.0 - ALPHA) * self.rate + ALPHA * (finished as f64 / secs);
        }
        self.last = Some(now);
    }

    /// Notes that applying a transaction took `took`.
    pub fn observe_apply(&mut self, took: Duration) {
        self.apply = (1.0 - ALPHA) * self.apply + ALPHA * took.as_secs_f64();
    }

    /// Until when to wait for more commands, with `finished` URLs gathered
    /// so far at `now`; `None` to commit at once. The wait ends early
    /// enough that, counting the URLs that arrive while the transaction is
    /// applied, about `target` wait for their commit at a time.
    pub fn deadline(&self, finished: usize, now: Instant) -> Option<Instant> {
        let target = self.target();
        if self.max_wait.is_zero() || finished == 0 || finished >= target {
            return None;
        }
        let max_wait = self.max_wait();
        if self.rate * max_wait.as_secs_f64() < MIN_EXPECTED {
            return None;
        }
        // Long transactions (many new URLs) follow each other and gather
        // what arrives meanwhile by themselves: a wait would only idle.
        if self.apply * 4.0 >= max_wait.as_secs_f64() {
            return None;
        }
        let needed = (target - finished) as f64 / self.rate - self.apply;
        let needed = Duration::try_from_secs_f64(needed.max(0.0)).unwrap_or(max_wait);
        let wait = max_wait.min(needed);
        (wait >= MIN_WAIT).then(|| now + wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A policy that has seen `per_ms` finished URLs per millisecond.
    fn warmed(max_wait: Duration, target: usize, per_ms: usize) -> (GroupPolicy, Instant) {
        let mut p = GroupPolicy::new(max_wait, target);
        let mut t = Instant::now();
        for _ in 0..50 {
            p.observe(per_ms, t);
            t += MS;
        }
        (p, t)
    }

    #[test]
    fn a_fast_stream_waits_a_bounded_time_for_more() {
        let (p, now) = warmed(MS, 32, 30);
        let d = p.deadline(3, now).expect("waits");
        assert!(d > now && d <= now + MS, "{:?}", d - now);
        assert!(p.deadline(32, now).is_none(), "a full batch commits");
    }

    #[test]
    fn a_slow_stream_commits_at_once() {
        // One page per millisecond: a wait of 1 ms would gather one more.
        let (p, now) = warmed(MS, 32, 1);
        assert!(p.deadline(1, now).is_none());
    }

    #[test]
    fn no_wait_without_finished_urls_or_when_disabled() {
        let (p, now) = warmed(MS, 32, 30);
        assert!(
            p.deadline(0, now).is_none(),
            "loads and admissions go at once"
        );
        let (p, now) = warmed(Duration::ZERO, 32, 30);
        assert!(p.deadline(1, now).is_none());
    }

    #[test]
    fn the_wait_ends_when_the_target_should_be_reached() {
        // 64 per ms: 31 more take about half a millisecond.
        let (p, now) = warmed(MS, 32, 64);
        let d = p.deadline(1, now).unwrap() - now;
        assert!(d < MS && d > MS / 4, "{d:?}");
    }

    #[test]
    fn the_time_to_apply_shortens_the_wait() {
        let (mut p, now) = warmed(MS, 32, 64);
        let before = p.deadline(1, now).unwrap() - now;
        for _ in 0..20 {
            p.observe_apply(MS / 8);
        }
        let after = p.deadline(1, now).unwrap() - now;
        assert!(after + MS / 10 < before, "{before:?} then {after:?}");
    }

    #[test]
    fn long_transactions_commit_at_once() {
        // Applying takes as long as the wait: transactions follow each
        // other and gather by themselves.
        let (mut p, now) = warmed(MS, 32, 30);
        for _ in 0..20 {
            p.observe_apply(MS / 2);
        }
        assert!(p.deadline(1, now).is_none());
    }

    #[test]
    fn a_busy_engine_waits_longer_for_a_larger_group() {
        // 4 per ms: 31 more take about 8 ms, past the wait of 2 ms.
        let (mut p, now) = warmed(2 * MS, 32, 4);
        assert_eq!(p.deadline(1, now), Some(now + 2 * MS));
        assert!(p.deadline(32, now).is_none(), "a full group commits");
        p.set_busy(true);
        assert_eq!(p.deadline(1, now), Some(now + 2 * MS * BUSY_FACTOR));
        // A group of twice the target, still no longer than its records
        // take to arrive: 4 more take about a millisecond.
        let d = p.deadline(60, now).unwrap() - now;
        assert!(d > MS / 2 && d < 2 * MS, "{d:?}");
        assert!(p.deadline(64, now).is_none(), "a full group commits");
        p.set_busy(false);
        assert_eq!(p.deadline(1, now), Some(now + 2 * MS));
    }

    #[test]
    fn a_new_policy_has_no_rate_and_commits_at_once() {
        let p = GroupPolicy::new(MS, 32);
        assert!(p.deadline(1, Instant::now()).is_none());
    }
}
