//! How often to revisit each page so that a job's request budget buys the
//! most freshness (Cho and Garcia-Molina, "Synchronizing a database to
//! improve freshness", 2000).
//!
//! A page whose content changes at rate λ (a Poisson process), revisited
//! every `1/f` seconds, holds its live content a share
//! `F(λ, f) = (f/λ)(1 − e^{−λ/f})` of the time. Maximising `Σ F` over a
//! job's pages under a budget `Σ f = B` makes every page's marginal
//! freshness equal: `∂F/∂f = μ`. With `r = λ/f` that reads
//! `g(r) = 1 − (1 + r)e^{−r} = μλ`, `g` rising from 0 to 1. A page with
//! `μλ ≥ 1` changes faster than the budget can follow: its optimal
//! frequency is zero (each fetch of it would be stale again before it is
//! read), and it is revisited only at the longest interval allowed, to
//! keep its estimate current. One number, `μ`, shared by the job, turns
//! each page's estimated rate into its interval.

/// The shortest and the longest revisit interval, in seconds
/// (`--revisit-min`, `--revisit-max`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// The shortest interval.
    pub min_secs: f64,
    /// The longest interval.
    pub max_secs: f64,
}

/// The share of the time a page of change rate `rate` (per second)
/// revisited `frequency` times a second holds its live content.
pub fn freshness(rate: f64, frequency: f64) -> f64 {
    if frequency <= 0.0 {
        return 0.0;
    }
    if rate <= 0.0 {
        return 1.0;
    }
    let r = rate / frequency;
    if r < 1e-9 { 1.0 } else { -(-r).exp_m1() / r }
}

/// `g(r) = 1 − (1 + r)e^{−r}`.
fn g(r: f64) -> f64 {
    -(-r).exp_m1() - r * (-r).exp()
}

/// The `r ≥ 0` with `g(r) = y`, for `0 < y < 1`: Newton's steps kept
/// inside a bracket that bisection narrows when a step leaves it.
fn g_inverse(y: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 60.0_f64);
    // g(r) ≈ r²/2 near zero.
    let mut r = (2.0 * y).sqrt().clamp(1e-6, hi);
    for _ in 0..100 {
        let value = g(r) - y;
        if value > 0.0 {
            hi = r;
        } else {
            lo = r;
        }
        let slope = r * (-r).exp();
        let next = r - value / slope;
        let next = if slope > 0.0 && next > lo && next < hi {
            next
        } else {
            (lo + hi) / 2.0
        };
        if (next - r).abs() <= 1e-12 * r.max(1.0) {
            return next;
        }
        r = next;
    }
    r
}

/// The optimal revisit frequency (per second) of a page of rate `rate`
/// at the job's marginal value `mu`; zero when the page changes too fast
/// to be worth revisiting on its own.
pub fn frequency(rate: f64, mu: f64) -> f64 {
    if rate.is_nan() || rate <= 0.0 {
        return 0.0;
    }
    let y = mu * rate;
    if y >= 1.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return f64::INFINITY;
    }
    rate / g_inverse(y)
}

/// The interval, in seconds, to the next fetch of a page of rate `rate`:
/// the optimal one within `bounds` (a page not worth revisiting, the
/// longest).
pub fn interval(rate: f64, mu: f64, bounds: Bounds) -> f64 {
    let f = frequency(rate, mu);
    let secs = if f > 0.0 { 1.0 / f } else { bounds.max_secs };
    secs.clamp(bounds.min_secs, bounds.max_secs)
}

