//! Forward proxies (`--proxy`, `--no-proxy`, and the environment variables
//! as curl reads them): which proxy a request goes through, if any.
//!
//! A proxy resolves the names it is asked for itself, so the SSRF guard
//! cannot see the address a proxied request reaches: the fetcher resolves
//! the target's name locally first and refuses it when any of its
//! addresses is denied (see [`crate::guard::GuardedResolver::check_proxied`]).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use url::{Host, Url};

use crate::guard::Cidr;

/// A proxy's address: `http://`, `https://`, `socks5://` (names resolved
/// by the crawler) or `socks5h://` (names resolved by the proxy), with
/// credentials if it asks for them. Shown without its password.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyUrl(Url);

/// Why a proxy setting was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// Not a URL.
    #[error("'{0}' is not a proxy URL (e.g. http://proxy.local:3128)")]
    NotUrl(String),
    /// A scheme no proxy speaks here.
    #[error("proxy scheme '{0}' is not supported: use http, https, socks5 or socks5h")]
    Scheme(String),
    /// No host.
    #[error("the proxy URL has no host")]
    NoHost,
}

impl ProxyUrl {
    /// The URL, credentials included (for the HTTP client only).
    pub fn url(&self) -> &Url {
        &self.0
    }

    /// This proxy with its password, if any, shown as `***`.
    pub fn redacted(&self) -> Self {
        let mut shown = self.0.clone();
        if shown.password().is_some() {
            let _ = shown.set_password(Some(super::credentials::HIDDEN));
        }
        Self(shown)
    }

    /// The proxy's host name, when it is a name (not an address).
    pub fn host_name(&self) -> Option<&str> {
        match self.0.host() {
            Some(Host::Domain(d)) => Some(d),
            _ => None,
        }
    }
}

impl FromStr for ProxyUrl {
    type Err = ProxyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        // curl takes a bare host:port as an HTTP proxy.
        let with_scheme = if s.contains("://") {
            s.to_owned()
        } else {
            format!("http://{s}")
        };
        let shown = || redact_text(s);
        let url = Url::parse(&with_scheme).map_err(|_| ProxyError::NotUrl(shown()))?;
        match url.scheme() {
            "http" | "https" | "socks5" | "socks5h" => {}
            other => return Err(ProxyError::Scheme(other.to_owned())),
        }
        if url.host().is_none() {
            return Err(ProxyError::NoHost);
        }
        Ok(Self(url))
    }
}

/// `text` with anything between `://` and `@` (credentials) hidden.
fn redact_text(text: &str) -> String {
    match (text.find("://"), text.rfind('@')) {
        (Some(start), Some(at)) if at > start => {
            format!("{}://***@{}", &text[..start], &text[at + 1..])
        }
        (None, Some(at)) => format!("***@{}", &text[at + 1..]),
        _ => text.to_owned(),
    }
}

impl fmt::Display for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.redacted().0)
    }
}

impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProxyUrl({self})")
    }
}

impl Serialize for ProxyUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.as_str())
    }
}

impl<'de> Deserialize<'de> for ProxyUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Which requests go through which proxy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProxyConfig {
    /// The proxy of `http://` URLs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<ProxyUrl>,
    /// The proxy of `https://` URLs (reached with CONNECT through an HTTP
    /// proxy: the proxy sees the host name, not the traffic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https: Option<ProxyUrl>,
    /// Hosts reached directly, as curl's `NO_PROXY`: `*` (every host), a
    /// host name (itself and its subdomains; a leading dot is the same),
    /// an IP address or a CIDR network.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub no_proxy: Vec<String>,
}

impl ProxyConfig {
    /// One proxy for both schemes (`--proxy`).
    pub fn all(proxy: ProxyUrl) -> Self {
        Self {
            http: Some(proxy.clone()),
            https: Some(proxy),
            no_proxy: Vec::new(),
        }
    }

