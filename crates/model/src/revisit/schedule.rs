//! A page's schedule in a continuous crawl: what its fetches told of it
//! ([`PageSchedule`], carried from one fetch to the next in the URL's
//! [`Known`](crate::Known)), and the rule that turns a fetch's outcome
//! into whether the page changed and when to fetch it again
//! ([`RevisitRule::next`]).
//!
//! - A `304` to a conditional request, or a body whose signature equals
//!   the stored copy's, is "unchanged"; any other body is "changed". The
//!   interval since the fetch before feeds the page's change history.
//! - The next interval comes from the page's estimated change rate:
//!   with a request budget, the freshness-optimal one at the job's `μ`
//!   ([`super::allocate::interval`]); without, one change's expected
//!   time (`1/λ`). Always within `--revisit-min` and `--revisit-max`.
//! - A page answering `404` or `410` [`RETIRE_AFTER`] times in a row is
//!   retired: never fetched again (one that comes back is found again
//!   only through a link). Other failures keep the interval as it was
//!   and tell nothing of change.

use serde::{Deserialize, Serialize};

use super::allocate::{Bounds, freshness, interval};
use super::estimate::ChangeHistory;

/// `404`/`410` answers in a row after which a page is retired.
pub const RETIRE_AFTER: u8 = 3;

/// What the fetches of one page told, carried to its next fetch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PageSchedule {
    /// When the copy the crawler holds was fetched or last confirmed,
    /// in milliseconds since the Unix epoch.
    pub fetched_ms: i64,
    /// The signature of that copy (hex of a 64-bit hash of its body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// When a change was last seen, in milliseconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_ms: Option<i64>,
    /// The interval chosen after the last fetch, in seconds.
    pub interval_secs: f64,
    /// `404`/`410` answers in a row.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gone: u8,
    /// The page's observed changes, summarised.
    #[serde(default)]
    pub history: ChangeHistory,
    /// The bucket of the job's rate histogram the page is counted in
    /// ([`rate_bucket`]); absent once it is retired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<i16>,
}

// Its numbers are finite (see `ChangeHistory`'s `Eq`).
impl Eq for PageSchedule {}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

impl PageSchedule {
    /// Whether a body of signature `sig` is the copy this schedule holds.
    pub fn holds(&self, sig: u64) -> bool {
        self.signature.as_deref() == Some(signature_text(sig).as_str())
    }

    /// The page's estimated change rate, per second; `None` before its
    /// first comparison.
    pub fn rate(&self) -> Option<f64> {
        self.history.rate()
    }
}

/// What one fetch of a page saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observed {
    /// A `304` to a conditional request: the stored copy is current.
    NotModified,
    /// A body, with its signature.
    Content(u64),
    /// `404` or `410`.
    Gone,
    /// Anything else (an error, a `5xx`, a redirect): nothing learnt.
    Failed,
}

/// The bucket of a change rate (per second) in a job's rate histogram:
/// a quarter of an octave wide, so that a bucket's pages are taken at one
/// rate ([`bucket_rate`]) within 9 %.
pub fn rate_bucket(rate: f64) -> i16 {
    let rate = rate.clamp(super::estimate::MIN_RATE, super::estimate::MAX_RATE);
    (rate.log2() * 4.0).floor() as i16
}

/// The rate a bucket's pages are taken at: its geometric middle.
pub fn bucket_rate(bucket: i16) -> f64 {
    ((f64::from(bucket) + 0.5) / 4.0).exp2()
}

/// A page moved in its job's rate histogram by one fetch: out of `from`,
/// into `to` (either absent: the page was not counted before, or is
/// retired).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateMove {
    /// The bucket it leaves.
    pub from: Option<i16>,
    /// The bucket it enters.
    pub to: Option<i16>,
}

impl RateMove {
    /// What the move changes of the histogram: (bucket, pages added).
    pub fn deltas(self) -> impl Iterator<Item = (i16, i64)> {
        self.from
            .map(|b| (b, -1))
            .into_iter()
            .chain(self.to.map(|b| (b, 1)))
    }
}

/// A signature as a [`PageSchedule`] keeps it: 16 hex digits (JSON
/// numbers past 2^53 are not read back exactly everywhere).
fn signature_text(sig: u64) -> String {
    format!("{sig:016x}")
}

/// The signature of a body as a [`PageSchedule`] keeps it.
pub fn signature(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The rule of a job: bounds, the first interval, and the job's marginal
/// value of freshness when it spends a request budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RevisitRule {
    /// The shortest and longest intervals.
    pub bounds: Bounds,
    /// The interval after a page's first fetch, in seconds (within the
    /// bounds).
    pub first_secs: f64,
    /// With a request budget: the job's `μ` ([`super::solve_mu`]).
    pub mu: Option<f64>,
}

