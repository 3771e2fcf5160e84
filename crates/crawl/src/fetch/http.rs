//! The built-in fetcher: reqwest over rustls, HTTP/1.1 and HTTP/2,
//! pooled connections, bounded bodies.

use std::error::Error as _;
use std::time::{Instant, SystemTime};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use crawlkeeper_model::ErrorKind;
use url::Url;

use super::{FetchError, FetchResponse, Fetcher};
use crate::config::FetchConfig;
use crate::guard::{AddressPolicy, Blocked, GuardedResolver};

/// The most a body buffer is given before any of the body arrived.
const INITIAL_BODY_BUFFER: usize = 64 * 1024;

/// Fetches over HTTP(S) with one shared connection pool, connecting only
/// where the SSRF guard allows.
#[derive(Clone, Debug)]
pub struct HttpFetcher {
    client: reqwest::Client,
    max_body_bytes: u64,
    guard: GuardedResolver,
}

/// The HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientBuildError {
    /// The TLS or connection settings were refused.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// A certificate file could not be read or parsed.
    #[error("cannot use certificate file '{path}': {why}")]
    Certificate {
        /// The file.
        path: std::path::PathBuf,
        /// What was wrong.
        why: String,
    },
}

impl HttpFetcher {
    /// A fetcher for `config`, in a crawl of `seeds` (whose networks the
    /// SSRF guard allows).
    pub fn new(config: &FetchConfig, seeds: &[Url]) -> Result<Self, ClientBuildError> {
        let policy = AddressPolicy::new(
            config.allow_nets.clone(),
            config.deny_nets.clone(),
            config.allow_private,
        );
        let overrides = config.resolve.iter().map(|r| (r.host.clone(), r.addr.ip()));
        // `--resolve` lives in the guarded resolver, not in the client's
        // own overrides, which would skip the guard.
        let guard = GuardedResolver::new(policy, overrides, seeds);
        let mut builder = reqwest::Client::builder()
            .user_agent(config.user_agent.clone())
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.connect_timeout)
            .timeout(config.request_timeout)
            .pool_idle_timeout(std::time::Duration::from_secs(30))
            .tcp_nodelay(true)
            .gzip(true)
            .brotli(true)
            .deflate(true)
            .no_proxy()
            .local_address(config.local_address)
            .dns_resolver(guard.clone());
        for path in &config.ca_certs {
            let bad = |why: String| ClientBuildError::Certificate {
                path: path.clone(),
                why,
            };
            let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
            let certs =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
            if certs.is_empty() {
                return Err(bad("no PEM certificate in it".to_owned()));
            }
            builder = builder.tls_certs_merge(certs);
        }
        Ok(Self {
            client: builder.build()?,
            max_body_bytes: config.max_body_bytes,
            guard,
        })
    }

    async fn read_body(
        &self,
        mut response: reqwest::Response,
    ) -> Result<(Bytes, bool), reqwest::Error> {
        let cap = usize::try_from(self.max_body_bytes).unwrap_or(usize::MAX);
        // Content-Length is the server's word, not a fact: a lying one once
        // made this preallocate up to the body limit (and abort the process
        // with a large limit). The buffer grows with what arrives; the
        // header only helps a small honest body to one allocation.
        let hint = response
            .content_length()
            .map_or(INITIAL_BODY_BUFFER, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            })
            .min(INITIAL_BODY_BUFFER)
            .min(cap);
        let mut body = BytesMut::with_capacity(hint);
        while let Some(chunk) = response.chunk().await? {
            let room = cap - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body.freeze(), true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body.freeze(), false))
    }
}

#[async_trait]
impl Fetcher for HttpFetcher {
    async fn fetch(&self, url: &Url) -> Result<FetchResponse, FetchError> {
        let started_at = SystemTime::now();
        let start = Instant::now();
        let fail = |e: reqwest::Error| FetchError {
            started_at,
            elapsed: start.elapsed(),
            kind: classify(&e),
            message: describe(&e),
        };
        if let Err(blocked) = self.guard.check_literal(url) {
            return Err(FetchError {
                started_at,
                elapsed: start.elapsed(),
                kind: ErrorKind::BlockedAddress,
                message: blocked.to_string(),
            });
        }
        let response = self.client.get(url.as_str()).send().await.map_err(fail)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let (body, truncated) = self.read_body(response).await.map_err(fail)?;
        Ok(FetchResponse {
            started_at,
            elapsed: start.elapsed(),
            status,
            headers,
            body,
            truncated,
        })
    }
}

fn classify(e: &reqwest::Error) -> ErrorKind {
    let mut source = e.source();
    while let Some(s) = source {
        if s.is::<Blocked>() {
            return ErrorKind::BlockedAddress;
        }
        source = s.source();
    }
    if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_connect() {
        ErrorKind::Connect
    } else if e.is_builder() {
        ErrorKind::InvalidUrl
    } else if e.is_body() || e.is_decode() {
        ErrorKind::Body
    } else {
        ErrorKind::Http
    }
}

/// The error and its causes on one line.
fn describe(e: &reqwest::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}
