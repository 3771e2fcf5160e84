//! Which addresses are special: the IANA special-purpose ranges a crawler
//! following public links has no business connecting to. Pure functions on
//! literal addresses, so every range is tested without a packet sent.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::Cidr;

/// Why an address is not a public one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressClass {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918 (10/8, 172.16/12, 192.168/16), NAT64 local use, site-local.
    Private,
    /// 169.254.0.0/16, fe80::/10 (cloud metadata services live here).
    LinkLocal,
    /// 100.64.0.0/10, carrier-grade NAT.
    SharedNat,
    /// fc00::/7.
    UniqueLocal,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// Documentation, benchmarking, protocol assignments, 240/4, broadcast.
    Reserved,
}

impl AddressClass {
    /// The class as people say it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link-local",
            Self::SharedNat => "carrier-grade NAT",
            Self::UniqueLocal => "unique-local",
            Self::Multicast => "multicast",
            Self::Unspecified => "unspecified",
            Self::Reserved => "reserved",
        }
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8, class: AddressClass) -> (Cidr, AddressClass) {
    (Cidr::v4(Ipv4Addr::new(a, b, c, d), len), class)
}

const fn v6(segments: [u16; 8], len: u8, class: AddressClass) -> (Cidr, AddressClass) {
    let [a, b, c, d, e, f, g, h] = segments;
    (Cidr::v6(Ipv6Addr::new(a, b, c, d, e, f, g, h), len), class)
}

use AddressClass::*;

/// The special IPv4 ranges (RFC 6890 and its updates).
const V4: [(Cidr, AddressClass); 16] = [
    v4(0, 0, 0, 0, 8, Unspecified),
    v4(10, 0, 0, 0, 8, Private),
    v4(100, 64, 0, 0, 10, SharedNat),
    v4(127, 0, 0, 0, 8, Loopback),
    v4(169, 254, 0, 0, 16, LinkLocal),
    v4(172, 16, 0, 0, 12, Private),
    v4(192, 0, 0, 0, 24, Reserved),
    v4(192, 0, 2, 0, 24, Reserved),
    v4(192, 88, 99, 0, 24, Reserved),
    v4(192, 168, 0, 0, 16, Private),
    v4(198, 18, 0, 0, 15, Reserved),
    v4(198, 51, 100, 0, 24, Reserved),
    v4(203, 0, 113, 0, 24, Reserved),
    v4(224, 0, 0, 0, 4, Multicast),
    v4(240, 0, 0, 0, 4, Reserved),
    v4(255, 255, 255, 255, 32, Reserved),
];

/// The special IPv6 ranges that do not embed an IPv4 address.
const V6: [(Cidr, AddressClass); 9] = [
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128, Unspecified),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, Loopback),
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, Private),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, Reserved),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, Reserved),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, UniqueLocal),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, LinkLocal),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, Private),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, Multicast),
];

/// The IPv4 address an IPv6 address stands for, if it embeds one that a
/// connection would reach: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) and 6to4 (`2002:AABB:CCDD::`).
pub fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(low),
        // `::` and `::1` are IPv6's own, not IPv4-compatible.
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => None,
        [0, 0, 0, 0, 0, 0, _, _] => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

/// The address a connection to `ip` reaches, IPv4 where it embeds one.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The special range `ip` (taken as [`canonical`]) falls in, with its
/// class; `None` for a public address.
pub fn classify(ip: IpAddr) -> Option<(Cidr, AddressClass)> {
    let ip = canonical(ip);
    let table: &[(Cidr, AddressClass)] = match ip {
        IpAddr::V4(_) => &V4,
        IpAddr::V6(_) => &V6,
    };
    table.iter().copied().find(|(range, _)| range.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Option<AddressClass> {
        classify(s.parse().unwrap()).map(|(_, c)| c)
    }

    #[test]
    fn every_special_range_is_classified() {
        // Literal addresses only: nothing here is ever connected to.
        for (addr, want) in [
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("10.0.0.5", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("169.254.169.254", LinkLocal),
            ("100.64.0.1", SharedNat),
            ("100.127.255.255", SharedNat),
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", Unspecified),
            ("224.0.0.1", Multicast),
            ("239.255.255.250", Multicast),
            ("255.255.255.255", Reserved),
            ("240.0.0.1", Reserved),
            ("192.0.2.1", Reserved),
            ("198.18.0.1", Reserved),
            ("::1", Loopback),
            ("::", Unspecified),
            ("fe80::1", LinkLocal),
            ("fc00::1", UniqueLocal),
            ("fd12:3456::1", UniqueLocal),
            ("ff02::1", Multicast),
            ("2001:db8::1", Reserved),
            ("64:ff9b:1::1", Private),
        ] {
            assert_eq!(class(addr), Some(want), "{addr}");
        }
    }

    #[test]
    fn ipv4_embedded_in_ipv6_is_judged_as_ipv4() {
        for (addr, want) in [
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:169.254.169.254", LinkLocal),
            ("::ffff:10.1.2.3", Private),
            ("::10.1.2.3", Private),
            ("64:ff9b::a9fe:a9fe", LinkLocal),
            ("2002:c0a8:0101::1", Private),
            ("2002:7f00:1::", Loopback),
        ] {
            assert_eq!(class(addr), Some(want), "{addr}");
        }
        assert_eq!(class("::ffff:93.184.216.34"), None);
        assert_eq!(class("2002:5db8:d822::1"), None);
    }

    #[test]
    fn public_addresses_are_not_special() {
        for addr in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "172.15.255.255",
            "100.128.0.1",
            "169.253.0.1",
            "192.169.0.1",
            "2606:4700::1111",
            "2a00:1450::1",
        ] {
            assert_eq!(class(addr), None, "{addr}");
        }
    }

    #[test]
    fn a_range_is_the_one_an_address_falls_in() {
        let (range, _) = classify("10.9.8.7".parse().unwrap()).unwrap();
        assert_eq!(range.to_string(), "10.0.0.0/8");
        let (range, _) = classify("::ffff:127.0.0.2".parse().unwrap()).unwrap();
        assert_eq!(range.to_string(), "127.0.0.0/8");
    }
}
