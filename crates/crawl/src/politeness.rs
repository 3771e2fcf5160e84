//! Politeness decisions, after ScraperUtils::Scheduler: how long to wait
//! before the next request to an authority, and before a retry. Pure
//! functions of the authority's timing state, the response and a random
//! number, so tests can check the numbers exactly.

use std::time::{Duration, SystemTime};

use crate::config::PolitenessConfig;

/// The longest delay between two requests to one authority.
pub const MAX_DELAY: Duration = Duration::from_secs(30);
/// The longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);
/// The longest retry backoff.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Timing state of one authority.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    /// The adaptive delay after the last response.
    pub adaptive: Duration,
    /// The robots.txt `Crawl-delay`, already capped.
    pub crawl_delay: Option<Duration>,
}

/// The adaptive delay: `mult = (100 − L) / L`,
/// `target = clamp(response_time × mult, 0, 30 s)`,
/// `delay = clamp((3 × previous + target) / 4, 0, 30 s)`.
pub fn adaptive_delay(max_load: u8, previous: Duration, response_time: Duration) -> Duration {
    let load = f64::from(max_load.clamp(1, 100));
    let mult = (100.0 - load) / load;
    let max = MAX_DELAY.as_secs_f64();
    let target = (response_time.as_secs_f64() * mult).clamp(0.0, max);
    let delay = ((3.0 * previous.as_secs_f64() + target) / 4.0).clamp(0.0, max);
    Duration::from_secs_f64(delay)
}

impl Timing {
    /// Records a `Crawl-delay` of `seconds` from robots.txt, capped at
    /// `config.max_crawl_delay`. A value past the cap (however absurd:
    /// `1e30`, infinity) is the cap; zero, negative and NaN mean no delay.
    /// Returns the value as the server sent it when it was capped, so the
    /// caller can say so once.
    pub fn set_crawl_delay(
        &mut self,
        seconds: Option<f32>,
        config: &PolitenessConfig,
    ) -> Option<f32> {
        let seconds = seconds.filter(|s| *s > 0.0);
        let cap = config.max_crawl_delay;
        self.crawl_delay = seconds.map(|s| {
            Duration::try_from_secs_f32(s)
                .unwrap_or(Duration::MAX)
                .min(cap)
        });
        seconds.filter(|s| Duration::try_from_secs_f32(*s).map_or(true, |d| d > cap))
    }

    /// The wait before the next request, after a response that took
    /// `response_time`. `random` is uniform in [0, 1).
    ///
    /// Crawl-delay if robots.txt gave one, otherwise the adaptive delay;
    /// never less than `config.delay`; plus a random delay whose mean is
    /// `config.random_delay`.
    pub fn after_response(
        &mut self,
        config: &PolitenessConfig,
        response_time: Duration,
        random: f64,
    ) -> Duration {
        self.adaptive = adaptive_delay(config.max_load, self.adaptive, response_time);
        let base = self.crawl_delay.unwrap_or(self.adaptive);
        base.max(config.delay) + config.random_delay.mul_f64(2.0 * random.clamp(0.0, 1.0))
    }
}

/// The backoff before retry number `attempt` (1 for the first retry):
/// `base × 2^(attempt−1)`, at most a minute, times a jitter in [0.5, 1.5).
pub fn retry_backoff(base: Duration, attempt: u32, random: f64) -> Duration {
    let exp = 2u32.saturating_pow(attempt.saturating_sub(1));
    let backoff = base.saturating_mul(exp).min(MAX_BACKOFF);
    backoff.mul_f64(0.5 + random.clamp(0.0, 1.0))
}

