//! Checking a URL, and the addresses its host resolves to, against a [`NetPolicy`].
//!
//! URLs are parsed with the WHATWG rules (the `url` crate), which is also what turns
//! `http://2130706433/`, `http://0x7f.1/` and `http://0177.0.0.1/` into `127.0.0.1`: the
//! checks below only ever see the normalized host, so odd spellings of an address cannot
//! slip past them.

use std::net::{IpAddr, SocketAddr};

use toolshed_core::{NetPolicy, ToolError};
use url::{Host, Url};

use super::address::non_public_reason;
use super::allow::AllowRule;
use super::host_pattern::HostPattern;

/// The rule named in every refusal.
const RULE: &str = "network policy";
/// What every `Public` refusal ends with.
const PUBLIC_ONLY: &str = "toolshed does not fetch private addresses; use a public host (or ask the person running toolshed to list this one under `[web] allow`)";
/// URLs quoted in messages are cut to this many characters.
const MAX_QUOTED_URL: usize = 200;

/// A checked URL: `http` or `https`, a host, no user name or password.
#[derive(Debug, Clone)]
pub(super) struct Target {
    /// The URL as the caller (or the redirect) wrote it, for messages.
    pub given: String,
    /// The parsed URL (fragment kept, it is never sent).
    pub url: Url,
    /// The normalized host: a lowercase ASCII domain or an address.
    pub host: Host<String>,
    /// The port, explicit or the scheme's default.
    pub port: u16,
    /// Whether the scheme is `https`.
    pub tls: bool,
}

impl Target {
    /// Parses and checks `raw`: an absolute `http` or `https` URL without credentials.
    pub(super) fn parse(raw: &str) -> Result<Self, ToolError> {
        let url = Url::parse(raw).map_err(|e| {
            ToolError::invalid(format!(
                "`{}` is not a valid URL ({e}); give an absolute http:// or https:// URL",
                quote(&head(raw))
            ))
        })?;
        let mut target = Self::from_url(url)?;
        target.given = raw.trim().to_string();
        Ok(target)
    }

    /// Checks an already parsed URL (a redirect target).
    pub(super) fn from_url(url: Url) -> Result<Self, ToolError> {
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(ToolError::invalid(format!(
                    "`{other}:` URLs are not supported (`{}`); toolshed sends only http and https requests",
                    quote(&head(url.as_str()))
                )));
            }
        };
        if !url.username().is_empty() || url.password().is_some() {
            let mut shown = url.clone();
            // Cannot fail on an http(s) URL; the credentials must not be echoed either way.
            let _ = shown.set_username("");
            let _ = shown.set_password(None);
            return Err(ToolError::invalid(format!(
                "the URL `{}` has a user name or password before the host (`user:password@`); toolshed does not send credentials in URLs. Remove them and send an Authorization header instead",
                quote(&head(shown.as_str()))
            )));
        }
        let host = match url.host() {
            Some(host) => host.to_owned(),
            None => {
                return Err(ToolError::invalid(format!(
                    "the URL `{}` has no host; give an absolute http:// or https:// URL",
                    quote(&head(url.as_str()))
                )));
            }
        };
        let host = trim_root_dot(host);
        let port = url
            .port_or_known_default()
            .unwrap_or(if tls { 443 } else { 80 });
        Ok(Self {
            given: url.as_str().to_string(),
            url,
            host,
            port,
            tls,
        })
    }

    /// `host:port`, IPv6 addresses in brackets, for messages.
    pub(super) fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The value of the `Host` header: the host, and the port when it is not the default.
    pub(super) fn host_header(&self) -> String {
        match self.url.port() {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.to_string(),
        }
    }

    /// Whether `other` has the same scheme, host and port (the same origin).
    pub(super) fn same_origin(&self, other: &Target) -> bool {
        self.tls == other.tls && self.host == other.host && self.port == other.port
    }

    /// The URL as shown in messages: its origin, with `/…` for any path or query. URLs
    /// often carry secrets past the host (webhook tokens in the path, keys in the query),
    /// and messages reach models and logs.
    pub(super) fn shown(&self) -> String {
        let origin = self.url.origin().ascii_serialization();
        let rest = &self.url[url::Position::BeforePath..url::Position::AfterQuery];
        if rest.is_empty() || rest == "/" {
            format!("{origin}/")
        } else {
            format!("{origin}/…")
        }
    }
}

