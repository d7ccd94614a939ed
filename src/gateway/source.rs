//! Who a connection counts as, for every per-source limit of the gateway
//! (the pairing lockout, handshakes and unauthenticated sessions in
//! `admission`).
//!
//! An address is not a person: every process on this machine can pick any
//! of the 2^24 addresses of 127.0.0.0/8 (and `::1`), and one IPv6 host
//! usually holds a whole /64. So all loopback addresses are one source,
//! an IPv6 address counts by its /64, and an IPv4-mapped IPv6 address
//! counts as the IPv4 address it carries.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

/// One client, as the limits count clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// Any loopback address, v4 or v6: every local process.
    Loopback,
    /// One IPv4 address.
    V4(Ipv4Addr),
    /// The first 64 bits of an IPv6 address.
    V6Prefix(u64),
}

impl Source {
    /// The source `ip` counts as.
    pub fn of(ip: IpAddr) -> Self {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match ip {
            ip if ip.is_loopback() => Self::Loopback,
            IpAddr::V4(v4) => Self::V4(v4),
            IpAddr::V6(v6) => Self::V6Prefix((u128::from(v6) >> 64) as u64),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Loopback => f.write_str("loopback"),
            Self::V4(a) => write!(f, "{a}"),
            Self::V6Prefix(p) => {
                let b = p.to_be_bytes();
                write!(
                    f,
                    "{:x}:{:x}:{:x}:{:x}::/64",
                    u16::from_be_bytes([b[0], b[1]]),
                    u16::from_be_bytes([b[2], b[3]]),
                    u16::from_be_bytes([b[4], b[5]]),
                    u16::from_be_bytes([b[6], b[7]])
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(s: &str) -> Source {
        Source::of(s.parse().unwrap())
    }

    #[test]
    fn every_loopback_address_is_one_source() {
        for a in [
            "127.0.0.1",
            "127.0.0.2",
            "127.255.3.9",
            "::1",
            "::ffff:127.0.0.5",
        ] {
            assert_eq!(of(a), Source::Loopback, "{a}");
        }
    }

    #[test]
    fn ipv6_counts_by_its_slash_64() {
        assert_eq!(of("2001:db8:1:2::1"), of("2001:db8:1:2:ffff::9"));
        assert_ne!(of("2001:db8:1:2::1"), of("2001:db8:1:3::1"));
        assert_eq!(of("2001:db8:1:2::1").to_string(), "2001:db8:1:2::/64");
    }

    #[test]
    fn mapped_ipv4_is_the_ipv4_address() {
        assert_eq!(of("::ffff:10.0.0.7"), of("10.0.0.7"));
        assert_ne!(of("10.0.0.7"), of("10.0.0.8"));
        assert_eq!(of("10.0.0.7").to_string(), "10.0.0.7");
    }
}