/// What the rule made of a fetch.
#[derive(Clone, Debug, PartialEq)]
pub struct Next {
    /// The page's schedule after the fetch.
    pub schedule: PageSchedule,
    /// Whether the content changed since the stored copy; `None` when the
    /// fetch brought no content to compare (an error, a `404`).
    pub changed: Option<bool>,
    /// Seconds to the next fetch; `None`: the page is retired.
    pub due_in_secs: Option<f64>,
    /// How the page moved in the job's rate histogram.
    pub moved: RateMove,
}

impl RevisitRule {
    /// The interval for a page of estimated `rate` (per second).
    pub fn interval_for(&self, rate: f64) -> f64 {
        let b = self.bounds;
        match self.mu {
            Some(mu) => interval(rate, mu, b),
            None if rate > 0.0 => (1.0 / rate).clamp(b.min_secs, b.max_secs),
            None => b.max_secs,
        }
    }

    /// The expected freshness of pages revisited by this rule, from the
    /// job's rate histogram (`(bucket, pages)`): each bucket's share of
    /// the time its pages' copies hold their live content at the interval
    /// the rule gives its rate, weighted by pages. `None` without pages.
    pub fn expected_freshness(&self, histogram: &[(i16, u64)]) -> Option<f64> {
        let (mut fresh, mut pages) = (0.0, 0.0);
        for &(bucket, n) in histogram {
            let rate = bucket_rate(bucket);
            let n = n as f64;
            fresh += n * freshness(rate, 1.0 / self.interval_for(rate));
            pages += n;
        }
        (pages > 0.0).then(|| fresh / pages)
    }

    /// The first interval, within the bounds.
    fn first(&self) -> f64 {
        self.first_secs
            .clamp(self.bounds.min_secs, self.bounds.max_secs)
    }

