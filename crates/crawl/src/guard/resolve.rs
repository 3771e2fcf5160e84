//! The DNS resolver of the HTTP client: it resolves a name (a `--resolve`
//! override first, then the system's resolver), learns the networks of
//! seed hosts, and hands the client only the addresses the policy allows,
//! so every connection is checked on the address actually connected to.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

use super::{AddressPolicy, Blocked};

/// A resolver that checks every address against an [`AddressPolicy`].
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    policy: AddressPolicy,
    overrides: HashMap<String, Vec<IpAddr>>,
    seed_hosts: HashSet<String>,
}

/// A name that resolved to no address at all.
#[derive(Debug, thiserror::Error)]
#[error("{0} resolved to no address")]
struct NoAddress(String);

impl GuardedResolver {
    /// A resolver for a crawl of `seeds` under `policy`, with `overrides`
    /// (lower-case host names pinned to addresses). Seeds given as IP
    /// addresses teach the policy their networks at once; seeds given as
    /// names do when they resolve.
    pub fn new(
        policy: AddressPolicy,
        overrides: impl IntoIterator<Item = (String, IpAddr)>,
        seeds: &[Url],
    ) -> Self {
        let mut pinned: HashMap<String, Vec<IpAddr>> = HashMap::new();
        for (host, ip) in overrides {
            pinned
                .entry(host.to_ascii_lowercase())
                .or_default()
                .push(ip);
        }
        let mut seed_hosts = HashSet::new();
        for seed in seeds {
            match seed.host() {
                Some(Host::Ipv4(ip)) => policy.learn_seed_address(ip.into()),
                Some(Host::Ipv6(ip)) => policy.learn_seed_address(ip.into()),
                Some(Host::Domain(name)) => {
                    seed_hosts.insert(name.to_ascii_lowercase());
                }
                None => {}
            }
        }
        Self {
            inner: Arc::new(Inner {
                policy,
                overrides: pinned,
                seed_hosts,
            }),
        }
    }

    /// Checks a URL whose host is an IP address (the client connects to
    /// those without asking the resolver); names are checked when they
    /// resolve.
    pub fn check_literal(&self, url: &Url) -> Result<(), Blocked> {
        let ip: IpAddr = match url.host() {
            Some(Host::Ipv4(ip)) => ip.into(),
            Some(Host::Ipv6(ip)) => ip.into(),
            _ => return Ok(()),
        };
        self.inner.policy.check(ip)
    }

    /// The addresses of `host` a connection may use: all those the policy
    /// allows, or the first refusal when it allows none.
    fn admit(&self, host: &str, found: Vec<IpAddr>) -> Result<Vec<SocketAddr>, Blocked> {
        let policy = &self.inner.policy;
        if self.inner.seed_hosts.contains(host) {
            for ip in &found {
                policy.learn_seed_address(*ip);
            }
        }
        let mut refused = None;
        let allowed: Vec<SocketAddr> = found
            .into_iter()
            .filter(|ip| match policy.check(*ip) {
                Ok(()) => true,
                Err(blocked) => {
                    refused.get_or_insert(blocked);
                    false
                }
            })
            .map(|ip| SocketAddr::new(ip, 0))
            .collect();
        match refused {
            Some(blocked) if allowed.is_empty() => Err(blocked),
            _ => Ok(allowed),
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        let host = name.as_str().to_ascii_lowercase();
        Box::pin(async move {
            let found: Vec<IpAddr> = match this.inner.overrides.get(&host) {
                Some(pinned) => pinned.clone(),
                None => tokio::net::lookup_host((host.as_str(), 0))
                    .await?
                    .map(|a| a.ip())
                    .collect(),
            };
            if found.is_empty() {
                return Err(NoAddress(host).into());
            }
            let allowed = this.admit(&host, found)?;
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::Cidr;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn resolver(deny: &[&str], seeds: &[&str]) -> GuardedResolver {
        let deny: Vec<Cidr> = deny.iter().map(|d| d.parse().unwrap()).collect();
        let seeds: Vec<Url> = seeds.iter().map(|s| Url::parse(s).unwrap()).collect();
        GuardedResolver::new(AddressPolicy::new(vec![], deny, false), [], &seeds)
    }

    #[test]
    fn names_with_several_addresses_keep_only_the_allowed_ones() {
        // Nothing is resolved or connected to: `admit` is given the answers.
        let r = resolver(&[], &[]);
        let got = r
            .admit("mixed.test", vec![ip("10.0.0.1"), ip("93.184.216.34")])
            .unwrap();
        assert_eq!(got, [SocketAddr::new(ip("93.184.216.34"), 0)]);
        let err = r
            .admit("rebind.test", vec![ip("169.254.169.254"), ip("127.0.0.1")])
            .unwrap_err();
        assert_eq!(err.addr, ip("169.254.169.254"));
    }

    #[test]
    fn seed_names_teach_their_networks_when_they_resolve() {
        let r = resolver(&[], &["http://intranet.test/"]);
        assert!(r.admit("other.test", vec![ip("10.1.1.1")]).is_err());
        assert!(r.admit("intranet.test", vec![ip("10.0.0.7")]).is_ok());
        assert!(r.admit("other.test", vec![ip("10.1.1.1")]).is_ok());
    }

    #[test]
    fn ip_literal_urls_are_checked_before_connecting() {
        let r = resolver(&["127.0.0.3/32"], &["http://127.0.0.2:8080/"]);
        let url = |s: &str| Url::parse(s).unwrap();
        assert!(r.check_literal(&url("http://127.0.0.2:9/")).is_ok());
        assert!(r.check_literal(&url("http://127.0.0.3:9/")).is_err());
        assert!(
            r.check_literal(&url("http://169.254.169.254/latest/"))
                .is_err()
        );
        assert!(r.check_literal(&url("http://[::ffff:a9fe:a9fe]/")).is_err());
        assert!(
            r.check_literal(&url("http://named.test/")).is_ok(),
            "names wait for DNS"
        );
    }

    #[test]
    fn unspecified_addresses_are_refused_in_every_spelling_whatever_the_flags() {
        // Literals only: nothing is connected to. Linux would connect
        // these to the host itself, around `--deny-net 127.0.0.0/8`.
        let deny = vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
        let r = GuardedResolver::new(AddressPolicy::new(vec![], deny, true), [], &[]);
        for literal in [
            "http://0.0.0.0:8080/",
            "http://0:8080/",
            "http://0x0/",
            "http://0.0.0.1/",
            "http://[::]:8080/",
            "http://[::ffff:0.0.0.0]/",
            "http://[::ffff:0:0]/",
        ] {
            let url = Url::parse(literal).unwrap();
            assert!(
                r.check_literal(&url).is_err(),
                "{literal} -> {:?}",
                url.host()
            );
        }
        assert!(
            r.admit("zero.test", vec![ip("0.0.0.0")]).is_err(),
            "by name too"
        );
        assert!(r.admit("zero6.test", vec![ip("::")]).is_err());
        assert!(
            r.check_literal(&Url::parse("http://10.0.0.1/").unwrap())
                .is_ok()
        );
    }
}
