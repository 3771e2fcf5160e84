//! `Heartbeat`: a node's pulse and the rules to judge it (SmoothCrawler-Cluster's path
//! `node/<name>/heartbeat`). Durations are written like SmoothCrawler-Cluster (`500ms`,
//! `2s`, `1m`) and checked as SmoothCrawler-Cluster's setters check them.
//!
//! `heart_rhythm_time` is written for people reading a status dump; no
//! decision uses it, because two machines' clocks need not agree: an
//! observer judges a node by when *it* saw the heartbeat change.

use std::fmt::Write as _;
use std::time::Duration;

use chrono::NaiveDateTime;
use chrono::format::{Item, StrftimeItems};
use serde::{Deserialize, Serialize};

use super::task::TaskState;
use super::wire;
use crate::duration::{DurationError, format_duration, parse_duration};

/// A heart's state, with SmoothCrawler-Cluster's wire strings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HeartState {
    /// Registered, not yet beating.
    #[default]
    Newborn,
    /// Beating on time.
    Healthy,
    /// Late: missed `update_timeout` at least once.
    Arrhythmia,
    /// Dead: late `heart_rhythm_timeout` checks in a row, or its session is gone.
    Asystole,
    /// Stopped on purpose (a node that left).
    #[serde(rename = "Apparent Death")]
    ApparentDeath,
}

/// Why heartbeat settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeartbeatError {
    /// A duration that does not parse.
    #[error("heartbeat {field}: {source}")]
    Duration {
        /// The field.
        field: &'static str,
        /// Why.
        source: DurationError,
    },
    /// A duration of zero.
    #[error("heartbeat {field} must be greater than zero")]
    Zero {
        /// The field.
        field: &'static str,
    },
    /// `update_timeout` not longer than `update_time`.
    #[error(
        "heartbeat update_timeout ({timeout}) must be longer than update_time ({every}), or every node would be late"
    )]
    TimeoutTooShort {
        /// `update_time` as written.
        every: String,
        /// `update_timeout` as written.
        timeout: String,
    },
    /// `heart_rhythm_timeout` of zero.
    #[error(
        "heartbeat heart_rhythm_timeout must be at least 1 (late checks in a row before a node is dead)"
    )]
    ZeroThreshold,
    /// A `time_format` that cannot write and read back a date and time.
    #[error(
        "heartbeat time_format {0:?} cannot write and read back a date and time (e.g. \"%Y-%m-%d %H:%M:%S\")"
    )]
    TimeFormat(String),
    /// A `heart_rhythm_time` that does not match `time_format`.
    #[error("heartbeat heart_rhythm_time {time:?} does not match time_format {format:?}")]
    Time {
        /// The value.
        time: String,
        /// The format.
        format: String,
    },
}

/// A strftime format that can write a date and time and read it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeFormat(String);

impl TimeFormat {
    /// SmoothCrawler-Cluster's default, `%Y-%m-%d %H:%M:%S`.
    pub const SEED: &'static str = "%Y-%m-%d %H:%M:%S";

    /// Checks a format: no unknown specifier, and a time written with it
    /// reads back to the same second.
    pub fn new(format: &str) -> Result<Self, HeartbeatError> {
        let bad = || HeartbeatError::TimeFormat(format.to_owned());
        if StrftimeItems::new(format).any(|i| matches!(i, Item::Error)) {
            return Err(bad());
        }
        let sample = chrono::NaiveDate::from_ymd_opt(2022, 7, 15)
            .and_then(|d| d.and_hms_opt(8, 42, 59))
            .ok_or_else(bad)?;
        // A specifier the date cannot fill (`%z` on a time without an
        // offset) fails here; `to_string` would panic on it.
        let mut written = String::new();
        write!(written, "{}", sample.format(format)).map_err(|_| bad())?;
        match NaiveDateTime::parse_from_str(&written, format) {
            Ok(back) if back == sample => Ok(TimeFormat(format.to_owned())),
            _ => Err(bad()),
        }
    }

    /// The format string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for TimeFormat {
    fn default() -> Self {
        TimeFormat(Self::SEED.to_owned())
    }
}

/// A node's heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Wire", into = "Wire")]
pub struct Heartbeat {
    /// When the node last beat, by its own clock (for people; see the
    /// module documentation).
    pub heart_rhythm_time: Option<NaiveDateTime>,
    /// How `heart_rhythm_time` is written.
    pub time_format: TimeFormat,
    /// How often the node beats (SmoothCrawler-Cluster's default 0.5 s).
    pub update_time: Duration,
    /// A beat not seen for this long makes the node late (SmoothCrawler-Cluster's default 2 s).
    pub update_timeout: Duration,
    /// Late checks in a row before the node is dead (SmoothCrawler-Cluster's default 3).
    pub heart_rhythm_timeout: u32,
    /// The heart's state.
    pub healthy_state: HeartState,
    /// The state of the node's task.
    pub task_state: TaskState,
}

