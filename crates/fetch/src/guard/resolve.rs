//! The DNS resolver of the HTTP client: it resolves a name (a `--resolve`
//! override first, then the system's resolver), learns the networks of
//! seed hosts, and hands the client only the addresses the policy allows,
//! so every connection is checked on the address actually connected to.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::Name;
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
    /// Names whose addresses are not judged: the proxies the user named
    /// (the connection to a proxy is theirs to allow; the requests it
    /// carries are judged by [`GuardedResolver::check_proxied`]).
    trusted: HashSet<String>,
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
        Self::trusting(policy, overrides, seeds, [])
    }

    /// Like [`GuardedResolver::new`], with `trusted` host names (the
    /// proxies) resolved without being judged.
    pub fn trusting<'a>(
        policy: AddressPolicy,
        overrides: impl IntoIterator<Item = (String, IpAddr)>,
        seeds: &[Url],
        trusted: impl IntoIterator<Item = &'a str>,
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
                trusted: trusted.into_iter().map(str::to_ascii_lowercase).collect(),
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

    /// Checks the target of a request that goes through a proxy, which
    /// resolves names itself: the name is resolved here too, and refused
    /// when any of its addresses is denied (the proxy might pick that
    /// one). A name that does not resolve here (known to the proxy only)
    /// cannot be judged and passes.
    pub async fn check_proxied(&self, url: &Url) -> Result<(), Blocked> {
        let host = match url.host() {
            Some(Host::Domain(d)) => d.to_ascii_lowercase(),
            _ => return self.check_literal(url),
        };
        let found = self.lookup(&host).await.unwrap_or_default();
        if self.inner.seed_hosts.contains(&host) {
            for ip in &found {
                self.inner.policy.learn_seed_address(*ip);
            }
        }
        found
            .into_iter()
            .try_for_each(|ip| self.inner.policy.check(ip))
    }

    /// The addresses of `host`: its `--resolve` override, else the
    /// system's answer.
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        Ok(match self.inner.overrides.get(host) {
            Some(pinned) => pinned.clone(),
            None => tokio::net::lookup_host((host, 0))
                .await?
                .map(|a| a.ip())
                .collect(),
        })
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

/// What a resolution gives the connector: the addresses to try, or why
/// there are none.
pub type Resolving =
    Pin<Box<dyn Future<Output = Result<std::vec::IntoIter<SocketAddr>, BoxError>> + Send>>;

/// Any error, as the HTTP client's connector carries it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl GuardedResolver {
    /// The addresses `host` may be connected to (port 0): a proxy's all,
    /// any other name's those the policy allows.
    pub fn resolve_host(&self, host: &str) -> Resolving {
        let this = self.clone();
        let host = host.to_ascii_lowercase();
        Box::pin(async move {
            let found = this.lookup(&host).await?;
            if found.is_empty() {
                return Err(NoAddress(host).into());
            }
            if this.inner.trusted.contains(&host) {
                let addrs = found.into_iter().map(|ip| SocketAddr::new(ip, 0));
                return Ok(addrs.collect::<Vec<_>>().into_iter());
            }
            Ok(this.admit(&host, found)?.into_iter())
        })
    }

    /// The first address `host` may be connected to (the one a connection
    /// tries first), or `None` when it resolves to none here.
    pub async fn first_address(&self, host: &str) -> Option<IpAddr> {
        let mut found = self.resolve_host(host).await.ok()?;
        found.next().map(|a| a.ip())
    }
}

/// The HTTP connector's resolver: every name it connects to goes through
/// the guard.
impl tower_service::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = Resolving;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Resolving {
        self.resolve_host(name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;
    use tower_service::Service;

    use crate::guard::Cidr;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn resolver(deny: &[&str], seeds: &[&str]) -> GuardedResolver {
        let deny: Vec<Cidr> = deny.iter().map(|d| d.parse().unwrap()).collect();
        let seeds: Vec<Url> = seeds.iter().map(|s| Url::parse(s).unwrap()).collect();
        GuardedResolver::new(AddressPolicy::new(vec![], deny, false), [], &seeds)
    }

    /// A resolver with `--resolve` overrides (nothing is looked up).
    fn pinned(pins: &[(&str, &str)], trusted: &[&str]) -> GuardedResolver {
        let pins: Vec<(String, IpAddr)> = pins.iter().map(|(h, a)| ((*h).into(), ip(a))).collect();
        GuardedResolver::trusting(
            AddressPolicy::new(vec![], vec![], false),
            pins,
            &[],
            trusted.iter().copied(),
        )
    }

    #[tokio::test]
    async fn a_proxied_target_is_refused_when_any_of_its_addresses_is_denied() {
        let r = pinned(
            &[
                ("public.test", "93.184.216.34"),
                ("rebind.test", "93.184.216.34"),
                ("rebind.test", "169.254.169.254"),
            ],
            &[],
        );
        let url = |s: &str| Url::parse(s).unwrap();
        assert!(r.check_proxied(&url("http://public.test/")).await.is_ok());
        // Directly, the allowed address would be used; through a proxy,
        // which resolves the name itself, it might not be.
        let e = r
            .check_proxied(&url("http://rebind.test/"))
            .await
            .unwrap_err();
        assert_eq!(e.addr, ip("169.254.169.254"));
        assert!(
            r.check_proxied(&url("http://127.0.0.1:8080/"))
                .await
                .is_err()
        );
        assert!(r.check_proxied(&url("http://[::1]/")).await.is_err());
    }

    #[tokio::test]
    async fn a_trusted_name_resolves_to_addresses_the_policy_would_deny() {
        let r = pinned(
            &[("proxy.test", "10.0.0.5"), ("other.test", "10.0.0.6")],
            &["proxy.test"],
        );
        let name = |s: &str| Name::from_str(s).unwrap();
        let mut r = r;
        let got: Vec<SocketAddr> = r.call(name("proxy.test")).await.unwrap().collect();
        assert_eq!(got, [SocketAddr::new(ip("10.0.0.5"), 0)]);
        assert!(r.call(name("other.test")).await.is_err(), "only the proxy");
        assert!(
            r.check_proxied(&Url::parse("http://other.test/").unwrap())
                .await
                .is_err(),
            "a target in the proxy's network is judged as any other"
        );
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
