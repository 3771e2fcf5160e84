//! The simulated site and crawler: pages whose content changes as Poisson
//! processes of known rates, fetched by one crawler at most `cap` times a
//! second when a revisit rule says they are due.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a fetch saw, as a rule is told of it.
#[derive(Clone, Copy, Debug)]
pub struct Fetched {
    /// The page.
    pub page: usize,
    /// When (seconds since the start).
    pub now: f64,
    /// Seconds since the page's fetch before.
    pub since: f64,
    /// Whether the content changed since that fetch (a signature compared,
    /// or a 304).
    pub changed: bool,
    /// When the content last changed, as `Last-Modified` says.
    pub last_modified: f64,
}

/// A revisit rule: when each page is fetched next.
pub trait Rule {
    /// The first revisit of a page, in seconds from the start, when its
    /// only copy is the first.
    fn first(&mut self, page: usize) -> f64;
    /// When the page is due next (seconds since the start), after `f`.
    fn next(&mut self, f: &Fetched) -> f64;
    /// Called every `TICK` seconds (a rule's shared state, if any).
    fn tick(&mut self, _now: f64) {}
}

/// How often [`Rule::tick`] is called.
pub const TICK: f64 = 3_600.0;
/// How often freshness is sampled in the measured window.
pub const SAMPLE: f64 = 3_600.0;

/// The site: each page's change rate, per second.
pub struct Site {
    /// Change rates.
    pub rates: Vec<f64>,
}

impl Site {
    /// `pages` pages whose rates are spread evenly on a log scale from
    /// `slowest` to `fastest` (per second), in a seeded order.
    pub fn log_uniform(pages: usize, slowest: f64, fastest: f64, seed: u64) -> Self {
        let mut rng = fastrand::Rng::with_seed(seed);
        let (lo, hi) = (slowest.ln(), fastest.ln());
        let rates = (0..pages)
            .map(|_| (lo + (hi - lo) * rng.f64()).exp())
            .collect();
        Self { rates }
    }
}

/// What a run measured in its window.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// Fetches made in the window.
    pub requests: u64,
    /// The mean share of pages whose stored copy was current, sampled
    /// every [`SAMPLE`] seconds.
    pub freshness: f64,
}

/// Runs `rule` on `site` for `warmup + window` seconds, fetching at most
/// `cap` pages a second (a request's slot unused is lost), and measures
/// the window. Every page's first copy is taken at the start.
pub fn run(
    site: &Site,
    rule: &mut dyn Rule,
    cap: f64,
    warmup: f64,
    window: f64,
    seed: u64,
) -> Outcome {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut exp = |rate: f64| -(1.0 - rng.f64()).ln() / rate;
    let n = site.rates.len();
    let mut last_fetch = vec![0.0; n];
    // The first change after each page's last fetch: the copy is current
    // until then.
    let mut next_change: Vec<f64> = site.rates.iter().map(|&r| exp(r)).collect();
    let mut last_change = vec![0.0; n];
    let mut due: BinaryHeap<Reverse<(Time, usize)>> =
        (0..n).map(|i| Reverse((Time(rule.first(i)), i))).collect();
    let end = warmup + window;
    let (mut slot, mut tick, mut sample) = (0.0, TICK, warmup);
    let (mut requests, mut fresh_sum, mut samples) = (0u64, 0.0, 0u64);
    while let Some(&Reverse((Time(at), page))) = due.peek() {
        let now = at.max(slot);
        // Samples and ticks that fall before this fetch.
        while sample <= now.min(end) {
            let fresh = next_change.iter().filter(|&&c| c > sample).count();
            fresh_sum += fresh as f64 / n as f64;
            samples += 1;
            sample += SAMPLE;
        }
        while tick <= now.min(end) {
            rule.tick(tick);
            tick += TICK;
        }
        if now >= end {
            break;
        }
        due.pop();
        let rate = site.rates[page];
        let changed = next_change[page] <= now;
        if changed {
            // The most recent change: the first one after the fetch
            // before, or a later one (Poisson, looking back from now).
            last_change[page] = next_change[page].max(now - exp(rate));
        }
        let f = Fetched {
            page,
            now,
            since: now - last_fetch[page],
            changed,
            last_modified: last_change[page],
        };
        last_fetch[page] = now;
        next_change[page] = now + exp(rate);
        if now >= warmup {
            requests += 1;
        }
        let next = rule.next(&f).max(now);
        due.push(Reverse((Time(next), page)));
        slot = now + 1.0 / cap;
    }
    Outcome {
        requests,
        freshness: if samples == 0 {
            0.0
        } else {
            fresh_sum / samples as f64
        },
    }
}

/// A time, ordered as numbers are (they are never NaN here).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Time(f64);

impl Eq for Time {}

impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Time {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Every(f64);

    impl Rule for Every {
        fn first(&mut self, page: usize) -> f64 {
            // Spread over the first interval, as a crawl's first pass is.
            self.0 * (page as f64 + 0.5) / 1000.0
        }
        fn next(&mut self, f: &Fetched) -> f64 {
            f.now + self.0
        }
    }

    #[test]
    fn a_fixed_interval_gives_the_freshness_poisson_changes_predict() {
        let day = 86_400.0;
        let site = Site {
            rates: vec![1.0 / day; 1000],
        };
        let out = run(&site, &mut Every(day), 1.0, 5.0 * day, 20.0 * day, 3);
        // Revisited once a day, changing once a day: 1 − e^{−1} ≈ 0.632.
        assert!((out.freshness - 0.632).abs() < 0.02, "{out:?}");
        assert!((out.requests as f64 - 20_000.0).abs() < 50.0, "{out:?}");
    }

    #[test]
    fn the_cap_bounds_the_requests() {
        let day = 86_400.0;
        let site = Site {
            rates: vec![1.0 / day; 1000],
        };
        let cap = 100.0 / day;
        let out = run(&site, &mut Every(600.0), cap, day, 10.0 * day, 4);
        assert!(out.requests <= 1_001, "{out:?}");
        assert!(out.requests >= 990, "{out:?}");
    }
}
