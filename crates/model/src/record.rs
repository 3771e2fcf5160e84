//! The record written for every URL the crawler requested, or decided not
//! to request after it was queued (robots, an unreachable robots.txt).

use serde::{Deserialize, Serialize};

use crate::Authority;

/// One line of the JSON Lines output: what happened to one URL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrawlRecord {
    /// The normalised URL that was requested.
    pub url: String,
    /// Where the response points: the resolved `Location` of a redirect,
    /// otherwise the requested URL.
    pub final_url: String,
    /// The HTTP status, `None` when no response arrived.
    pub status: Option<u16>,
    /// Links followed from a seed to reach this URL (seeds are 0; a
    /// redirect target keeps the depth of the URL that redirected).
    pub depth: u32,
    /// The page that linked (or redirected) to this URL; `None` for seeds.
    pub parent: Option<String>,
    /// Scheme, host and port of `url`.
    pub authority: Authority,
    /// When the request was sent, RFC 3339 in UTC.
    pub fetched_at: String,
    /// Time from sending the request to the end of the body, in
    /// milliseconds; `None` when nothing was sent.
    pub response_ms: Option<u64>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// Bytes of body read, after decompression.
    pub bytes: u64,
    /// The page title, for HTML pages that have one.
    pub title: Option<String>,
    /// The fields asked for (`--extract`), or added by an extractor, by
    /// name: a string (the first match), a list (`NAME[]`, every match);
    /// a single field with no match on the page is absent, a list is `[]`.
    /// `meta` (an object, `--extract-meta`), `jsonld` (an array,
    /// `--extract-jsonld`) and `text` (a string, `--text`) when asked for.
    /// Present (`{}` at least) on every 2xx HTML page's record when fields
    /// were asked for; absent from the others, and from every record of a
    /// crawl that asked for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    /// Fields that lost values or bytes to a cap of the page (values per
    /// field, bytes per value, field bytes per page; `text`: `--max-text`);
    /// `jsonld` when a script was left out (invalid JSON, too large, too
    /// deep, too many). Absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields_cut: Option<Vec<String>>,
    /// Number of distinct in-scope links found on the page.
    pub links: u32,
    /// Links on the page past the per-page limit, not taken (0 in records
    /// written before the limit existed).
    #[serde(default)]
    pub links_dropped: u32,
    /// Requisites of the page (`--requisites`) taken (the URLs it needs
    /// to render, each fetched once in the crawl). Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requisites: u32,
    /// Requisites past the per-page limit, not taken. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requisites_dropped: u32,
    /// True when the body was cut at the maximum body size.
    pub truncated: bool,
    /// What went wrong, or `None`.
    pub error: Option<RecordError>,
    /// The response's `ETag`: asked with `If-None-Match` when the job is
    /// crawled again with `--recrawl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The response's `Last-Modified`: asked with `If-Modified-Since` in a
    /// re-crawl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// The `lastmod` the sitemap listing the URL gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lastmod: Option<String>,
    /// For a 304 Not Modified answer in a re-crawl: when the copy the
    /// server says is still current was fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchanged_since: Option<String>,
    /// What the URL is to the crawl when it is not a page: `sitemap` for
    /// a sitemap file (its `links` count the URLs it listed). Absent for
    /// pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// In a continuous crawl (`--continuous`): whether the content
    /// changed since the copy fetched before (a `304` or a body of the
    /// same signature is unchanged; a first fetch is a change). Absent
    /// outside continuous crawls and when the fetch brought nothing to
    /// compare (an error, a `404`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
    /// For a page rendered in a browser (`--render`): what the render
    /// took. Its links, fields, text and processors read the rendered
    /// DOM. Absent for a page not rendered (and for one whose render
    /// failed: its error says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered: Option<Rendering>,
}

