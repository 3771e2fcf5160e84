//! The processor protocol, version 1: JSON Lines over the child's stdin
//! and stdout, one request and one answer per page, in turn.
//!
//! Each request is one line (a JSON object):
//! `{"v": 1, "id": "7", "url": …, "final_url": …, "status": 200,
//! "headers": [["content-type", "text/html"], …], "body": "<base64>",
//! "body_truncated": false, "title": …, "fields": {…}}`. `body` is the
//! response body as received (after content decoding), base64, cut at
//! `--processor-max-body` (`body_truncated` then true); header values are
//! UTF-8 with invalid bytes replaced; `fields` holds what the extractors
//! and the processors before this one found.
//!
//! The answer is one line: `{"id": "7", "fields": {…}, "links": […],
//! "drop_links": false}`, each key but `id` optional, or `{"id": "7",
//! "error": "why"}` to fail the page. Keys it does not know are ignored,
//! so later versions may add to both.

use std::collections::BTreeMap;

use base64::Engine as _;
use crawlkeeper_model::text::cut_at;
use serde::de::{self, Deserializer as _, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{Addition, ProcessorPage};

/// The protocol version in every request (`"v"`).
pub const VERSION: u32 = 1;
/// The most bytes of one answer line; a longer one fails the page and the
/// child is restarted (it can no longer be read in step). Room for the
/// fields ([`MAX_ANSWER_FIELD_BYTES`]) and thousands of links, and small
/// enough that a worker answering at the bound costs a few megabytes.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// The most bytes an answer's fields may hold, serialized.
pub const MAX_ANSWER_FIELD_BYTES: usize = 1024 * 1024;
/// The most links one answer may add.
pub const MAX_ANSWER_LINKS: usize = 10_000;
/// The most bytes of a processor's `error` text kept.
const MAX_ERROR_TEXT: usize = 1024;

#[derive(Serialize)]
struct RequestLine<'a> {
    v: u32,
    id: &'a str,
    url: &'a str,
    final_url: &'a str,
    status: u16,
    headers: Vec<(&'a str, String)>,
    body: String,
    body_truncated: bool,
    title: Option<&'a str>,
    fields: &'a serde_json::Value,
}

/// The request line (with its newline) for `page`, its body cut at
/// `max_body` bytes.
pub fn request(id: &str, page: &ProcessorPage<'_>, max_body: u64) -> Vec<u8> {
    let body = &page.response.body;
    let keep = usize::try_from(max_body)
        .unwrap_or(usize::MAX)
        .min(body.len());
    let no_fields = serde_json::Value::Object(serde_json::Map::new());
    let fields = page
        .record
        .fields
        .as_ref()
        .map(|f| serde_json::to_value(f).unwrap_or_else(|_| no_fields.clone()))
        .unwrap_or_else(|| no_fields.clone());
    let request = RequestLine {
        v: VERSION,
        id,
        url: page.url.as_str(),
        final_url: &page.record.final_url,
        status: page.response.status,
        headers: page
            .response
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: base64::engine::general_purpose::STANDARD.encode(&body[..keep]),
        body_truncated: keep < body.len() || page.response.truncated,
        title: page.record.title.as_deref(),
        fields: &fields,
    };
    // Plain data with string keys: serialising cannot fail.
    let mut line = serde_json::to_vec(&request).unwrap_or_default();
    line.push(b'\n');
    line
}

/// An answer as it is first read: each part a slice of the line, so
/// that nothing is built before its bound is checked.
#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(default, borrow)]
    fields: Option<&'a RawValue>,
    #[serde(default, borrow)]
    links: Option<&'a RawValue>,
    #[serde(default)]
    drop_links: Option<bool>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

/// What an answer line says.
#[derive(Debug, PartialEq)]
pub enum Answered {
    /// The page's additions.
    Done(Addition),
    /// The processor failed the page, saying why.
    Failed(String),
}

/// Why an answer line is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// Not a JSON object of the protocol.
    #[error("answered something that is not a protocol answer: {0}")]
    Garbage(String),
    /// The answer is for another request.
    #[error("answered for id {got} while page {wanted} was asked")]
    OtherId {
        /// The id asked.
        wanted: String,
        /// The id answered.
        got: String,
    },
    /// The fields are larger than an answer may hold.
    #[error("answered {0} bytes of fields, more than the {MAX_ANSWER_FIELD_BYTES} a page may take")]
    FieldsTooLarge(usize),
    /// More links than an answer may add.
    #[error("answered {0} links, more than the {MAX_ANSWER_LINKS} a page may add")]
    TooManyLinks(usize),
}

