//! WARC records of what the crawl fetched. A page's records (`request`,
//! `response` or `revisit`, `metadata`) are made and compressed on the
//! request's own task, beside link extraction, so compression runs on
//! every core and off the engine's loop; the state worker only appends the
//! bytes, before the page's result commits (see [`crate::sink::Sink::before_commit`]).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use crawlkeeper_model::CrawlRecord;
use crawlkeeper_warc::http::{HttpExchange, Original, RevisitProfile, Truncation};
use crawlkeeper_warc::writer::encode;
use crawlkeeper_warc::{PageMetadata, Record};

use crawlkeeper_fetch::FetchResponse;

/// Makes the WARC records of fetched pages.
#[derive(Debug)]
pub struct Archiver {
    /// The gzip level of each record's member; `None` for plain WARC.
    gzip_level: Option<u32>,
    /// With `--warc-dedup`: payload digests seen in this run, and the
    /// response that had each first.
    seen: Option<Mutex<HashMap<String, Original>>>,
}

impl Archiver {
    /// An archiver writing gzip members at `gzip_level` (`None`: plain),
    /// writing `revisit` records for payloads seen before when `dedup`.
    pub fn new(gzip_level: Option<u32>, dedup: bool) -> Self {
        Self {
            gzip_level,
            seen: dedup.then(|| Mutex::new(HashMap::new())),
        }
    }

    /// The encoded records of a page: its request, its response (or a
    /// revisit of an identical payload), and its metadata (the links the
    /// crawl took, depth, parent, truncation, and the record's fields as
    /// they are now: read here, after every stage that adds to them).
    /// `same_as`: in a continuous crawl, the date of the page's copy this
    /// response repeats (an identical-payload revisit of it). Nothing when
    /// the response was not captured.
    pub fn page(
        &self,
        record: &CrawlRecord,
        response: &FetchResponse,
        outlinks: Vec<String>,
        same_as: Option<DateTime<Utc>>,
    ) -> Vec<u8> {
        let Some(exchange) = exchange_of(&record.url, response) else {
            return Vec::new();
        };
        let (main, request) = match (not_modified(record), same_as) {
            (Some(original), _) => exchange.revisit(RevisitProfile::NotModified, &original, None),
            (None, Some(date)) if (200..300).contains(&response.status) => {
                let original = Original {
                    id: None,
                    target_uri: record.url.clone(),
                    date,
                };
                exchange.revisit(RevisitProfile::IdenticalPayload, &original, None)
            }
            (None, _) => self.response_or_revisit(&exchange, response.status),
        };
        let metadata = PageMetadata {
            outlinks,
            depth: record.depth,
            parent: record.parent.clone(),
            fetch_ms: record.response_ms,
            truncated: record.truncated,
            links_dropped: record.links_dropped,
            error: None,
            fields: record.fields.as_ref().map(one_line_json),
            fields_cut: record.fields_cut.clone().unwrap_or_default(),
        }
        .record(&record.url, exchange.date, Some(main.id()));
        encode(&[request, main, metadata], self.gzip_level)
    }

    /// The encoded records of a request that is not a page of the crawl
    /// (robots.txt): request and response.
    pub fn exchange(&self, url: &str, response: &FetchResponse) -> Vec<u8> {
        match exchange_of(url, response) {
            Some(x) => {
                let (response, request) = x.records();
                encode(&[request, response], self.gzip_level)
            }
            None => Vec::new(),
        }
    }

    fn response_or_revisit(&self, x: &HttpExchange, status: u16) -> (Record, Record) {
        let Some(seen) = &self.seen else {
            return x.records();
        };
        if !(200..300).contains(&status) || x.body.is_empty() || x.truncated.is_some() {
            return x.records();
        }
        let digest = x.payload_digest();
        let original = seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&digest)
            .cloned();
        if let Some(original) = original {
            return x.revisit(RevisitProfile::IdenticalPayload, &original, Some(&digest));
        }
        let (response, request) = x.records_with(&digest);
        seen.lock().unwrap_or_else(|p| p.into_inner()).insert(
            digest,
            Original {
                id: Some(response.id().to_owned()),
                target_uri: x.target_uri.clone(),
                date: x.date,
            },
        );
        (response, request)
    }
}

/// `value` as compact JSON on one line: serde_json escapes the control
/// characters below U+0020; the others (DEL, U+0080 to U+009F), which a
/// `warc-fields` line would turn into spaces, are escaped too, so the line
/// reads back as the same value.
fn one_line_json<T: serde::Serialize>(value: &T) -> String {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
    if !json.chars().any(char::is_control) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c.is_control() {
            // Compact JSON has control characters only inside strings,
            // where `\uXXXX` is the same character.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// The copy a 304 to a re-crawl's conditional request confirmed.
fn not_modified(record: &CrawlRecord) -> Option<Original> {
    if record.status != Some(304) || record.error.is_some() {
        return None;
    }
    let date = DateTime::parse_from_rfc3339(record.unchanged_since.as_deref()?).ok()?;
    Some(Original {
        id: None,
        target_uri: record.url.clone(),
        date: date.with_timezone(&Utc),
    })
}

/// The exchange of a captured response.
fn exchange_of(url: &str, r: &FetchResponse) -> Option<HttpExchange> {
    let c = r.capture.as_ref()?;
    Some(HttpExchange {
        target_uri: url.to_owned(),
        date: utc(r.started_at),
        ip: c.remote.map(|a| a.ip()),
        request_head: c.request_head.clone(),
        response_head: c.response_head.clone(),
        body: c.raw_body.clone(),
        truncated: r.truncated.then_some(Truncation::Length),
    })
}

/// `t` to the millisecond: the precision of a record's `fetched_at`, so
/// that a revisit's `WARC-Refers-To-Date` (made from it in a later pass)
/// is the original's `WARC-Date` exactly.
fn utc(t: SystemTime) -> DateTime<Utc> {
    let exact = DateTime::<Utc>::from(t);
    DateTime::from_timestamp_millis(exact.timestamp_millis()).unwrap_or(exact)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_json_is_one_line_that_reads_back_the_same() {
        let mut fields = std::collections::BTreeMap::new();
        fields.insert(
            "evil".to_owned(),
            serde_json::json!("a\r\nWARC-Type: x\r\n\r\n\u{7f}\u{85}\t\u{2028}"),
        );
        fields.insert("list".to_owned(), serde_json::json!(["1", "2"]));
        let line = one_line_json(&fields);
        assert!(!line.chars().any(char::is_control), "{line}");
        assert!(line.contains(r#"\r\nWARC-Type: x"#), "{line}");
        let back: std::collections::BTreeMap<String, serde_json::Value> =
            serde_json::from_str(&line).unwrap();
        assert_eq!(back, fields);
    }
}