/// Where an `http`/`https` URL goes, as the HTTP client parses it (WHATWG rules: the same
/// host, port and path the client will dial and send).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The normalized host: a lowercase domain or an address (IPv6 shown in brackets).
    pub host: Host<String>,
    /// The port, explicit or the scheme's default.
    pub port: u16,
    /// Whether the scheme is `https`.
    pub tls: bool,
    /// The path, percent-encoded as the URL has it.
    pub path: String,
}

/// Parses `raw` as the HTTP client does: an absolute `http` or `https` URL without user
/// name or password. The one URL parser for allow decisions (plugin grants, download
/// hosts): a hand-split URL can name another host than the one dialled.
pub fn destination(raw: &str) -> Result<Destination, ToolError> {
    let target = Target::parse(raw)?;
    Ok(Destination {
        path: target.url.path().to_string(),
        host: target.host,
        port: target.port,
        tls: target.tls,
    })
}

/// Refuses `target` before anything is resolved or dialled: a non-public host under
/// [`NetPolicy::Public`] that `allow` does not open, a host (or port) not in the list
/// under [`NetPolicy::Only`] (which `allow` does not widen), either under
/// [`NetPolicy::PublicWithin`].
pub(super) fn check_target(
    target: &Target,
    policy: &NetPolicy,
    allow: &[AllowRule],
) -> Result<(), ToolError> {
    match policy {
        NetPolicy::PublicWithin(listed) => {
            check_target(target, &NetPolicy::Only(listed.clone()), allow)?;
            check_target(target, &NetPolicy::Public, allow)
        }
        NetPolicy::Public => match &target.host {
            Host::Domain(name) => {
                if allowed_name(target, allow) {
                    return Ok(());
                }
                match non_public_name(name) {
                    Some(why) => Err(denied(format!("`{name}` is {why}; {PUBLIC_ONLY}"))),
                    None => Ok(()),
                }
            }
            Host::Ipv4(ip) => check_literal(target, IpAddr::V4(*ip), allow),
            Host::Ipv6(ip) => check_literal(target, IpAddr::V6(*ip), allow),
        },
        NetPolicy::Only(allowed) => {
            if allowed.iter().any(|entry| entry_matches(entry, target)) {
                return Ok(());
            }
            let listed = if allowed.is_empty() {
                "none: the list is empty".to_string()
            } else {
                allowed.join(", ")
            };
            Err(denied(format!(
                "`{}` is not among the hosts this caller may reach ({listed}); use one of those, or ask the person running toolshed to allow `{}`",
                target.authority(),
                target.host
            )))
        }
    }
}

/// Refuses, under [`NetPolicy::Public`], a host that resolved to any non-public address
/// `allow` does not open. Every address is checked, not only the one dialled first: a name
/// that mixes a public and a private address is refused as a whole. A host name `allow`
/// lists is not checked here: its addresses are whatever the person who listed it meant.
pub(super) fn check_resolved(
    target: &Target,
    addresses: &[SocketAddr],
    policy: &NetPolicy,
    allow: &[AllowRule],
) -> Result<(), ToolError> {
    if !matches!(policy, NetPolicy::Public | NetPolicy::PublicWithin(_))
        || allowed_name(target, allow)
    {
        return Ok(());
    }
    for address in addresses {
        let ip = address.ip();
        if allow
            .iter()
            .any(|rule| rule.allows_address(ip, target.port))
        {
            continue;
        }
        if let Some(why) = non_public_reason(ip) {
            return Err(denied(format!(
                "`{}` resolves to {ip}, {why}; {PUBLIC_ONLY}",
                target.host
            )));
        }
    }
    Ok(())
}

/// The ports the web rules reach on any host: HTTP's and HTTPS's.
pub(super) const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// Refuses, under [`NetPolicy::Public`] and [`NetPolicy::PublicWithin`], a port other than
/// [`DEFAULT_PORTS`] unless `allow` names this destination (a rule without a port opens
/// all of its ports) or the policy's own list names this host with this very port. Under
/// [`NetPolicy::Only`] the person named the hosts and ports already. Called once the
/// addresses are known, so that address and range rules count.
pub(super) fn check_port(
    target: &Target,
    addresses: &[SocketAddr],
    policy: &NetPolicy,
    allow: &[AllowRule],
) -> Result<(), ToolError> {
    let listed = match policy {
        NetPolicy::Only(_) => return Ok(()),
        NetPolicy::Public => &[][..],
        NetPolicy::PublicWithin(listed) => listed.as_slice(),
    };
    if DEFAULT_PORTS.contains(&target.port)
        || allowed_name(target, allow)
        || addresses.iter().any(|a| {
            allow
                .iter()
                .any(|rule| rule.allows_address(a.ip(), target.port))
        })
        || listed_with_port(listed, target)
    {
        return Ok(());
    }
    Err(port_refused(target))
}

