//! The SSRF guard. A crawler that follows links is a proxy into the
//! network it runs in: a public page can link to a cloud metadata service,
//! an admin page on the intranet or a database on localhost. Before every
//! connection the guard checks the address actually connected to (at DNS
//! resolution, so DNS rebinding and `--resolve` do not get around it; IP
//! literals before connecting) and refuses special-purpose addresses
//! ([`class`]) unless:
//!
//! - the address is in a special range a seed itself resolved into
//!   (crawling your own intranet from an intranet seed works as before);
//! - `--allow-net` covers it, or `--allow-private` turns the guard off.
//!
//! `--deny-net` refuses a network whatever else is said. A refused URL is
//! recorded with the error kind `blocked_address` and never retried.
//!
//! | module | what it does |
//! |---|---|
//! | [`class`] | which addresses are special, as pure functions |
//! | [`resolve`] | the DNS resolver that checks every address it returns |

pub mod class;
pub mod resolve;

use std::collections::HashSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use class::{AddressClass, canonical, classify};
pub use resolve::GuardedResolver;

/// A network: an address and a prefix length (`10.0.0.0/8`, `fd00::/8`).
/// An address alone is its own network (`/32`, `/128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

impl Cidr {
    /// An IPv4 network (`len` at most 32).
    pub const fn v4(addr: Ipv4Addr, len: u8) -> Self {
        Self {
            addr: IpAddr::V4(addr),
            len,
        }
    }

    /// An IPv6 network (`len` at most 128).
    pub const fn v6(addr: Ipv6Addr, len: u8) -> Self {
        Self {
            addr: IpAddr::V6(addr),
            len,
        }
    }

    /// True when `ip` is in the network. IPv4 networks also hold the IPv6
    /// forms that embed their addresses (see [`canonical`]).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(&net.octets(), &ip.octets(), self.len),
            (IpAddr::V6(net), _) => match ip {
                IpAddr::V6(ip) => prefix_eq(&net.octets(), &ip.octets(), self.len),
                IpAddr::V4(_) => false,
            },
            _ => false,
        }
    }
}

impl Cidr {
    /// The IPv4 network an IPv4-mapped (`::ffff:a.b.c.d/len`) or NAT64
    /// (`64:ff9b::a.b.c.d/len`) network of at least 96 bits stands for, so
    /// that `--deny-net ::ffff:127.0.0.3/128` covers `127.0.0.3` as well as
    /// its mapped spelling; any other network as it is.
    fn unmapped(self) -> Self {
        match self.addr {
            IpAddr::V6(v6) if self.len >= 96 => {
                let s = v6.segments();
                let embeds = matches!(
                    s,
                    [0, 0, 0, 0, 0, 0xffff, _, _] | [0x64, 0xff9b, 0, 0, 0, 0, _, _]
                );
                if embeds {
                    let o = v6.octets();
                    Self::v4(Ipv4Addr::new(o[12], o[13], o[14], o[15]), self.len - 96)
                } else {
                    self
                }
            }
            _ => self,
        }
    }
}

/// True for the addresses Linux connects to the host itself although no
/// interface has them: `0.0.0.0/8` ("this network") and `::` (in any
/// IPv4-embedding spelling). Never connected to, whatever the flags say:
/// `--allow-private --deny-net 127.0.0.0/8` must not be bypassed through
/// `http://0/`.
pub fn is_unspecified(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => v4.octets()[0] == 0,
        IpAddr::V6(v6) => v6.is_unspecified(),
    }
}

fn prefix_eq(a: &[u8], b: &[u8], len: u8) -> bool {
    let len = usize::from(len);
    let (bytes, bits) = (len / 8, len % 8);
    if a[..bytes] != b[..bytes] {
        return false;
    }
    bits == 0 || (a[bytes] ^ b[bytes]) >> (8 - bits) == 0
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// A network that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid network '{0}': expected an address with an optional prefix length, like 10.0.0.0/8 or fd00::/8"
)]
pub struct CidrError(String);

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || CidrError(s.chars().take(100).collect());
        let (addr, len) = match s.split_once('/') {
            Some((addr, len)) => (addr, Some(len)),
            None => (s, None),
        };
        let addr: IpAddr = addr.trim().parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            Some(l) => l
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(bad)?,
            None => max,
        };
        Ok(Self { addr, len }.unmapped())
    }
}