    /// What a fetch at `now_ms` that saw `seen` makes of the page whose
    /// schedule was `before` (`None`: its first fetch).
    pub fn next(&self, before: Option<&PageSchedule>, now_ms: i64, seen: Observed) -> Next {
        let mut s = before.cloned().unwrap_or_default();
        if s.interval_secs <= 0.0 || !s.interval_secs.is_finite() {
            s.interval_secs = self.first();
        }
        let since = (now_ms.saturating_sub(s.fetched_ms)) as f64 / 1000.0;
        let had_copy = s.signature.is_some();
        let changed = match seen {
            Observed::Failed => None,
            Observed::Gone => {
                s.gone = s.gone.saturating_add(1);
                None
            }
            Observed::NotModified if had_copy => {
                s.history.observe(since, false);
                s.fetched_ms = now_ms;
                Some(false)
            }
            // A 304 with no copy of ours to confirm: nothing to compare.
            Observed::NotModified => None,
            Observed::Content(sig) => {
                let changed = !(had_copy && s.holds(sig));
                if had_copy {
                    s.history.observe(since, changed);
                }
                if changed {
                    s.changed_ms = Some(now_ms);
                }
                s.signature = Some(signature_text(sig));
                s.fetched_ms = now_ms;
                Some(changed)
            }
        };
        if !matches!(seen, Observed::Gone) {
            s.gone = 0;
        }
        if changed.is_some() {
            s.interval_secs = match s.rate() {
                Some(rate) => self.interval_for(rate),
                None => self.first(),
            };
        }
        let due_in_secs = (s.gone < RETIRE_AFTER).then_some(s.interval_secs);
        let from = s.bucket;
        s.bucket = due_in_secs.map(|_| rate_bucket(s.rate().unwrap_or(1.0 / self.first())));
        Next {
            moved: RateMove { from, to: s.bucket },
            schedule: s,
            changed,
            due_in_secs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: f64 = 60.0;
    const MAX: f64 = 86_400.0;

    fn rule() -> RevisitRule {
        RevisitRule {
            bounds: Bounds {
                min_secs: MIN,
                max_secs: MAX,
            },
            first_secs: 3_600.0,
            mu: None,
        }
    }

    #[test]
    fn expected_freshness_weighs_each_bucket_by_its_pages() {
        let r = rule();
        assert_eq!(r.expected_freshness(&[]), None);
        // Revisited once per expected change (no budget): 1 − 1/e fresh.
        let hourly = rate_bucket(1.0 / 3_600.0);
        let at_once = 1.0 - (-1.0_f64).exp();
        let f = r.expected_freshness(&[(hourly, 10)]).unwrap();
        assert!((f - at_once).abs() < 0.05, "{f}");
        // A page changing every second is revisited at MIN: nearly never
        // fresh; weighted 1 to 3 against the hourly ones.
        let fast = rate_bucket(1.0);
        let mixed = r.expected_freshness(&[(hourly, 30), (fast, 10)]).unwrap();
        let fast_alone = r.expected_freshness(&[(fast, 1)]).unwrap();
        assert!(fast_alone < 0.05, "{fast_alone}");
        assert!(
            (mixed - (3.0 * f + fast_alone) / 4.0).abs() < 1e-9,
            "{mixed}"
        );
    }

    #[test]
    fn a_first_fetch_is_a_change_due_after_the_first_interval() {
        let next = rule().next(None, 1_000_000, Observed::Content(7));
        assert_eq!(next.changed, Some(true));
        assert_eq!(next.due_in_secs, Some(3_600.0));
        assert_eq!(next.schedule.fetched_ms, 1_000_000);
        assert_eq!(next.schedule.signature.as_deref(), Some("0000000000000007"));
    }

    #[test]
    fn an_equal_signature_or_a_304_is_unchanged_and_the_interval_grows() {
        let r = rule();
        let mut s = r.next(None, 1, Observed::Content(1)).schedule;
        let mut at = 1;
        let mut last = 0.0;
        for i in 0..6 {
            at += (s.interval_secs * 1000.0) as i64;
            let seen = if i % 2 == 0 {
                Observed::Content(1)
            } else {
                Observed::NotModified
            };
            let next = r.next(Some(&s), at, seen);
            assert_eq!(next.changed, Some(false));
            let due = next.due_in_secs.expect("not retired");
            assert!(due >= last, "{due} after {last}");
            last = due;
            s = next.schedule;
        }
        assert!(
            last > 3_600.0,
            "an unchanging page is fetched less often: {last}"
        );
    }

    #[test]
    fn a_page_that_changes_at_every_fetch_is_fetched_ever_more_often() {
        let r = rule();
        let mut s = r.next(None, 1, Observed::Content(0)).schedule;
        let mut at = 1;
        let mut last = s.interval_secs;
        for sig in 1..40 {
            at += (s.interval_secs * 1000.0) as i64;
            let next = r.next(Some(&s), at, Observed::Content(sig));
            assert_eq!(next.changed, Some(true));
            s = next.schedule;
            assert!(s.interval_secs <= last, "{} after {last}", s.interval_secs);
            last = s.interval_secs;
        }
        // The prior's one unchanged interval (the first, an hour) weighs
        // less and less: the interval nears the shortest allowed.
        assert!(s.interval_secs < 3_600.0 / 8.0, "{}", s.interval_secs);
        assert!(s.interval_secs >= MIN);
        assert_eq!(s.changed_ms, Some(at));
    }

    #[test]
    fn three_gone_answers_in_a_row_retire_a_page_and_one_body_resets_the_count() {
        let r = rule();
        let s = r.next(None, 1, Observed::Content(0)).schedule;
        let once = r.next(Some(&s), 2, Observed::Gone);
        assert_eq!((once.changed, once.due_in_secs), (None, Some(3_600.0)));
        let twice = r.next(Some(&once.schedule), 3, Observed::Gone);
        let back = r.next(Some(&twice.schedule), 4, Observed::Content(0));
        assert_eq!(back.schedule.gone, 0);
        let mut s = back.schedule;
        for _ in 0..RETIRE_AFTER - 1 {
            s = r.next(Some(&s), 5, Observed::Gone).schedule;
        }
        assert_eq!(r.next(Some(&s), 6, Observed::Gone).due_in_secs, None);
    }

    #[test]
    fn a_failure_tells_nothing_and_keeps_the_interval() {
        let r = rule();
        let s = r.next(None, 1, Observed::Content(0)).schedule;
        let next = r.next(Some(&s), 1_000, Observed::Failed);
        assert_eq!(next.changed, None);
        assert_eq!(next.due_in_secs, Some(s.interval_secs));
        assert_eq!(next.schedule.history, s.history);
        // A 304 with no copy to confirm compares nothing either.
        let none = r.next(None, 1, Observed::NotModified);
        assert_eq!(none.changed, None);
    }

    #[test]
    fn a_page_moves_between_rate_buckets_and_leaves_them_when_retired() {
        let r = rule();
        let first = r.next(None, 1, Observed::Content(0));
        let start = rate_bucket(1.0 / 3_600.0);
        assert_eq!(
            first.moved,
            RateMove {
                from: None,
                to: Some(start)
            }
        );
        let mut s = first.schedule;
        let mut at = 1;
        for sig in 1..10 {
            at += 60_000;
            s = r.next(Some(&s), at, Observed::Content(sig)).schedule;
        }
        let fast = s.bucket.expect("counted");
        assert!(fast > start, "a page seen to change often counts as faster");
        let mut retire = s.clone();
        retire.gone = RETIRE_AFTER - 1;
        let gone = r.next(Some(&retire), at + 1, Observed::Gone);
        assert_eq!(
            gone.moved,
            RateMove {
                from: Some(fast),
                to: None
            }
        );
        for rate in [1e-9, 1e-5, 0.01, 1.0, 999.0] {
            let b = bucket_rate(rate_bucket(rate));
            assert!((b / rate - 1.0).abs() < 0.1, "{rate} taken as {b}");
        }
    }

    #[test]
    fn a_schedule_survives_json() {
        let r = rule();
        let s = r.next(None, 1, Observed::Content(0)).schedule;
        let s = r.next(Some(&s), 10_000, Observed::Content(5)).schedule;
        let json = serde_json::to_string(&s).expect("serialises");
        let back: PageSchedule = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, s);
    }
}
