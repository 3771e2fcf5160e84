//! How the fetcher talks HTTP: timeouts, body limit, the SSRF guard's
//! networks, headers and credentials, proxies, cookies, HTTP versions.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crawlkeeper_model::duration;

use crate::guard::Cidr;

/// Default user agent: `crawlkeeper/<version>`.
pub const DEFAULT_USER_AGENT: &str = concat!("crawlkeeper/", env!("CARGO_PKG_VERSION"));
/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default whole-request timeout (headers and body).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default maximum body size, counted after decompression: 10 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 10 * 1024 * 1024;

/// How the fetcher talks HTTP.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FetchConfig {
    /// The `User-Agent` header. Default `crawlkeeper/<version>`.
    pub user_agent: String,
    /// Time allowed to open a connection. Default 10 s.
    #[serde(with = "duration::text")]
    pub connect_timeout: Duration,
    /// Time allowed for a whole request, body included. Default 30 s.
    #[serde(with = "duration::text")]
    pub request_timeout: Duration,
    /// Bodies longer than this (after decompression) are cut. Default 10 MiB.
    pub max_body_bytes: u64,
    /// Host names resolved to fixed addresses instead of DNS, like curl's
    /// `--resolve`.
    pub resolve: Vec<ResolveOverride>,
    /// PEM files of extra certificate authorities to trust for HTTPS, beside
    /// the system's.
    pub ca_certs: Vec<std::path::PathBuf>,
    /// Networks always allowed by the SSRF guard.
    pub allow_nets: Vec<Cidr>,
    /// Networks never connected to, whatever else allows them.
    pub deny_nets: Vec<Cidr>,
    /// Turns the SSRF guard's special-purpose check off (`deny_nets` still
    /// applies). Default false.
    pub allow_private: bool,
    /// The local address requests leave from (a machine with several);
    /// default: the system's choice.
    pub local_address: Option<std::net::IpAddr>,
    /// Keep each request and response as sent and received (for WARC
    /// archives). Default false.
    pub capture: bool,
    /// Headers sent with every request, robots.txt and sitemaps included
    /// (`--header`): their values are secrets, never shown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<crate::headers::ExtraHeader>,
    /// Hosts besides the seeds' that the `--header`s carrying credentials
    /// (`Authorization`, `Cookie`, `Proxy-Authorization`) go to
    /// (`--header-host`); other headers go everywhere. Left out of the
    /// serialized configuration when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub header_hosts: Vec<String>,
    /// `--header-everywhere`: the credential-bearing `--header`s go to every
    /// host. Default false (left out when false).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub header_everywhere: bool,
    /// The users and passwords the seed URLs carried
    /// (`http://user:pw@host/`), taken out of them: each is sent as basic
    /// authentication to its own host only. Secrets, stored with the job
    /// and never shown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub site_credentials: Vec<crate::credentials::SiteCredential>,
    /// Forward proxies (`--proxy`, `--no-proxy`, the environment).
    #[serde(skip_serializing_if = "crate::proxy::ProxyConfig::is_unset")]
    pub proxy: crate::proxy::ProxyConfig,
    /// The cookie jar (`--cookies`, `--no-cookies`).
    #[serde(skip_serializing_if = "CookieConfig::is_default")]
    pub cookies: CookieConfig,
    /// Which HTTP versions are spoken (`--http1-only`, `--http2`). Left
    /// out of the serialized configuration when the default.
    #[serde(skip_serializing_if = "HttpVersion::is_default")]
    pub http_version: HttpVersion,
}

/// Which HTTP versions the fetcher speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HttpVersion {
    /// HTTPS negotiates by ALPN (HTTP/2 where the server offers it, else
    /// HTTP/1.1); plain `http://` speaks HTTP/1.1. The default.
    #[default]
    Negotiate,
    /// HTTP/1.1 only, over TLS too (`--http1-only`).
    Http1Only,
    /// HTTP/2 only (`--http2`): offered alone by ALPN over TLS, and with
    /// prior knowledge (h2c) on plain `http://`.
    Http2,
}

impl HttpVersion {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The crawl's cookie jar: one per crawling process (a cluster's Runner
/// keeps the cookies of the hosts of its shards), following RFC 6265 with
/// bounds a hostile server cannot push past.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CookieConfig {
    /// Keep the cookies servers set and send them back. Default true.
    pub jar: bool,
    /// A Netscape cookie file's text (`--cookies FILE`, what curl and
    /// browsers' exporters write), loaded into the jar at the start: a
    /// secret, stored with the job and never shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl Default for CookieConfig {
    fn default() -> Self {
        Self {
            jar: true,
            file: None,
        }
    }
}

impl CookieConfig {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl std::fmt::Debug for CookieConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CookieConfig")
            .field("jar", &self.jar)
            .field("file", &self.file.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// A host name pinned to an address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveOverride {
    /// The host name as it appears in URLs.
    pub host: String,
    /// The address (and port) to connect to instead.
    pub addr: SocketAddr,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            resolve: Vec::new(),
            ca_certs: Vec::new(),
            allow_nets: Vec::new(),
            deny_nets: Vec::new(),
            allow_private: false,
            local_address: None,
            capture: false,
            headers: Vec::new(),
            header_hosts: Vec::new(),
            header_everywhere: false,
            site_credentials: Vec::new(),
            proxy: crate::proxy::ProxyConfig::default(),
            cookies: CookieConfig::default(),
            http_version: HttpVersion::default(),
        }
    }
}

impl FetchConfig {
    /// What is wrong with the settings, one sentence each: an empty body
    /// limit or user agent, a zero timeout.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.max_body_bytes == 0 {
            problems.push("max_body_bytes must be at least 1".to_owned());
        }
        if self.user_agent.trim().is_empty() {
            problems.push("user_agent must not be empty".to_owned());
        }
        if self.request_timeout.is_zero() || self.connect_timeout.is_zero() {
            problems.push("timeouts must be longer than zero".to_owned());
        }
        problems
    }
}
