//! The records of one HTTP exchange (`request` and `response`, linked by
//! `WARC-Concurrent-To`), of a response whose payload was archived before
//! or was not modified (`revisit`), and of what the crawler learned of a
//! page (`metadata`), laid out as Heritrix and wget write them.
//!
//! The response block is the status line and headers as received and the
//! body as it came over the wire, content coding (gzip, br) kept; the
//! transfer coding (chunks) is removed by the HTTP client, so a
//! `Transfer-Encoding` header is renamed `X-Crawler-Transfer-Encoding` and
//! the payload is the entity body (WARC 1.1 section 6.3.2).

use std::net::IpAddr;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::digest::sha1;
use crate::record::{Fields, Record, RecordType, warc_date};

/// What was sent and received for one URL.
#[derive(Debug, Clone)]
pub struct HttpExchange {
    /// The URL requested.
    pub target_uri: String,
    /// When the request was sent.
    pub date: DateTime<Utc>,
    /// The address connected to, when known.
    pub ip: Option<IpAddr>,
    /// The request line and headers as sent, with the empty line.
    pub request_head: Bytes,
    /// The status line and headers as received, with the empty line.
    pub response_head: Bytes,
    /// The body as received (content coding kept), maybe cut.
    pub body: Bytes,
    /// The body was cut at the crawl's size limit (or by a timeout).
    pub truncated: Option<Truncation>,
}

/// Why a body is shorter than the server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// The crawl's maximum body size.
    Length,
    /// The time allowed for the request.
    Time,
}

impl Truncation {
    /// The `WARC-Truncated` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Truncation::Length => "length",
            Truncation::Time => "time",
        }
    }
}

/// The record a revisit points at: an earlier response with the same
/// payload.
#[derive(Debug, Clone)]
pub struct Original {
    /// Its `WARC-Record-ID`, when it is in these files.
    pub id: Option<String>,
    /// Its target URI.
    pub target_uri: String,
    /// Its date.
    pub date: DateTime<Utc>,
}

/// Why a response is archived as a revisit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevisitProfile {
    /// The payload is the same as an earlier response's.
    IdenticalPayload,
    /// The server said 304 Not Modified to a conditional request.
    NotModified,
}

impl RevisitProfile {
    /// The `WARC-Profile` URI.
    pub fn uri(self) -> &'static str {
        match self {
            RevisitProfile::IdenticalPayload => {
                "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
            }
            RevisitProfile::NotModified => {
                "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
            }
        }
    }
}

/// A response head with `Transfer-Encoding` renamed: the body that
/// follows it in the record is no longer chunked.
pub fn archived_head(head: &[u8]) -> Bytes {
    let needle = b"\r\ntransfer-encoding:";
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    let at: Vec<usize> = lower
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i + 2)
        .collect();
    if at.is_empty() {
        return Bytes::copy_from_slice(head);
    }
    let mut out = Vec::with_capacity(head.len() + 10 * at.len());
    let mut from = 0;
    for i in at {
        out.extend_from_slice(&head[from..i]);
        out.extend_from_slice(b"X-Crawler-");
        from = i;
    }
    out.extend_from_slice(&head[from..]);
    Bytes::from(out)
}

impl HttpExchange {
    /// The payload digest (`sha1:` of the body).
    pub fn payload_digest(&self) -> String {
        sha1(&self.body)
    }

    fn common(&self, kind: RecordType) -> Record {
        let r = Record::new(kind, self.date).field("WARC-Target-URI", &self.target_uri);
        match self.ip {
            Some(ip) => r.field("WARC-IP-Address", &ip.to_string()),
            None => r,
        }
    }

    /// The `response` record, then the `request` record pointing at it.
    pub fn records(&self) -> (Record, Record) {
        self.records_with(&self.payload_digest())
    }

    /// [`HttpExchange::records`] with the payload digest already known.
    pub fn records_with(&self, payload_digest: &str) -> (Record, Record) {
        let head = archived_head(&self.response_head);
        let mut response = self
            .common(RecordType::Response)
            .content_type("application/http;msgtype=response")
            .field("WARC-Payload-Digest", payload_digest);
        if let Some(t) = self.truncated {
            response = response.field("WARC-Truncated", t.as_str());
        }
        let response = response
            .block(vec![head, self.body.clone()])
            .with_block_digest();
        let request = self.request(response.id());
        (response, request)
    }

    /// The `request` record, concurrent to the record `to`.
    pub fn request(&self, to: &str) -> Record {
        self.common(RecordType::Request)
            .field("WARC-Concurrent-To", to)
            .content_type("application/http;msgtype=request")
            .block(vec![self.request_head.clone()])
            .with_block_digest()
    }