/// What rendering a page in a browser took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rendering {
    /// From the tab's navigation to the DOM read, in milliseconds.
    pub ms: u64,
    /// Requests the page made besides its own (scripts, styles, images,
    /// fonts, frames, `fetch()`), each answered by the crawler.
    pub requests: u32,
    /// Of those, the ones refused (robots.txt, scope, the SSRF guard, a
    /// method other than GET, the page's limit) or failed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused: u32,
    /// True when the wait (`--render-wait`) was not met within
    /// `--render-timeout`; the DOM is what it was then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait_unmet: bool,
}

/// Why a URL that is not a page was requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A sitemap file, named by robots.txt, at `/sitemap.xml`, or listed
    /// by a sitemap index.
    Sitemap,
    /// A page requisite (`--requisites`): an image, script, stylesheet,
    /// font or frame the page of `parent` (or a stylesheet it loads)
    /// needs to render.
    Embed,
}

/// What went wrong with one URL: a machine-readable kind and a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordError {
    /// The kind, stable across versions, for scripts.
    pub kind: ErrorKind,
    /// A short human-readable explanation.
    pub message: String,
}

/// The machine-readable kinds of per-URL errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The connect or whole-request timeout expired.
    Timeout,
    /// The connection could not be made (refused, DNS, a TLS handshake
    /// failing for another reason than the certificate).
    Connect,
    /// The body was larger than the maximum body size and was cut.
    TooLarge,
    /// A redirect pointed back into its own chain.
    RedirectLoop,
    /// A redirect chain was longer than the maximum number of hops.
    TooManyRedirects,
    /// A 3xx response had no usable `Location`.
    BadRedirect,
    /// The URL could not be parsed or requested.
    InvalidUrl,
    /// robots.txt disallows the URL; it was not requested.
    RobotsDenied,
    /// robots.txt could not be fetched (5xx or unreachable); by RFC 9309
    /// the authority is treated as fully disallowed, so the URL was not requested.
    RobotsUnavailable,
    /// The body could not be read or decoded (reset, bad compression).
    Body,
    /// Any other protocol error.
    Http,
    /// Not requested: its authority was abandoned after too many
    /// consecutive failures.
    Skipped,
    /// The page was fetched, but finding its links stopped at the page's
    /// limit of time or parser memory; the links found before are kept.
    ExtractLimit,
    /// Not requested: the address it resolves to is in a network the
    /// crawler may not reach (the SSRF guard).
    BlockedAddress,
    /// A bug in crawlkeeper or in a processor (a panic), caught and
    /// recorded for this URL instead of stopping the crawl.
    Internal,
    /// A sitemap file that could not be read whole (malformed XML, a
    /// document type declaration, gzip that does not decode); the URLs
    /// read before the fault are kept.
    Sitemap,
    /// A `304 Not Modified` to a request that was not conditional: there
    /// is no copy it could confirm, so nothing of it is kept (no
    /// validators, no revisit in the archive).
    UnsolicitedNotModified,
    /// A processor (`--use`) failed this page: it did not answer within
    /// its deadline, answered something unreadable, or was not running;
    /// the page's record and links are kept without its additions.
    Processor,
    /// The server's TLS certificate was refused: expired, for another
    /// name, or not from a trusted authority; the message says which.
    Certificate,
    /// `--render`: the page did not load in the browser within
    /// `--render-timeout` (a script that never returns, a page that never
    /// ends loading); the tab was closed. The record keeps what the
    /// served HTML gave.
    RenderTimeout,
    /// `--render`: the page could not be rendered: its tab crashed (out of
    /// memory), the browser ended or stopped answering (it is replaced),
    /// no browser could be started, the DOM was too large. The record
    /// keeps what the served HTML gave.
    RenderFailed,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl CrawlRecord {
    /// The record of `url` (of `authority`, at `depth`) before anything
    /// happened to it: no status, no parent, nothing counted, no time.
    /// Name only what differs: `CrawlRecord { status: Some(200),
    /// ..CrawlRecord::blank(url, authority, 0) }`.
    pub fn blank(url: impl Into<String>, authority: Authority, depth: u32) -> Self {
        let url = url.into();
        Self {
            final_url: url.clone(),
            url,
            status: None,
            depth,
            parent: None,
            authority,
            fetched_at: String::new(),
            response_ms: None,
            content_type: None,
            bytes: 0,
            title: None,
            fields: None,
            fields_cut: None,
            links: 0,
            links_dropped: 0,
            requisites: 0,
            requisites_dropped: 0,
            truncated: false,
            error: None,
            etag: None,
            last_modified: None,
            lastmod: None,
            unchanged_since: None,
            via: None,
            changed: None,
            rendered: None,
        }
    }

    /// The record as one line of JSON.
    pub fn to_json(&self) -> String {
        // Written into a buffer of about the record's size: grown from
        // serde_json's 128 bytes, a page's text cost a copy per doubling.
        let mut out = Vec::with_capacity(self.json_size_hint());
        // Serialising plain data with string keys cannot fail.
        serde_json::to_writer(&mut out, self).expect("a record serialises");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// About the length of the record's JSON: its strings and a margin for
    /// the rest (escapes and nested values may take more).
    fn json_size_hint(&self) -> usize {
        let strings = [&self.url, &self.final_url, &self.fetched_at]
            .into_iter()
            .chain(&self.parent)
            .chain(&self.title)
            .chain(&self.content_type)
            .map(String::len)
            .sum::<usize>();
        let fields = self.fields.iter().flatten().map(|(k, v)| {
            k.len()
                + match v {
                    serde_json::Value::String(s) => s.len(),
                    _ => 64,
                }
        });
        let fields = fields.sum::<usize>();
        (strings + fields) * 9 / 8 + 512
    }
}

impl RecordError {
    /// A new error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl ErrorKind {
    /// True when the URL was never requested because of robots.txt.
    pub fn is_robots(self) -> bool {
        matches!(self, Self::RobotsDenied | Self::RobotsUnavailable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_serialises_with_the_documented_field_names() {
        let record = CrawlRecord {
            parent: Some("http://a.test/".into()),
            fetched_at: "2026-11-21T00:00:00.000Z".into(),
            response_ms: Some(12),
            error: Some(RecordError::new(ErrorKind::RedirectLoop, "x -> y -> x")),
            ..CrawlRecord::blank(
                "http://a.test:80/x",
                "http://a.test:80".to_owned().try_into().unwrap(),
                2,
            )
        };
        let json = serde_json::to_value(&record).unwrap();
        for field in [
            "url",
            "final_url",
            "status",
            "depth",
            "parent",
            "authority",
            "fetched_at",
            "response_ms",
            "content_type",
            "bytes",
            "title",
            "links",
            "links_dropped",
            "error",
        ] {
            assert!(json.get(field).is_some(), "missing field {field}");
        }
        assert_eq!(json["error"]["kind"], "redirect_loop");
        assert_eq!(json["status"], serde_json::Value::Null);
        let back: CrawlRecord = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, record);
        let mut old = json;
        old.as_object_mut().unwrap().remove("links_dropped");
        let back: CrawlRecord = serde_json::from_value(old).unwrap();
        assert_eq!(
            back, record,
            "records stored before links_dropped still read"
        );
        assert!(
            json_has_no_fields(&record),
            "no fields asked for: no \"fields\" key"
        );
        let mut with = record.clone();
        let fields = serde_json::json!({"name": "Kettle", "images": ["http://a.test/1.jpg"]});
        with.fields = Some(serde_json::from_value(fields.clone()).unwrap());
        with.fields_cut = Some(vec!["images".into()]);
        let json = serde_json::to_value(&with).unwrap();
        assert_eq!(json["fields"], fields);
        assert_eq!(json["fields_cut"], serde_json::json!(["images"]));
        let back: CrawlRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, with);
    }

    fn json_has_no_fields(record: &CrawlRecord) -> bool {
        let json = serde_json::to_value(record).unwrap();
        json.get("fields").is_none() && json.get("fields_cut").is_none()
    }
}
