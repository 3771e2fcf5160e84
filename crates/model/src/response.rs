//! A response as the fetcher hands it on: status, headers and body read
//! (cut at the body limit), and the exchange as it went over the wire when
//! the crawl archives it. Made by a fetcher, read by extractors, the
//! pipeline and the archiver.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::header::HeaderMap;

/// A response, its body read (and cut if it was too large).
#[derive(Debug, Clone)]
pub struct FetchResponse {
    /// When the request was sent.
    pub started_at: SystemTime,
    /// From sending the request to the end of the body.
    pub elapsed: Duration,
    /// The HTTP status code.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body after decompression, at most the maximum body size.
    pub body: Bytes,
    /// True when the body was longer than the maximum and was cut.
    pub truncated: bool,
    /// The exchange as sent and received, when the crawl archives it.
    pub capture: Option<Box<WireCapture>>,
}

/// A request and its response as they went over the wire (for WARC).
#[derive(Debug, Clone)]
pub struct WireCapture {
    /// The request line and headers, with the empty line.
    pub request_head: Bytes,
    /// The status line and headers as received, with the empty line.
    pub response_head: Bytes,
    /// The body as received, content coding kept (transfer coding
    /// removed), cut at the body limit.
    pub raw_body: Bytes,
    /// The address connected to.
    pub remote: Option<std::net::SocketAddr>,
}

impl FetchResponse {
    /// The `Content-Type` header, if it is valid text.
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }

    /// The `Location` header, if it is valid text.
    pub fn location(&self) -> Option<&str> {
        self.headers
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
    }

    /// True when the response is HTML (or has no type and looks like it).
    pub fn is_html(&self) -> bool {
        match self.content_type() {
            Some(ct) => {
                let mime = ct.split(';').next().unwrap_or("").trim();
                mime.eq_ignore_ascii_case("text/html")
                    || mime.eq_ignore_ascii_case("application/xhtml+xml")
            }
            None => false,
        }
    }
}
