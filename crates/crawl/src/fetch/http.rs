//! The built-in fetcher: reqwest over rustls, HTTP/1.1 and HTTP/2,
//! pooled connections, bounded bodies.

use std::error::Error as _;
use std::time::{Instant, SystemTime};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use crawlkeeper_model::{ErrorKind, Known};
use url::Url;

use reqwest::header::{
    ACCEPT, ACCEPT_ENCODING, COOKIE, HeaderMap, HeaderValue, IF_MODIFIED_SINCE, IF_NONE_MATCH,
    SET_COOKIE, USER_AGENT,
};

use super::decode::{Coding, DecodeError, Decoder};
use super::{CookieJar, FetchError, FetchResponse, Fetcher, ProxyConfig, WireCapture};
use crate::config::{FetchConfig, HttpVersion};
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
    /// Keep the request and response as sent and received (for archives).
    capture: bool,
    /// The headers every request carries (the host aside).
    headers: HeaderMap,
    /// Which requests go through a proxy.
    proxy: ProxyConfig,
    /// The crawl's cookies, unless the jar is off.
    jar: Option<std::sync::Arc<CookieJar>>,
}

/// The headers every request carries, in the order they are sent: the
/// crawler's, then the user's (`--header`; one of the same name, such as
/// `Accept`, replaces the crawler's).
fn request_headers(config: &FetchConfig) -> Result<HeaderMap, ClientBuildError> {
    let mut h = HeaderMap::new();
    let agent =
        HeaderValue::from_str(&config.user_agent).map_err(|_| ClientBuildError::UserAgent)?;
    h.insert(USER_AGENT, agent);
    h.insert(ACCEPT, HeaderValue::from_static("*/*"));
    h.insert(
        ACCEPT_ENCODING,
        HeaderValue::from_static("gzip, deflate, br"),
    );
    let mut replaced = Vec::new();
    for extra in &config.headers {
        if !replaced.contains(&extra.name) {
            h.remove(&extra.name);
            replaced.push(extra.name.clone());
        }
        h.append(extra.name.clone(), extra.value.clone());
    }
    Ok(h)
}

/// The HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientBuildError {
    /// The TLS or connection settings were refused.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// The user agent cannot be a header value.
    #[error("the user agent must be visible ASCII text")]
    UserAgent,
    /// The cookie file could not be loaded.
    #[error("cannot use the cookie file: {0}")]
    Cookies(#[from] super::CookieFileError),
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
        // own overrides, which would skip the guard. The proxies' names
        // are the user's to allow; what goes through them is judged per
        // request (`check_proxied`).
        let proxies = [&config.proxy.http, &config.proxy.https];
        let trusted = proxies.iter().filter_map(|p| p.as_ref()?.host_name());
        let guard = GuardedResolver::trusting(policy, overrides, seeds, trusted);
        let headers = request_headers(config)?;
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.connect_timeout)
            .timeout(config.request_timeout)
            .pool_idle_timeout(std::time::Duration::from_secs(30))
            .tcp_nodelay(true)
            // Bodies are decoded here (bounded, and kept raw for archives).
            .gzip(false)
            .brotli(false)
            .deflate(false)
            .default_headers(headers.clone())
            .no_proxy()
            .local_address(config.local_address)
            .dns_resolver(guard.clone());
        builder = match config.http_version {
            HttpVersion::Negotiate => builder,
            HttpVersion::Http1Only => builder.http1_only(),
            HttpVersion::Http2 => builder.http2_prior_knowledge(),
        };
        if config.proxy.is_set() {
            let proxies = config.proxy.clone();
            builder = builder.proxy(reqwest::Proxy::custom(move |url| {
                proxies.proxy_for(url).map(|p| p.url().clone())
            }));
        }
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
        let jar = match (&config.cookies.jar, &config.cookies.file) {
            (false, _) => None,
            (true, Some(text)) => Some(CookieJar::from_netscape(text)?),
            (true, None) => Some(CookieJar::new()),
        };
        Ok(Self {
            jar: jar.map(std::sync::Arc::new),
            client: builder.build()?,
            max_body_bytes: config.max_body_bytes,
            guard,
            capture: config.capture,
            headers,
            proxy: config.proxy.clone(),
        })
    }

    /// Reads the body as it arrives, decoding its content coding with the
    /// limit applied to both the bytes received and the bytes decoded;
    /// keeps the raw bytes too when capturing.
    async fn read_body(
        &self,
        response: &mut reqwest::Response,
        capture: bool,
    ) -> Result<Body, BodyError> {
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
        let coding = Coding::of(response.headers());
        let mut decoder = Decoder::new(coding, cap, hint);
        let mut raw =
            (capture && coding != Coding::Identity).then(|| BytesMut::with_capacity(hint));
        // The bytes received count against the limit too: endless empty
        // gzip members or deflate blocks decode to nothing.
        let mut received = 0usize;
        let mut cut = false;
        while let Some(chunk) = response.chunk().await? {
            let room = cap - received;
            let taken = &chunk[..room.min(chunk.len())];
            received += taken.len();
            if let Some(raw) = raw.as_mut() {
                raw.extend_from_slice(taken);
            }
            decoder.push_bytes(chunk.slice(..taken.len()))?;
            if chunk.len() > room || decoder.is_full() {
                cut = true;
                break;
            }
        }
        let decoded = decoder.finish(!cut)?;
        let raw = match raw {
            Some(raw) => raw.freeze(),
            None => decoded.body.clone(),
        };
        Ok(Body {
            decoded: decoded.body,
            truncated: cut || decoded.truncated,
            raw: capture.then_some(raw),
        })
    }

    /// Puts the jar's cookies for `url` into `extra`, after the user's own
    /// `Cookie` header if they gave one (a request carries one).
    fn add_cookies(&self, jar: &CookieJar, url: &Url, extra: &mut HeaderMap) {
        let Some(from_jar) = jar.cookies(url) else {
            return;
        };
        let value = match self.headers.get(COOKIE) {
            Some(given) => {
                let mut both = given.as_bytes().to_vec();
                both.extend_from_slice(b"; ");
                both.extend_from_slice(from_jar.as_bytes());
                HeaderValue::from_bytes(&both).unwrap_or(from_jar)
            }
            None => from_jar,
        };
        extra.insert(COOKIE, value);
    }

    /// The request head as this client sends it for `url` (the headers it
    /// sets itself and the `host` the connection adds).
    fn request_head(&self, url: &Url, version: reqwest::Version, extra: &HeaderMap) -> Bytes {
        let mut target = url.path().to_owned();
        if let Some(q) = url.query() {
            target.push('?');
            target.push_str(q);
        }
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => String::new(),
        };
        let mut head = format!("GET {target} {}\r\n", version_text(version));
        // A header of the request replaces the client's of that name (as
        // the client does when it sends them).
        let defaults = self.headers.iter().filter(|(n, _)| !extra.contains_key(*n));
        for (name, value) in defaults.chain(extra) {
            head.push_str(name.as_str());
            head.push_str(": ");
            head.push_str(&String::from_utf8_lossy(value.as_bytes()));
            head.push_str("\r\n");
        }
        head.push_str("host: ");
        head.push_str(&host);
        head.push_str("\r\n\r\n");
        Bytes::from(head)
    }
}

