//! A page's change rate, estimated from what its fetches saw.
//!
//! Changes are taken as a Poisson process of rate λ (Cho and
//! Garcia-Molina, "Estimating frequency of change", 2003). A fetch `t`
//! seconds after the one before sees "changed" with probability
//! `1 − e^{−λt}`; the likelihood of a history is then maximised where
//!
//! ```text
//! Σ_{changed} t_i / (e^{λ t_i} − 1)  =  Σ_{unchanged} t_i
//! ```
//!
//! which holds for intervals of any lengths (a crawler that adapts its
//! revisits never sees regular ones). The history is kept in a bounded
//! summary: the unchanged intervals only as their sum, the changed ones
//! counted in buckets a factor of two apart. One pseudo-observation each
//! way (a change and a non-change over the first interval) keeps the
//! estimate finite and above zero with a short history: a page never seen
//! to change is not taken as one that never will.

use serde::{Deserialize, Serialize};

/// Buckets of changed intervals: `[2^i, 2^{i+1})` seconds, from 1 s to
/// about 2^27 s (4 years); longer intervals go in the last.
pub const BUCKETS: usize = 28;
/// Once this many observations are summarised, the old ones count for
/// half: the estimate follows a page whose rate changes.
pub const HALF_LIFE_OBSERVATIONS: f64 = 32.0;
/// The least rate an estimate gives: a change in about 30 years.
pub const MIN_RATE: f64 = 1e-9;
/// The most: a change every millisecond.
pub const MAX_RATE: f64 = 1e3;

/// What the fetches of one page saw, summarised in bounded space.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChangeHistory {
    /// Changed intervals by bucket (weights: halved as the history ages).
    changed: Vec<f64>,
    /// The sum of the unchanged intervals, in seconds (weighted alike).
    unchanged_secs: f64,
    /// Observations summarised (weighted alike).
    observations: f64,
    /// The first interval seen, in seconds: the pseudo-observations'.
    prior_secs: f64,
}

// Its numbers are never NaN (`observe` keeps out what is not finite),
// so equality is an equivalence: a URL's `Known` compares as a whole.
impl Eq for ChangeHistory {}

impl ChangeHistory {
    /// Adds a fetch `interval_secs` after the one before, which saw the
    /// content `changed` or not. Intervals of zero or less, or not finite,
    /// tell nothing and are left out.
    pub fn observe(&mut self, interval_secs: f64, changed: bool) {
        if !(interval_secs.is_finite() && interval_secs > 0.0) {
            return;
        }
        if self.changed.is_empty() {
            self.changed = vec![0.0; BUCKETS];
        }
        if self.prior_secs == 0.0 {
            self.prior_secs = interval_secs;
        }
        if self.observations >= 2.0 * HALF_LIFE_OBSERVATIONS {
            self.observations /= 2.0;
            self.unchanged_secs /= 2.0;
            self.changed.iter_mut().for_each(|w| *w /= 2.0);
        }
        self.observations += 1.0;
        if changed {
            self.changed[bucket(interval_secs)] += 1.0;
        } else {
            self.unchanged_secs += interval_secs;
        }
    }

    /// Observations summarised (their weight, once the history has aged).
    pub fn observations(&self) -> f64 {
        self.observations
    }

