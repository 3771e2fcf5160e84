//! A site that changes between crawls, for re-crawl tests: the site has an
//! edition (0 when it starts, moved on by [`crate::TestSite::set_edition`]);
//! in each new edition `changed_percent` of a host's pages change (their
//! text, and a link to a page that is new). Every page carries an `ETag`
//! and a `Last-Modified` of its revision, and a conditional request for a
//! page that did not change since is answered 304 Not Modified.

use std::time::{Duration, SystemTime};

use hyper::HeaderMap;
use hyper::header::{IF_MODIFIED_SINCE, IF_NONE_MATCH};

/// How many times page `page` changed by `edition`, when
/// `changed_percent` of the pages change in each edition: in edition `e`,
/// page `p` changes when `(p + 37e) mod 100 < changed_percent`, exactly
/// that share of every hundred pages in a row.
pub fn revision(page: u32, edition: u32, changed_percent: u32) -> u32 {
    (1..=edition)
        .filter(|&e| (u64::from(page) + 37 * u64::from(e)) % 100 < u64::from(changed_percent))
        .count() as u32
}

/// The validators of a page's revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validators {
    /// A strong entity tag.
    pub etag: String,
    /// An HTTP date, one day later for each revision.
    pub last_modified: String,
}

/// The validators of revision `rev` of page `page`.
pub fn validators(page: u32, rev: u32) -> Validators {
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_793_491_200); // 2026-11-01
    Validators {
        etag: format!("\"p{page}-r{rev}\""),
        last_modified: httpdate::fmt_http_date(base + Duration::from_secs(86_400 * u64::from(rev))),
    }
}

/// True when a request with `headers` may be answered 304 for a page with
/// `current` validators (RFC 9110 13.1: `If-None-Match` decides when
/// present, weak comparison; otherwise `If-Modified-Since`).
pub fn not_modified(headers: &HeaderMap, current: &Validators) -> bool {
    if let Some(tags) = headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        let ours = current.etag.trim_start_matches("W/");
        return tags
            .split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| t == "*" || t == ours);
    }
    let since = headers
        .get(IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok());
    let modified = httpdate::parse_http_date(&current.last_modified).ok();
    matches!((since, modified), (Some(s), Some(m)) if m <= s)
}

/// The path of the page revision `rev` of page `page` links to (new in
/// that revision).
pub fn new_page(page: u32, rev: u32) -> String {
    format!("/new/{page}-{rev}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_changed_is_exact_per_hundred_pages() {
        for edition in 1..4 {
            let changed = (0..1000)
                .filter(|&p| revision(p, edition, 10) > revision(p, edition - 1, 10))
                .count();
            assert_eq!(changed, 100, "edition {edition}");
        }
        assert!((0..1000).all(|p| revision(p, 0, 10) == 0));
        assert!((0..1000).all(|p| revision(p, 5, 0) == 0));
    }

    #[test]
    fn conditional_requests_match_the_current_revision() {
        let v1 = validators(3, 1);
        let v2 = validators(3, 2);
        let mut h = HeaderMap::new();
        assert!(!not_modified(&h, &v1), "unconditional");
        h.insert(IF_NONE_MATCH, v1.etag.parse().unwrap());
        assert!(not_modified(&h, &v1));
        assert!(!not_modified(&h, &v2));
        h.insert(
            IF_NONE_MATCH,
            format!("\"x\", W/{}", v1.etag).parse().unwrap(),
        );
        assert!(not_modified(&h, &v1), "weak comparison in a list");
        let mut h = HeaderMap::new();
        h.insert(IF_MODIFIED_SINCE, v1.last_modified.parse().unwrap());
        assert!(not_modified(&h, &v1));
        assert!(!not_modified(&h, &v2), "modified a day later");
        h.insert(IF_MODIFIED_SINCE, "not a date".parse().unwrap());
        assert!(!not_modified(&h, &v1));
    }
}