/// The marginal value `μ` at which pages of the given rates (each with
/// a count) revisited at their [`interval`]s make `budget` requests a
/// second, found by bisection on its logarithm. A budget larger than
/// every page at the shortest interval needs gives the least `μ`; one
/// smaller than every page at the longest, the greatest.
pub fn solve_mu(rates: &[(f64, f64)], budget: f64, bounds: Bounds) -> f64 {
    let requests = |mu: f64| -> f64 {
        rates
            .iter()
            .map(|&(rate, count)| count / interval(rate, mu, bounds))
            .sum()
    };
    // μλ spans (0, 1) for the rates given: search a little beyond.
    let top = rates
        .iter()
        .map(|&(rate, _)| rate)
        .filter(|r| *r > 0.0)
        .fold(f64::INFINITY, f64::min);
    let (mut lo, mut hi) = (1e-12_f64.ln(), (2.0 / top.min(1e12)).ln());
    if requests(lo.exp()) <= budget {
        return lo.exp();
    }
    if requests(hi.exp()) >= budget {
        return hi.exp();
    }
    for _ in 0..80 {
        let mid = (lo + hi) / 2.0;
        if requests(mid.exp()) > budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    ((lo + hi) / 2.0).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: f64 = 86_400.0;

    #[test]
    fn freshness_is_that_of_poisson_changes() {
        // Revisited as often as it changes: (1 − e^{−1}) ≈ 0.632.
        assert!((freshness(1.0 / DAY, 1.0 / DAY) - 0.632_12).abs() < 1e-4);
        assert_eq!(freshness(0.0, 1.0), 1.0);
        assert_eq!(freshness(1.0, 0.0), 0.0);
        assert!(freshness(1.0 / DAY, 100.0 / DAY) > 0.99);
    }

    #[test]
    fn g_inverse_inverts_g_over_its_whole_range() {
        for y in [1e-12, 1e-6, 0.01, 0.3, 0.5, 0.9, 0.999, 1.0 - 1e-12] {
            let r = g_inverse(y);
            assert!(
                (g(r) - y).abs() <= 1e-9 * y.max(1e-3),
                "y={y} r={r} g={}",
                g(r)
            );
        }
    }

    #[test]
    fn every_page_s_marginal_freshness_is_the_same_at_the_optimum() {
        let mu = 0.5 * DAY;
        for rate in [0.1 / DAY, 0.5 / DAY, 1.0 / DAY, 1.9 / DAY] {
            let f = frequency(rate, mu);
            let h = f * 1e-6;
            let marginal = (freshness(rate, f + h) - freshness(rate, f - h)) / (2.0 * h);
            assert!(
                (marginal / mu - 1.0).abs() < 1e-4,
                "rate {rate}: {marginal} vs {mu}"
            );
        }
        // Past 1/μ (two changes a day here) a page is not worth revisiting.
        assert_eq!(frequency(2.0 / DAY, mu), 0.0);
        assert_eq!(frequency(10.0 / DAY, mu), 0.0);
    }

    #[test]
    fn the_budget_is_spent_where_it_buys_the_most_freshness() {
        let bounds = Bounds {
            min_secs: 600.0,
            max_secs: 14.0 * DAY,
        };
        // A thousand pages each of three kinds: changing weekly, daily,
        // and every ten minutes; 1,000 requests a day for all.
        let rates = [
            (1.0 / (7.0 * DAY), 1000.0),
            (1.0 / DAY, 1000.0),
            (144.0 / DAY, 1000.0),
        ];
        let budget = 1000.0 / DAY;
        let mu = solve_mu(&rates, budget, bounds);
        let spent: f64 = rates
            .iter()
            .map(|&(r, n)| n / interval(r, mu, bounds))
            .sum();
        assert!((spent / budget - 1.0).abs() < 1e-6, "{spent} vs {budget}");
        let weekly = interval(rates[0].0, mu, bounds);
        let daily = interval(rates[1].0, mu, bounds);
        let fast = interval(rates[2].0, mu, bounds);
        // The fast pages get the longest interval: the budget goes to
        // pages it can keep fresh, and the daily ones get more of it.
        assert_eq!(fast, bounds.max_secs);
        assert!(daily < weekly, "{daily} {weekly}");
        // Better than the same budget spread evenly.
        let even = 3000.0 / 1000.0 * DAY;
        let total = |pick: &dyn Fn(f64) -> f64| -> f64 {
            rates
                .iter()
                .map(|&(r, n)| n * freshness(r, 1.0 / pick(r)))
                .sum::<f64>()
                / 3000.0
        };
        let optimal = total(&|r| interval(r, mu, bounds));
        let uniform = total(&|_| even);
        assert!(optimal > uniform + 0.02, "{optimal} vs {uniform}");
    }

    #[test]
    fn budgets_beyond_the_bounds_give_the_bounds() {
        let bounds = Bounds {
            min_secs: 600.0,
            max_secs: 14.0 * DAY,
        };
        let rates = [(1.0 / DAY, 10.0)];
        let lavish = solve_mu(&rates, 1e6, bounds);
        assert_eq!(interval(rates[0].0, lavish, bounds), bounds.min_secs);
        let meagre = solve_mu(&rates, 1e-12, bounds);
        assert_eq!(interval(rates[0].0, meagre, bounds), bounds.max_secs);
    }
}
