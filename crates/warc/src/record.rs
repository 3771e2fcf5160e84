//! One WARC record: its type, named fields and block, serialised as WARC
//! 1.1 (`WARC/1.1`, fields, `Content-Length`, the block, two CRLFs).

use std::io::{self, Write};

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::digest::Sha1Digest;

/// The record types crawlkeeper writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordType {
    /// About the file: software, host, job, options.
    Warcinfo,
    /// A request as sent.
    Request,
    /// A response as received.
    Response,
    /// What the crawler learned of a page (outlinks, depth, parent).
    Metadata,
    /// A response whose payload was recorded before (or not modified).
    Revisit,
}

impl RecordType {
    /// The `WARC-Type` value.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::Warcinfo => "warcinfo",
            RecordType::Request => "request",
            RecordType::Response => "response",
            RecordType::Metadata => "metadata",
            RecordType::Revisit => "revisit",
        }
    }

    /// The type a `WARC-Type` value names, if crawlkeeper writes it.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "warcinfo" => RecordType::Warcinfo,
            "request" => RecordType::Request,
            "response" => RecordType::Response,
            "metadata" => RecordType::Metadata,
            "revisit" => RecordType::Revisit,
            _ => return None,
        })
    }
}

/// A record ready to be written.
#[derive(Debug, Clone)]
pub struct Record {
    kind: RecordType,
    id: String,
    date: DateTime<Utc>,
    fields: Vec<(&'static str, String)>,
    content_type: Option<String>,
    block: Vec<Bytes>,
}

/// An `application/warc-fields` block: `name: value` lines.
#[derive(Debug, Clone, Default)]
pub struct Fields(String);

impl Fields {
    /// No lines yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a line; control characters in the value (which would end the
    /// line early) become spaces.
    pub fn add(&mut self, name: &str, value: &str) -> &mut Self {
        self.0.push_str(name);
        self.0.push_str(": ");
        self.0.push_str(&one_line(value));
        self.0.push_str("\r\n");
        self
    }

    /// The block.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from(self.0)
    }
}

/// A new record id, `<urn:uuid:…>`.
pub fn new_id() -> String {
    format!("<urn:uuid:{}>", uuid::Uuid::new_v4())
}

/// `WARC-Date` with microseconds (WARC 1.1 allows fractions of a second).
pub fn warc_date(date: DateTime<Utc>) -> String {
    date.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// A field value on one line: CR, LF and other control characters (which
/// would end the field or the header early) are replaced by spaces.
fn one_line(value: &str) -> String {
    value
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

impl Record {
    /// A record of `kind` made at `date`, with a new id and no block.
    pub fn new(kind: RecordType, date: DateTime<Utc>) -> Self {
        Record {
            kind,
            id: new_id(),
            date,
            fields: Vec::new(),
            content_type: None,
            block: Vec::new(),
        }
    }

    /// Adds a named field (after `WARC-Type`, `WARC-Record-ID` and
    /// `WARC-Date`, in the order added).
    pub fn field(mut self, name: &'static str, value: &str) -> Self {
        self.fields.push((name, one_line(value)));
        self
    }

    /// Sets the block's `Content-Type`.
    pub fn content_type(mut self, value: &str) -> Self {
        self.content_type = Some(one_line(value));
        self
    }

    /// Sets the block, given as parts written one after the other.
    pub fn block(mut self, parts: Vec<Bytes>) -> Self {
        self.block = parts;
        self
    }

    /// Adds `WARC-Block-Digest` computed over the block.
    pub fn with_block_digest(self) -> Self {
        let digest = self.block_digest();
        self.field("WARC-Block-Digest", &digest)
    }

    /// The record's type.
    pub fn kind(&self) -> RecordType {
        self.kind
    }

    /// `<urn:uuid:…>`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// When it was made.
    pub fn date(&self) -> DateTime<Utc> {
        self.date
    }

    /// The value of a field added with [`Record::field`].
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The block, as the parts it was given in.
    pub fn block_parts(&self) -> &[Bytes] {
        &self.block
    }

    /// The block's length in bytes.
    pub fn block_len(&self) -> u64 {
        self.block.iter().map(|p| p.len() as u64).sum()
    }

    /// `sha1:` of the whole block.
    pub fn block_digest(&self) -> String {
        let mut d = Sha1Digest::new();
        for part in &self.block {
            d.update(part);
        }
        d.finish()
    }

    /// The record's header: version line, fields, `Content-Length`, and
    /// the empty line before the block.
    pub fn header(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(512);
        h.extend_from_slice(b"WARC/1.1\r\n");
        let mut put = |name: &str, value: &str| {
            h.extend_from_slice(name.as_bytes());
            h.extend_from_slice(b": ");
            h.extend_from_slice(value.as_bytes());
            h.extend_from_slice(b"\r\n");
        };
        put("WARC-Type", self.kind.as_str());
        put("WARC-Record-ID", &self.id);
        put("WARC-Date", &warc_date(self.date));
        for (name, value) in &self.fields {
            put(name, value);
        }
        if let Some(ct) = &self.content_type {
            put("Content-Type", ct);
        }
        put("Content-Length", &self.block_len().to_string());
        h.extend_from_slice(b"\r\n");
        h
    }

    /// Writes the whole record.
    pub fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&self.header())?;
        for part in &self.block {
            out.write_all(part)?;
        }
        out.write_all(b"\r\n\r\n")
    }

    /// The whole record as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.block_len() as usize + 600);
        self.write_to(&mut out)
            .expect("writing to a Vec never fails");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 123_456_000).unwrap()
    }

    #[test]
    fn a_record_serialises_as_warc_1_1() {
        let r = Record::new(RecordType::Metadata, at())
            .field("WARC-Target-URI", "http://127.0.0.1/a")
            .content_type("text/plain")
            .block(vec![Bytes::from_static(b"he"), Bytes::from_static(b"llo")])
            .with_block_digest();
        let text = String::from_utf8(r.to_bytes()).unwrap();
        let (head, rest) = text.split_once("\r\n\r\n").unwrap();
        let lines: Vec<&str> = head.lines().collect();
        assert_eq!(lines[0], "WARC/1.1");
        assert_eq!(lines[1], "WARC-Type: metadata");
        assert!(lines[2].starts_with("WARC-Record-ID: <urn:uuid:"));
        assert_eq!(lines[3], "WARC-Date: 2023-11-14T22:13:20.123456Z");
        assert_eq!(lines[4], "WARC-Target-URI: http://127.0.0.1/a");
        assert_eq!(
            lines[5],
            format!("WARC-Block-Digest: {}", crate::digest::sha1(b"hello"))
        );
        assert_eq!(lines[6], "Content-Type: text/plain");
        assert_eq!(lines[7], "Content-Length: 5");
        assert_eq!(rest, "hello\r\n\r\n");
    }

    #[test]
    fn field_values_stay_on_one_line() {
        let r = Record::new(RecordType::Metadata, at())
            .field("WARC-Target-URI", "http://a/\r\nX-Evil: 1");
        assert_eq!(r.get("warc-target-uri"), Some("http://a/  X-Evil: 1"));
        let text = String::from_utf8(r.to_bytes()).unwrap();
        assert!(!text.contains("\r\nX-Evil"));
    }
}
