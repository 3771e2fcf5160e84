//! The cluster's meta-data objects (GroupState, Task, Heartbeat,
//! NodeState) decoded from any bytes, the way crates/cluster reads them
//! from a coordinator node (`metadata::decode` is `serde_json::from_slice`),
//! then written back (`metadata::encode`: `serde_json::to_vec`, with an
//! `expect`) and read again.
//!
//! Invariants: nothing panics; whatever decodes encodes; what a node
//! writes, any node reads back as the same value (all four types are
//! `PartialEq`); writing is stable. Node names parse back from their
//! string form too.
//!
//! Known finding `heartbeat-durations` (fuzz/regressions/cluster_metadata/):
//! a Heartbeat's durations are written with `format_duration`, which drops
//! sub-millisecond parts (and `parse_duration` can come back 1 ns short
//! past ~48.5 days), so a Heartbeat read with `update_time: "500.5ms"`
//! is written back as a different value, and one with `"1.5ms"`/`"1.9ms"`
//! is written as `"1ms"`/`"1ms"`, which no node can read (timeout not
//! longer than the beat). With `FUZZ_TOLERATE=heartbeat-durations`,
//! Heartbeats whose durations do not survive `format_duration` then
//! `parse_duration` are skipped, so the target keeps looking for other
//! bugs while that one is open.
//!
//! Known finding `heartbeat-time-format-panic`
//! (fuzz/regressions/cluster_metadata/): decoding a Heartbeat whose
//! `time_format` needs a time zone (`"%z"`, `"%Z"`, `"%+"`, ...) panics in
//! `TimeFormat::new` (heartbeat.rs: `sample.format(format).to_string()` on
//! a NaiveDateTime; chrono's Display returns an error, `to_string`
//! panics). With `FUZZ_TOLERATE=heartbeat-time-format-panic`, such
//! Heartbeats are not decoded.
#![no_main]

use std::fmt::Debug;
use std::sync::LazyLock;
use std::time::Duration;

use crawlkeeper_model::cluster::{GroupState, Heartbeat, NodeName, NodeState, Task};
use crawlkeeper_model::{format_duration, parse_duration};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Whether the known finding `name` is tolerated (`FUZZ_TOLERATE`, a
/// comma-separated list).
fn tolerated(name: &str) -> bool {
    static LIST: LazyLock<String> =
        LazyLock::new(|| std::env::var("FUZZ_TOLERATE").unwrap_or_default());
    LIST.split(',').any(|t| t.trim() == name)
}

fn survives_text(d: Duration) -> bool {
    parse_duration(&format_duration(d)) == Ok(d)
}

/// Whether `format` is a time format that makes chrono's Display fail on
/// a NaiveDateTime, as `TimeFormat::new` formats it (without panicking).
fn format_fails_on_naive(format: &str) -> bool {
    use std::fmt::Write as _;
    let sample = chrono::NaiveDate::from_ymd_opt(2022, 7, 15)
        .and_then(|d| d.and_hms_opt(8, 42, 59))
        .expect("valid date");
    let mut out = String::new();
    write!(out, "{}", sample.format(format)).is_err()
}

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(data: &[u8], what: &str) {
    let Ok(value) = serde_json::from_slice::<T>(data) else {
        return;
    };
    let written = serde_json::to_vec(&value)
        .unwrap_or_else(|e| panic!("decoded {what} {value:?} does not encode: {e}"));
    let back = serde_json::from_slice::<T>(&written).unwrap_or_else(|e| {
        panic!(
            "{what} {value:?}, written as {}, does not decode again: {e}",
            String::from_utf8_lossy(&written)
        )
    });
    assert_eq!(
        back,
        value,
        "{what} changed through {}",
        String::from_utf8_lossy(&written)
    );
    let again = serde_json::to_vec(&back).expect("encodes");
    assert_eq!(again, written, "{what} not written the same way twice");
}

fuzz_target!(|data: &[u8]| {
    round_trip::<GroupState>(data, "GroupState");
    round_trip::<Task>(data, "Task");
    let bad_time_format = tolerated("heartbeat-time-format-panic")
        && serde_json::from_slice::<serde_json::Value>(data).is_ok_and(|v| {
            v.get("time_format")
                .and_then(|f| f.as_str())
                .is_some_and(format_fails_on_naive)
        });
    let skip_heartbeat = bad_time_format
        || tolerated("heartbeat-durations")
            && serde_json::from_slice::<Heartbeat>(data).is_ok_and(|h| {
                !survives_text(h.update_time) || !survives_text(h.update_timeout)
            });
    if !skip_heartbeat {
        round_trip::<Heartbeat>(data, "Heartbeat");
    }
    round_trip::<NodeState>(data, "NodeState");

    let text = String::from_utf8_lossy(data);
    if let Ok(name) = text.parse::<NodeName>() {
        let written = name.to_string();
        let back: NodeName = written
            .parse()
            .unwrap_or_else(|e| panic!("node name {text:?} written {written:?} does not parse: {e}"));
        assert_eq!(back, name, "node name {text:?} changed through {written:?}");
    }
});
