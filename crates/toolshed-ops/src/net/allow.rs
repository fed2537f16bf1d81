//! The allowlist that opens specific internal destinations to [`NetPolicy::Public`]
//! (`[web] allow` in the configuration).
//!
//! `Public` refuses every private address, which is right for a URL a model picked, and
//! wrong for the one internal docs server a team wants its agents to read. Rather than a
//! switch that turns the checks off, the person running toolshed lists what to open, and
//! only that: a host name (`docs.internal`, optionally with a port), one address
//! (`192.168.1.7`, `[fd00::1]`, optionally with a port) or a range (`10.0.0.0/8`,
//! `fd00::/8`). Everything not listed is checked as before.
//!
//! [`NetPolicy::Public`]: toolshed_core::NetPolicy::Public

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use url::Host;

use super::host_pattern::HostPattern;

/// One allowlist entry, parsed from its config spelling with [`AllowRule::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowRule {
    /// A host name (lowercase, without a trailing dot): the name itself is allowed, and
    /// whatever addresses it resolves to, private ones included.
    Host {
        /// The name.
        name: String,
        /// Only this port, when given.
        port: Option<u16>,
    },
    /// One address, as a URL literal or among the addresses a name resolves to.
    Address {
        /// The address.
        ip: IpAddr,
        /// Only this port, when given.
        port: Option<u16>,
    },
    /// Every address in a CIDR range, on any port.
    Range {
        /// The first address of the range (host bits zero).
        network: IpAddr,
        /// The prefix length: up to 32 for IPv4, 128 for IPv6.
        prefix: u8,
    },
}

/// Why an allowlist entry was not accepted; the message names the entry and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allow entry `{entry}`: {problem}")]
pub struct AllowRuleError {
    /// The entry as written.
    pub entry: String,
    /// What is wrong with it, and what to write instead.
    pub problem: String,
}

impl AllowRule {
    /// Parses one entry: `host`, `host:port`, `a.b.c.d`, `a.b.c.d:port`, `[v6]`,
    /// `[v6]:port`, `a.b.c.d/len` or `v6/len`.
    pub fn parse(entry: &str) -> Result<Self, AllowRuleError> {
        let fail = |problem: String| AllowRuleError {
            entry: entry.to_string(),
            problem,
        };
        let text = entry.trim();
        if text.is_empty() {
            return Err(fail(
                "the entry is empty; write a host, host:port, an address or a CIDR range".into(),
            ));
        }
        if text.contains("://") || text.contains(['/', '?', '#', '@']) && !is_cidr_like(text) {
            return Err(fail(
                "write a host (`docs.internal`), `host:port`, an address or a CIDR range, without a scheme, path or user name".into(),
            ));
        }
        if let Some((address, prefix)) = text.split_once('/') {
            return parse_range(address, prefix).map_err(fail);
        }
        // Names, addresses and ports: the one host pattern every network rule uses.
        let pattern = HostPattern::parse(text).map_err(|e| fail(e.to_string()))?;
        let port = pattern.port();
        Ok(match pattern.host() {
            Host::Domain(name) => Self::Host {
                name: name.clone(),
                port,
            },
            Host::Ipv4(ip) => Self::Address {
                ip: IpAddr::V4(*ip),
                port,
            },
            Host::Ipv6(ip) => Self::Address {
                ip: IpAddr::V6(*ip),
                port,
            },
        })
    }

    /// Whether this rule opens the host name `name` on `port`.
    pub fn allows_name(&self, name: &str, port: u16) -> bool {
        match self {
            Self::Host {
                name: listed,
                port: p,
            } => listed.eq_ignore_ascii_case(name) && p.is_none_or(|p| p == port),
            _ => false,
        }
    }

    /// Whether this rule opens the address `ip` on `port`.
    pub fn allows_address(&self, ip: IpAddr, port: u16) -> bool {
        match self {
            Self::Host { .. } => false,
            Self::Address {
                ip: listed,
                port: p,
            } => *listed == ip && p.is_none_or(|p| p == port),
            Self::Range { network, prefix } => in_range(ip, *network, *prefix),
        }
    }
}

impl FromStr for AllowRule {
    type Err = AllowRuleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for AllowRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let address = |ip: &IpAddr| match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        match self {
            Self::Host { name, port: None } => write!(f, "{name}"),
            Self::Host {
                name,
                port: Some(p),
            } => write!(f, "{name}:{p}"),
            Self::Address { ip, port: None } => write!(f, "{}", address(ip)),
            Self::Address { ip, port: Some(p) } => write!(f, "{}:{p}", address(ip)),
            Self::Range { network, prefix } => write!(f, "{network}/{prefix}"),
        }
    }
}

/// Parses every entry, stopping at the first that does not parse.
pub fn parse_allowlist<S: AsRef<str>>(entries: &[S]) -> Result<Vec<AllowRule>, AllowRuleError> {
    entries
        .iter()
        .map(|e| AllowRule::parse(e.as_ref()))
        .collect()
}

fn is_cidr_like(text: &str) -> bool {
    text.matches('/').count() == 1 && !text.contains(['?', '#', '@'])
}