/// [`check_port`] before the host is resolved: a port that no rule could open is refused
/// at once — `example.com:22` without a DNS query, without a connection — and the full
/// check follows once the addresses are known (an address or range rule may open it).
pub(super) fn precheck_port(
    target: &Target,
    policy: &NetPolicy,
    allow: &[AllowRule],
) -> Result<(), ToolError> {
    let listed = match policy {
        NetPolicy::Only(_) => return Ok(()),
        NetPolicy::Public => &[][..],
        NetPolicy::PublicWithin(listed) => listed.as_slice(),
    };
    let port = target.port;
    let could = DEFAULT_PORTS.contains(&port)
        || allowed_name(target, allow)
        || allow.iter().any(|rule| match rule {
            AllowRule::Address { port: p, .. } => p.is_none_or(|p| p == port),
            AllowRule::Range { .. } => true,
            AllowRule::Host { .. } => false,
        })
        || listed_with_port(listed, target);
    if could {
        Ok(())
    } else {
        Err(port_refused(target))
    }
}

/// Whether a policy's own list names this host with this very port.
fn listed_with_port(listed: &[String], target: &Target) -> bool {
    listed.iter().any(|entry| {
        HostPattern::parse(entry)
            .is_ok_and(|p| p.port() == Some(target.port) && p.matches(&target.host, target.port))
    })
}

fn port_refused(target: &Target) -> ToolError {
    denied(format!(
        "port {} of `{}` is not one toolshed connects to: the web rules reach ports 80 and \
         443, and the ports `[web] allow` names; use one of those, or ask the person running \
         toolshed to list `{}` under `[web] allow`",
        target.port,
        target.host,
        target.authority()
    ))
}

/// The addresses to dial for `host:port` under `policy`: the web tools' rules
/// ([`NetPolicy::Public`] widened by `allow`), or only the hosts a person named
/// ([`NetPolicy::Only`]); for the command sandbox's egress filter. Resolves with the system
/// resolver (blocking); the error says why the destination is refused.
pub(crate) fn egress_addresses(
    host: &str,
    port: u16,
    policy: &NetPolicy,
    allow: &[AllowRule],
) -> Result<Vec<SocketAddr>, String> {
    let bracketed = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let target = Target::parse(&format!("http://{bracketed}:{port}/"))
        .map_err(|e| format!("`{host}` is not a host name: {e}"))?;
    check_target(&target, policy, allow).map_err(|e| e.to_string())?;
    precheck_port(&target, policy, allow).map_err(|e| e.to_string())?;
    let name = match &target.host {
        Host::Domain(name) => name.clone(),
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => ip.to_string(),
    };
    let addresses: Vec<SocketAddr> =
        std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), port))
            .map_err(|e| format!("`{host}` does not resolve: {e}"))?
            .collect();
    if addresses.is_empty() {
        return Err(format!("`{host}` has no address"));
    }
    check_resolved(&target, &addresses, policy, allow).map_err(|e| e.to_string())?;
    check_port(&target, &addresses, policy, allow).map_err(|e| e.to_string())?;
    Ok(addresses)
}

/// Whether `target` is a host name (and port) `allow` lists.
fn allowed_name(target: &Target, allow: &[AllowRule]) -> bool {
    match &target.host {
        Host::Domain(name) => allow.iter().any(|rule| rule.allows_name(name, target.port)),
        _ => false,
    }
}

fn check_literal(target: &Target, ip: IpAddr, allow: &[AllowRule]) -> Result<(), ToolError> {
    if allow
        .iter()
        .any(|rule| rule.allows_address(ip, target.port))
    {
        return Ok(());
    }
    match non_public_reason(ip) {
        Some(why) => Err(denied(format!(
            "`{}` points to {ip}, {why}; {PUBLIC_ONLY}",
            target.shown()
        ))),
        None => Ok(()),
    }
}

