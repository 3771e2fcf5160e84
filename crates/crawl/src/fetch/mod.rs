//! The first stage of the pipeline: turning a URL into a response.
//!
//! [`Fetcher`] is the trait; [`HttpFetcher`] the built-in implementation.
//! A fetcher never follows redirects: the engine sends each `Location`
//! through scope and dedup like a link.

mod auth;
mod connect;
pub mod cookies;
pub mod credentials;
mod decode;
pub(crate) mod headers;
mod http;
pub(crate) mod proxy;
mod tls;
mod tls_error;

use std::time::{Duration, SystemTime};

use ::http::header::HeaderMap;
use async_trait::async_trait;
use bytes::Bytes;
use crawlkeeper_model::{ErrorKind, Known, RecordError};
use url::Url;

pub use cookies::{CookieFileError, CookieJar};
pub use headers::{ExtraHeader, HeaderError};
pub use http::HttpFetcher;
pub use proxy::{ProxyConfig, ProxyError, ProxyUrl, split_list};

/// Turns a URL into a response. Implementations must be cheap to share:
/// the engine calls one fetcher from many tasks at once.
#[async_trait]
pub trait Fetcher: Send + Sync {
    /// Requests `url` with GET, reading at most the configured body size.
    async fn fetch(&self, url: &Url) -> Result<FetchResponse, FetchError>;

    /// Requests `url` like [`Fetcher::fetch`], conditionally when `known`
    /// holds an earlier copy's validators (`If-None-Match`,
    /// `If-Modified-Since`): a 304 then says that copy is current. The
    /// default ignores them: an unconditional request is always correct.
    async fn fetch_known(
        &self,
        url: &Url,
        known: Option<&Known>,
    ) -> Result<FetchResponse, FetchError> {
        let _ = known;
        self.fetch(url).await
    }
}

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
            .get(::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }

    /// The `Location` header, if it is valid text.
    pub fn location(&self) -> Option<&str> {
        self.headers
            .get(::http::header::LOCATION)
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

/// A request that produced no usable response.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct FetchError {
    /// When the request was sent.
    pub started_at: SystemTime,
    /// How long it took to fail.
    pub elapsed: Duration,
    /// What kind of failure.
    pub kind: ErrorKind,
    /// A short explanation.
    pub message: String,
}

impl FetchError {
    /// The error as it goes into a record.
    pub fn to_record_error(&self) -> RecordError {
        RecordError::new(self.kind, self.message.clone())
    }
}
