//! Which IP addresses [`NetPolicy::Public`](toolshed_core::NetPolicy::Public) refuses, and why.
//!
//! The rule is "only addresses anyone on the internet could reach": a request that reaches a
//! loopback, private or link-local address reaches something a person put behind their own
//! network boundary (a database on localhost, a router's admin page, the cloud metadata
//! service that hands out credentials), and a model asking for a URL must not be a way in.
//! IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible, SIIT, NAT64, 6to4)
//! are judged by the IPv4 address they carry, so `::ffff:127.0.0.1` is loopback too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The address instance metadata services answer on (AWS, GCP, Azure, ...).
const METADATA_V4: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
/// The IPv6 address of the AWS instance metadata service.
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);

const PRIVATE: &str = "a private address";
const DOCUMENTATION: &str = "a documentation address";
const RESERVED: &str = "a reserved address";

/// Why `ip` is not a public address, as a phrase that completes "resolves to 10.0.0.1, …"
/// (`"a private address"`), or `None` when it is public.
pub fn non_public_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    if ip == METADATA_V4 {
        return Some("the cloud metadata address");
    }
    if ip == Ipv4Addr::BROADCAST {
        return Some("the broadcast address");
    }
    let [a, b, c, _] = ip.octets();
    let reason = match (a, b, c) {
        (0, _, _) => "an unspecified (\"this network\") address",
        (127, _, _) => "a loopback address",
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => PRIVATE,
        (169, 254, _) => "a link-local address",
        (100, 64..=127, _) => "a shared (carrier-grade NAT) address",
        (192, 0, 0) => "an IETF protocol address",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => DOCUMENTATION,
        (198, 18..=19, _) => "a benchmarking address",
        (192, 88, 99) => "a deprecated 6to4 relay address",
        (224..=239, _, _) => "a multicast address",
        (240..=255, _, _) => RESERVED,
        _ => return None,
    };
    Some(reason)
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    if ip == METADATA_V6 {
        return Some("the cloud metadata address");
    }
    if let Some(v4) = embedded_v4(ip) {
        return v4_reason(v4);
    }
    let s = ip.segments();
    let reason = match s {
        [0x2001, 0, ..] => "a Teredo tunnel address",
        [0x0064, 0xff9b, 0x0001, ..] => "a local-use NAT64 address",
        [0x0100, 0, 0, 0, ..] => "a discard-only address",
        [0x2001, 0x0db8, ..] => DOCUMENTATION,
        [0x2001, 0x0002, 0, ..] => "a benchmarking address",
        [first, ..] if first & 0xfff0 == 0x3ff0 => DOCUMENTATION,
        [first, ..] if first & 0xfe00 == 0xfc00 => "a private (unique local) address",
        [first, ..] if first & 0xffc0 == 0xfe80 => "a link-local address",
        [first, ..] if first & 0xffc0 == 0xfec0 => "a site-local address",
        [first, ..] if first & 0xff00 == 0xff00 => "a multicast address",
        _ => return None,
    };
    Some(reason)
}

/// The IPv4 address an IPv6 address stands for, in the forms that route to it: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), SIIT (`::ffff:0:a.b.c.d`), NAT64
/// (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::/48`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo]
        | [0, 0, 0, 0, 0, 0, hi, lo]
        | [0, 0, 0, 0, 0xffff, 0, hi, lo]
        | [0x0064, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(s: &str) -> Option<&'static str> {
        non_public_reason(s.parse().unwrap())
    }

    #[test]
    fn refuses_every_non_public_ipv4_range() {
        for (ip, why) in [
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("127.0.0.1", "loopback"),
            ("127.255.1.2", "loopback"),
            ("10.0.0.1", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.0.1", "link-local"),
            ("169.254.169.254", "metadata"),
            ("100.64.0.1", "carrier-grade"),
            ("100.100.100.200", "carrier-grade"),
            ("100.127.255.255", "carrier-grade"),
            ("192.0.0.192", "IETF"),
            ("192.0.2.1", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.9", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.1", "benchmarking"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "broadcast"),
        ] {
            let got = reason(ip).unwrap_or_else(|| panic!("{ip} was allowed"));
            assert!(got.contains(why), "{ip}: {got}");
        }
    }

    #[test]
    fn allows_public_ipv4_next_to_the_ranges() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.0.1",
            "192.167.1.1",
            "198.17.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "11.0.0.1",
        ] {
            assert_eq!(reason(ip), None, "{ip}");
        }
    }

    #[test]
    fn refuses_non_public_ipv6_and_embedded_ipv4() {
        for (ip, why) in [
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.1.2.3", "private"),
            ("::ffff:169.254.169.254", "metadata"),
            ("::127.0.0.1", "loopback"),
            ("::ffff:0:192.168.0.1", "private"),
            ("64:ff9b::10.0.0.1", "private"),
            ("64:ff9b::127.0.0.1", "loopback"),
            ("64:ff9b:1::1", "NAT64"),
            ("2002:7f00:0001::1", "loopback"),
            ("2002:a9fe:a9fe::", "metadata"),
            ("2002:c0a8:0101::5", "private"),
            ("fc00::1", "unique local"),
            ("fd12:3456::1", "unique local"),
            ("fd00:ec2::254", "metadata"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("100::1", "discard"),
            ("2001:2::1", "benchmarking"),
            ("2001::1", "Teredo"),
        ] {
            let got = reason(ip).unwrap_or_else(|| panic!("{ip} was allowed"));
            assert!(got.contains(why), "{ip}: {got}");
        }
    }

    #[test]
    fn allows_public_ipv6_and_public_embedded_ipv4() {
        for ip in [
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2002:0808:0808::1",
            "2001:4860::8888",
        ] {
            assert_eq!(reason(ip), None, "{ip}");
        }
    }
}
