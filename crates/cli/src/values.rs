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

#[cfg(test)]
mod tests {
    use super::*;

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