/// A body read: decoded, and raw when captured.
struct Body {
    decoded: Bytes,
    truncated: bool,
    raw: Option<Bytes>,
}

/// Reading a body failed.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

/// The protocol as a status or request line spells it in an archive:
/// `HTTP/1.0`, or `HTTP/1.1` for HTTP/1.1 and later versions (HTTP/2 has
/// no status line; WARC readers such as warcio accept only these two).
fn version_text(v: reqwest::Version) -> &'static str {
    match v {
        reqwest::Version::HTTP_09 | reqwest::Version::HTTP_10 => "HTTP/1.0",
        _ => "HTTP/1.1",
    }
}

/// The status line and headers of `response` as received (names as the
/// client gives them, lower case).
fn response_head(response: &reqwest::Response) -> Bytes {
    let status = response.status();
    let mut head = format!(
        "{} {} {}\r\n",
        version_text(response.version()),
        status.as_str(),
        status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    for (name, value) in response.headers() {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    Bytes::from(head)
}

/// The headers making a request conditional on an earlier copy (values
/// that are no valid header are left out: the request is then plain).
fn conditions(known: Option<&Known>) -> HeaderMap {
    let mut h = HeaderMap::new();
    let Some(k) = known else {
        return h;
    };
    let value = |v: &Option<String>| v.as_deref().and_then(|v| HeaderValue::from_str(v).ok());
    if let Some(v) = value(&k.etag) {
        h.insert(IF_NONE_MATCH, v);
    }
    if let Some(v) = value(&k.last_modified) {
        h.insert(IF_MODIFIED_SINCE, v);
    }
    h
}

#[async_trait]
impl Fetcher for HttpFetcher {
    async fn fetch(&self, url: &Url) -> Result<FetchResponse, FetchError> {
        self.fetch_known(url, None).await
    }

    async fn fetch_known(
        &self,
        url: &Url,
        known: Option<&Known>,
    ) -> Result<FetchResponse, FetchError> {
        let started_at = SystemTime::now();
        let start = Instant::now();
        let fail = |e: reqwest::Error| FetchError {
            started_at,
            elapsed: start.elapsed(),
            kind: classify(&e),
            message: describe(&e),
        };
        let checked = match self.proxy.proxy_for(url) {
            Some(_) => self.guard.check_proxied(url).await,
            None => self.guard.check_literal(url),
        };
        if let Err(blocked) = checked {
            return Err(FetchError {
                started_at,
                elapsed: start.elapsed(),
                kind: ErrorKind::BlockedAddress,
                message: blocked.to_string(),
            });
        }
        let mut extra = conditions(known);
        if let Some(jar) = &self.jar {
            self.add_cookies(jar, url, &mut extra);
        }
        let mut response = self
            .client
            .get(url.clone())
            .headers(extra.clone())
            .send()
            .await
            .map_err(fail)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        if let Some(jar) = &self.jar {
            jar.set_cookies(&mut headers.get_all(SET_COOKIE).iter(), url);
        }
        let heads = self.capture.then(|| {
            (
                self.request_head(url, response.version(), &extra),
                response_head(&response),
            )
        });
        let remote = response.remote_addr();
        let body = self
            .read_body(&mut response, self.capture)
            .await
            .map_err(|e| match e {
                BodyError::Http(e) => fail(e),
                BodyError::Decode(e) => FetchError {
                    started_at,
                    elapsed: start.elapsed(),
                    kind: ErrorKind::Body,
                    message: e.to_string(),
                },
            })?;
        let capture = heads
            .zip(body.raw)
            .map(|((request_head, response_head), raw_body)| {
                Box::new(WireCapture {
                    request_head,
                    response_head,
                    raw_body,
                    remote,
                })
            });
        Ok(FetchResponse {
            started_at,
            elapsed: start.elapsed(),
            status,
            headers,
            body: body.decoded,
            truncated: body.truncated,
            capture,
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
    if super::tls_error::certificate_error(e).is_some() {
        return ErrorKind::Certificate;
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
    let mut message = match super::tls_error::certificate_error(e) {
        Some(why) => format!("the server's TLS certificate was refused: {why}; {e}"),
        None => e.to_string(),
    };
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}