    /// A `revisit` record instead of the response: the head only, with
    /// the payload digest (computed unless given) and the record it
    /// repeats.
    pub fn revisit(
        &self,
        profile: RevisitProfile,
        original: &Original,
        payload_digest: Option<&str>,
    ) -> (Record, Record) {
        let mut r = self
            .common(RecordType::Revisit)
            .field("WARC-Profile", profile.uri())
            .content_type("application/http;msgtype=response")
            .field("WARC-Refers-To-Target-URI", &original.target_uri)
            .field("WARC-Refers-To-Date", &warc_date(original.date));
        if let Some(id) = &original.id {
            r = r.field("WARC-Refers-To", id);
        }
        if profile == RevisitProfile::IdenticalPayload {
            // The payload is left out: the record says so.
            let digest = match payload_digest {
                Some(d) => d.to_owned(),
                None => self.payload_digest(),
            };
            r = r
                .field("WARC-Payload-Digest", &digest)
                .field("WARC-Truncated", "length");
        }
        let r = r
            .block(vec![archived_head(&self.response_head)])
            .with_block_digest();
        let request = self.request(r.id());
        (r, request)
    }
}

/// What the crawler learned of a page, as a `metadata` record.
#[derive(Debug, Clone, Default)]
pub struct PageMetadata {
    /// Links found on the page, in order.
    pub outlinks: Vec<String>,
    /// Links followed from a seed to reach it.
    pub depth: u32,
    /// The page that linked to it, if not a seed.
    pub parent: Option<String>,
    /// Time from the request to the end of the body, in milliseconds.
    pub fetch_ms: Option<u64>,
    /// The body was cut at the size limit.
    pub truncated: bool,
    /// Links past the per-page limit, not taken.
    pub links_dropped: u32,
    /// What went wrong (kind, message), for a URL that got no response.
    pub error: Option<(String, String)>,
    /// The fields taken from the page (`--extract` and the rest), as
    /// compact JSON on one line: written as a `fields` line when present.
    /// Control characters left in it become spaces (as in every line), so
    /// the caller escapes them all (see the crawl's archiver).
    pub fields: Option<String>,
    /// The names of the fields that lost values or bytes to a cap: a
    /// `fieldsCut` line each.
    pub fields_cut: Vec<String>,
}

/// The longest hop path written out (`hopsFromSeed` of a deeper page is
/// cut, with its depth given in `depth`).
const MAX_HOPS_SHOWN: usize = 64;