fn parse_range(address: &str, prefix: &str) -> Result<AllowRule, String> {
    let address = address.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = address.parse().map_err(|_| {
        format!(
            "`{address}` is not an IP address; a CIDR range looks like `10.0.0.0/8` or `fd00::/8`"
        )
    })?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let prefix: u8 =
        prefix.parse().ok().filter(|p| *p <= max).ok_or_else(|| {
            format!("the prefix length `{prefix}` is not a number from 0 to {max}")
        })?;
    let network = mask(ip, prefix);
    if network != ip {
        return Err(format!(
            "`{ip}/{prefix}` has bits set past the prefix; write `{network}/{prefix}`"
        ));
    }
    Ok(AllowRule::Range { network, prefix })
}

fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4) & u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = bits & u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(kept))
        }
    }
}

fn in_range(ip: IpAddr, network: IpAddr, prefix: u8) -> bool {
    ip.is_ipv4() == network.is_ipv4() && mask(ip, prefix) == network
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> AllowRule {
        AllowRule::parse(s).unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn every_documented_form_parses() {
        assert_eq!(
            rule("docs.internal"),
            AllowRule::Host {
                name: "docs.internal".into(),
                port: None
            }
        );
        assert_eq!(
            rule(" Docs.Internal.:8443 "),
            AllowRule::Host {
                name: "docs.internal".into(),
                port: Some(8443)
            }
        );
        assert_eq!(
            rule("10.0.0.0/8"),
            AllowRule::Range {
                network: ip("10.0.0.0"),
                prefix: 8
            }
        );
        assert_eq!(
            rule("192.168.1.7"),
            AllowRule::Address {
                ip: ip("192.168.1.7"),
                port: None
            }
        );
        assert_eq!(
            rule("192.168.1.7:8080"),
            AllowRule::Address {
                ip: ip("192.168.1.7"),
                port: Some(8080)
            }
        );
        assert_eq!(
            rule("[fd00::1]"),
            AllowRule::Address {
                ip: ip("fd00::1"),
                port: None
            }
        );
        assert_eq!(
            rule("[fd00::1]:9000"),
            AllowRule::Address {
                ip: ip("fd00::1"),
                port: Some(9000)
            }
        );
        assert_eq!(
            rule("fd00::/8"),
            AllowRule::Range {
                network: ip("fd00::"),
                prefix: 8
            }
        );
        assert_eq!(
            rule("0.0.0.0/0"),
            AllowRule::Range {
                network: ip("0.0.0.0"),
                prefix: 0
            }
        );
        for entry in [
            "docs.internal:8443",
            "[fd00::1]:9000",
            "10.0.0.0/8",
            "fd00::/8",
        ] {
            assert_eq!(rule(entry).to_string(), entry);
        }
    }

    #[test]
    fn bad_entries_are_refused_naming_the_entry_and_the_fix() {
        for (entry, says) in [
            ("", "empty"),
            ("http://docs.internal", "without a scheme"),
            ("docs.internal/path", "not an IP address"),
            ("fd00::1", "[fd00::1]"),
            ("docs.internal:0", "not a port"),
            ("docs.internal:http", "not a port"),
            ("10.0.0.1/8", "write `10.0.0.0/8`"),
            ("10.0.0.0/33", "0 to 32"),
            ("fd00::/129", "0 to 128"),
            ("[fd00::1", "closing"),
            ("[nope]", "not an IPv6 address"),
            ("*.docs.internal", "no wildcards"),
            ("user@docs.internal", "user name"),
        ] {
            let err = AllowRule::parse(entry).unwrap_err().to_string();
            assert!(err.contains(&format!("`{entry}`")), "{entry}: {err}");
            assert!(err.contains(says), "{entry}: {err}");
        }
    }

    #[test]
    fn rules_match_names_addresses_ranges_and_ports() {
        assert!(rule("docs.internal").allows_name("DOCS.internal", 80));
        assert!(rule("docs.internal:8443").allows_name("docs.internal", 8443));
        assert!(!rule("docs.internal:8443").allows_name("docs.internal", 443));
        assert!(!rule("docs.internal").allows_name("api.docs.internal", 80));
        assert!(!rule("docs.internal").allows_address(ip("10.0.0.1"), 80));

        assert!(rule("10.0.0.0/8").allows_address(ip("10.255.1.2"), 1));
        assert!(!rule("10.0.0.0/8").allows_address(ip("11.0.0.1"), 1));
        assert!(!rule("10.0.0.0/8").allows_address(ip("::ffff:10.0.0.1"), 1));
        assert!(rule("fd00::/8").allows_address(ip("fdab::1"), 1));
        assert!(!rule("fd00::/8").allows_address(ip("fc00::1"), 1));
        assert!(rule("192.168.1.7").allows_address(ip("192.168.1.7"), 5));
        assert!(!rule("192.168.1.7").allows_address(ip("192.168.1.8"), 5));
        assert!(rule("192.168.1.7:81").allows_address(ip("192.168.1.7"), 81));
        assert!(!rule("192.168.1.7:81").allows_address(ip("192.168.1.7"), 82));
        assert!(rule("127.0.0.1/32").allows_address(ip("127.0.0.1"), 1));
        assert!(rule("::/0").allows_address(ip("::1"), 1));
    }
}
