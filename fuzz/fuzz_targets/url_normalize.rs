//! `Normalizer::resolve` on any href against a fixed page URL, as the
//! pipeline does for every link and `Location`.
//!
//! Invariants (each follows from crates/crawl/src/normalize.rs and the
//! `url` crate's guarantees):
//! - resolving never panics;
//! - a resolved URL has no fragment and no empty query (`normalize` drops
//!   them);
//! - normalising again in place changes nothing; for an `http(s)` URL,
//!   neither does re-parsing its string and normalising: the seen set keys
//!   URLs by this string, so a second spelling would be a duplicate fetch.
//!   (Other schemes are left out of the re-parse check: the `url` crate
//!   does not re-parse every `file:` URL to itself, e.g.
//!   `file://htt\\j:/x` serialises as `file://htt/j:/x`, which parses
//!   as `file:///j:/x`: fuzz/regressions/url_normalize/. The crawler never
//!   keys those: the `scheme` scoper and the seed check admit only http(s).)
//! - an href without a scheme resolves to the base's scheme (`http`); an
//!   absolute `http(s)` href keeps its scheme;
//! - resolving is joining to the base and normalising: the shortcut for
//!   hrefs spelled with the base's own origin (`path_on_base_origin`)
//!   gives what the full parse gives (an input whose first byte is odd is
//!   fuzzed behind `http://a.test`, to reach it);
//! - every resolved `http(s)` URL has an authority that round-trips
//!   through its string form, and a robots.txt URL (`robots_url` has an
//!   `expect`).
#![no_main]

use std::sync::LazyLock;

use crawlkeeper_crawl::config::ScopeConfig;
use crawlkeeper_crawl::normalize::Normalizer;
use crawlkeeper_model::Authority;
use libfuzzer_sys::fuzz_target;
use url::Url;

static BASE: LazyLock<Url> =
    LazyLock::new(|| Url::parse("http://a.test/dir/page").expect("valid base"));
static NORMALIZER: LazyLock<Normalizer> =
    LazyLock::new(|| Normalizer::new(&ScopeConfig::default().strip_params));

fn reparse_is_stable(n: &Normalizer, once: &str, href: &str) {
    let mut again = Url::parse(once)
        .unwrap_or_else(|e| panic!("normalised URL {once:?} does not parse again: {e}"));
    n.normalize(&mut again);
    assert_eq!(
        again.as_str(),
        once,
        "re-parsing and normalising changed the URL (href {href:?})"
    );
}

fuzz_target!(|data: &[u8]| {
    let href = match data.split_first() {
        Some((first, rest)) if first % 2 == 1 => {
            format!("http://a.test{}", String::from_utf8_lossy(rest))
        }
        _ => String::from_utf8_lossy(data).into_owned(),
    };
    let n = &*NORMALIZER;
    let joined = BASE.join(&href).map(|mut u| {
        n.normalize(&mut u);
        u
    });
    let resolved = n.resolve(&BASE, &href);
    assert_eq!(resolved, joined, "href {href:?}");
    let Ok(mut url) = resolved else {
        return;
    };
    let once = url.as_str().to_owned();

    assert!(url.fragment().is_none(), "fragment kept: {once:?}");
    assert_ne!(url.query(), Some(""), "empty query kept: {once:?}");

    // Idempotent in place.
    n.normalize(&mut url);
    assert_eq!(url.as_str(), once, "normalize not idempotent for href {href:?}");

    // Idempotent through the string (what the seen set and the store keep).
    if matches!(url.scheme(), "http" | "https") {
        reparse_is_stable(n, &once, &href);
    }

    // Scheme: relative hrefs take the base's; absolute http(s) keep theirs.
    match Url::parse(&href) {
        Err(url::ParseError::RelativeUrlWithoutBase) => assert_eq!(
            url.scheme(),
            BASE.scheme(),
            "relative href {href:?} changed scheme: {once:?}"
        ),
        Ok(abs) if matches!(abs.scheme(), "http" | "https") => assert_eq!(
            url.scheme(),
            abs.scheme(),
            "absolute href {href:?} changed scheme: {once:?}"
        ),
        _ => {}
    }

    if matches!(url.scheme(), "http" | "https") {
        let authority = Authority::of(&url)
            .unwrap_or_else(|e| panic!("http(s) URL {once:?} has no authority: {e}"));
        let robots = authority.robots_url();
        assert_eq!(robots.path(), "/robots.txt");
        let text = authority.to_string();
        let back = Authority::try_from(text.clone())
            .unwrap_or_else(|e| panic!("authority {text:?} does not parse back: {e}"));
        assert_eq!(back, authority, "authority {text:?} does not round-trip");
    }
});
