//! [`HostPattern`]: the one spelling of "this host, on this port or any port" that every
//! network rule in toolshed uses — `[web] allow` entries, a plugin's declared and granted
//! hosts, `[plugins] download_hosts` and the hosts of a [`NetPolicy::Only`].
//!
//! One parser, so a host means the same thing wherever a person writes it: names are
//! compared in the URL parser's normal form (lowercase ASCII, no trailing dot), addresses
//! as addresses (`127.1` is `127.0.0.1`, as in a URL), IPv6 only in brackets, ports from 1
//! to 65535.
//!
//! ```
//! use toolshed_ops::net::HostPattern;
//! let api = HostPattern::parse("API.example.com:8443").unwrap();
//! assert_eq!(api.to_string(), "api.example.com:8443");
//! assert!(api.matches_str("api.example.com", 8443));
//! assert!(!api.matches_str("api.example.com", 443));
//! let any_port = HostPattern::parse("[::1]").unwrap();
//! assert!(any_port.matches_str("[::1]", 8080));
//! assert!(HostPattern::parse("http://example.com/").is_err());
//! ```
//!
//! [`NetPolicy::Only`]: toolshed_core::NetPolicy::Only

use std::fmt;

use url::Host;

/// A host (name or address) and a port, or any port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPattern {
    host: Host<String>,
    port: Option<u16>,
}

/// What the errors that do not know better end with.
const SPELLING: &str = "write a host as `api.example.com`, `api.example.com:8443`, `127.0.0.1:8080` or `[::1]:8080`, without a scheme, path or user name";

/// Why a host pattern does not parse; the message says how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostPatternError {
    /// Nothing was given.
    #[error("the host is empty; {SPELLING}")]
    Empty,
    /// A URL, a path or a user name rather than a host.
    #[error("`{0}` is not a host; {SPELLING}")]
    NotAHost(String),
    /// `[` without its `]`.
    #[error("an IPv6 address opened with `[` needs a closing `]`")]
    UnclosedBracket,
    /// Something after `[v6]` that is not `:PORT`.
    #[error("`{after}` after `{host}` is not a port; write `{host}:PORT`")]
    AfterBracket {
        /// The bracketed address.
        host: String,
        /// What followed it.
        after: String,
    },
    /// Not a port number from 1 to 65535.
    #[error("`{0}` is not a port; use a number from 1 to 65535")]
    BadPort(String),
    /// An IPv6 address without brackets.
    #[error("IPv6 addresses go in brackets: write `[{0}]`, or `[{0}]:PORT` for one port")]
    UnbracketedIpv6(String),
    /// A name with characters a host name does not have (a wildcard, a space).
    #[error(
        "`{0}` is not a host name (letters, digits, `-`, `.`, `_`; no wildcards: list each host)"
    )]
    BadName(String),
    /// Brackets around what is not an IPv6 address.
    #[error("`{host}` is not an IPv6 address in brackets ({source}); write it like `[fd00::1]`")]
    BadIpv6 {
        /// What was in the brackets, with them.
        host: String,
        /// Why it is not an address.
        source: url::ParseError,
    },
    /// The URL parser's refusal.
    #[error("`{host}` is not a valid host ({source}); {SPELLING}")]
    Invalid {
        /// The host as given.
        host: String,
        /// Why it is not one.
        source: url::ParseError,
    },
}