/// A `Retry-After` value (seconds or an HTTP date) as a wait from `now`,
/// capped at ten minutes: a number of seconds too large for any integer
/// type is the cap too. `None` if it cannot be read.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        Duration::from_secs(value.parse::<u64>().unwrap_or(u64::MAX))
    } else {
        let at = httpdate::parse_http_date(value).ok()?;
        at.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn adaptive_delay_follows_the_seed_formula() {
        // L = 50: mult = 1, target = response time; delay moves a quarter of the way.
        assert_eq!(adaptive_delay(50, ms(0), ms(400)), ms(100));
        assert_eq!(adaptive_delay(50, ms(100), ms(400)), ms(175));
        // L = 20: mult = 4.
        assert_eq!(adaptive_delay(20, ms(0), ms(100)), ms(100));
        // L = 100: mult = 0, the delay decays to nothing.
        assert_eq!(adaptive_delay(100, ms(0), ms(5000)), ms(0));
        assert_eq!(adaptive_delay(100, ms(400), ms(5000)), ms(300));
        // Clamped to 30 s, target and result.
        assert_eq!(
            adaptive_delay(1, ms(0), Duration::from_secs(10)),
            Duration::from_millis(7500)
        );
        assert_eq!(
            adaptive_delay(1, MAX_DELAY, Duration::from_secs(10)),
            MAX_DELAY
        );
    }

    #[test]
    fn crawl_delay_wins_over_the_adaptive_delay_and_is_capped() {
        let config = PolitenessConfig::default();
        let mut t = Timing::default();
        t.set_crawl_delay(Some(2.0), &config);
        assert_eq!(
            t.after_response(&config, ms(400), 0.0),
            Duration::from_secs(2)
        );
        assert_eq!(t.set_crawl_delay(Some(120.0), &config), Some(120.0));
        assert_eq!(t.crawl_delay, Some(Duration::from_secs(30)));
        assert_eq!(t.set_crawl_delay(Some(f32::NAN), &config), None);
        assert_eq!(t.crawl_delay, None);
        assert_eq!(t.set_crawl_delay(Some(-1.0), &config), None);
        assert_eq!(t.crawl_delay, None);
    }

    #[test]
    fn an_absurd_crawl_delay_is_the_cap_not_a_panic() {
        let config = PolitenessConfig::default();
        let mut t = Timing::default();
        for absurd in [1e30, f32::MAX, f32::INFINITY, 1.8e19] {
            assert_eq!(t.set_crawl_delay(Some(absurd), &config), Some(absurd));
            assert_eq!(t.crawl_delay, Some(config.max_crawl_delay));
            assert_eq!(
                t.after_response(&config, ms(10), 0.0),
                config.max_crawl_delay
            );
        }
        assert_eq!(
            t.set_crawl_delay(Some(30.0), &config),
            None,
            "the cap itself is kept"
        );
    }

    #[test]
    fn fixed_and_random_delays() {
        let config = PolitenessConfig {
            max_load: 100,
            delay: ms(300),
            random_delay: ms(100),
            ..PolitenessConfig::default()
        };
        let mut t = Timing::default();
        assert_eq!(t.after_response(&config, ms(50), 0.0), ms(300));
        assert_eq!(
            t.after_response(&config, ms(50), 0.5),
            ms(400),
            "mean of the random part"
        );
        assert_eq!(
            t.after_response(&config, ms(50), 0.999),
            ms(300) + ms(100).mul_f64(1.998)
        );
        let none = PolitenessConfig {
            max_load: 100,
            ..PolitenessConfig::default()
        };
        assert_eq!(Timing::default().after_response(&none, ms(900), 0.7), ms(0));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_a_cap() {
        assert_eq!(retry_backoff(ms(1000), 1, 0.5), ms(1000));
        assert_eq!(retry_backoff(ms(1000), 2, 0.5), ms(2000));
        assert_eq!(retry_backoff(ms(1000), 3, 0.0), ms(2000));
        assert_eq!(retry_backoff(ms(1000), 30, 0.5), MAX_BACKOFF);
    }

    #[test]
    fn retry_after_in_seconds_or_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("99999", now), Some(MAX_RETRY_AFTER));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(90))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(90));
        assert_eq!(parse_retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(
            parse_retry_after(&"9".repeat(400), now),
            Some(MAX_RETRY_AFTER),
            "a number past u64 is the cap, not unreadable"
        );
    }
}
