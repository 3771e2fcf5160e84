//! The revisit rules compared: a fixed interval, StormCrawler's
//! `AdaptiveScheduler`, Nutch's `AdaptiveFetchSchedule`, and
//! crawlkeeper's (`crawlkeeper_crawl::revisit`). Every rule gets the same
//! first interval and the same bounds, so that the rules are compared,
//! not their defaults.

use crawlkeeper_crawl::revisit::{Bounds, ChangeHistory, interval, solve_mu};

use super::sim::{Fetched, Rule};

/// The first revisit of every page, spread evenly over `first` seconds.
fn spread(first: f64, page: usize, pages: usize) -> f64 {
    first * (page as f64 + 0.5) / pages as f64
}

/// Every page every `secs` seconds.
pub struct Fixed {
    /// The interval.
    pub secs: f64,
    /// Pages.
    pub pages: usize,
}

impl Rule for Fixed {
    fn first(&mut self, page: usize) -> f64 {
        spread(self.secs, page, self.pages)
    }
    fn next(&mut self, f: &Fetched) -> f64 {
        f.now + self.secs
    }
}

/// StormCrawler's `AdaptiveScheduler` (apache/incubator-stormcrawler,
/// `core/.../persistence/AdaptiveScheduler.java`): a changed page's
/// interval moves half-way to the minimum (`rate.decr` 0.5), an
/// unchanged one's grows by half (`rate.incr` 0.5) up to the maximum; a
/// 304 is unchanged.
pub struct StormCrawler {
    bounds: Bounds,
    first: f64,
    intervals: Vec<f64>,
}

impl StormCrawler {
    /// The rule over `pages` pages, starting at `first` seconds.
    pub fn new(pages: usize, first: f64, bounds: Bounds) -> Self {
        Self {
            bounds,
            first,
            intervals: vec![first; pages],
        }
    }
}

impl Rule for StormCrawler {
    fn first(&mut self, page: usize) -> f64 {
        spread(self.first, page, self.intervals.len())
    }
    fn next(&mut self, f: &Fetched) -> f64 {
        let i = &mut self.intervals[f.page];
        *i = if f.changed {
            0.5 * *i + 0.5 * self.bounds.min_secs
        } else {
            (*i * 1.5).min(self.bounds.max_secs)
        };
        f.now + *i
    }
}

/// Nutch's `AdaptiveFetchSchedule` (apache/nutch,
/// `org.apache.nutch.crawl.AdaptiveFetchSchedule`, with
/// `nutch-default.xml`'s rates): a modified page's interval × 0.8, an
/// unmodified one's × 1.4; with `sync_delta`, an unmodified page whose
/// `Last-Modified` is older than its interval takes that age as its
/// interval, counted from `0.3 ×` the age before now.
pub struct Nutch {
    bounds: Bounds,
    first: f64,
    intervals: Vec<f64>,
}

impl Nutch {
    /// The rule over `pages` pages, starting at `first` seconds.
    pub fn new(pages: usize, first: f64, bounds: Bounds) -> Self {
        Self {
            bounds,
            first,
            intervals: vec![first; pages],
        }
    }
}

impl Rule for Nutch {
    fn first(&mut self, page: usize) -> f64 {
        spread(self.first, page, self.intervals.len())
    }
    fn next(&mut self, f: &Fetched) -> f64 {
        let i = &mut self.intervals[f.page];
        // A modified page's modified time is the fetch's (delta 0).
        let modified = if f.changed { f.now } else { f.last_modified };
        *i *= if f.changed { 0.8 } else { 1.4 };
        let delta = f.now - modified;
        let mut reference = f.now;
        if delta > *i {
            *i = delta;
            reference = f.now - 0.3 * delta;
        }
        *i = i.clamp(self.bounds.min_secs, self.bounds.max_secs);
        reference + *i
    }
}

/// crawlkeeper's: each page's change rate estimated from its history,
/// the budget spread by the marginal value `μ` the estimates give
/// (recomputed every tick).
pub struct Ours {
    bounds: Bounds,
    first: f64,
    budget: f64,
    histories: Vec<ChangeHistory>,
    /// Each page's estimate, updated when its history is.
    rates: Vec<f64>,
    /// The true rates, when the rule is told them (the bound of what
    /// estimating can reach).
    known: bool,
    mu: f64,
}

impl Ours {
    /// The rule over `pages` pages spending `budget` requests a second.
    pub fn new(pages: usize, first: f64, bounds: Bounds, budget: f64) -> Self {
        Self {
            bounds,
            first,
            budget,
            histories: vec![ChangeHistory::default(); pages],
            rates: vec![1.0 / first; pages],
            known: false,
            mu: 0.0,
        }
    }

    /// The rule told each page's true rate instead of estimating it.
    pub fn knowing(rates: &[f64], first: f64, bounds: Bounds, budget: f64) -> Self {
        Self {
            rates: rates.to_vec(),
            known: true,
            ..Self::new(rates.len(), first, bounds, budget)
        }
    }
}

impl Rule for Ours {
    fn first(&mut self, page: usize) -> f64 {
        spread(self.first, page, self.histories.len())
    }
    fn next(&mut self, f: &Fetched) -> f64 {
        if !self.known {
            let history = &mut self.histories[f.page];
            history.observe(f.since, f.changed);
            // A page's rate before its first comparison: one change per
            // first interval.
            self.rates[f.page] = history.rate().unwrap_or(1.0 / self.first);
        }
        if self.mu == 0.0 {
            self.tick(f.now);
        }
        f.now + interval(self.rates[f.page], self.mu, self.bounds)
    }
    fn tick(&mut self, _now: f64) {
        // The rates in buckets a quarter of an octave wide: what a job
        // keeps to find μ without reading every page.
        let mut buckets = std::collections::BTreeMap::<i64, (f64, f64)>::new();
        for &rate in &self.rates {
            let b = buckets
                .entry((rate.log2() * 4.0).floor() as i64)
                .or_insert((0.0, 0.0));
            b.0 += rate;
            b.1 += 1.0;
        }
        let rates: Vec<(f64, f64)> = buckets.values().map(|&(sum, n)| (sum / n, n)).collect();
        self.mu = solve_mu(&rates, self.budget, self.bounds);
    }
}