impl HostPattern {
    /// Parses `name`, `name:port`, `a.b.c.d`, `a.b.c.d:port`, `[v6]` or `[v6]:port`. The
    /// error says what is wrong and how to write it.
    pub fn parse(text: &str) -> Result<Self, HostPatternError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(HostPatternError::Empty);
        }
        if text.contains("://") || text.contains(['/', '?', '#', '@', '\\']) {
            return Err(HostPatternError::NotAHost(text.to_string()));
        }
        let (host, port) = split_port(text)?;
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| HostPatternError::BadPort(p.to_string()))?,
            ),
            None => None,
        };
        if !host.starts_with('[') && host.contains(':') {
            return Err(HostPatternError::UnbracketedIpv6(host.to_string()));
        }
        let host = match Host::parse(host) {
            Ok(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_string();
                let valid = !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
                if !valid {
                    return Err(HostPatternError::BadName(host.to_string()));
                }
                Host::Domain(name)
            }
            Ok(address) => address,
            Err(source) if host.starts_with('[') => {
                return Err(HostPatternError::BadIpv6 {
                    host: host.to_string(),
                    source,
                });
            }
            Err(source) => {
                return Err(HostPatternError::Invalid {
                    host: host.to_string(),
                    source,
                });
            }
        };
        Ok(Self { host, port })
    }

    /// The host: a normalized name or an address.
    pub fn host(&self) -> &Host<String> {
        &self.host
    }

    /// The one port allowed, or `None` for any.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// Whether this pattern allows `host` on `port`.
    pub fn matches(&self, host: &Host<String>, port: u16) -> bool {
        self.host == *host && self.port.is_none_or(|p| p == port)
    }

    /// [`HostPattern::matches`] for a host as a URL spells it (`example.com`, `10.0.0.1`,
    /// `[::1]`); a host that does not parse matches nothing.
    pub fn matches_str(&self, host: &str, port: u16) -> bool {
        Self::parse(host).is_ok_and(|other| other.port.is_none() && self.matches(&other.host, port))
    }

    /// Whether everything `other` allows, this allows too (`example.com` covers
    /// `example.com:443`; `example.com:443` does not cover `example.com`).
    pub fn covers(&self, other: &Self) -> bool {
        self.host == other.host && (self.port.is_none() || self.port == other.port)
    }

    /// What both `self` and `other` allow, if anything.
    pub fn intersect(&self, other: &Self) -> Option<Self> {
        if self.host != other.host {
            return None;
        }
        let port = match (self.port, other.port) {
            (None, p) | (p, None) => p,
            (Some(a), Some(b)) if a == b => Some(a),
            _ => return None,
        };
        Some(Self {
            host: self.host.clone(),
            port,
        })
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `Host` writes IPv6 addresses in brackets.
        match self.port {
            Some(p) => write!(f, "{}:{p}", self.host),
            None => write!(f, "{}", self.host),
        }
    }
}

impl std::str::FromStr for HostPattern {
    type Err = HostPatternError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// `host` and the text after its port colon, if any (`[v6]:port` included).
fn split_port(text: &str) -> Result<(&str, Option<&str>), HostPatternError> {
    if text.starts_with('[') {
        let Some(close) = text.find(']') else {
            return Err(HostPatternError::UnclosedBracket);
        };
        let (host, after) = text.split_at(close + 1);
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(HostPatternError::AfterBracket {
                    host: host.to_string(),
                    after: after.to_string(),
                }),
            },
        };
    }
    if text.matches(':').count() == 1
        && let Some((host, port)) = text.split_once(':')
    {
        return Ok((host, Some(port)));
    }
    Ok((text, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> HostPattern {
        HostPattern::parse(text).unwrap()
    }

    #[test]
    fn one_spelling_normalized_as_a_url_would_be() {
        assert_eq!(p("Example.COM.").to_string(), "example.com");
        assert_eq!(p("127.1:80").to_string(), "127.0.0.1:80");
        assert_eq!(p("[::FFFF:127.0.0.1]").to_string(), "[::ffff:7f00:1]");
        assert_eq!(p(" docs.internal:8443 ").port(), Some(8443));
    }

    #[test]
    fn ports_and_hosts_match_exactly() {
        assert!(p("example.com").matches_str("example.com", 443));
        assert!(p("example.com:80").matches_str("EXAMPLE.com", 80));
        assert!(!p("example.com:80").matches_str("example.com", 81));
        assert!(!p("example.com").matches_str("example.com.evil", 443));
        assert!(!p("example.com").matches_str("sub.example.com", 443));
        assert!(p("[::1]").matches_str("[::1]", 8080));
        assert!(!p("127.0.0.1").matches_str("localhost", 80));
    }

    #[test]
    fn covers_and_intersects() {
        assert!(p("example.com").covers(&p("example.com:443")));
        assert!(!p("example.com:443").covers(&p("example.com")));
        assert_eq!(
            p("example.com").intersect(&p("example.com:8443")),
            Some(p("example.com:8443"))
        );
        assert_eq!(p("example.com:1").intersect(&p("example.com:2")), None);
        assert_eq!(p("a.com").intersect(&p("b.com")), None);
    }

    #[test]
    fn bad_spellings_say_how_to_write_them() {
        for (text, hint) in [
            ("", "empty"),
            ("https://example.com", "without a scheme"),
            ("example.com/path", "without a scheme, path"),
            ("user@example.com", "user name"),
            ("example.com:0", "from 1 to 65535"),
            ("example.com:http", "not a port"),
            ("::1", "in brackets"),
            ("[::1", "closing `]`"),
            ("[nope]", "not an IPv6 address"),
            ("exa mple.com", "not a valid host"),
            ("*.example.com", "no wildcards"),
            ("[::1]x", "not a port"),
        ] {
            let err = HostPattern::parse(text).unwrap_err().to_string();
            assert!(err.contains(hint), "{text}: {err}");
        }
    }
}
