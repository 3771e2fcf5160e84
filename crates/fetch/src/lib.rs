//! The first stage of the pipeline: turning a URL into a response.
//!
//! [`Fetcher`] is the trait; [`HttpFetcher`] the built-in implementation.
//! A fetcher never follows redirects: the engine sends each `Location`
//! through scope and dedup like a link.

//!
//! | module | what it does |
//! |---|---|
//! | [`config`] | every setting of the fetcher, with documented defaults |
//! | [`guard`] | the SSRF guard: which addresses a crawl may connect to |
//! | [`cookies`] | the crawl's cookie jar (RFC 6265), bounded, and Netscape cookie files |
//! | [`credentials`] | where credentials go: credential headers and seed passwords, per host |
//! | [`polite`] | requests in flight bounded per host and per IP address across a process's crawls (and a cluster's) |
//! | the rest (private) | the HTTP client, its connector and TLS, proxies, headers, content decoding |

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

mod auth;
pub mod config;
mod connect;
pub mod cookies;
pub mod credentials;
mod decode;
pub mod guard;
pub(crate) mod headers;
mod http;
pub mod polite;
pub(crate) mod proxy;
mod tls;
mod tls_error;

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use crawlkeeper_model::{ErrorKind, Known, RecordError};
use url::Url;

pub use config::FetchConfig;
pub use cookies::{CookieFileError, CookieJar};
pub use crawlkeeper_model::response::{FetchResponse, WireCapture};
pub use headers::{ExtraHeader, HeaderError};
pub use http::HttpFetcher;
pub use polite::Politeness;
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
