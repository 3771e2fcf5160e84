//! Durations written the way people and the seed documents write them:
//! `500ms`, `2s`, `1.5s`, `1m`, `6h`, `1h30m`, `2d`.

use std::time::Duration;

/// The longest duration accepted anywhere: 365 days. A run timeout, a delay
/// or a backoff past a year is a typo, and a bound this far below the
/// limits of the clocks it is added to keeps every `now + duration` sound.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 86_400);

/// Why a duration string was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurationError {
    /// The string is empty.
    #[error("empty duration (expected e.g. 500ms, 2s, 1m, 6h)")]
    Empty,
    /// A number is missing or malformed.
    #[error(
        "invalid duration '{0}': expected a number followed by ms, s, m, h or d (e.g. 90s, 6h)"
    )]
    Malformed(String),
    /// The unit is not one of ms, s, m, h, d.
    #[error("invalid duration '{input}': unknown unit '{unit}' (use ms, s, m, h or d)")]
    UnknownUnit {
        /// The whole input.
        input: String,
        /// The unit that was not understood.
        unit: String,
    },
    /// The value is longer than [`MAX_DURATION`].
    #[error("duration '{0}' is too large (the most is 365d)")]
    Overflow(String),
    /// Zero where a duration must be more ([`parse_positive_duration`]).
    #[error("duration '{0}' must be more than zero")]
    Zero(String),
}

/// Parses a duration as [`parse_duration`] does, refusing zero.
pub fn parse_positive_duration(input: &str) -> Result<Duration, DurationError> {
    match parse_duration(input)? {
        d if d.is_zero() => Err(DurationError::Zero(input.trim().to_owned())),
        d => Ok(d),
    }
}

/// Parses `500ms`, `2s`, `0.5s`, `1m`, `6h`, `1h30m`, `2d`.
///
/// Every number needs a unit; segments add up. Decimals are exact to the
/// nanosecond (no floating point: `24649653970ms` is that many
/// milliseconds). Negative values, and totals past [`MAX_DURATION`], are
/// refused.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    let malformed = || DurationError::Malformed(input.to_owned());
    let overflow = || DurationError::Overflow(input.to_owned());
    let max = MAX_DURATION.as_nanos();
    let mut total: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (whole, fraction) = match rest[..num_len].split_once('.') {
            Some((w, f)) => (w, f),
            None => (&rest[..num_len], ""),
        };
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(malformed());
        }
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let unit_nanos: u128 = match unit {
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            "" => return Err(malformed()),
            other => {
                return Err(DurationError::UnknownUnit {
                    input: input.to_owned(),
                    unit: other.to_owned(),
                });
            }
        };
        // Leading zeros aside, more digits than this cannot fit under the
        // maximum; the digits of a fraction past the nanosecond do not count.
        let whole = whole.trim_start_matches('0');
        if whole.len() > 20 {
            return Err(overflow());
        }
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| malformed())?
        };
        let fraction = &fraction[..fraction.len().min(18)];
        let scale = 10u128.pow(fraction.len() as u32);
        let fraction: u128 = if fraction.is_empty() {
            0
        } else {
            fraction.parse().map_err(|_| malformed())?
        };
        let part = whole
            .checked_mul(unit_nanos)
            .and_then(|w| w.checked_add(fraction * unit_nanos / scale))
            .ok_or_else(overflow)?;
        total = total
            .checked_add(part)
            .filter(|t| *t <= max)
            .ok_or_else(overflow)?;
    }
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| overflow())?;
    Ok(Duration::new(secs, (total % 1_000_000_000) as u32))
}

/// Writes a duration in the largest unit that represents it exactly:
/// `500ms`, `2s`, `1m`, `6h`; a part below the millisecond is written as
/// a decimal of milliseconds (`1.5ms`), so that parsing gives it back.
pub fn format_duration(d: Duration) -> String {
    let below_ms = d.subsec_nanos() % 1_000_000;
    let ms = d.as_millis();
    if below_ms != 0 {
        let fraction = format!("{below_ms:06}");
        return format!("{ms}.{}ms", fraction.trim_end_matches('0'));
    }
    if ms == 0 {
        return "0s".to_owned();
    }
    for (unit, size) in [
        ("d", 86_400_000u128),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("6h"), Ok(Duration::from_secs(6 * 3600)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(2 * 86_400)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
    }

    #[test]
    fn refuses_bad_input_with_clear_errors() {
        assert_eq!(parse_duration(""), Err(DurationError::Empty));
        assert!(matches!(
            parse_duration("10"),
            Err(DurationError::Malformed(_))
        ));
        assert!(matches!(
            parse_duration("-1s"),
            Err(DurationError::Malformed(_))
        ));
        assert!(matches!(
            parse_duration("s"),
            Err(DurationError::Malformed(_))
        ));
        assert!(matches!(
            parse_duration("1.2.3s"),
            Err(DurationError::Malformed(_))
        ));
        assert!(matches!(
            parse_duration("5 weeks"),
            Err(DurationError::Malformed(_))
        ));
        let err = parse_duration("5w").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid duration '5w': unknown unit 'w' (use ms, s, m, h or d)"
        );
        assert!(matches!(
            parse_duration("99999999999999999999999d"),
            Err(DurationError::Overflow(_))
        ));
    }

    #[test]
    fn durations_past_a_year_are_refused_not_a_later_panic() {
        assert_eq!(parse_duration("365d"), Ok(MAX_DURATION));
        for huge in ["150000000000000d", "366d", "364d2d", "8761h", "1e30s"] {
            assert!(parse_duration(huge).is_err(), "{huge} accepted");
        }
        assert_eq!(
            parse_duration("150000000000000d").unwrap_err().to_string(),
            "duration '150000000000000d' is too large (the most is 365d)"
        );
    }

    #[test]
    fn formats_in_largest_exact_unit() {
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_duration(Duration::from_secs(2)), "2s");
        assert_eq!(format_duration(Duration::from_secs(60)), "1m");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_secs(6 * 3600)), "6h");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn format_then_parse_is_identity_to_the_millisecond() {
        for ms in [1u64, 999, 1000, 1500, 60_000, 61_000, 3_600_000, 86_400_000] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }

    #[test]
    fn parsing_is_exact_and_formatting_gives_it_back() {
        // Found by fuzzing (fuzz/regressions/duration): through floating
        // point, 24649653970ms read back a millisecond off.
        assert_eq!(
            parse_duration("24649653970ms"),
            Ok(Duration::from_millis(24_649_653_970))
        );
        let d = parse_duration("5261h1h10ms.1261h1h1d65d").unwrap();
        assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        assert_eq!(parse_duration("0.000001ms"), Ok(Duration::from_nanos(1)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(
            parse_duration("0000000000000000000000001s"),
            Ok(Duration::from_secs(1))
        );
        for text in ["500.5ms", "1.5ms", "0.000001ms", "364d23h59m59.999999999s"] {
            let d = parse_duration(text).unwrap();
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{text}");
        }
        assert_eq!(format_duration(Duration::from_micros(500_500)), "500.5ms");
        assert!(parse_duration(".s").is_err());
        assert!(parse_duration("1..5s").is_err());
    }
}

/// Serde support: a `Duration` written as a string like `30s`.
///
/// Use with `#[serde(with = "crawlkeeper_model::duration::text")]`.
pub mod text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    /// Writes `d` like `500ms` or `6h`.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_duration(*d))
    }

    /// Reads a duration string, with the parser's message on error.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_duration(&s).map_err(D::Error::custom)
    }
}
