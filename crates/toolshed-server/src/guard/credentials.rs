//! Who is calling: the bearer token (the admin token, an agent token or an OAuth JWT),
//! the dashboard's cookie and its CSRF token, the scope a route needs, and the count of
//! failed logins per address.

use std::net::IpAddr;

use axum::http::{HeaderMap, HeaderValue, header};

use toolshed_core::OwnerId;
use toolshed_host::identity::{Caller, TOKEN_PREFIX};

use super::{AgentTokens, FAILURE_WINDOW, MAX_TRACKED_PEERS, Rejection, RequestGuard};

/// Query parameters that look like credentials; a request carrying one is refused, so a
/// token never ends up in logs, browser history or a proxy's access log.
pub(super) const TOKEN_PARAMS: &[&str] = &[
    "token",
    "access_token",
    "api_key",
    "apikey",
    "key",
    "auth",
    "bearer",
    "authorization",
];

impl RequestGuard {
    /// For a request authenticated by a dashboard cookie (no `Authorization` header) that
    /// changes something: whether it carries the session's CSRF token.
    pub(super) fn check_csrf(
        &self,
        method: &axum::http::Method,
        uri: &axum::http::Uri,
        headers: &HeaderMap,
    ) -> Result<(), Rejection> {
        let Some(sessions) = &self.dashboard else {
            return Ok(());
        };
        let safe = matches!(method.as_str(), "GET" | "HEAD" | "OPTIONS");
        // Where the cookie does not count, the token check refuses the request anyway.
        if safe
            || headers.contains_key(header::AUTHORIZATION)
            || !crate::dashboard::cookie_allowed(uri, headers)
        {
            return Ok(());
        }
        let Some(expected) = sessions.csrf_of(headers) else {
            return Ok(()); // no live cookie session: the token check decides
        };
        let sent = headers
            .get(crate::dashboard::CSRF_HEADER)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        if toolshed_core::secret::constant_time_eq(sent, expected.as_bytes()) {
            Ok(())
        } else {
            Err(Rejection::MissingCsrf)
        }
    }

    /// The caller a JWT authenticates, if OAuth is configured and it verifies.
    fn jwt_caller(&self, token: &str) -> Option<Caller> {
        let oauth = self.oauth.as_ref()?;
        if !toolshed_host::oauth::looks_like_jwt(token) {
            return None;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        let jwks = oauth.jwks.read().unwrap_or_else(|e| e.into_inner());
        match toolshed_host::oauth::verify(token, &jwks, &oauth.config, now) {
            Ok(caller) => Some(caller),
            Err(refusal) => {
                if refusal == toolshed_host::oauth::Refusal::UnknownKey {
                    oauth.refresh.notify_one();
                }
                tracing::debug!(?refusal, "a bearer JWT was refused");
                None
            }
        }
    }

    /// The scope a request needs, by route: `None` for what every token may do.
    pub(super) fn check_scope(
        &self,
        caller: &Caller,
        method: &axum::http::Method,
        uri: &axum::http::Uri,
    ) -> Result<(), Rejection> {
        let path = uri.path();
        let read = method == axum::http::Method::GET || method == axum::http::Method::HEAD;
        let scope = if let Some(rest) = path.strip_prefix("/api/v1/") {
            if rest.starts_with("approvals") {
                "approvals:answer"
            } else if rest.starts_with("audit") || rest.starts_with("stats") {
                "audit:read"
            } else if rest.starts_with("metrics") {
                // A Prometheus scraper's token needs nothing else.
                "metrics:read"
            } else if rest.starts_with("plugins/") && rest.ends_with("/tools/execute") {
                // A plugin's tool run as Agent Spaces asks: a call like any other.
                "tools:call"
            } else if rest.starts_with("plugins") || rest.starts_with("mcp-servers") {
                if read { "tools:list" } else { "plugins:admin" }
            } else if (rest.starts_with("tools/") && rest.ends_with("/execute"))
                || rest.starts_with("jobs")
                // What the agent tools keep is read as jobs are.
                || rest.starts_with("todos")
                || rest.starts_with("schedules")
                || rest.starts_with("running")
                // The variables of the caller's own commands.
                || rest == "env"
                // Files sent to the workspace, and read back.
                || rest == "upload"
                || rest.starts_with("uploads/")
                || rest.starts_with("events")
                // The person behind a caller answers its calls' questions.
                || rest.starts_with("questions")
            {
                "tools:call"
            } else {
                "tools:list"
            }
        } else if path.starts_with("/proxy/") {
            "tools:call"
        } else {
            // `/mcp`: each request's method decides, in the MCP door.
            return Ok(());
        };
        if caller.allows(scope) {
            Ok(())
        } else {
            Err(Rejection::MissingScope(scope))
        }
    }

    /// Seconds until `peer` may try again, when it is over the limit.
    pub(super) fn blocked(&self, peer: IpAddr) -> Option<u64> {
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let (count, since) = failures.get(&peer)?;
        let elapsed = since.elapsed();
        (*count >= self.failure_limit && elapsed < FAILURE_WINDOW)
            .then(|| (FAILURE_WINDOW - elapsed).as_secs().max(1))
    }

    pub(super) fn record_failure(&self, peer: IpAddr) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.len() >= MAX_TRACKED_PEERS {
            failures.retain(|_, (_, since)| since.elapsed() < FAILURE_WINDOW);
            if failures.len() >= MAX_TRACKED_PEERS {
                failures.clear();
            }
        }
        let entry = failures
            .entry(peer)
            .or_insert((0, std::time::Instant::now()));
        if entry.1.elapsed() >= FAILURE_WINDOW {
            *entry = (0, std::time::Instant::now());
        }
        entry.0 += 1;
    }

