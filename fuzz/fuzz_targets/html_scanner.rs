//! The default HTML extractor with its scanner (crates/extract/src/
//! scan.rs) against the same extractor reading every page with lol_html,
//! over any page body (typed `text/html`).
//!
//! Invariant: both find exactly the same `Extracted` (links in order,
//! dropped links, base, title, nofollow). The scanner either reads a page
//! as lol_html 3.0.3 does or leaves it to lol_html; a page it reads
//! differently is a crash here. Neither may panic, except lol_html's one
//! known debug assertion (see html_extract.rs), which its caller catches.
#![no_main]

#[path = "common/html_page.rs"]
mod html_page;

use std::sync::LazyLock;

use crawlkeeper_extract::HtmlExtractor;
use crawlkeeper_extract::{Extracted, Extractor};
use html_page::{html_response, let_lol_html_start_tag_panic_unwind, page};
use libfuzzer_sys::fuzz_target;
use url::Url;

/// Small, so the fuzzer reaches the link limit.
const MAX_LINKS: usize = 16;

static PAGE_URL: LazyLock<Url> =
    LazyLock::new(|| Url::parse("http://a.test/dir/page").expect("valid URL"));
static SCANNER: LazyLock<HtmlExtractor> = LazyLock::new(HtmlExtractor::new);
static LOL_HTML: LazyLock<HtmlExtractor> =
    LazyLock::new(|| HtmlExtractor::new().with_scanner(false));

fuzz_target!(|data: &[u8]| {
    let response = html_response(data);
    let page = page(&PAGE_URL, &response, MAX_LINKS);
    let_lol_html_start_tag_panic_unwind();
    let (mut scanned, mut parsed) = (Extracted::default(), Extracted::default());
    SCANNER.extract(&page, &mut scanned);
    LOL_HTML.extract(&page, &mut parsed);
    assert_eq!(scanned, parsed, "the scanner and lol_html disagree");
});
