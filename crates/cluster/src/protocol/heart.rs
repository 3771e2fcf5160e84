//! Judging Runners' hearts, as the primary Backup Runner does, on the
//! observer's own monotonic clock: a Runner is late when the observer has
//! seen no new heartbeat for `update_timeout`, dead after
//! `heart_rhythm_timeout` late checks in a row; a late count resets after
//! [`RESET_AFTER`] checks on time (SmoothCrawler-Cluster's `reset_timeout`). The beat's
//! own timestamp is never compared with the observer's clock: only the
//! change of the heartbeat node's version, seen at the observer's instant.
//! A Runner whose session node is gone is dead at once.

use std::collections::BTreeMap;
use std::time::Duration;

use crawlkeeper_model::cluster::NodeName;
use tokio::time::Instant;

use crate::coordinator::Version;

/// Checks on time that clear a late count (SmoothCrawler-Cluster's `reset_timeout`).
pub const RESET_AFTER: u32 = 10;

/// What a check found about one Runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Beating.
    OnTime,
    /// No beat seen for `update_timeout`: `late` checks in a row.
    Late {
        /// Late checks in a row.
        late: u32,
    },
    /// Dead: too many late checks, or its session is gone.
    Dead,
}

#[derive(Debug, Clone)]
struct Pulse {
    version: Option<Version>,
    seen_at: Instant,
    late: u32,
    on_time: u32,
    gone: bool,
}

/// The observer's record of every Runner it watches.
#[derive(Debug, Clone)]
pub struct HeartMonitor {
    update_timeout: Duration,
    threshold: u32,
    pulses: BTreeMap<NodeName, Pulse>,
}

impl HeartMonitor {
    /// A monitor with the group's rules.
    pub fn new(update_timeout: Duration, heart_rhythm_timeout: u32) -> Self {
        HeartMonitor {
            update_timeout,
            threshold: heart_rhythm_timeout.max(1),
            pulses: BTreeMap::new(),
        }
    }

    /// Watches exactly these Runners (new ones start on time, as of `now`).
    pub fn track(&mut self, runners: &[NodeName], now: Instant) {
        self.pulses.retain(|n, _| runners.contains(n));
        for r in runners {
            self.pulses.entry(r.clone()).or_insert(Pulse {
                version: None,
                seen_at: now,
                late: 0,
                on_time: 0,
                gone: false,
            });
        }
    }

    /// Records the heartbeat version read for a Runner at `now`; only a
    /// change counts as a beat.
    pub fn observe(&mut self, runner: &NodeName, version: Version, now: Instant) {
        if let Some(p) = self.pulses.get_mut(runner)
            && p.version != Some(version)
        {
            p.version = Some(version);
            p.seen_at = now;
        }
    }

    /// Counts no silence of a Runner up to `now` (its session is alive and
    /// the observer could not see it beat, as after a coordinator outage).
    pub fn excuse(&mut self, runner: &NodeName, now: Instant) {
        if let Some(p) = self.pulses.get_mut(runner) {
            p.seen_at = now;
            p.late = 0;
        }
    }

    /// Records that a Runner's session node is gone.
    pub fn session_gone(&mut self, runner: &NodeName) {
        if let Some(p) = self.pulses.get_mut(runner) {
            p.gone = true;
        }
    }

