//! The stylesheet reader of `--requisites` over any body, through the
//! public `extract::stylesheet_requisites`, as the pipeline calls it for a
//! fetched stylesheet. Exercises the CSS scanner: comments, strings,
//! escapes, `url()` quoted or not, bad URLs, `@import` and `image-set()`.
//!
//! Invariants (crates/extract/src/css.rs): nothing panics; no more
//! than `MAX_REQUISITES` URLs are kept; no kept URL is empty; a URL that
//! fetches nothing (`data:`, `javascript:`, fragment-only) is not kept.
#![no_main]

use std::time::{Duration, Instant};

use crawlkeeper_extract::Extracted;
use crawlkeeper_extract::{MAX_REQUISITES, PageLimits, stylesheet_requisites};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A deadline far past libFuzzer's -timeout, so a slow input is
    // reported as a timeout rather than hidden by a cut-short stylesheet.
    let limits = PageLimits {
        max_links: 16,
        deadline: Instant::now() + Duration::from_secs(3600),
    };
    let mut out = Extracted::default();
    stylesheet_requisites(data, &limits, &mut out);

    assert!(
        out.requisites.len() <= MAX_REQUISITES,
        "{} requisites kept",
        out.requisites.len()
    );
    assert!(out.cut_short.is_none(), "cut short before the deadline");
    for url in &out.requisites {
        assert!(!url.is_empty(), "empty requisite kept");
        assert!(
            !url.starts_with('#'),
            "fragment-only requisite kept: {url:?}"
        );
        let lower = url.to_ascii_lowercase();
        assert!(
            !lower.starts_with("data:") && !lower.starts_with("javascript:"),
            "requisite that fetches nothing kept: {url:?}"
        );
    }
});
