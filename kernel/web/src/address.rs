//! Which IP addresses are on the public internet. `std`'s `is_global` is unstable, so the
//! special ranges of the IANA registries are listed here, and an IPv6 address that carries an
//! IPv4 one (mapped, compatible, NAT64, 6to4) is judged by the IPv4 address inside.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not a public unicast address, or `None` when it is one.
pub fn not_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => not_public_v4(v4),
        IpAddr::V6(v6) => not_public_v6(v6),
    }
}

fn not_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let why = match (a, b, c) {
        (0, _, _) => "an unspecified (\"this network\") address",
        (10, _, _) => "a private address",
        (100, 64..=127, _) => "a carrier-grade NAT (shared) address",
        (127, _, _) => "a loopback address",
        (169, 254, 169) if ip.octets()[3] == 254 => "the cloud metadata address",
        (169, 254, _) => "a link-local address",
        (172, 16..=31, _) => "a private address",
        (192, 0, 0) => "an IETF protocol address",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (192, 88, 99) => "a 6to4 relay address",
        (192, 168, _) => "a private address",
        (198, 18..=19, _) => "a benchmarking address",
        (224..=239, _, _) => "a multicast address",
        (240..=255, _, _) => "a reserved or broadcast address",
        _ => return None,
    };
    Some(why)
}

fn not_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(ip) {
        return not_public_v4(v4);
    }
    let s = ip.segments();
    let why = match s[0] {
        _ if ip.is_unspecified() => "an unspecified address",
        _ if ip.is_loopback() => "a loopback address",
        0x0064 if s[1] == 0xff9b && s[2] == 1 => "a local-use NAT64 address",
        0xfc00..=0xfdff => "a unique-local address",
        0xfe80..=0xfebf => "a link-local address",
        0xfec0..=0xfeff => "a site-local address",
        0xff00..=0xffff => "a multicast address",
        0x0100 if s[1..4] == [0, 0, 0] => "a discard-only address",
        0x2001 if s[1] == 0x0db8 => "a documentation address",
        // 2001::/23: IETF protocol assignments, Teredo (2001::/32) among them.
        0x2001 if s[1] < 0x0200 => "an IETF protocol address",
        0x3fff if s[1] < 0x1000 => "a documentation address",
        _ if s[0] & 0xe000 != 0x2000 => "an address outside global unicast",
        _ => return None,
    };
    Some(why)
}

/// The IPv4 address an IPv6 one carries: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(low),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(text: &str) -> Option<&'static str> {
        not_public(text.parse().unwrap())
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
        ] {
            assert_eq!(why(ip), None, "{ip}");
        }
    }

    #[test]
    fn special_addresses_are_refused_with_their_kind() {
        for (ip, kind) in [
            ("127.0.0.1", "a loopback address"),
            ("127.255.0.9", "a loopback address"),
            ("0.0.0.0", "an unspecified (\"this network\") address"),
            ("10.1.2.3", "a private address"),
            ("172.16.0.1", "a private address"),
            ("172.31.255.255", "a private address"),
            ("192.168.1.1", "a private address"),
            ("100.64.0.1", "a carrier-grade NAT (shared) address"),
            ("169.254.169.254", "the cloud metadata address"),
            ("169.254.1.1", "a link-local address"),
            ("224.0.0.1", "a multicast address"),
            ("255.255.255.255", "a reserved or broadcast address"),
            ("::1", "a loopback address"),
            ("::", "an unspecified address"),
            ("fd00:ec2::254", "a unique-local address"),
            ("fc00::1", "a unique-local address"),
            ("fe80::1", "a link-local address"),
            ("ff02::1", "a multicast address"),
            ("2001:db8::1", "a documentation address"),
            ("2001::1", "an IETF protocol address"),
        ] {
            assert_eq!(why(ip), Some(kind), "{ip}");
        }
    }

    #[test]
    fn ipv4_inside_ipv6_is_judged_as_ipv4() {
        assert_eq!(why("::ffff:127.0.0.1"), Some("a loopback address"));
        assert_eq!(why("::ffff:169.254.169.254"), Some("the cloud metadata address"));
        assert_eq!(why("::10.0.0.1"), Some("a private address"));
        assert_eq!(why("64:ff9b::192.168.0.1"), Some("a private address"));
        assert_eq!(why("64:ff9b:1::a9fe:a9fe"), Some("a local-use NAT64 address"));
        assert_eq!(why("2002:7f00:1::"), Some("a loopback address"));
        assert_eq!(why("2002:0808:0808::"), None, "6to4 of a public address");
        assert_eq!(why("::ffff:8.8.8.8"), None);
    }
}