impl Default for Heartbeat {
    /// SmoothCrawler-Cluster's defaults: beat every 500 ms, late after 2 s, dead after 3
    /// late checks.
    fn default() -> Self {
        Heartbeat {
            heart_rhythm_time: None,
            time_format: TimeFormat::default(),
            update_time: Duration::from_millis(500),
            update_timeout: Duration::from_secs(2),
            heart_rhythm_timeout: 3,
            healthy_state: HeartState::Newborn,
            task_state: TaskState::Nothing,
        }
    }
}

impl Heartbeat {
    /// A new-born heartbeat with these rules, checked.
    pub fn new(
        update_time: Duration,
        update_timeout: Duration,
        heart_rhythm_timeout: u32,
    ) -> Result<Self, HeartbeatError> {
        let hb = Heartbeat {
            update_time,
            update_timeout,
            heart_rhythm_timeout,
            ..Heartbeat::default()
        };
        hb.validate()?;
        Ok(hb)
    }

    /// Checks the rules: durations above zero, a timeout longer than the
    /// beat, a threshold of at least one.
    pub fn validate(&self) -> Result<(), HeartbeatError> {
        if self.update_time.is_zero() {
            return Err(HeartbeatError::Zero {
                field: "update_time",
            });
        }
        if self.update_timeout <= self.update_time {
            return Err(HeartbeatError::TimeoutTooShort {
                every: format_duration(self.update_time),
                timeout: format_duration(self.update_timeout),
            });
        }
        if self.heart_rhythm_timeout == 0 {
            return Err(HeartbeatError::ZeroThreshold);
        }
        Ok(())
    }
}

/// The JSON shape: every value a string, like SmoothCrawler-Cluster's.
#[derive(Serialize, Deserialize)]
struct Wire {
    heart_rhythm_time: Option<String>,
    time_format: String,
    update_time: String,
    update_timeout: String,
    #[serde(with = "wire::u32_text")]
    heart_rhythm_timeout: u32,
    healthy_state: HeartState,
    task_state: TaskState,
}

fn duration(field: &'static str, text: &str) -> Result<Duration, HeartbeatError> {
    let d = parse_duration(text).map_err(|source| HeartbeatError::Duration { field, source })?;
    if d.is_zero() {
        return Err(HeartbeatError::Zero { field });
    }
    Ok(d)
}

impl TryFrom<Wire> for Heartbeat {
    type Error = HeartbeatError;

    fn try_from(w: Wire) -> Result<Self, Self::Error> {
        let time_format = TimeFormat::new(&w.time_format)?;
        let heart_rhythm_time = match w.heart_rhythm_time {
            None => None,
            Some(t) => Some(
                NaiveDateTime::parse_from_str(&t, time_format.as_str()).map_err(|_| {
                    HeartbeatError::Time {
                        time: t.clone(),
                        format: w.time_format.clone(),
                    }
                })?,
            ),
        };
        let hb = Heartbeat {
            heart_rhythm_time,
            time_format,
            update_time: duration("update_time", &w.update_time)?,
            update_timeout: duration("update_timeout", &w.update_timeout)?,
            heart_rhythm_timeout: w.heart_rhythm_timeout,
            healthy_state: w.healthy_state,
            task_state: w.task_state,
        };
        hb.validate()?;
        Ok(hb)
    }
}

