//! What the crawler knows of a URL before it requests it: the `lastmod` a
//! sitemap gave, and, in a re-crawl, the validators of the copy an earlier
//! pass fetched (sent as a conditional request).

use serde::{Deserialize, Serialize};

use crate::CrawlRecord;

/// Longest validator (`ETag`, `Last-Modified`) or date kept; a longer one
/// from a server is not kept (real ones are tens of bytes).
pub const MAX_VALIDATOR: usize = 256;

/// What is known of a URL before it is requested.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Known {
    /// The `lastmod` of the sitemap that listed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lastmod: Option<String>,
    /// The `ETag` of the earlier copy (sent as `If-None-Match`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The `Last-Modified` of the earlier copy (sent as
    /// `If-Modified-Since`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// When the earlier copy was fetched (RFC 3339): what a 304 refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captured_at: Option<String>,
    /// The URL is a sitemap file, this many sitemap indexes below the one
    /// robots.txt named (0: named by robots.txt or `/sitemap.xml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sitemap: Option<u8>,
    /// The URL is a page requisite (`--requisites`), this many embeds from
    /// the page that needed it (1: named by the page; 2: by a stylesheet
    /// the page loads; …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed: Option<u8>,
    /// The requisite is a frame (`<iframe>`, `<frame>`): read as a page,
    /// and counted as one against `--max-pages`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub frame: bool,
    /// The most requisites the requisite's own (a stylesheet's, a frame's)
    /// may still add below it: its share of what its page's tree had left.
    /// Absent: as many as a page's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_budget: Option<u32>,
    /// In a continuous crawl: what the URL's fetches so far told of it
    /// (its copy's signature, its change history, its interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revisit: Option<Box<crate::revisit::PageSchedule>>,
}

impl Known {
    /// A sitemap file `level` indexes below the top one.
    pub fn sitemap(level: u8) -> Self {
        Self {
            sitemap: Some(level),
            ..Self::default()
        }
    }

    /// A requisite `hops` embeds from its page.
    pub fn embed(hops: u8) -> Self {
        Self {
            embed: Some(hops),
            ..Self::default()
        }
    }

    /// A requisite `hops` embeds from its page, a frame or not, whose own
    /// requisites may number at most `budget`.
    pub fn embed_within(hops: u8, frame: bool, budget: u32) -> Self {
        Self {
            embed: Some(hops),
            frame,
            embed_budget: Some(budget),
            ..Self::default()
        }
    }

    /// True for a requisite `--max-pages` does not count (a frame counts).
    pub fn is_uncounted_requisite(&self) -> bool {
        self.embed.is_some() && !self.frame
    }

    /// What a sitemap said of a URL, if it said anything.
    pub fn lastmod(lastmod: Option<String>) -> Option<Self> {
        lastmod.map(|l| Self {
            lastmod: Some(l),
            ..Self::default()
        })
    }

    /// What the record of an earlier pass tells the next one: the
    /// validators of a copy fetched in full (2xx) or confirmed unchanged
    /// (304), and the sitemap's `lastmod`. `None` when it tells nothing.
    pub fn of_record(r: &CrawlRecord) -> Option<Self> {
        // A 304 confirms a copy only when it answered a conditional
        // request (it then names the copy's date); an unsolicited one
        // confirms nothing.
        let validated = match r.status {
            Some(200..=299) => !r.truncated,
            Some(304) => r.unchanged_since.is_some(),
            _ => false,
        };
        let mut known = Self {
            lastmod: r.lastmod.clone(),
            // A sitemap is read as one again; how deep below an index it
            // was is not on the record, so it counts as a top one.
            sitemap: (r.via == Some(crate::Via::Sitemap)).then_some(0),
            // A requisite stays one (how many embeds deep is not on the
            // record: the bound counts from the first).
            embed: (r.via == Some(crate::Via::Embed)).then_some(1),
            ..Self::default()
        };
        if validated && (r.etag.is_some() || r.last_modified.is_some()) {
            known.etag = r.etag.clone();
            known.last_modified = r.last_modified.clone();
            known.captured_at = Some(
                r.unchanged_since
                    .clone()
                    .unwrap_or_else(|| r.fetched_at.clone()),
            );
        }
        (!known.is_empty()).then_some(known)
    }