impl AnswerError {
    /// True when the child can no longer be read in step (its answer was
    /// not for this request, or not an answer at all): it is restarted.
    pub fn desynchronised(&self) -> bool {
        matches!(self, Self::Garbage(_) | Self::OtherId { .. })
    }
}

/// Reads answer `line` (without its newline) to request `id`. Each part
/// is checked against its bound before it is built: an answer of a few
/// megabytes costs a few megabytes, whatever it holds.
pub fn answer(id: &str, line: &[u8]) -> Result<Answered, AnswerError> {
    let a: Answer<'_> = serde_json::from_slice(line)
        .map_err(|e| AnswerError::Garbage(cut_at(&e.to_string(), 200).to_owned()))?;
    let got = short_text(a.id, 64);
    if got != id {
        return Err(AnswerError::OtherId {
            wanted: id.to_owned(),
            got,
        });
    }
    if let Some(e) = a.error.filter(|e| e.get() != "null") {
        return Ok(Answered::Failed(short_text(e, MAX_ERROR_TEXT)));
    }
    let fields = match a.fields {
        None => BTreeMap::new(),
        Some(raw) if raw.get().len() > MAX_ANSWER_FIELD_BYTES => {
            return Err(AnswerError::FieldsTooLarge(raw.get().len()));
        }
        Some(raw) => {
            serde_json::from_str::<Option<serde_json::Map<String, serde_json::Value>>>(raw.get())
                .map_err(|e| AnswerError::Garbage(format!("fields: {e}")))?
                .unwrap_or_default()
                .into_iter()
                .collect()
        }
    };
    let links = match a.links {
        None => Vec::new(),
        Some(raw) => links(raw)?,
    };
    Ok(Answered::Done(Addition {
        fields,
        links,
        drop_links: a.drop_links.unwrap_or(false),
    }))
}

/// The text of a JSON value, for a message: a string's content, anything
/// else as written, at most `max` bytes (a long string is not decoded
/// whole).
fn short_text(raw: &RawValue, max: usize) -> String {
    let text = raw.get();
    if text.len() <= max.saturating_mul(8) + 2
        && let Ok(s) = serde_json::from_str::<String>(text)
    {
        return cut_at(&s, max).to_owned();
    }
    let text = text.strip_prefix('"').unwrap_or(text);
    cut_at(text, max).to_owned()
}