    /// The proxies the environment names, as curl reads it: `http_proxy`
    /// (lower case only: `HTTP_PROXY` can be set by a web server's
    /// client), `HTTPS_PROXY` or `https_proxy`, `ALL_PROXY` or `all_proxy`
    /// for both, `NO_PROXY` or `no_proxy`. Empty variables count as unset.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, ProxyError> {
        let var = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| get(n).filter(|v| !v.trim().is_empty()))
        };
        let all = var(&["ALL_PROXY", "all_proxy"]);
        let parse = |v: Option<String>| v.map(|v| v.parse::<ProxyUrl>()).transpose();
        let http = parse(var(&["http_proxy"]).or_else(|| all.clone()))?;
        let https = parse(var(&["HTTPS_PROXY", "https_proxy"]).or(all))?;
        let no_proxy = var(&["NO_PROXY", "no_proxy"])
            .map(|v| split_list(&v))
            .unwrap_or_default();
        Ok(Self {
            http,
            https,
            no_proxy,
        })
    }

    /// Whether any request may go through a proxy.
    pub fn is_set(&self) -> bool {
        self.http.is_some() || self.https.is_some()
    }

    /// Whether no request goes through a proxy (and nothing is said
    /// about which would not).
    pub fn is_unset(&self) -> bool {
        !self.is_set() && self.no_proxy.is_empty()
    }

    /// The proxy a request for `url` goes through, if any.
    pub fn proxy_for(&self, url: &Url) -> Option<&ProxyUrl> {
        let proxy = match url.scheme() {
            "http" => self.http.as_ref(),
            "https" => self.https.as_ref(),
            _ => None,
        }?;
        (!self.bypasses(url)).then_some(proxy)
    }

    /// Whether `url`'s host is reached directly (`no_proxy`).
    fn bypasses(&self, url: &Url) -> bool {
        let ip: Option<IpAddr> = match url.host() {
            Some(Host::Ipv4(ip)) => Some(ip.into()),
            Some(Host::Ipv6(ip)) => Some(ip.into()),
            _ => None,
        };
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        self.no_proxy.iter().any(|entry| {
            let entry = entry.trim().trim_start_matches('.').to_ascii_lowercase();
            if entry == "*" {
                return true;
            }
            if let Some(ip) = ip {
                let entry = entry.trim_start_matches('[').trim_end_matches(']');
                return match entry.parse::<Cidr>() {
                    Ok(net) => net.contains(ip),
                    Err(_) => entry.parse::<IpAddr>().is_ok_and(|e| e == ip),
                };
            }
            !entry.is_empty()
                && (host == entry
                    || host
                        .strip_suffix(entry.as_str())
                        .is_some_and(|rest| rest.ends_with('.')))
        })
    }
}

/// A comma- or space-separated list, without empty items.
pub fn split_list(text: &str) -> Vec<String> {
    text.split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn proxy_urls_keep_credentials_and_never_show_them() {
        let p: ProxyUrl = "http://alice:S3cret@proxy.test:3128".parse().unwrap();
        assert_eq!(p.url().password(), Some("S3cret"));
        assert_eq!(p.host_name(), Some("proxy.test"));
        for shown in [p.to_string(), format!("{p:?}")] {
            assert!(!shown.contains("S3cret"), "{shown}");
            assert!(
                shown.contains("alice") && shown.contains("proxy.test"),
                "{shown}"
            );
        }
        let bare: ProxyUrl = "127.0.0.1:3128".parse().unwrap();
        assert_eq!(bare.url().as_str(), "http://127.0.0.1:3128/");
        assert!("socks5h://127.0.0.1:1080".parse::<ProxyUrl>().is_ok());
        assert!(matches!(
            "ftp://p.test".parse::<ProxyUrl>(),
            Err(ProxyError::Scheme(_))
        ));
        let e = "http://bob:Pw@[bad".parse::<ProxyUrl>().unwrap_err();
        assert!(!e.to_string().contains("Pw"), "{e}");
    }

    #[test]
    fn no_proxy_matches_hosts_their_subdomains_addresses_and_networks() {
        let c = ProxyConfig {
            no_proxy: split_list("example.org, .internal.test 10.0.0.0/8,::1"),
            ..ProxyConfig::all("http://127.0.0.1:3128".parse().unwrap())
        };
        for direct in [
            "http://example.org/",
            "https://www.example.org/x",
            "http://a.internal.test/",
            "http://10.1.2.3/",
            "http://[::1]:8080/",
        ] {
            assert!(c.proxy_for(&url(direct)).is_none(), "{direct}");
        }
        for proxied in [
            "http://notexample.org/",
            "http://example.org.evil.test/",
            "http://11.0.0.1/",
            "https://internal.test.example/",
        ] {
            assert!(c.proxy_for(&url(proxied)).is_some(), "{proxied}");
        }
        let every = ProxyConfig {
            no_proxy: vec!["*".into()],
            ..c.clone()
        };
        assert!(every.proxy_for(&url("http://a.test/")).is_none());
        assert!(c.proxy_for(&url("ftp://a.test/")).is_none());
    }

    #[test]
    fn the_environment_is_read_as_curl_reads_it() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let c = ProxyConfig::from_env(env(&[
            ("HTTP_PROXY", "http://ignored.test:1"),
            ("https_proxy", "http://tls.test:3128"),
            ("NO_PROXY", "a.test,b.test"),
        ]))
        .unwrap();
        assert_eq!(c.http, None, "upper-case HTTP_PROXY is not read");
        assert_eq!(c.https.unwrap().url().host_str(), Some("tls.test"));
        assert_eq!(c.no_proxy, ["a.test", "b.test"]);
        let all = ProxyConfig::from_env(env(&[
            ("ALL_PROXY", "socks5://127.0.0.1:1080"),
            ("http_proxy", ""),
        ]))
        .unwrap();
        assert_eq!(all.http, all.https);
        assert_eq!(all.http.unwrap().url().scheme(), "socks5");
        assert!(!ProxyConfig::from_env(env(&[])).unwrap().is_set());
        assert!(ProxyConfig::from_env(env(&[("https_proxy", "gopher://x")])).is_err());
    }

    #[test]
    fn the_configuration_round_trips_with_its_credentials() {
        let c = ProxyConfig::all("http://u:p@127.0.0.1:3128".parse().unwrap());
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ProxyConfig>(&json).unwrap(), c);
        assert_eq!(
            serde_json::to_string(&ProxyConfig::default()).unwrap(),
            "{}"
        );
    }
}