    /// True when a request for the URL can be conditional.
    pub fn validates(&self) -> bool {
        self.etag.is_some() || self.last_modified.is_some()
    }

    /// True when nothing is known.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A header value worth keeping as a validator: visible ASCII (spaces
/// allowed), at most [`MAX_VALIDATOR`] bytes.
pub fn validator(value: &[u8]) -> Option<String> {
    let ok = !value.is_empty()
        && value.len() <= MAX_VALIDATOR
        && value
            .iter()
            .all(|&b| b == b' ' || b == b'\t' || b.is_ascii_graphic());
    ok.then(|| String::from_utf8_lossy(value).trim().to_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, RecordError};

    fn record(status: Option<u16>) -> CrawlRecord {
        let mut r: CrawlRecord = serde_json::from_str(
            r#"{"url":"http://a.test/","final_url":"http://a.test/","status":200,"depth":0,
            "parent":null,"authority":"http://a.test:80","fetched_at":"2026-11-25T00:00:00.000Z",
            "response_ms":1,"content_type":null,"bytes":1,"title":null,"links":0,
            "truncated":false,"error":null}"#,
        )
        .unwrap();
        r.status = status;
        r
    }

    #[test]
    fn a_full_copy_with_validators_is_known_with_its_date() {
        let mut r = record(Some(200));
        assert_eq!(Known::of_record(&r), None, "no validators, no lastmod");
        r.etag = Some("\"v1\"".into());
        let k = Known::of_record(&r).unwrap();
        assert!(k.validates());
        assert_eq!(k.captured_at.as_deref(), Some("2026-11-25T00:00:00.000Z"));
    }

    #[test]
    fn a_304_refers_to_the_copy_it_confirmed() {
        let mut r = record(Some(304));
        r.last_modified = Some("Tue, 24 Nov 2026 00:00:00 GMT".into());
        r.unchanged_since = Some("2026-11-01T00:00:00.000Z".into());
        let k = Known::of_record(&r).unwrap();
        assert_eq!(k.captured_at.as_deref(), Some("2026-11-01T00:00:00.000Z"));
    }

    #[test]
    fn an_unsolicited_304_confirms_no_copy() {
        let mut r = record(Some(304));
        r.etag = Some("\"v1\"".into());
        assert_eq!(Known::of_record(&r), None, "no date of a copy it confirmed");
    }

    #[test]
    fn failed_or_cut_copies_give_no_validators_but_keep_lastmod() {
        for status in [None, Some(404), Some(500), Some(301)] {
            let mut r = record(status);
            r.etag = Some("\"v1\"".into());
            r.lastmod = Some("2026-01-01".into());
            let k = Known::of_record(&r).unwrap();
            assert!(!k.validates(), "{status:?}");
            assert_eq!(k.lastmod.as_deref(), Some("2026-01-01"));
        }
        let mut r = record(Some(200));
        r.etag = Some("\"v1\"".into());
        r.truncated = true;
        r.error = Some(RecordError::new(ErrorKind::TooLarge, "cut"));
        assert_eq!(Known::of_record(&r), None);
    }

    #[test]
    fn hostile_validators_are_not_kept() {
        assert_eq!(validator(b"\"abc\""), Some("\"abc\"".into()));
        assert_eq!(validator(b"W/\"x y\""), Some("W/\"x y\"".into()));
        assert_eq!(validator(b""), None);
        assert_eq!(validator(b"   "), None);
        assert_eq!(validator(b"a\r\nSet-Cookie: x"), None);
        assert_eq!(validator(&[b'a'; MAX_VALIDATOR + 1]), None);
        assert_eq!(validator("é".as_bytes()), None);
    }
}
