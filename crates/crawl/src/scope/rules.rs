//! The built-in scope rules, one small type each.

use std::collections::HashSet;

use regex::RegexSet;

use super::{Candidate, ScopeReason, Scoper, Verdict};
use crate::config::HostScope;

fn verdict(ok: bool, why: ScopeReason) -> Verdict {
    if ok {
        Verdict::Accept
    } else {
        Verdict::Reject(why)
    }
}

/// `scheme`: only http and https.
#[derive(Debug, Default)]
pub struct SchemeScoper;

impl Scoper for SchemeScoper {
    fn name(&self) -> &str {
        "scheme"
    }
    fn check(&self, c: &Candidate<'_>) -> Verdict {
        verdict(
            matches!(c.url.scheme(), "http" | "https"),
            ScopeReason::Scheme,
        )
    }
}

/// `url-length`: URLs no longer than a maximum (default 2,048 bytes).
#[derive(Debug)]
pub struct UrlLengthScoper {
    /// The longest URL accepted, in bytes.
    pub max: usize,
}

impl Scoper for UrlLengthScoper {
    fn name(&self) -> &str {
        "url-length"
    }
    fn check(&self, c: &Candidate<'_>) -> Verdict {
        verdict(c.url.as_str().len() <= self.max, ScopeReason::UrlLength)
    }
}

/// `depth`: no deeper than the maximum depth.
#[derive(Debug)]
pub struct DepthScoper {
    /// The deepest depth accepted.
    pub max: u32,
}

impl Scoper for DepthScoper {
    fn name(&self) -> &str {
        "depth"
    }
    fn check(&self, c: &Candidate<'_>) -> Verdict {
        verdict(c.depth <= self.max, ScopeReason::Depth)
    }
}

/// `host`: same host as a seed, same registrable domain, or any, plus
/// always-allowed hosts.
#[derive(Debug)]
pub struct HostScoper {
    scope: HostScope,
    hosts: HashSet<String>,
    domains: HashSet<String>,
    allowed: HashSet<String>,
}

impl HostScoper {
    /// A host rule for the seeds' hosts under `scope`, with extra `allowed` hosts.
    pub fn new<'a>(
        scope: HostScope,
        seed_hosts: impl IntoIterator<Item = &'a str>,
        allowed: &[String],
    ) -> Self {
        let hosts: HashSet<String> = seed_hosts
            .into_iter()
            .map(str::to_ascii_lowercase)
            .collect();
        let domains = hosts.iter().map(|h| registrable_domain(h)).collect();
        Self {
            scope,
            hosts,
            domains,
            allowed: allowed.iter().map(|h| h.to_ascii_lowercase()).collect(),
        }
    }
}

/// The registrable domain of `host` (`www.example.co.uk` → `example.co.uk`);
/// an IP address or a bare suffix is its own domain.
fn registrable_domain(host: &str) -> String {
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
        return host.to_owned();
    }
    psl::domain_str(host).unwrap_or(host).to_owned()
}

impl Scoper for HostScoper {
    fn name(&self) -> &str {
        "host"
    }
    fn check(&self, c: &Candidate<'_>) -> Verdict {
        let Some(host) = c.url.host_str() else {
            return Verdict::Reject(ScopeReason::Host);
        };
        let ok = self.allowed.contains(host)
            || match self.scope {
                HostScope::Any => true,
                HostScope::SameHost => self.hosts.contains(host),
                HostScope::SameDomain => {
                    self.hosts.contains(host) || self.domains.contains(&registrable_domain(host))
                }
            };
        verdict(ok, ScopeReason::Host)
    }
}

/// `pattern`: `include` regexes (any must match, if given) and `exclude`
/// regexes (none may match), against the whole normalised URL.
#[derive(Debug)]
pub struct PatternScoper {
    include: Option<RegexSet>,
    exclude: Option<RegexSet>,
}

/// A `--include` or `--exclude` pattern that is not a regex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[error("invalid regex '{pattern}': {why}")]
pub struct PatternError {
    /// The pattern.
    pub pattern: String,
    /// Why it is not one, in a line.
    pub why: String,
}

