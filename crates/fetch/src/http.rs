//! The built-in fetcher: hyper's client over rustls, HTTP/1.1 and
//! HTTP/2, pooled connections, bounded bodies, every connection through
//! the SSRF guard ([`super::connect`]).

use std::error::Error;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use crawlkeeper_model::{ErrorKind, Known};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::{Body as _, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpInfo;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use url::Url;

use http::header::{
    ACCEPT, ACCEPT_ENCODING, AUTHORIZATION, COOKIE, HeaderMap, HeaderValue, IF_MODIFIED_SINCE,
    IF_NONE_MATCH, PROXY_AUTHORIZATION, SET_COOKIE, USER_AGENT,
};

use super::connect::{ConnectTimeout, Connector, Tcp};
use super::credentials::{CREDENTIAL_HEADERS, CredentialHosts, SiteCredential};
use super::decode::{Coding, DecodeError, Decoder};
use super::tls::{TlsConfigError, client_configs};
use super::{CookieJar, FetchError, FetchResponse, Fetcher, ProxyConfig, WireCapture};
use crate::config::{FetchConfig, HttpVersion};
use crate::guard::{AddressPolicy, Blocked, GuardedResolver};
use crate::polite::{AddressCache, Key, Permit, Politeness};

/// The most a body buffer is given before any of the body arrived.
const INITIAL_BODY_BUFFER: usize = 64 * 1024;

/// Fetches over HTTP(S) with one shared connection pool, connecting only
/// where the SSRF guard allows.
#[derive(Clone, Debug)]
pub struct HttpFetcher {
    client: Client<Connector, Empty<Bytes>>,
    connector: Connector,
    max_body_bytes: u64,
    /// From sending a request to the end of its body.
    request_timeout: Duration,
    guard: GuardedResolver,
    /// Keep the request and response as sent and received (for archives).
    capture: bool,
    /// The headers every request carries (the host aside).
    headers: HeaderMap,
    /// The same less the user's credential-bearing ones, for hosts
    /// credentials do not go to.
    open_headers: HeaderMap,
    /// Where the user's credential-bearing headers go.
    credential_hosts: CredentialHosts,
    /// The seeds' own users and passwords, for their hosts.
    site_credentials: Vec<SiteCredential>,
    /// Which requests go through a proxy.
    proxy: ProxyConfig,
    /// The crawl's cookies, unless the jar is off.
    jar: Option<std::sync::Arc<CookieJar>>,
    /// The process's bounds per host and per address, with this crawl's
    /// limits, if any.
    polite: Option<Polite>,
}

/// The bounds a fetcher's requests enter (see [`crate::polite`]).
#[derive(Clone, Debug)]
struct Polite {
    gates: Arc<Politeness>,
    per_host: u32,
    per_ip: u32,
    /// Each host's address, as last looked up.
    addresses: Arc<AddressCache>,
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
    /// The TLS settings were refused, or a certificate file could not be
    /// read or parsed.
    #[error(transparent)]
    Tls(#[from] TlsConfigError),
    /// The user agent cannot be a header value.
    #[error("the user agent must be visible ASCII text")]
    UserAgent,
    /// The cookie file could not be loaded.
    #[error("cannot use the cookie file: {0}")]
    Cookies(#[from] super::CookieFileError),
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
        let mut open_headers = headers.clone();
        for name in &CREDENTIAL_HEADERS {
            if config.headers.iter().any(|h| h.name == *name) {
                open_headers.remove(name);
            }
        }
        let credential_hosts =
            CredentialHosts::new(seeds, &config.header_hosts, config.header_everywhere);
        let mut tcp = Tcp::new_with_resolver(guard.clone());
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(config.connect_timeout));
        tcp.set_local_address(config.local_address);
        let tls = client_configs(&config.ca_certs, config.http_version)?;
        let connector = Connector::new(
            tcp,
            tls,
            &config.proxy,
            guard.clone(),
            config.connect_timeout,
            headers.get(USER_AGENT).cloned(),
        );
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30));
        if config.http_version == HttpVersion::Http2 {
            // Prior knowledge: HTTP/2 from the first byte, on plain HTTP
            // too (over TLS, ALPN offers `h2` only).
            builder.http2_only(true);
        }
        let jar = match (&config.cookies.jar, &config.cookies.file) {
            (false, _) => None,
            (true, Some(text)) => Some(CookieJar::from_netscape(text)?),
            (true, None) => Some(CookieJar::new()),
        };
        Ok(Self {
            jar: jar.map(std::sync::Arc::new),
            client: builder.build(connector.clone()),
            connector,
            max_body_bytes: config.max_body_bytes,
            request_timeout: config.request_timeout,
            guard,
            capture: config.capture,
            headers,
            open_headers,
            credential_hosts,
            site_credentials: config.site_credentials.clone(),
            proxy: config.proxy.clone(),
            polite: None,
        })
    }

    /// The same fetcher, its requests bounded by `gates` (shared with the
    /// process's other crawls): at most `per_host` in flight per host and
    /// `per_ip` per IP address, whoever sent them.
    pub fn polite(mut self, gates: Arc<Politeness>, per_host: usize, per_ip: usize) -> Self {
        let limit = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).max(1);
        self.polite = Some(Polite {
            gates,
            per_host: limit(per_host),
            per_ip: limit(per_ip),
            addresses: Arc::default(),
        });
        self
    }

    /// Waits for `url`'s places at its host and at its address (the
    /// first its name resolves to, what a connection tries first; none
    /// when it does not resolve here, as through a proxy that resolves
    /// names itself): held until the returned permits are dropped.
    async fn enter(&self, url: &Url) -> Option<(Permit, Option<Permit>)> {
        let p = self.polite.as_ref()?;
        // The URL crate writes a domain in lower case already.
        let host = url.host_str()?.to_owned();
        let ip = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => p.addresses.of(&host, &self.guard).await,
        };
        let by_host = p.gates.enter(Key::Host(host), p.per_host).await;
        let by_ip = match ip {
            Some(ip) => Some(p.gates.enter(Key::Ip(ip), p.per_ip).await),
            None => None,
        };
        Some((by_host, by_ip))
    }

    /// Reads the body as it arrives, decoding its content coding with the
    /// limit applied to both the bytes received and the bytes decoded;
    /// keeps the raw bytes too when capturing. Gives up at `deadline`.
    async fn read_body(
        &self,
        body: &mut Incoming,
        headers: &HeaderMap,
        capture: bool,
        deadline: tokio::time::Instant,
    ) -> Result<Body, BodyError> {
        let cap = usize::try_from(self.max_body_bytes).unwrap_or(usize::MAX);
        // Content-Length is the server's word, not a fact: a lying one once
        // made this preallocate up to the body limit (and abort the process
        // with a large limit). The buffer grows with what arrives; the
        // header only helps a small honest body to one allocation.
        let hint = body
            .size_hint()
            .exact()
            .map_or(INITIAL_BODY_BUFFER, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            })
            .min(INITIAL_BODY_BUFFER)
            .min(cap);
        let coding = Coding::of(headers);
        let mut decoder = Decoder::new(coding, cap, hint);
        let mut raw =
            (capture && coding != Coding::Identity).then(|| BytesMut::with_capacity(hint));
        // The bytes received count against the limit too: endless empty
        // gzip members or deflate blocks decode to nothing.
        let mut received = 0usize;
        let mut cut = false;
        loop {
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return Err(BodyError::TimedOut),
                Ok(None) => break,
                Ok(Some(frame)) => frame?,
            };
            // Trailers carry no body.
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
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

    /// The client's headers for a request to `url`: the user's
    /// credential-bearing ones only where they may go.
    fn headers_for(&self, url: &Url) -> &HeaderMap {
        if self.credential_hosts.allows(url) {
            &self.headers
        } else {
            &self.open_headers
        }
    }

    /// The `Authorization` of a request to `url` without one from the
    /// user: the URL's own user and password, else its host's seed's.
    fn authorization(&self, url: &Url) -> Option<HeaderValue> {
        super::auth::of_url(url).or_else(|| {
            let host = url.host_str()?;
            self.site_credentials
                .iter()
                .find(|c| c.host.eq_ignore_ascii_case(host))
                .map(SiteCredential::authorization)
        })
    }

    /// The headers of a request: `base` (the client's), less those `extra`
    /// (the conditions and cookies of this request) replaces, then `extra`.
    fn headers_with(base: &HeaderMap, extra: HeaderMap) -> HeaderMap {
        if extra.is_empty() {
            return base.clone();
        }
        let mut all = HeaderMap::with_capacity(base.len() + extra.len());
        for (name, value) in base {
            if !extra.contains_key(name) {
                all.append(name, value.clone());
            }
        }
        let mut last = None;
        for (name, value) in extra {
            // Later values of a name come without it.
            if let Some(name) = name {
                last = Some(name);
            }
            if let Some(name) = &last {
                all.append(name, value);
            }
        }
        all
    }

    /// Puts the jar's cookies for `url` into `extra`, after the user's own
    /// `Cookie` header in `base` if it has one (a request carries one).
    fn add_cookies(jar: &CookieJar, url: &Url, base: &HeaderMap, extra: &mut HeaderMap) {
        let Some(from_jar) = jar.cookies(url) else {
            return;
        };
        let value = match base.get(COOKIE) {
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
}

/// The request head as this client sends `headers` for `url` (with the
/// `host` the client adds last).
fn request_head(url: &Url, version: http::Version, headers: &HeaderMap) -> Bytes {
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
    for (name, value) in headers {
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
    Http(#[from] hyper::Error),
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("the body did not arrive in time")]
    TimedOut,
}

/// The protocol as a status or request line spells it in an archive:
/// `HTTP/1.0`, or `HTTP/1.1` for HTTP/1.1 and later versions (HTTP/2 has
/// no status line; WARC readers such as warcio accept only these two).
fn version_text(v: http::Version) -> &'static str {
    match v {
        http::Version::HTTP_09 | http::Version::HTTP_10 => "HTTP/1.0",
        _ => "HTTP/1.1",
    }
}

/// The status line and headers of a response as received (names as the
/// client gives them, lower case).
fn response_head(parts: &http::response::Parts) -> Bytes {
    let status = parts.status;
    let mut head = format!(
        "{} {} {}\r\n",
        version_text(parts.version),
        status.as_str(),
        status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    for (name, value) in &parts.headers {
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
        let failed = |kind: ErrorKind, message: String| FetchError {
            started_at,
            elapsed: start.elapsed(),
            kind,
            message,
        };
        // The messages are those reqwest gave before #31, so that records
        // read as they did.
        let sending = || format!("error sending request for url ({url})");
        const READING: &str = "error decoding response body";
        let checked = match self.proxy.proxy_for(url) {
            Some(_) => self.guard.check_proxied(url).await,
            None => self.guard.check_literal(url),
        };
        if let Err(blocked) = checked {
            return Err(failed(ErrorKind::BlockedAddress, blocked.to_string()));
        }
        // Held until the body is read (the end of this call).
        let _places = self.enter(url).await;
        let uri: http::Uri = url
            .as_str()
            .parse()
            .map_err(|e| failed(ErrorKind::InvalidUrl, format!("cannot request {url}: {e}")))?;
        let mut extra = conditions(known);
        let base = self.headers_for(url);
        if !base.contains_key(AUTHORIZATION)
            && let Some(auth) = self.authorization(url)
        {
            extra.insert(AUTHORIZATION, auth);
        }
        if let Some(jar) = &self.jar {
            Self::add_cookies(jar, url, base, &mut extra);
        }
        let mut request = http::Request::new(Empty::new());
        *request.uri_mut() = uri;
        *request.headers_mut() = Self::headers_with(base, extra);
        let sent = self.capture.then(|| request.headers().clone());
        if let Some(auth) = self.connector.proxy_authorization(url) {
            request
                .headers_mut()
                .insert(PROXY_AUTHORIZATION, auth.clone());
        }
        let deadline = tokio::time::Instant::now() + self.request_timeout;
        let response = match tokio::time::timeout_at(deadline, self.client.request(request)).await {
            Err(_) => {
                let message = format!("{}: {TIMED_OUT}", sending());
                return Err(failed(ErrorKind::Timeout, message));
            }
            Ok(Err(e)) => return Err(failed(classify(&e), describe(sending(), &e))),
            Ok(Ok(response)) => response,
        };
        let (parts, mut body) = response.into_parts();
        if let Some(jar) = &self.jar {
            jar.set_cookies(&mut parts.headers.get_all(SET_COOKIE).iter(), url);
        }
        let heads = sent.map(|sent| {
            (
                request_head(url, parts.version, &sent),
                response_head(&parts),
            )
        });
        let remote = parts
            .extensions
            .get::<HttpInfo>()
            .map(HttpInfo::remote_addr);
        let body = self
            .read_body(&mut body, &parts.headers, self.capture, deadline)
            .await
            .map_err(|e| match e {
                BodyError::TimedOut => failed(
                    ErrorKind::Timeout,
                    format!("{READING}: request or response body error: {TIMED_OUT}"),
                ),
                BodyError::Http(e) => failed(classify_body(&e), describe(READING.into(), &e)),
                BodyError::Decode(e) => failed(ErrorKind::Body, e.to_string()),
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
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: body.decoded,
            truncated: body.truncated,
            capture,
        })
    }
}

/// What kind of failure a request that got no response is: one of the
/// guard's refusals, a timeout, a refused certificate, a connection that
/// could not be made, or another protocol error.
fn classify(e: &hyper_util::client::legacy::Error) -> ErrorKind {
    let mut source: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<Blocked>() {
            return ErrorKind::BlockedAddress;
        }
        if s.is::<ConnectTimeout>() {
            return ErrorKind::Timeout;
        }
        source = s.source();
    }
    if super::tls_error::certificate_error(e).is_some() {
        ErrorKind::Certificate
    } else if e.is_connect() {
        ErrorKind::Connect
    } else {
        ErrorKind::Http
    }
}

/// What kind of failure reading a body is: a timeout or a broken body.
fn classify_body(e: &hyper::Error) -> ErrorKind {
    if e.is_timeout() {
        ErrorKind::Timeout
    } else {
        ErrorKind::Body
    }
}

/// What a timeout says.
const TIMED_OUT: &str = "operation timed out";

/// What failed (`top`), then the error and its causes, on one line.
fn describe(top: String, e: &(dyn Error + 'static)) -> String {
    let mut message = match super::tls_error::certificate_error(e) {
        Some(why) => format!("the server's TLS certificate was refused: {why}; {top}"),
        None => top,
    };
    let mut source = Some(e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}