/// Names that stand for this machine, a private network or a metadata service whatever DNS
/// answers for them (a hosts file can map them anywhere).
fn non_public_name(name: &str) -> Option<&'static str> {
    let is_or_under = |zone: &str| {
        name == zone
            || name
                .strip_suffix(zone)
                .is_some_and(|rest| rest.ends_with('.'))
    };
    if is_or_under("localhost")
        || name == "localhost.localdomain"
        || name == "ip6-localhost"
        || name == "ip6-loopback"
    {
        Some("a name for this machine")
    } else if name == "metadata" || name == "metadata.google.internal" {
        Some("a cloud metadata service name")
    } else if is_or_under("internal") {
        Some("a private-use name (.internal)")
    } else if is_or_under("local") {
        Some("a local network (mDNS) name")
    } else if is_or_under("home.arpa") {
        Some("a home network name")
    } else {
        None
    }
}

/// Whether one `Only` entry (`host`, `host:port`, `[v6]`, `[v6]:port`: a [`HostPattern`])
/// allows `target`. An entry that does not parse allows nothing.
fn entry_matches(entry: &str, target: &Target) -> bool {
    HostPattern::parse(entry).is_ok_and(|pattern| pattern.matches(&target.host, target.port))
}

/// `example.com.` and `example.com` are the same name.
fn trim_root_dot(host: Host<String>) -> Host<String> {
    match host {
        Host::Domain(name) if name.len() > 1 && name.ends_with('.') => {
            Host::Domain(name.trim_end_matches('.').to_string())
        }
        other => other,
    }
}

fn denied(message: String) -> ToolError {
    ToolError::Denied {
        rule: RULE.to_string(),
        message,
    }
}

