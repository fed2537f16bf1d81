//! The DNS-rebinding checks: the `Host` header must name this server, and an `Origin`
//! header must be a loopback origin or one configured.

use std::net::IpAddr;

use axum::http::{HeaderMap, header};

use super::{Rejection, RequestGuard};

impl RequestGuard {
    /// The DNS-rebinding checks: `Host` and `Origin`.
    pub(super) fn check_names(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .ok_or(Rejection::ForeignHost)?;
        if !self
            .allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
        {
            return Err(Rejection::ForeignHost);
        }
        if let Some(origin) = headers.get(header::ORIGIN)
            && !is_loopback_origin(origin.as_bytes())
            && !self
                .extra_origins
                .iter()
                .any(|o| o.as_bytes().eq_ignore_ascii_case(origin.as_bytes()))
        {
            return Err(Rejection::ForeignOrigin);
        }
        Ok(())
    }
}

/// Whether an `Origin` value is `http` or `https` on a loopback host, any port.
/// `Origin: null` (sandboxed frames, `file:` pages) is not.
fn is_loopback_origin(origin: &[u8]) -> bool {
    let Ok(origin) = std::str::from_utf8(origin) else {
        return false;
    };
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let host = if let Some(rest) = authority.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, after)) if after.is_empty() || is_port(after) => inside,
            _ => return false,
        }
    } else {
        match authority.split_once(':') {
            Some((name, port)) if is_port(&format!(":{port}")) => name,
            Some(_) => return false,
            None => authority,
        }
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() && host != "0.0.0.0")
}

fn is_port(text: &str) -> bool {
    text.strip_prefix(':')
        .is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn loopback_origins_are_recognised() {
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "HTTP://LOCALHOST",
            "http://127.0.0.2:1",
        ] {
            assert!(is_loopback_origin(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "null",
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example:80",
            "http://[::1].evil:80",
            "file://",
            "ws://localhost:1",
            "http://localhost:abc",
            "http://0.0.0.0:80",
        ] {
            assert!(!is_loopback_origin(bad.as_bytes()), "{bad}");
        }
    }
}
