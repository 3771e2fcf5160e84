//! Where credentials go. The headers that carry them (`Authorization`,
//! `Cookie`, `Proxy-Authorization`), given with `--header`, are sent only
//! to the seeds' hosts and the hosts `--header-host` names, unless
//! `--header-everywhere` is given: as curl does not send them on to the
//! host a redirect leads to, a crawl does not send them to the CDN a
//! page's images are on, nor to a host a link leads to.
//!
//! A seed's own user and password (`http://user:pw@host/`) are taken out
//! of its URL before anything is stored ([`take_from_seeds`]): the URL is
//! shown everywhere (records, status, the cluster's task nodes), the
//! credential is kept with the job's options and sent as basic
//! authentication to that host only.

use std::fmt;

use http::HeaderValue;
use http::header::{AUTHORIZATION, COOKIE, HeaderName, PROXY_AUTHORIZATION};
use serde::{Deserialize, Serialize};
use url::Url;

use super::auth;

/// What stands for a secret wherever one is shown.
pub const HIDDEN: &str = "***";

/// The headers that carry credentials: a `--header` of one of these names
/// goes only to the hosts credentials may go to.
pub const CREDENTIAL_HEADERS: [HeaderName; 3] = [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION];

/// True when `name` carries credentials ([`CREDENTIAL_HEADERS`]).
pub fn carries_credentials(name: &HeaderName) -> bool {
    CREDENTIAL_HEADERS.contains(name)
}

/// A user and password a seed URL carried, for its host only.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteCredential {
    /// The host (lower case, as in URLs) the credential is sent to, on any
    /// port and scheme.
    pub host: String,
    /// The user, decoded.
    pub user: String,
    /// The password, decoded (a secret: never shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

impl SiteCredential {
    /// This credential with its password shown as `***`.
    pub fn redacted(&self) -> Self {
        Self {
            password: self.password.as_ref().map(|_| HIDDEN.to_owned()),
            ..self.clone()
        }
    }

    /// The `Authorization` header value it is sent as.
    pub fn authorization(&self) -> HeaderValue {
        auth::basic(&self.user, self.password.as_deref())
    }
}

impl fmt::Debug for SiteCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SiteCredential")
            .field("host", &self.host)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Two seeds on one host with different credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the seeds give two different users or passwords for host {0}: give one")]
pub struct TwoCredentials(pub String);

/// Takes the user and password out of every seed URL that has them, and
/// returns them, one per host. The seeds are left without them.
pub fn take_from_seeds(seeds: &mut [Url]) -> Result<Vec<SiteCredential>, TwoCredentials> {
    let mut out: Vec<SiteCredential> = Vec::new();
    for seed in seeds.iter_mut() {
        let Some((user, password)) = auth::credentials(seed) else {
            continue;
        };
        let host = seed.host_str().unwrap_or_default().to_ascii_lowercase();
        let credential = SiteCredential {
            host,
            user,
            password,
        };
        match out.iter().find(|c| c.host == credential.host) {
            Some(known) if *known != credential => {
                return Err(TwoCredentials(credential.host));
            }
            Some(_) => {}
            None => out.push(credential),
        }
        // A URL with a host always takes an empty user and password.
        let _ = seed.set_username("");
        let _ = seed.set_password(None);
    }
    Ok(out)
}

/// Which hosts the credential-bearing headers go to.
#[derive(Debug, Clone)]
pub(crate) enum CredentialHosts {
    /// Every host (`--header-everywhere`).
    Everywhere,
    /// These hosts, lower case: the seeds' and `--header-host`'s.
    Only(Vec<String>),
}

impl CredentialHosts {
    /// The hosts of a crawl of `seeds` that also names `extra`, or every
    /// host when `everywhere`.
    pub(crate) fn new(seeds: &[Url], extra: &[String], everywhere: bool) -> Self {
        if everywhere {
            return Self::Everywhere;
        }
        let mut hosts: Vec<String> = seeds
            .iter()
            .filter_map(Url::host_str)
            .chain(extra.iter().map(String::as_str))
            .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
            .collect();
        hosts.sort();
        hosts.dedup();
        Self::Only(hosts)
    }

    /// True when credentials may go to `url`'s host.
    pub(crate) fn allows(&self, url: &Url) -> bool {
        match self {
            Self::Everywhere => true,
            Self::Only(hosts) => {
                let host = url.host_str().unwrap_or_default();
                let host = host.trim_end_matches('.');
                hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn seeds_lose_their_credentials_to_one_per_host() {
        let mut seeds = vec![
            url("http://al%20ice:p%40ss@Example.test:8080/a"),
            url("http://al%20ice:p%40ss@example.test/b"),
            url("https://other.test/"),
            url("http://bob@third.test/"),
        ];
        let taken = take_from_seeds(&mut seeds).unwrap();
        let shown: Vec<&str> = seeds.iter().map(Url::as_str).collect();
        assert_eq!(
            shown,
            [
                "http://example.test:8080/a",
                "http://example.test/b",
                "https://other.test/",
                "http://third.test/"
            ]
        );
        assert_eq!(taken.len(), 2);
        assert_eq!(taken[0].host, "example.test");
        assert_eq!(taken[0].user, "al ice");
        assert_eq!(taken[0].password.as_deref(), Some("p@ss"));
        assert_eq!(taken[0].authorization(), "Basic YWwgaWNlOnBAc3M=");
        assert_eq!(taken[1].password, None);
        assert!(!format!("{:?}", taken[0]).contains("p@ss"));
        assert_eq!(taken[0].redacted().password.as_deref(), Some("***"));
    }

    #[test]
    fn two_passwords_for_one_host_are_refused() {
        let mut seeds = vec![url("http://a:1@h.test/"), url("http://a:2@h.test/x")];
        assert_eq!(
            take_from_seeds(&mut seeds),
            Err(TwoCredentials("h.test".into()))
        );
    }

    #[test]
    fn credentials_go_to_the_seeds_hosts_and_those_named() {
        let seeds = [url("http://Seed.test/"), url("http://127.0.0.1:9/")];
        let hosts = CredentialHosts::new(&seeds, &["API.test.".to_owned()], false);
        assert!(hosts.allows(&url("https://seed.test:444/x")));
        assert!(hosts.allows(&url("http://127.0.0.1:10/")));
        assert!(hosts.allows(&url("http://api.test/")));
        assert!(!hosts.allows(&url("http://cdn.test/")));
        assert!(!hosts.allows(&url("http://sub.seed.test/")));
        assert!(!hosts.allows(&url("http://127.0.0.2:9/")));
        let all = CredentialHosts::new(&seeds, &[], true);
        assert!(all.allows(&url("http://cdn.test/")));
    }

    #[test]
    fn the_credential_headers_are_named() {
        for name in ["authorization", "cookie", "proxy-authorization"] {
            assert!(carries_credentials(&HeaderName::from_static(name)));
        }
        assert!(!carries_credentials(&HeaderName::from_static("accept")));
    }
}
