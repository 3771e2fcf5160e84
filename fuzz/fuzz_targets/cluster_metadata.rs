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
//! Findings kept in fuzz/regressions/cluster_metadata/ (fixed in
//! cefe7e7): a Heartbeat read with `update_time: "500.5ms"` was written
//! back as 500ms (a different value), one with `"1.5ms"`/`"1.9ms"` as an
//! unreadable `"1ms"`/`"1ms"` (timeout not longer than the beat), and a
//! `time_format` of `"%z"` panicked in `TimeFormat::new` (chrono's Display
//! fails on a NaiveDateTime, `to_string` panicked).
#![no_main]

use std::fmt::Debug;

use crawlkeeper_model::cluster::{GroupState, Heartbeat, NodeName, NodeState, Task};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

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
    round_trip::<Heartbeat>(data, "Heartbeat");
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