    /// One check of every Runner at `now` (called every check interval).
    pub fn check(&mut self, now: Instant) -> Vec<(NodeName, Verdict)> {
        let (timeout, threshold) = (self.update_timeout, self.threshold);
        self.pulses
            .iter_mut()
            .map(|(name, p)| {
                let verdict = if p.gone {
                    Verdict::Dead
                } else if now.duration_since(p.seen_at) >= timeout {
                    p.late += 1;
                    p.on_time = 0;
                    if p.late >= threshold {
                        Verdict::Dead
                    } else {
                        Verdict::Late { late: p.late }
                    }
                } else {
                    p.on_time += 1;
                    if p.on_time >= RESET_AFTER {
                        p.late = 0;
                    }
                    if p.late > 0 {
                        Verdict::Late { late: p.late }
                    } else {
                        Verdict::OnTime
                    }
                };
                (name.clone(), verdict)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> NodeName {
        s.parse().unwrap()
    }

    fn verdict(m: &mut HeartMonitor, now: Instant) -> Verdict {
        m.check(now)[0].1
    }

    #[test]
    fn dead_after_threshold_late_checks_in_a_row() {
        let t0 = Instant::now();
        let r = name("c_1");
        let mut m = HeartMonitor::new(Duration::from_secs(2), 3);
        m.track(std::slice::from_ref(&r), t0);
        m.observe(&r, 0, t0);
        let ms = |n| t0 + Duration::from_millis(n);
        assert_eq!(verdict(&mut m, ms(1_999)), Verdict::OnTime);
        assert_eq!(verdict(&mut m, ms(2_000)), Verdict::Late { late: 1 });
        assert_eq!(verdict(&mut m, ms(2_500)), Verdict::Late { late: 2 });
        assert_eq!(verdict(&mut m, ms(3_000)), Verdict::Dead);
    }

    #[test]
    fn only_a_new_version_is_a_beat_whatever_the_clocks_say() {
        let t0 = Instant::now();
        let r = name("c_1");
        let mut m = HeartMonitor::new(Duration::from_secs(2), 1);
        m.track(std::slice::from_ref(&r), t0);
        m.observe(&r, 4, t0);
        // The same version read again later is no beat.
        m.observe(&r, 4, t0 + Duration::from_secs(1));
        assert_eq!(verdict(&mut m, t0 + Duration::from_secs(2)), Verdict::Dead);
        let mut m = HeartMonitor::new(Duration::from_secs(2), 1);
        m.track(std::slice::from_ref(&r), t0);
        m.observe(&r, 4, t0);
        m.observe(&r, 5, t0 + Duration::from_secs(1));
        assert_eq!(
            verdict(&mut m, t0 + Duration::from_secs(2)),
            Verdict::OnTime
        );
    }

    #[test]
    fn a_late_count_resets_after_ten_checks_on_time() {
        let t0 = Instant::now();
        let r = name("c_1");
        let mut m = HeartMonitor::new(Duration::from_secs(1), 3);
        m.track(std::slice::from_ref(&r), t0);
        let mut now = t0;
        let mut version = 0;
        let mut beat = |m: &mut HeartMonitor, now: Instant| {
            version += 1;
            m.observe(&r, version, now);
        };
        // Two late checks.
        now += Duration::from_secs(1);
        assert_eq!(verdict(&mut m, now), Verdict::Late { late: 1 });
        now += Duration::from_millis(500);
        assert_eq!(verdict(&mut m, now), Verdict::Late { late: 2 });
        // Ten checks on time clear them.
        for i in 1..=RESET_AFTER {
            beat(&mut m, now);
            now += Duration::from_millis(500);
            let expect = if i < RESET_AFTER {
                Verdict::Late { late: 2 }
            } else {
                Verdict::OnTime
            };
            assert_eq!(verdict(&mut m, now), expect, "check {i}");
        }
        // So two more late checks do not kill it.
        now += Duration::from_secs(1);
        assert_eq!(verdict(&mut m, now), Verdict::Late { late: 1 });
        now += Duration::from_millis(500);
        assert_eq!(verdict(&mut m, now), Verdict::Late { late: 2 });
    }

    #[test]
    fn a_lost_session_is_death_at_once_and_untracked_runners_are_forgotten() {
        let t0 = Instant::now();
        let (a, b) = (name("c_1"), name("c_2"));
        let mut m = HeartMonitor::new(Duration::from_secs(2), 3);
        m.track(&[a.clone(), b.clone()], t0);
        m.session_gone(&b);
        assert_eq!(
            m.check(t0),
            vec![(a.clone(), Verdict::OnTime), (b, Verdict::Dead)]
        );
        m.track(std::slice::from_ref(&a), t0);
        assert_eq!(m.check(t0).len(), 1);
    }
}
