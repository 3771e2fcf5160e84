//! `crawlkeeper-bench freshness`: revisit rules on a simulated site whose
//! pages change at known rates (Poisson, spread on a log scale), under
//! one request budget: a fixed interval, StormCrawler's rule, Nutch's
//! rule and crawlkeeper's. Reports each rule's requests and mean
//! freshness (the share of pages whose stored copy is the live one,
//! sampled hourly after a warm-up), then crawlkeeper's freshness at
//! StormCrawler's requests and the requests it needs for StormCrawler's
//! freshness.

mod rules;
mod sim;

use anyhow::{Result, bail};
use clap::Args;
use crawlkeeper_crawl::revisit::Bounds;
use crawlkeeper_model::parse_positive_duration;

use rules::{Fixed, Nutch, Ours, StormCrawler};
use sim::{Outcome, Rule, Site};

const DAY: f64 = 86_400.0;

/// `crawlkeeper-bench freshness`.
#[derive(Args, Debug)]
pub struct FreshnessArgs {
    /// Pages of the simulated site.
    #[arg(long, default_value_t = 10_000)]
    pages: usize,
    /// The most requests a day the crawler may make, one comparison per
    /// value: crawlkeeper's rule spends all of it, the others what they
    /// ask for within it. The default runs a tight budget (a quarter of a
    /// request per page a day), a looser one, and one above what
    /// StormCrawler's rule asks for.
    #[arg(long, value_delimiter = ',', default_value = "2500,20000,200000")]
    budget: Vec<f64>,
    /// Changes a day of the slowest-changing page.
    #[arg(long, default_value_t = 0.01)]
    slowest: f64,
    /// Changes a day of the fastest-changing page.
    #[arg(long, default_value_t = 10.0)]
    fastest: f64,
    /// Days simulated before freshness is measured (the rules learn).
    #[arg(long, default_value_t = 30.0)]
    warmup_days: f64,
    /// Days measured.
    #[arg(long, default_value_t = 30.0)]
    days: f64,
    /// The shortest revisit interval of the adaptive rules.
    #[arg(long, default_value = "10m", value_parser = parse_positive_duration)]
    revisit_min: std::time::Duration,
    /// The longest.
    #[arg(long, default_value = "14d", value_parser = parse_positive_duration)]
    revisit_max: std::time::Duration,
    /// Every rule's first interval.
    #[arg(long, default_value = "1d", value_parser = parse_positive_duration)]
    first: std::time::Duration,
    /// Seed of the site's rates and changes.
    #[arg(long, default_value_t = 53)]
    seed: u64,
}

/// Runs the comparison and prints it.
pub fn run(a: FreshnessArgs) -> Result<()> {
    if a.pages == 0
        || a.budget.iter().any(|b| b.is_nan() || *b <= 0.0)
        || a.slowest.is_nan()
        || a.slowest <= 0.0
        || a.fastest < a.slowest
    {
        bail!("--pages and --budget must be above zero, and --slowest at most --fastest");
    }
    let site = Site::log_uniform(a.pages, a.slowest / DAY, a.fastest / DAY, a.seed);
    let bounds = Bounds {
        min_secs: a.revisit_min.as_secs_f64(),
        max_secs: a.revisit_max.as_secs_f64(),
    };
    for &budget in &a.budget {
        compare(&a, &site, bounds, budget);
    }
    Ok(())
}

/// One comparison, at `budget` requests a day.
fn compare(a: &FreshnessArgs, site: &Site, bounds: Bounds, budget: f64) {
    let (first, cap, window) = (a.first.as_secs_f64(), budget / DAY, a.days * DAY);
    let pages = a.pages;
    let go = |rule: &mut dyn Rule| sim::run(site, rule, cap, a.warmup_days * DAY, window, a.seed);
    println!(
        "freshness: {} pages changing {}–{} times a day, {} requests a day at most, \
         {} days measured after {} of warm-up",
        a.pages, a.slowest, a.fastest, budget, a.days, a.warmup_days
    );
    let fixed = go(&mut Fixed {
        secs: a.pages as f64 / cap,
        pages,
    });
    let storm = go(&mut StormCrawler::new(pages, first, bounds));
    let nutch = go(&mut Nutch::new(pages, first, bounds));
    let ours = go(&mut Ours::new(pages, first, bounds, cap));
    let known = go(&mut Ours::knowing(&site.rates, first, bounds, cap));
    for (name, o) in [
        ("fixed interval", fixed),
        ("StormCrawler", storm),
        ("Nutch", nutch),
        ("crawlkeeper", ours),
        ("rates known", known),
    ] {
        line(name, o, window);
    }
    // At StormCrawler's requests.
    let storm_rate = storm.requests as f64 / window;
    let ours_at = go(&mut Ours::new(pages, first, bounds, storm_rate));
    let fixed_at = go(&mut Fixed {
        secs: a.pages as f64 / storm_rate,
        pages,
    });
    println!("at StormCrawler's requests ({}):", storm.requests);
    line("  fixed interval", fixed_at, window);
    line("  crawlkeeper", ours_at, window);
    println!(
        "  crawlkeeper - StormCrawler: {:+.1} points",
        100.0 * (ours_at.freshness - storm.freshness)
    );
    // The least budget at which crawlkeeper is as fresh as StormCrawler.
    let (mut lo, mut hi) = (0.02, 1.0);
    let mut matched = (ours_at.freshness >= storm.freshness).then_some(ours_at);
    for _ in 0..10 {
        let mid = (lo + hi) / 2.0;
        let o = go(&mut Ours::new(pages, first, bounds, storm_rate * mid));
        if o.freshness >= storm.freshness {
            hi = mid;
            matched = Some(o);
        } else {
            lo = mid;
        }
    }
    match matched {
        Some(m) => println!(
            "crawlkeeper at StormCrawler's freshness ({:.3}): {} requests, {:.0}% of StormCrawler's",
            storm.freshness,
            m.requests,
            100.0 * m.requests as f64 / storm.requests.max(1) as f64
        ),
        None => println!(
            "crawlkeeper at StormCrawler's freshness ({:.3}): not reached with StormCrawler's requests",
            storm.freshness
        ),
    }
}

fn line(name: &str, o: Outcome, window: f64) {
    println!(
        "{name:<16} requests={:>8} ({:>7.0}/day) freshness={:.3}",
        o.requests,
        o.requests as f64 / window * DAY,
        o.freshness
    );
}
