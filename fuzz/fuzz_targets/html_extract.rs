//! The built-in HTML extractor over any page body (typed `text/html`),
//! through the public `Extractor::extract`, then the links resolved and
//! normalised against the page as the pipeline does. Exercises lol_html,
//! the handlers (links, base, meta refresh, meta robots, title, fields of
//! every kind and where `li` and `p` end implicitly, meta tags, JSON-LD,
//! the page's text, `<noscript>` links) and the character-reference
//! decoder.
//!
//! Invariants (crates/extract/src/html.rs): nothing panics; no href
//! is empty and no more than the page's link limit are kept; a title,
//! when found, is non-empty with its ASCII whitespace collapsed to single
//! spaces (as `document.title`; other whitespace is kept); a nofollow page
//! yields no hrefs.
//!
//! Finding (fuzz/regressions/html_extract/): `<script f=><A </a>` makes
//! lol_html 3.0.3 hit `debug_assert!(false, "Tag should be a start tag
//! at this point")` (transform_stream/dispatcher.rs:327, via
//! ActionError::internal): a panic wherever lol_html has debug assertions
//! (cargo-fuzz's default build, dev and test builds); in a release build
//! the write returns an error instead. Since db3f4f8 the extractor catches
//! a panic in the parser and stops the page there. libfuzzer-sys's panic
//! hook aborts on every panic, even one that is caught, so this target
//! lets exactly that assertion (matched by its message) unwind to the
//! extractor's catch: the check is that it does not escape `extract`.
//! Any other panic, caught or not, still aborts and is reported.
#![no_main]

#[path = "common/html_page.rs"]
mod html_page;

use std::sync::LazyLock;

use crawlkeeper_crawl::config::ScopeConfig;
use crawlkeeper_extract::config::ExtractConfig;
use crawlkeeper_extract::HtmlExtractor;
use crawlkeeper_crawl::normalize::Normalizer;
use crawlkeeper_extract::{Extracted, Extractor};
use html_page::{html_response, let_lol_html_start_tag_panic_unwind, page};
use libfuzzer_sys::fuzz_target;
use url::Url;

/// Small, so the fuzzer reaches the link limit.
const MAX_LINKS: usize = 16;

static PAGE_URL: LazyLock<Url> =
    LazyLock::new(|| Url::parse("http://a.test/dir/page").expect("valid URL"));
/// Every handler at once: the links (and those in `<noscript>`), a field
/// of each kind (`p` and `li` with their implied ends), meta tags,
/// JSON-LD and the text (small caps, so the fuzzer reaches them).
static EXTRACTOR: LazyLock<HtmlExtractor> = LazyLock::new(|| {
    let config = ExtractConfig {
        fields: ["t=h1", "h=div::html", "a[]=a@href", "p[]=p::text", "li[]=li::html"]
            .iter()
            .map(|s| s.parse().expect("valid field"))
            .collect(),
        meta: true,
        jsonld: true,
        text: Some(MAX_TEXT),
        noscript_links: true,
    };
    HtmlExtractor::from_config(&config).expect("valid fields")
});
/// Small, so the fuzzer reaches the text's cap.
const MAX_TEXT: u64 = 256;
static NORMALIZER: LazyLock<Normalizer> =
    LazyLock::new(|| Normalizer::new(&ScopeConfig::default().strip_params));

fuzz_target!(|data: &[u8]| {
    let response = html_response(data);
    let page = page(&PAGE_URL, &response, MAX_LINKS);
    let mut out = Extracted::default();
    let_lol_html_start_tag_panic_unwind();
    EXTRACTOR.extract(&page, &mut out);

    assert!(out.hrefs.len() <= MAX_LINKS, "{} links kept", out.hrefs.len());
    for href in &out.hrefs {
        assert!(!href.is_empty(), "empty href extracted");
    }
    if out.nofollow {
        assert!(out.hrefs.is_empty(), "nofollow page kept hrefs");
    }
    if let Some(title) = &out.title {
        assert!(!title.is_empty(), "empty title kept");
        assert!(
            !title.starts_with(' ') && !title.ends_with(' ') && !title.contains("  "),
            "title whitespace not collapsed: {title:?}"
        );
        // As `document.title`: ASCII whitespace collapsed, any other kept
        // (a no-break space, a vertical tab).
        assert!(
            title.chars().all(|c| c == ' ' || !c.is_ascii_whitespace()),
            "title keeps other ASCII whitespace: {title:?}"
        );
    }

    if let Some(serde_json::Value::String(text)) = out.fields.get("text").map(|v| v.clone().into()) {
        assert!(text.len() as u64 <= MAX_TEXT, "text of {} bytes kept", text.len());
        assert!(!text.starts_with('\n') && !text.ends_with('\n'), "text not trimmed: {text:?}");
    }
    for (name, value) in &out.fields {
        let json: serde_json::Value = value.clone().into();
        assert!(serde_json::to_string(&json).is_ok(), "field {name} does not serialise");
    }

    // What the pipeline does next with the links.
    let base = out.base_url(&PAGE_URL);
    for href in &out.hrefs {
        if let Ok(url) = NORMALIZER.resolve(&base, href) {
            assert!(url.fragment().is_none());
        }
    }
});