impl From<Heartbeat> for Wire {
    fn from(h: Heartbeat) -> Self {
        Wire {
            heart_rhythm_time: h
                .heart_rhythm_time
                .map(|t| t.format(h.time_format.as_str()).to_string()),
            time_format: h.time_format.0,
            update_time: format_duration(h.update_time),
            update_timeout: format_duration(h.update_timeout),
            heart_rhythm_timeout: h.heart_rhythm_timeout,
            healthy_state: h.healthy_state,
            task_state: h.task_state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of SmoothCrawler-Cluster's Heartbeat documentation.
    const SEED_EXAMPLE: &str = r#"{
        "heart_rhythm_time": "2022-07-15 08:42:59",
        "time_format": "%Y-%m-%d %H:%M:%S",
        "update_time": "2s",
        "update_timeout": "4s",
        "heart_rhythm_timeout": "3",
        "healthy_state": "Healthy",
        "task_state": "processing"
    }"#;

    fn with(field: &str, value: &str) -> String {
        let mut v: serde_json::Value = serde_json::from_str(SEED_EXAMPLE).unwrap();
        v[field] = serde_json::Value::String(value.to_owned());
        v.to_string()
    }

    fn error(text: &str) -> String {
        serde_json::from_str::<Heartbeat>(text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn round_trips_smoothcrawler_clusters_example() {
        let h: Heartbeat = serde_json::from_str(SEED_EXAMPLE).unwrap();
        assert_eq!(h.update_time, Duration::from_secs(2));
        assert_eq!(h.update_timeout, Duration::from_secs(4));
        assert_eq!(h.heart_rhythm_timeout, 3);
        assert_eq!(h.healthy_state, HeartState::Healthy);
        assert_eq!(h.task_state, TaskState::Processing);
        assert_eq!(
            serde_json::to_value(&h).unwrap(),
            serde_json::from_str::<serde_json::Value>(SEED_EXAMPLE).unwrap()
        );
    }

    #[test]
    fn seed_defaults_are_written_like_the_seed() {
        let v = serde_json::to_value(Heartbeat::default()).unwrap();
        assert_eq!(v["update_time"], "500ms");
        assert_eq!(v["update_timeout"], "2s");
        assert_eq!(v["heart_rhythm_timeout"], "3");
        assert_eq!(v["healthy_state"], "Newborn");
        assert_eq!(v["heart_rhythm_time"], serde_json::Value::Null);
        let back: Heartbeat = serde_json::from_value(v).unwrap();
        assert_eq!(back, Heartbeat::default());
        let mut v: serde_json::Value = serde_json::from_str(&with("update_time", "1m")).unwrap();
        v["update_timeout"] = "2m".into();
        assert_eq!(
            serde_json::from_value::<Heartbeat>(v).unwrap().update_time,
            Duration::from_secs(60)
        );
        assert_eq!(
            serde_json::to_value(HeartState::ApparentDeath).unwrap(),
            "Apparent Death"
        );
    }

    #[test]
    fn sub_millisecond_durations_round_trip() {
        // Found by fuzzing (fuzz/regressions/cluster_metadata): 500.5ms was
        // written as 500ms, and 1.5ms / 1.9ms as an unreadable 1ms / 1ms.
        for (update, timeout) in [("500.5ms", "2s"), ("1.5ms", "1.9ms")] {
            let mut v: serde_json::Value =
                serde_json::from_str(&with("update_time", update)).unwrap();
            v["update_timeout"] = serde_json::Value::String(timeout.to_owned());
            let text = v.to_string();
            let hb: Heartbeat = serde_json::from_str(&text).unwrap();
            let again: Heartbeat =
                serde_json::from_str(&serde_json::to_string(&hb).unwrap()).unwrap();
            assert_eq!(again, hb, "{update} / {timeout}");
        }
    }

    #[test]
    fn bad_values_are_clear_errors_never_panics() {
        let e = error(&with("update_time", "2 seconds"));
        assert!(
            e.contains("heartbeat update_time") && e.contains("invalid duration"),
            "{e}"
        );
        let e = error(&with("update_timeout", "4 parsecs"));
        assert!(
            e.contains("heartbeat update_timeout: invalid duration '4 parsecs'"),
            "{e}"
        );
        let e = error(&with("update_time", "0s"));
        assert!(e.contains("update_time must be greater than zero"), "{e}");
        let e = error(&with("update_timeout", "1s"));
        assert!(e.contains("must be longer than update_time (2s)"), "{e}");
        let e = error(&with("heart_rhythm_timeout", "three"));
        assert!(e.contains("must be an integer"), "{e}");
        let e = error(&with("heart_rhythm_timeout", "0"));
        assert!(e.contains("at least 1"), "{e}");
        let e = error(&with("heart_rhythm_timeout", "-1"));
        assert!(e.contains("between 0 and"), "{e}");
        let e = error(&with("healthy_state", "Sleeping"));
        assert!(e.contains("unknown variant `Sleeping`"), "{e}");
        let e = error(&with("time_format", "%H:%M"));
        assert!(e.contains("cannot write and read back"), "{e}");
        let e = error(&with("time_format", "%Q"));
        assert!(e.contains("cannot write and read back"), "{e}");
        // Found by fuzzing (fuzz/regressions/cluster_metadata): `%z` panicked.
        for format in ["%z", "%Y-%m-%d %H:%M:%S %z", "%:z", "%Z"] {
            let e = error(&with("time_format", format));
            assert!(e.contains("cannot write and read back"), "{format}: {e}");
        }
        let e = error(&with("heart_rhythm_time", "15/07/2022"));
        assert!(e.contains("does not match time_format"), "{e}");
        assert_eq!(
            Heartbeat::new(Duration::ZERO, Duration::from_secs(1), 1).unwrap_err(),
            HeartbeatError::Zero {
                field: "update_time"
            }
        );
        assert!(Heartbeat::new(Duration::from_millis(100), Duration::from_millis(500), 1).is_ok());
    }
}