impl Serialize for Cidr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cidr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{addr} is {why}; not connecting (SSRF guard; see --allow-net, --allow-private)")]
pub struct Blocked {
    /// The address refused.
    pub addr: IpAddr,
    /// Why, in words.
    pub why: String,
}

/// Which addresses a crawl may connect to. Cheap to clone; the networks
/// its seeds resolve into are learnt as they resolve and shared by clones.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allow: Vec<Cidr>,
    deny: Vec<Cidr>,
    allow_private: bool,
    seed_nets: Arc<RwLock<HashSet<Cidr>>>,
}

impl AddressPolicy {
    /// A policy with explicit allow and deny networks; `allow_private`
    /// turns the special-purpose check off (`--deny-net` still applies).
    pub fn new(allow: Vec<Cidr>, deny: Vec<Cidr>, allow_private: bool) -> Self {
        Self {
            allow,
            deny,
            allow_private,
            seed_nets: Arc::default(),
        }
    }

    /// A seed resolved to `ip`: the special range it falls in is allowed
    /// from now on (a seed on 10.1.2.3 allows 10.0.0.0/8).
    pub fn learn_seed_address(&self, ip: IpAddr) {
        if let Some((range, _)) = classify(ip) {
            let known = self.seed_nets.read().is_ok_and(|n| n.contains(&range));
            if !known && let Ok(mut nets) = self.seed_nets.write() {
                nets.insert(range);
            }
        }
    }

