//! When to fetch a page again, in a crawl that keeps its pages fresh:
//! each page's change rate estimated from what its fetches saw
//! ([`estimate`]), and a job's request budget spread across its pages to
//! maximise the share of them whose stored copy is current
//! ([`allocate`]), and each page's schedule from one fetch to the next
//! ([`schedule`]).
//!
//! Pure functions of numbers: no clock, no I/O. `crawlkeeper-bench
//! freshness` measures them against a fixed interval and the rules of
//! StormCrawler and Nutch on pages that change at known rates.

pub mod allocate;
pub mod estimate;
pub mod schedule;

pub use allocate::{Bounds, freshness, interval, solve_mu};
pub use estimate::ChangeHistory;
pub use schedule::{
    Next, Observed, PageSchedule, RETIRE_AFTER, RateMove, RevisitRule, bucket_rate, rate_bucket,
    signature,
};