impl PageMetadata {
    /// The `metadata` record of the page at `target_uri`, concurrent to
    /// its response record `response_id` if it has one
    /// (`application/warc-fields`, as Heritrix writes: `via`,
    /// `hopsFromSeed`, `outlink` …).
    pub fn record(
        &self,
        target_uri: &str,
        date: DateTime<Utc>,
        response_id: Option<&str>,
    ) -> Record {
        let mut f = Fields::new();
        match &self.parent {
            None => f.add("seed", "true"),
            Some(p) => f.add("via", p),
        };
        f.add(
            "hopsFromSeed",
            &"L".repeat((self.depth as usize).min(MAX_HOPS_SHOWN)),
        );
        f.add("depth", &self.depth.to_string());
        if let Some(ms) = self.fetch_ms {
            f.add("fetchTimeMs", &ms.to_string());
        }
        if self.truncated {
            f.add("truncated", "length");
        }
        if self.links_dropped > 0 {
            f.add("outlinksDropped", &self.links_dropped.to_string());
        }
        if let Some((kind, message)) = &self.error {
            f.add("error", kind);
            f.add("errorMessage", message);
        }
        if let Some(fields) = &self.fields {
            f.add("fields", fields);
        }
        for name in &self.fields_cut {
            f.add("fieldsCut", name);
        }
        for link in &self.outlinks {
            f.add("outlink", link);
        }
        let r = Record::new(RecordType::Metadata, date).field("WARC-Target-URI", target_uri);
        let r = match response_id {
            Some(id) => r.field("WARC-Concurrent-To", id),
            None => r,
        };
        r.content_type("application/warc-fields")
            .block(vec![f.into_bytes()])
            .with_block_digest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange() -> HttpExchange {
        HttpExchange {
            target_uri: "http://127.0.0.1:8080/a".into(),
            date: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            ip: Some("127.0.0.1".parse().unwrap()),
            request_head: Bytes::from_static(b"GET /a HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\r\n"),
            response_head: Bytes::from_static(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n",
            ),
            body: Bytes::from_static(b"<html></html>"),
            truncated: None,
        }
    }

    #[test]
    fn a_response_and_its_request_are_linked_and_digested() {
        let x = exchange();
        let (response, request) = x.records();
        assert_eq!(
            response.get("WARC-Payload-Digest"),
            Some(sha1(b"<html></html>").as_str())
        );
        assert_eq!(request.get("WARC-Concurrent-To"), Some(response.id()));
        assert_eq!(response.get("WARC-IP-Address"), Some("127.0.0.1"));
        let text = String::from_utf8(response.to_bytes()).unwrap();
        assert!(
            text.contains("\r\nX-Crawler-Transfer-Encoding: chunked\r\n"),
            "{text}"
        );
        assert!(!text.contains("\r\nTransfer-Encoding"), "{text}");
        assert!(text.ends_with("\r\n\r\n<html></html>\r\n\r\n"));
        let twice = archived_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        assert_eq!(
            &twice[..],
            b"HTTP/1.1 200 OK\r\nX-Crawler-Transfer-Encoding: gzip\r\nX-Crawler-transfer-encoding: chunked\r\n\r\n"
        );
        let (_, block) = text.split_once("\r\n\r\n").unwrap();
        let block = &block[..block.len() - 4];
        assert_eq!(
            response.get("WARC-Block-Digest"),
            Some(sha1(block.as_bytes()).as_str())
        );
    }

    #[test]
    fn a_truncated_body_says_so_and_a_revisit_points_at_its_original() {
        let mut x = exchange();
        x.truncated = Some(Truncation::Length);
        let (response, _) = x.records();
        assert_eq!(response.get("WARC-Truncated"), Some("length"));
        let original = Original {
            id: Some(response.id().to_owned()),
            target_uri: x.target_uri.clone(),
            date: x.date,
        };
        let (revisit, request) = x.revisit(RevisitProfile::IdenticalPayload, &original, None);
        assert_eq!(revisit.kind(), RecordType::Revisit);
        assert_eq!(revisit.get("WARC-Refers-To"), Some(response.id()));
        assert_eq!(request.get("WARC-Concurrent-To"), Some(revisit.id()));
        assert!(
            !String::from_utf8(revisit.to_bytes())
                .unwrap()
                .contains("<html>")
        );
    }

    #[test]
    fn metadata_lists_the_outlinks_and_the_path() {
        let m = PageMetadata {
            outlinks: vec![
                "http://127.0.0.1/b".into(),
                "http://127.0.0.1/c\r\nx".into(),
            ],
            depth: 2,
            parent: Some("http://127.0.0.1/".into()),
            fetch_ms: Some(12),
            truncated: false,
            links_dropped: 0,
            error: None,
            fields: None,
            fields_cut: Vec::new(),
        };
        let r = m.record("http://127.0.0.1/a", Utc::now(), Some("<urn:uuid:x>"));
        let text = String::from_utf8(r.to_bytes()).unwrap();
        assert!(
            text.contains("via: http://127.0.0.1/\r\nhopsFromSeed: LL\r\ndepth: 2\r\n"),
            "{text}"
        );
        assert!(text.contains("outlink: http://127.0.0.1/b\r\noutlink: http://127.0.0.1/c  x\r\n"));
        assert!(!text.contains("\r\nfields"), "no fields, no line: {text}");
    }

    #[test]
    fn fields_are_one_line_and_a_value_cannot_add_another() {
        let m = PageMetadata {
            fields: Some(r#"{"name":"a\r\nWARC-Type: x\r\n\r\n"}"#.into()),
            fields_cut: vec!["desc".into(), "x\r\nWARC-Type: y".into()],
            ..PageMetadata::default()
        };
        let r = m.record("http://127.0.0.1/a", Utc::now(), None);
        let text = String::from_utf8(r.to_bytes()).unwrap();
        let (_, block) = text.split_once("\r\n\r\n").unwrap();
        let lines: Vec<&str> = block.trim_end().split("\r\n").collect();
        assert!(
            lines.contains(&r#"fields: {"name":"a\r\nWARC-Type: x\r\n\r\n"}"#),
            "{lines:?}"
        );
        assert!(lines.contains(&"fieldsCut: desc"), "{lines:?}");
        // A raw CR/LF in a name is a space: still one line.
        assert!(lines.contains(&"fieldsCut: x  WARC-Type: y"), "{lines:?}");
        assert!(
            lines.iter().all(|l| !l.starts_with("WARC-Type")),
            "{lines:?}"
        );
        assert_eq!(r.kind(), RecordType::Metadata);
    }
}