/// The links of an answer, refused past [`MAX_ANSWER_LINKS`] without
/// keeping more (the rest are only counted, for the message).
fn links(raw: &RawValue) -> Result<Vec<String>, AnswerError> {
    struct Links;
    impl<'de> Visitor<'de> for Links {
        type Value = Result<Vec<String>, usize>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of links (strings), or null")
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Ok(Vec::new()))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while out.len() < MAX_ANSWER_LINKS {
                match seq.next_element::<String>()? {
                    Some(link) => out.push(link),
                    None => return Ok(Ok(out)),
                }
            }
            let mut more = 0usize;
            while seq.next_element::<de::IgnoredAny>()?.is_some() {
                more = more.saturating_add(1);
            }
            Ok(if more == 0 {
                Ok(out)
            } else {
                Err(out.len().saturating_add(more))
            })
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    match de.deserialize_any(Links) {
        Ok(Ok(links)) => Ok(links),
        Ok(Err(count)) => Err(AnswerError::TooManyLinks(count)),
        Err(e) => Err(AnswerError::Garbage(format!("links: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use crawlkeeper_fetch::FetchResponse;
    use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
    use std::time::{Duration, SystemTime};

    fn record(url: &str) -> crawlkeeper_model::CrawlRecord {
        let request = crate::pipeline::Request::seed(url::Url::parse(url).unwrap());
        crate::pipeline::blank_record(&request)
    }

    #[test]
    fn a_request_carries_the_page_binary_safe_and_cut_at_the_body_limit() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/html"));
        headers.insert("x-odd", HeaderValue::from_bytes(b"caf\xe9").unwrap());
        let response = FetchResponse {
            started_at: SystemTime::now(),
            elapsed: Duration::ZERO,
            status: 200,
            headers,
            body: Bytes::from_static(b"\x00\xff<html>\n"),
            truncated: false,
            capture: None,
        };
        let url = url::Url::parse("http://a.test/p").unwrap();
        let mut rec = record("http://a.test/p");
        rec.title = Some("T".into());
        rec.fields = Some(BTreeMap::from([("name".into(), "x".into())]));
        let page = ProcessorPage {
            url: &url,
            response: &response,
            record: &rec,
        };
        let line = request("3", &page, 1024);
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["v"], 1);
        assert_eq!(v["id"], "3");
        assert_eq!(v["status"], 200);
        assert_eq!(v["title"], "T");
        assert_eq!(v["fields"]["name"], "x");
        let body = base64::engine::general_purpose::STANDARD
            .decode(v["body"].as_str().unwrap())
            .unwrap();
        assert_eq!(body, b"\x00\xff<html>\n");
        assert_eq!(v["body_truncated"], false);
        assert!(
            v["headers"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!(["x-odd", "caf\u{fffd}"]))
        );
        let v: serde_json::Value = serde_json::from_slice(&request("4", &page, 2)).unwrap();
        let body = base64::engine::general_purpose::STANDARD
            .decode(v["body"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            (body.as_slice(), &v["body_truncated"]),
            (&b"\x00\xff"[..], &serde_json::json!(true))
        );
    }

    #[test]
    fn answers_are_read_and_bad_ones_refused() {
        let a = answer(
            "7",
            br#"{"id":"7","fields":{"n":1},"links":["/x"],"drop_links":true,"later":0}"#,
        )
        .unwrap();
        assert_eq!(
            a,
            Answered::Done(Addition {
                fields: BTreeMap::from([("n".into(), 1.into())]),
                links: vec!["/x".into()],
                drop_links: true,
            })
        );
        assert_eq!(
            answer("7", br#"{"id":7}"#).unwrap(),
            Answered::Done(Addition::default())
        );
        assert_eq!(
            answer("7", br#"{"id":"7","error":"no price"}"#).unwrap(),
            Answered::Failed("no price".into())
        );
        let other = answer("7", br#"{"id":"8"}"#).unwrap_err();
        assert!(
            other.desynchronised() && other.to_string().contains("id 8"),
            "{other}"
        );
        for garbage in [
            &b"hello"[..],
            b"[]",
            b"{}",
            b"{\"id\":\"7\",\"fields\":[1]}",
        ] {
            let e = answer("7", garbage).unwrap_err();
            assert!(e.desynchronised(), "{e}");
        }
        let big = format!(
            r#"{{"id":"7","fields":{{"x":"{}"}}}}"#,
            "a".repeat(MAX_ANSWER_FIELD_BYTES)
        );
        assert!(matches!(
            answer("7", big.as_bytes()),
            Err(AnswerError::FieldsTooLarge(_))
        ));
        let links = format!(
            r#"{{"id":"7","links":[{}]}}"#,
            vec!["\"/a\""; MAX_ANSWER_LINKS + 1].join(",")
        );
        assert!(matches!(
            answer("7", links.as_bytes()),
            Err(AnswerError::TooManyLinks(_))
        ));
    }
}
