//! A processor's answer line (`crawlkeeper_crawl::process::wire::answer`)
//! from any bytes, and a `--processor NAME=COMMAND` value from any text.
//!
//! Invariants: nothing panics; an answer read as done holds at most
//! `MAX_ANSWER_FIELD_BYTES` of fields and `MAX_ANSWER_LINKS` links; a
//! failure's text is at most 1 KiB; an answer for another id is refused,
//! never taken; a command that parses has a valid name and a program.
//!
//! Finding (fuzz/regressions/processor_answer/): none in the code under
//! test; the target's own check re-read the answer as a `Value`, which
//! refuses invalid UTF-8 in a key the answer's parser skips unread.
#![no_main]

use crawlkeeper_crawl::process::ProcessorCommand;
use crawlkeeper_crawl::process::wire::{self, Answered};
use libfuzzer_sys::fuzz_target;

/// An answer's id alone.
#[derive(serde::Deserialize)]
struct IdOnly {
    id: serde_json::Value,
}

fuzz_target!(|data: &[u8]| {
    for id in ["7", "0", ""] {
        match wire::answer(id, data) {
            Ok(Answered::Done(a)) => {
                let size = serde_json::to_vec(&a.fields).expect("fields serialise").len();
                assert!(size <= wire::MAX_ANSWER_FIELD_BYTES, "{size} bytes of fields");
                assert!(a.links.len() <= wire::MAX_ANSWER_LINKS);
                // It was this id's answer (read as the parser reads it:
                // keys it ignores are skipped, bytes and all, unchecked).
                let v: IdOnly = serde_json::from_slice(data).expect("it parsed");
                let got = match &v.id {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                assert_eq!(got, id);
            }
            Ok(Answered::Failed(text)) => assert!(text.len() <= 1024, "{} bytes", text.len()),
            Err(_) => {}
        }
    }
    let text = String::from_utf8_lossy(data);
    if let Ok(p) = text.parse::<ProcessorCommand>() {
        assert!(!p.name.is_empty() && !p.argv.is_empty(), "{p:?}");
    }
});
