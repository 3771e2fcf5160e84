//! The parsers of the command line's values (clap `value_parser`s): one
//! per kind of value, so that every option of a kind says the same thing
//! when refused.

use std::time::Duration;

use crawlkeeper_model::{parse_duration, parse_positive_duration};

/// A duration (`500ms`, `2s`, `1h30m`), zero allowed.
pub fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// A duration of more than zero.
pub fn positive_duration(s: &str) -> Result<Duration, String> {
    parse_positive_duration(s).map_err(|e| e.to_string())
}

/// A count of at least 1.
pub fn positive_usize(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A rate of requests: `N/s`, `N/m`, `N/h` or `N/d` (a bare `N` is per
/// second), more than zero; in requests a second.
pub fn request_rate(s: &str) -> Result<f64, String> {
    let (count, per) = match s.trim().split_once('/') {
        Some((n, unit)) => (n, unit.trim()),
        None => (s.trim(), "s"),
    };
    let seconds = match per {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3_600.0,
        "d" => 86_400.0,
        _ => return Err(format!("rate '{s}': the unit after '/' is s, m, h or d")),
    };
    match count.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n <= 1e9 => Ok(n / seconds),
        _ => Err(format!(
            "rate '{s}': a number of requests from more than 0 to 1e9, like 50/s or 20000/d"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_rate_is_read_per_second() {
        assert_eq!(request_rate("50/s"), Ok(50.0));
        assert_eq!(request_rate("50"), Ok(50.0));
        assert_eq!(request_rate("120/m"), Ok(2.0));
        assert_eq!(request_rate("86400/d"), Ok(1.0));
        assert_eq!(request_rate(" 7200 / h "), Ok(2.0));
        for bad in ["0/s", "-1/s", "nan/s", "inf", "1e10/s", "5/w", "x/s", ""] {
            assert!(request_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_kind_of_value_is_refused_with_one_message() {
        assert_eq!(duration("0s"), Ok(Duration::ZERO));
        assert_eq!(positive_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(
            positive_duration(" 0ms"),
            Err("duration '0ms' must be more than zero".to_owned())
        );
        assert!(
            duration("2pc").unwrap_err().contains("unknown unit"),
            "{:?}",
            duration("2pc")
        );
        assert_eq!(positive_usize("0"), Err("must be at least 1".to_owned()));
        assert_eq!(positive_usize("3"), Ok(3));
    }
}