impl PatternScoper {
    /// Compiles the patterns; the error names the first bad one.
    pub fn new(include: &[String], exclude: &[String]) -> Result<Self, PatternError> {
        let compile = |patterns: &[String]| -> Result<Option<RegexSet>, PatternError> {
            for p in patterns {
                if let Err(e) = regex::Regex::new(p) {
                    let text = e.to_string();
                    let why = text
                        .lines()
                        .last()
                        .unwrap_or("invalid")
                        .trim_start_matches("error: ");
                    return Err(PatternError {
                        pattern: p.clone(),
                        why: why.to_owned(),
                    });
                }
            }
            if patterns.is_empty() {
                return Ok(None);
            }
            RegexSet::new(patterns).map(Some).map_err(|e| PatternError {
                pattern: patterns.join(" | "),
                why: e.to_string(),
            })
        };
        Ok(Self {
            include: compile(include)?,
            exclude: compile(exclude)?,
        })
    }
}

impl Scoper for PatternScoper {
    fn name(&self) -> &str {
        "pattern"
    }
    fn check(&self, c: &Candidate<'_>) -> Verdict {
        let url = c.url.as_str();
        let included = self.include.as_ref().is_none_or(|set| set.is_match(url));
        let excluded = self.exclude.as_ref().is_some_and(|set| set.is_match(url));
        verdict(included && !excluded, ScopeReason::Pattern)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn check(s: &dyn Scoper, url: &str, depth: u32) -> Verdict {
        let url = Url::parse(url).unwrap();
        s.check(&Candidate { url: &url, depth })
    }

    #[test]
    fn scheme_allows_http_and_https_only() {
        assert_eq!(check(&SchemeScoper, "https://a.test/", 0), Verdict::Accept);
        assert_eq!(
            check(&SchemeScoper, "ftp://a.test/", 0),
            Verdict::Reject(ScopeReason::Scheme)
        );
        assert_eq!(
            check(&SchemeScoper, "mailto:x@a.test", 0),
            Verdict::Reject(ScopeReason::Scheme)
        );
    }

    #[test]
    fn depth_and_length_limits() {
        let d = DepthScoper { max: 2 };
        assert_eq!(check(&d, "http://a.test/", 2), Verdict::Accept);
        assert_eq!(
            check(&d, "http://a.test/", 3),
            Verdict::Reject(ScopeReason::Depth)
        );
        let l = UrlLengthScoper { max: 20 };
        assert_eq!(check(&l, "http://a.test/abc", 0), Verdict::Accept);
        assert_eq!(
            check(&l, "http://a.test/abcdefghijkl", 0),
            Verdict::Reject(ScopeReason::UrlLength)
        );
    }

    #[test]
    fn host_scopes() {
        let seeds = ["www.site.test"];
        let allowed = vec!["cdn.other.test".to_owned()];
        let same_host = HostScoper::new(HostScope::SameHost, seeds, &allowed);
        let same_domain = HostScoper::new(HostScope::SameDomain, seeds, &allowed);
        let any = HostScoper::new(HostScope::Any, seeds, &allowed);
        let blog = "http://blog.site.test/";
        let other = "http://other.test/";
        assert_eq!(
            check(&same_host, "http://www.site.test/x", 0),
            Verdict::Accept
        );
        assert_eq!(
            check(&same_host, blog, 0),
            Verdict::Reject(ScopeReason::Host)
        );
        assert_eq!(
            check(&same_host, "http://cdn.other.test/", 0),
            Verdict::Accept
        );
        assert_eq!(check(&same_domain, blog, 0), Verdict::Accept);
        assert_eq!(
            check(&same_domain, other, 0),
            Verdict::Reject(ScopeReason::Host)
        );
        assert_eq!(check(&any, other, 0), Verdict::Accept);
    }

    #[test]
    fn ip_hosts_are_their_own_domain() {
        let s = HostScoper::new(HostScope::SameDomain, ["127.0.0.1"], &[]);
        assert_eq!(check(&s, "http://127.0.0.1:81/", 0), Verdict::Accept);
        assert_eq!(
            check(&s, "http://127.0.0.2/", 0),
            Verdict::Reject(ScopeReason::Host)
        );
    }

    #[test]
    fn include_and_exclude_patterns() {
        let p = PatternScoper::new(&["/docs/".into()], &["\\.pdf$".into()]).unwrap();
        assert_eq!(check(&p, "http://a.test/docs/x", 0), Verdict::Accept);
        assert_eq!(
            check(&p, "http://a.test/docs/x.pdf", 0),
            Verdict::Reject(ScopeReason::Pattern)
        );
        assert_eq!(
            check(&p, "http://a.test/blog/", 0),
            Verdict::Reject(ScopeReason::Pattern)
        );
        assert_eq!(
            PatternScoper::new(&["ok".into()], &["(".into()])
                .unwrap_err()
                .to_string(),
            "invalid regex '(': unclosed group"
        );
    }
}
