//! An authority is scheme + host + port, the unit the crawler schedules and
//! is polite to.

use std::fmt;

use serde::{Deserialize, Serialize};
use url::Url;

/// Scheme, host and port of a URL, with the port always explicit.
///
/// Written as `scheme://host:port` (the port is kept even when it is the
/// scheme's default so every authority has one spelling).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Authority {
    scheme: String,
    host: String,
    port: u16,
}

/// Why a URL or string has no authority.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthorityError {
    /// The URL has no host (`mailto:`, `data:` and the like).
    #[error("URL '{0}' has no host")]
    NoHost(String),
    /// The URL's scheme has no known default port and none was given.
    #[error("URL '{0}' has no port and its scheme has no default port")]
    NoPort(String),
    /// The string is not a URL.
    #[error("'{0}' is not an authority (expected scheme://host:port)")]
    Invalid(String),
}

impl Authority {
    /// The authority of `url`.
    pub fn of(url: &Url) -> Result<Self, AuthorityError> {
        let host = url
            .host_str()
            .ok_or_else(|| AuthorityError::NoHost(url.to_string()))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| AuthorityError::NoPort(url.to_string()))?;
        Ok(Self {
            scheme: url.scheme().to_owned(),
            host: host.to_owned(),
            port,
        })
    }

    /// The scheme, lower case (`http`, `https`).
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// The host as the URL spells it (lower case; IPv6 in brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, explicit even when it is the scheme's default.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of this authority's robots.txt.
    pub fn robots_url(&self) -> Url {
        // Cannot fail: scheme, host and port came from a parsed URL.
        Url::parse(&format!("{self}/robots.txt")).expect("authority forms a valid URL")
    }
}

impl fmt::Display for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

impl From<Authority> for String {
    fn from(a: Authority) -> Self {
        a.to_string()
    }
}

impl TryFrom<String> for Authority {
    type Error = AuthorityError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        let url = Url::parse(&s).map_err(|_| AuthorityError::Invalid(s.clone()))?;
        Self::of(&url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_port_is_made_explicit() {
        let a = Authority::of(&Url::parse("https://Example.ORG/a?b").unwrap()).unwrap();
        assert_eq!(a.to_string(), "https://example.org:443");
        assert_eq!(a.port(), 443);
        assert_eq!(a.robots_url().as_str(), "https://example.org/robots.txt");
    }

    #[test]
    fn explicit_port_is_kept() {
        let a = Authority::of(&Url::parse("http://127.0.0.1:8080/x").unwrap()).unwrap();
        assert_eq!(a.to_string(), "http://127.0.0.1:8080");
        assert_eq!(a.robots_url().as_str(), "http://127.0.0.1:8080/robots.txt");
    }

    #[test]
    fn url_without_host_is_an_error() {
        let err = Authority::of(&Url::parse("mailto:a@b.c").unwrap()).unwrap_err();
        assert!(matches!(err, AuthorityError::NoHost(_)));
    }

    #[test]
    fn serde_round_trip() {
        let a = Authority::of(&Url::parse("http://[::1]:81/").unwrap()).unwrap();
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, "\"http://[::1]:81\"");
        assert_eq!(serde_json::from_str::<Authority>(&json).unwrap(), a);
    }
}