/// A URL as it may be shown in a message or log: `scheme://host:port`, with `/…` when a
/// path, query or fragment follows and without any `user:password@`, so secrets written
/// past the host (webhook tokens, signed queries) or before it are never echoed. Works on
/// text that does not parse as a URL too.
pub fn redact_url(raw: &str) -> String {
    let raw = raw.trim();
    let Some(colon) = raw.find("://") else {
        return "(a URL that is not absolute)".to_string();
    };
    let scheme = &raw[..colon];
    let rest = &raw[colon + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let tail = if end < rest.len() && &rest[end..] != "/" {
        "/…"
    } else {
        "/"
    };
    format!("{}://{host}{tail}", &scheme[..scheme.len().min(16)])
}

fn head(raw: &str) -> String {
    redact_url(raw)
}

/// `s` cut to [`MAX_QUOTED_URL`] characters.
fn quote(s: &str) -> String {
    match s.char_indices().nth(MAX_QUOTED_URL) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        Target::parse(url).unwrap()
    }

    fn only(entries: &[&str]) -> NetPolicy {
        NetPolicy::Only(entries.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn odd_spellings_of_loopback_are_normalized_before_the_check() {
        for url in [
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://0x7f000001/",
            "http://127.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[0:0:0:0:0:0:0:1]/",
        ] {
            let err = check_target(&target(url), &NetPolicy::Public, &[]).unwrap_err();
            assert!(err.to_string().contains("loopback"), "{url}: {err}");
        }
    }

    #[test]
    fn local_names_are_refused_under_public() {
        for url in [
            "http://localhost/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://metadata/",
            "http://printer.local/",
            "http://router.home.arpa/",
        ] {
            let err = check_target(&target(url), &NetPolicy::Public, &[]).unwrap_err();
            assert!(matches!(err, ToolError::Denied { .. }), "{url}: {err}");
        }
        for url in [
            "http://example.com/",
            "http://notlocalhost.com/",
            "http://internal.example/",
        ] {
            check_target(&target(url), &NetPolicy::Public, &[]).unwrap();
        }
    }

    #[test]
    fn any_private_resolved_address_refuses_the_name_under_public_only() {
        let t = target("http://rebind.example/");
        let mixed: Vec<SocketAddr> = vec![
            "93.184.216.34:80".parse().unwrap(),
            "127.0.0.1:80".parse().unwrap(),
        ];
        let err = check_resolved(&t, &mixed, &NetPolicy::Public, &[]).unwrap_err();
        let ToolError::Denied { rule, message } = err else {
            panic!("expected a denial")
        };
        assert_eq!(rule, "network policy");
        assert_eq!(
            message,
            "`rebind.example` resolves to 127.0.0.1, a loopback address; toolshed does not fetch private addresses; use a public host (or ask the person running toolshed to list this one under `[web] allow`)"
        );
        check_resolved(&t, &mixed[..1], &NetPolicy::Public, &[]).unwrap();
        check_resolved(&t, &mixed, &only(&["rebind.example"]), &[]).unwrap();
    }

    #[test]
    fn only_entries_match_host_and_optional_port_case_insensitively() {
        let t = target("http://API.Example.com:8080/x");
        check_target(&t, &only(&["api.example.com"]), &[]).unwrap();
        check_target(&t, &only(&["Api.Example.Com:8080"]), &[]).unwrap();
        check_target(&t, &only(&["api.example.com.:8080"]), &[]).unwrap();
        assert!(check_target(&t, &only(&["api.example.com:80"]), &[]).is_err());
        assert!(check_target(&t, &only(&["example.com"]), &[]).is_err());
        assert!(check_target(&t, &only(&[]), &[]).is_err());

        let https = target("https://api.example.com/");
        check_target(&https, &only(&["api.example.com:443"]), &[]).unwrap();

        let v6 = target("http://[::1]:9000/");
        check_target(&v6, &only(&["[::1]:9000"]), &[]).unwrap();
        check_target(&v6, &only(&["[0:0::1]"]), &[]).unwrap();
        // One spelling everywhere (grants, `[web] allow`, download hosts): IPv6 in brackets.
        assert!(check_target(&v6, &only(&["::1"]), &[]).is_err());
        assert!(check_target(&v6, &only(&["[::1]:9001"]), &[]).is_err());

        let v4 = target("http://2130706433:81/");
        check_target(&v4, &only(&["127.0.0.1:81"]), &[]).unwrap();
        assert!(check_target(&v4, &only(&["not a host:xx", "[::1"]), &[]).is_err());
    }

    #[test]
    fn the_allowlist_opens_listed_names_addresses_and_ranges_under_public_only() {
        let allow: Vec<AllowRule> = [
            "docs.internal",
            "wiki.internal:8443",
            "10.0.0.0/8",
            "[fd00::1]:81",
        ]
        .iter()
        .map(|e| AllowRule::parse(e).unwrap())
        .collect();
        let check = |url: &str| check_target(&target(url), &NetPolicy::Public, &allow);
        check("http://docs.internal/").unwrap();
        check("https://DOCS.internal.:9/").unwrap();
        check("https://wiki.internal:8443/").unwrap();
        assert!(check("https://wiki.internal/").is_err());
        assert!(check("http://other.internal/").is_err());
        check("http://10.1.2.3/").unwrap();
        check("http://0x0a.1/").unwrap();
        assert!(check("http://11.0.0.1:80/").is_ok());
        assert!(check("http://127.0.0.1/").is_err());
        assert!(check("http://[::ffff:10.0.0.1]/").is_err());
        check("http://[fd00::1]:81/").unwrap();
        assert!(check("http://[fd00::1]:82/").is_err());
        assert!(check("http://localhost/").is_err());
        // The allowlist never widens `Only`.
        assert!(
            check_target(&target("http://docs.internal/"), &only(&["a.test"]), &allow).is_err()
        );

        let resolved = |answer: &[&str]| -> Vec<SocketAddr> {
            answer.iter().map(|a| a.parse().unwrap()).collect()
        };
        // A listed name may resolve anywhere; an unlisted one only into listed ranges.
        let docs = target("http://docs.internal/");
        check_resolved(
            &docs,
            &resolved(&["127.0.0.1:80"]),
            &NetPolicy::Public,
            &allow,
        )
        .unwrap();
        let other = target("http://mirror.example/");
        check_resolved(
            &other,
            &resolved(&["10.9.9.9:80", "93.184.216.34:80"]),
            &NetPolicy::Public,
            &allow,
        )
        .unwrap();
        let err = check_resolved(
            &other,
            &resolved(&["10.9.9.9:80", "192.168.0.1:80"]),
            &NetPolicy::Public,
            &allow,
        )
        .unwrap_err();
        assert!(err.to_string().contains("192.168.0.1"), "{err}");
    }

    #[test]
    fn only_refusal_names_the_host_and_the_list() {
        let err = check_target(
            &target("http://evil.test/"),
            &only(&["a.test", "b.test:81"]),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("evil.test:80"), "{err}");
        assert!(err.contains("a.test, b.test:81"), "{err}");
    }

    #[test]
    fn scheme_and_credentials_are_refused_without_echoing_the_password() {
        let err = Target::parse("ftp://example.com/file")
            .unwrap_err()
            .to_string();
        assert!(err.contains("ftp"), "{err}");
        let err = Target::parse("http://user:hunter2@example.com/")
            .unwrap_err()
            .to_string();
        assert!(err.contains("user name or password"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        assert!(Target::parse("not a url").is_err());
    }

    fn at(url: &str, ip: &str) -> (Target, Vec<SocketAddr>) {
        let t = target(url);
        let port = t.port;
        (t, vec![SocketAddr::new(ip.parse().unwrap(), port)])
    }

    fn rules(entries: &[&str]) -> Vec<AllowRule> {
        super::super::allow::parse_allowlist(entries).unwrap()
    }

    #[test]
    fn the_web_rules_reach_ports_80_and_443_and_what_allow_names() {
        // Failed before the port policy: port 22 of a public host was dialled.
        let (t, a) = at("http://public.example:22/", "93.184.216.34");
        let err = check_port(&t, &a, &NetPolicy::Public, &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("port 22") && err.contains("[web] allow"),
            "{err}"
        );
        for url in [
            "http://public.example/",
            "https://public.example/",
            "http://public.example:443/",
        ] {
            let (t, a) = at(url, "93.184.216.34");
            check_port(&t, &a, &NetPolicy::Public, &[]).unwrap();
        }
        // Before any address is known, a port no rule could open is refused at once (no
        // DNS query); one an address rule might open waits for the addresses.
        let err = precheck_port(&t, &NetPolicy::Public, &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("port 22"), "{err}");
        precheck_port(&t, &NetPolicy::Public, &rules(&["93.184.216.34"])).unwrap();
        precheck_port(&t, &NetPolicy::Public, &rules(&["public.example:22"])).unwrap();
        assert!(precheck_port(&t, &NetPolicy::Public, &rules(&["10.0.0.1:8080"])).is_err());
        // A rule naming the host (or its address) with that port opens it; one with
        // another port does not; one without a port opens every port of that host.
        let (t, a) = at("http://public.example:8443/", "93.184.216.34");
        check_port(&t, &a, &NetPolicy::Public, &rules(&["public.example:8443"])).unwrap();
        check_port(&t, &a, &NetPolicy::Public, &rules(&["93.184.216.34:8443"])).unwrap();
        check_port(&t, &a, &NetPolicy::Public, &rules(&["public.example"])).unwrap();
        assert!(check_port(&t, &a, &NetPolicy::Public, &rules(&["public.example:9000"])).is_err());
        assert!(check_port(&t, &a, &NetPolicy::Public, &rules(&["other.example"])).is_err());
        // A grant naming the port opens it within the web rules; a person's list (Only)
        // names its ports itself.
        let within = NetPolicy::PublicWithin(vec!["public.example:8443".into()]);
        check_port(&t, &a, &within, &[]).unwrap();
        let within_any = NetPolicy::PublicWithin(vec!["public.example".into()]);
        assert!(check_port(&t, &a, &within_any, &[]).is_err());
        check_port(&t, &a, &only(&["public.example:8443"]), &[]).unwrap();
    }

    #[test]
    fn a_grant_narrows_the_web_rules_and_never_opens_a_private_address() {
        // Failed before: a plugin granted `127.0.0.1` reached loopback although the web
        // rules refuse it (its grants were an `Only` list, which skips the address checks).
        let granted = NetPolicy::PublicWithin(vec!["127.0.0.1".into()]);
        let (t, a) = at("http://127.0.0.1:8080/", "127.0.0.1");
        assert!(check_target(&t, &granted, &[]).is_err());
        // Opened by `[web] allow`, the grant reaches it.
        let allow = rules(&["127.0.0.1"]);
        check_target(&t, &granted, &allow).unwrap();
        check_resolved(&t, &a, &granted, &allow).unwrap();
        check_port(&t, &a, &granted, &allow).unwrap();
        // A name that resolves to a private address is refused too.
        let name = NetPolicy::PublicWithin(vec!["inside.example".into()]);
        let (t, a) = at("http://inside.example/", "10.1.2.3");
        check_target(&t, &name, &[]).unwrap();
        assert!(check_resolved(&t, &a, &name, &[]).is_err());
        // Outside the list, refused whatever the web rules say.
        let (t, _) = at("http://public.example/", "93.184.216.34");
        assert!(check_target(&t, &granted, &[]).is_err());
    }
}