    pub(super) fn check_token(
        &self,
        uri: &axum::http::Uri,
        headers: &HeaderMap,
    ) -> Result<Caller, Rejection> {
        if headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .nth(1)
            .is_some()
        {
            return Err(Rejection::DuplicateAuthorization);
        }
        let Some(presented) = headers.get(header::AUTHORIZATION) else {
            // The dashboard's cookie stands for the admin token, where it may.
            return match &self.dashboard {
                Some(sessions)
                    if crate::dashboard::cookie_allowed(uri, headers)
                        && sessions.csrf_of(headers).is_some() =>
                {
                    Ok(Caller::admin(OwnerId::new(
                        toolshed_host::jobs::default_owner().0,
                    )))
                }
                _ => Err(Rejection::MissingToken),
            };
        };
        let presented = presented.as_bytes();
        let token = bearer_credentials(presented).ok_or(Rejection::WrongToken)?;
        if self.token.matches(token) {
            return Ok(Caller::admin(OwnerId::new(
                toolshed_host::jobs::default_owner().0,
            )));
        }
        let text = std::str::from_utf8(token).unwrap_or_default();
        let agent = match &self.agents {
            Some(AgentTokens(tokens)) if text.starts_with(TOKEN_PREFIX) => {
                tokens.authenticate(text).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "cannot check an agent token");
                    None
                })
            }
            _ => None,
        };
        if let Some(pinned) = agent.as_ref().and_then(|record| record.workspace())
            && pinned != self.workspace
        {
            return Err(Rejection::OtherWorkspace {
                pinned: pinned.to_string(),
                served: self.workspace.clone(),
            });
        }
        agent
            .map(|record| record.caller())
            .or_else(|| self.jwt_caller(text))
            .ok_or(Rejection::WrongToken)
    }
}

/// The credentials of an `Authorization: Bearer <credentials>` value (the scheme is
/// case-insensitive).
fn bearer_credentials(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    Some(rest.trim_ascii())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer_credentials(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_credentials(b"bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(bearer_credentials(b"Basic abc"), None);
        assert_eq!(bearer_credentials(b"Bear"), None);
    }
}