    /// Whether a connection to `ip` may be made.
    pub fn check(&self, ip: IpAddr) -> Result<(), Blocked> {
        let blocked = |why: String| Err(Blocked { addr: ip, why });
        if is_unspecified(ip) {
            return blocked("an unspecified address (it reaches this host)".into());
        }
        if let Some(net) = self.deny.iter().find(|n| n.contains(ip)) {
            return blocked(format!("in a denied network ({net})"));
        }
        if self.allow_private || self.allow.iter().any(|n| n.contains(ip)) {
            return Ok(());
        }
        let Some((range, class)) = classify(ip) else {
            return Ok(());
        };
        if self.seed_nets.read().is_ok_and(|n| n.contains(&range)) {
            return Ok(());
        }
        blocked(format!(
            "a {} address ({range}) that no seed resolved into",
            class.describe()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn net(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    #[test]
    fn networks_parse_and_contain() {
        assert!(net("10.0.0.0/8").contains(ip("10.200.1.1")));
        assert!(!net("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(net("172.16.0.0/12").contains(ip("172.31.0.1")));
        assert!(!net("172.16.0.0/12").contains(ip("172.32.0.1")));
        assert!(net("127.0.0.3").contains(ip("127.0.0.3")));
        assert!(!net("127.0.0.3").contains(ip("127.0.0.2")));
        assert!(
            net("127.0.0.3/32").contains(ip("::ffff:127.0.0.3")),
            "mapped forms too"
        );
        assert!(net("fd00::/8").contains(ip("fd12::1")));
        assert!(net("0.0.0.0/0").contains(ip("93.184.216.34")));
        assert!(
            !net("::/0").contains(ip("10.0.0.1")),
            "IPv6 nets hold no IPv4"
        );
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "x/8",
            "10.0.0.0/-1",
            "10.0.0.0/",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
        assert_eq!(net("10.0.0.0/8").to_string(), "10.0.0.0/8");
    }

    #[test]
    fn special_addresses_are_refused_public_ones_allowed() {
        let p = AddressPolicy::default();
        for blocked in [
            "169.254.169.254",
            "10.0.0.5",
            "127.0.0.1",
            "::1",
            "::ffff:169.254.169.254",
            "fe80::1",
            "fd00::1",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
        ] {
            let err = p.check(ip(blocked)).unwrap_err();
            assert_eq!(err.addr, ip(blocked));
        }
        assert!(p.check(ip("93.184.216.34")).is_ok());
        assert!(p.check(ip("2606:4700::1111")).is_ok());
        let said = p.check(ip("169.254.169.254")).unwrap_err().to_string();
        assert!(said.contains("link-local"), "{said}");
    }

    #[test]
    fn a_seed_opens_its_own_special_range_only() {
        let p = AddressPolicy::default();
        p.learn_seed_address(ip("10.1.2.3"));
        assert!(p.check(ip("10.200.0.1")).is_ok(), "the seed's intranet");
        assert!(p.check(ip("192.168.0.1")).is_err(), "not another one");
        assert!(p.check(ip("169.254.169.254")).is_err());
        let clone = p.clone();
        clone.learn_seed_address(ip("127.0.0.1"));
        assert!(
            p.check(ip("127.0.0.9")).is_ok(),
            "clones share what seeds taught"
        );
        p.learn_seed_address(ip("93.184.216.34"));
        assert!(
            p.check(ip("172.16.0.1")).is_err(),
            "a public seed opens nothing"
        );
    }

    #[test]
    fn the_unspecified_address_is_never_connected_to() {
        // Linux connects 0.0.0.0 and :: to the host itself: with
        // --allow-private and loopback denied, they would reach it anyway.
        let p = AddressPolicy::new(
            vec![net("0.0.0.0/0"), net("::/0")],
            vec![net("127.0.0.0/8"), net("::1/128")],
            true,
        );
        for addr in [
            "0.0.0.0",
            "0.1.2.3",
            "::",
            "::ffff:0.0.0.0",
            "::ffff:0.0.0.1",
            "64:ff9b::",
        ] {
            let err = p.check(ip(addr)).unwrap_err();
            assert!(err.to_string().contains("unspecified"), "{addr}: {err}");
        }
        assert!(p.check(ip("93.184.216.34")).is_ok());
        assert!(
            p.check(ip("10.0.0.1")).is_ok(),
            "--allow-private still opens the rest"
        );
    }

    #[test]
    fn mapped_networks_cover_the_plain_address_and_the_other_way_round() {
        let mapped = AddressPolicy::new(vec![], vec![net("::ffff:127.0.0.3/128")], true);
        assert!(
            mapped.check(ip("127.0.0.3")).is_err(),
            "plain form of a mapped deny"
        );
        assert!(mapped.check(ip("::ffff:127.0.0.3")).is_err());
        assert!(mapped.check(ip("127.0.0.2")).is_ok());
        let wide = AddressPolicy::new(vec![], vec![net("::ffff:10.0.0.0/104")], true);
        assert!(wide.check(ip("10.1.2.3")).is_err());
        assert!(wide.check(ip("11.1.2.3")).is_ok());
        let nat64 = AddressPolicy::new(vec![], vec![net("64:ff9b::7f00:3/128")], true);
        assert!(nat64.check(ip("127.0.0.3")).is_err());
        let plain = AddressPolicy::new(vec![], vec![net("127.0.0.3/32")], true);
        assert!(
            plain.check(ip("::ffff:127.0.0.3")).is_err(),
            "mapped form of a plain deny"
        );
        let allow = AddressPolicy::new(vec![net("::ffff:10.9.0.0/112")], vec![], false);
        assert!(
            allow.check(ip("10.9.1.1")).is_ok(),
            "mapped allow covers the plain form"
        );
        assert!(allow.check(ip("10.8.1.1")).is_err());
        assert_eq!(net("::ffff:10.0.0.0/104").to_string(), "10.0.0.0/8");
        assert_eq!(net("::/128").to_string(), "::/128", "`::` is IPv6's own");
    }

    #[test]
    fn deny_wins_over_everything_and_allow_opens_a_network() {
        let p = AddressPolicy::new(vec![net("10.9.0.0/16")], vec![net("127.0.0.3/32")], true);
        p.learn_seed_address(ip("127.0.0.1"));
        assert!(
            p.check(ip("127.0.0.3")).is_err(),
            "denied despite seed and --allow-private"
        );
        assert!(p.check(ip("127.0.0.2")).is_ok());
        let p = AddressPolicy::new(vec![net("10.9.0.0/16")], vec![], false);
        assert!(p.check(ip("10.9.1.1")).is_ok());
        assert!(p.check(ip("10.8.1.1")).is_err());
        let deny_public = AddressPolicy::new(vec![], vec![net("93.184.216.0/24")], false);
        assert!(deny_public.check(ip("93.184.216.34")).is_err());
    }
}
