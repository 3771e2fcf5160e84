//! The status server's request head (`crates/view/src/head.rs`): any
//! bytes through `head_end` and `parse_head`, the way the server reads a
//! connection, and the `Host` rule on what they give.
//!
//! Invariants: nothing panics; only the bytes up to the first blank line
//! count; a parsed head has an origin-form path, a method of token
//! characters, and fields of visible ASCII (no CR, LF or NUL reaches the
//! server's answer); written back as a head, it parses to the same value;
//! a `Host` the rule calls local names the bound port.
//!
//! No findings in its first run (11 minutes, 17 million inputs, 602
//! edges); a port with a leading zero (`localhost:09898`) was refused
//! beforehand, as this target's last check would have caught it.
#![no_main]

use std::net::SocketAddr;

use crawlkeeper_view::head::{MAX_HEAD, head_end, host_is_local, parse_head};
use libfuzzer_sys::fuzz_target;

fn visible(s: &str) -> bool {
    s.bytes()
        .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
}

fuzz_target!(|data: &[u8]| {
    let parsed = parse_head(data);
    if let Some(end) = head_end(data) {
        assert_eq!(
            parse_head(&data[..end]),
            parsed,
            "bytes past the head changed it"
        );
    }
    let bound: SocketAddr = "127.0.0.1:9898".parse().unwrap();
    let v6: SocketAddr = "[::1]:80".parse().unwrap();
    if let Ok(h) = &parsed {
        assert!(data.len() <= MAX_HEAD || head_end(data).is_some_and(|e| e <= MAX_HEAD));
        assert!(h.path.starts_with('/'), "{h:?}");
        assert!(!h.method.is_empty() && h.method.len() <= 16, "{h:?}");
        assert!(h.method.bytes().all(|b| b.is_ascii_graphic()), "{h:?}");
        assert!(h.minor <= 1);
        for field in [
            Some(&h.path),
            h.query.as_ref(),
            h.host.as_ref(),
            h.authorization.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            assert!(visible(field), "{h:?}");
        }
        let mut again = format!(
            "{} {}{} HTTP/1.{}\r\n",
            h.method,
            h.path,
            h.query
                .as_deref()
                .map(|q| format!("?{q}"))
                .unwrap_or_default(),
            h.minor
        );
        if let Some(host) = &h.host {
            again.push_str(&format!("Host: {host}\r\n"));
        }
        if let Some(a) = &h.authorization {
            again.push_str(&format!("Authorization: {a}\r\n"));
        }
        again.push_str("\r\n");
        assert_eq!(parse_head(again.as_bytes()).as_ref(), Ok(h), "{again:?}");
        let _ = host_is_local(h.host.as_deref(), bound);
    }
    // The rule on any text: a local name has the bound port (80 may be
    // left out).
    let text = String::from_utf8_lossy(data);
    if host_is_local(Some(&text), bound) {
        assert!(text.ends_with(":9898"), "{text:?}");
    }
    if host_is_local(Some(&text), v6) {
        assert!(
            !text.contains(':') || text.ends_with(":80") || text.starts_with('['),
            "{text:?}"
        );
    }
});
