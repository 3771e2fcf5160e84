//! `parse_duration` on any text and, where it parses, `format_duration`
//! and back.
//!
//! Invariants (crates/model/src/duration.rs, since cefe7e7): nothing
//! panics; a parsed duration is at most `MAX_DURATION`; what
//! `format_duration` writes parses back to exactly the same duration
//! (parsing is integer arithmetic, exact to the nanosecond, and a part
//! below the millisecond is written as a decimal of milliseconds), and
//! writing that again gives the same text.
//!
//! Findings kept in fuzz/regressions/duration/ (fixed in cefe7e7): with
//! f64 arithmetic, `"24649653970ms"` parsed 1 ns short
//! (24649653.969999999 s), which `format_duration` then wrote 1 ms short.
#![no_main]

use crawlkeeper_model::duration::MAX_DURATION;
use crawlkeeper_model::{format_duration, parse_duration};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(d) = parse_duration(&text) else {
        return;
    };
    assert!(d <= MAX_DURATION, "{text:?} parsed to {d:?}, past the maximum");
    let written = format_duration(d);
    let back = parse_duration(&written).unwrap_or_else(|e| {
        panic!("{text:?} parsed to {d:?}, written {written:?}, which does not parse: {e}")
    });
    assert_eq!(
        back, d,
        "{text:?} parsed to {d:?}, written {written:?}, read back as {back:?}"
    );
    assert_eq!(format_duration(back), written, "format not stable for {d:?}");
});