    /// The estimated change rate, per second; `None` before any
    /// observation.
    pub fn rate(&self) -> Option<f64> {
        if self.observations == 0.0 {
            return None;
        }
        let prior = self.prior_secs;
        // Σ changed t/(e^{λt} − 1) − Σ unchanged t, decreasing in λ.
        let excess = |rate: f64| {
            let changed: f64 = self
                .changed
                .iter()
                .enumerate()
                .filter(|(_, w)| **w > 0.0)
                .map(|(i, w)| w * expected_wait(rate, midpoint(i)))
                .sum();
            changed + expected_wait(rate, prior) - self.unchanged_secs - prior
        };
        // Bisection on the logarithm: the root lies between the bounds
        // (the pseudo-observations make both signs occur).
        let (mut lo, mut hi) = (MIN_RATE.ln(), MAX_RATE.ln());
        if excess(MIN_RATE) <= 0.0 {
            return Some(MIN_RATE);
        }
        if excess(MAX_RATE) >= 0.0 {
            return Some(MAX_RATE);
        }
        for _ in 0..64 {
            let mid = (lo + hi) / 2.0;
            if excess(mid.exp()) > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(((lo + hi) / 2.0).exp())
    }
}

/// `t / (e^{λt} − 1)`, continuous at λt → 0 (where it tends to 1/λ).
fn expected_wait(rate: f64, t: f64) -> f64 {
    let x = rate * t;
    if x < 1e-9 {
        1.0 / rate
    } else if x > 700.0 {
        0.0
    } else {
        t / x.exp_m1()
    }
}

/// The bucket of an interval: `floor(log2(secs))`, within the buckets.
fn bucket(secs: f64) -> usize {
    if secs < 2.0 {
        return 0;
    }
    (secs.log2().floor() as usize).min(BUCKETS - 1)
}

/// The interval a bucket stands for: the geometric middle of its bounds.
fn midpoint(bucket: usize) -> f64 {
    2f64.powf(bucket as f64 + 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of rate `rate` fetched at the given intervals, its changes
    /// drawn from a seeded generator.
    fn observed(rate: f64, intervals: impl Iterator<Item = f64>, seed: u64) -> ChangeHistory {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut h = ChangeHistory::default();
        for t in intervals {
            let changed = rng.f64() < 1.0 - (-rate * t).exp();
            h.observe(t, changed);
        }
        h
    }

    #[test]
    fn the_rate_is_found_from_irregular_intervals() {
        let rate = 1.0 / 86_400.0; // once a day
        let mut rng = fastrand::Rng::with_seed(7);
        // Intervals from an hour to four days, as an adaptive crawler
        // would use; HALF_LIFE keeps the last ~64 observations.
        let intervals: Vec<f64> = (0..64)
            .map(|_| 3_600.0 * (1.0 + 95.0 * rng.f64()))
            .collect();
        let mut estimates: Vec<f64> = (0..40)
            .map(|seed| {
                observed(rate, intervals.iter().copied(), seed)
                    .rate()
                    .unwrap()
            })
            .collect();
        estimates.sort_by(f64::total_cmp);
        let median = estimates[estimates.len() / 2];
        assert!(
            (median / rate - 1.0).abs() < 0.2,
            "median estimate {median} for {rate}"
        );
    }

    #[test]
    fn no_history_no_rate_and_extremes_stay_finite() {
        let mut h = ChangeHistory::default();
        assert_eq!(h.rate(), None);
        h.observe(0.0, true);
        h.observe(f64::NAN, true);
        assert_eq!(h.rate(), None, "intervals of no length tell nothing");
        // Never seen to change: a low rate, not zero.
        for _ in 0..100 {
            h.observe(3_600.0, false);
        }
        let rare = h.rate().unwrap();
        assert!(rare > MIN_RATE && rare < 1.0 / 86_400.0, "{rare}");
        // Changed at every fetch: a high rate, not infinite.
        let mut h = ChangeHistory::default();
        for _ in 0..100 {
            h.observe(3_600.0, true);
        }
        let often = h.rate().unwrap();
        assert!(often.is_finite() && often > 1.0 / 3_600.0, "{often}");
    }

    #[test]
    fn the_estimate_follows_a_page_whose_rate_changes() {
        let hourly = 1.0 / 3_600.0;
        let mut h = observed(hourly, std::iter::repeat_n(1_800.0, 200), 1);
        let before = h.rate().unwrap();
        // The page now changes once a week; fetched every 12 hours.
        let weekly = 1.0 / (7.0 * 86_400.0);
        let mut rng = fastrand::Rng::with_seed(2);
        for _ in 0..200 {
            let t = 43_200.0;
            h.observe(t, rng.f64() < 1.0 - (-weekly * t).exp());
        }
        let after = h.rate().unwrap();
        assert!(before > hourly / 2.0, "{before}");
        assert!(after < weekly * 3.0, "{after} for {weekly}");
    }
}
