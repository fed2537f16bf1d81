//! Which token opened which MCP session, so a session is used only with the token that
//! opened it, and how many sessions may be open at once, all together and per owner.

use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::RequestGuard;

/// The header carrying an MCP session's id.
pub(super) const MCP_SESSION: &str = "mcp-session-id";

/// MCP session ids and who opened each, with the ids in the order they opened.
pub(super) type BoundSessions = (
    std::collections::HashMap<String, Opener>,
    std::collections::VecDeque<String>,
);

/// Who opened an MCP session.
#[derive(Debug, Clone)]
pub(super) struct Opener {
    /// The agent token's id; `None`: the server's own token.
    pub(super) token: Option<String>,
    /// What the session counts against: the token's owner (sub-owners as their owner),
    /// or `admin`.
    pub(super) account: String,
}

/// The MCP sessions open, and how many may be.
pub struct McpSessionLimits {
    /// The MCP transport's sessions, asked whether one is still open and told to close one.
    pub sessions: Arc<toolshed_mcp::ReplicaSessions>,
    /// `[mcp] max_sessions`.
    pub max: usize,
    /// `[mcp] max_sessions_per_owner`.
    pub max_per_owner: usize,
    /// `[mcp] session_idle_secs`, for the message.
    pub idle_secs: u64,
}

impl std::fmt::Debug for McpSessionLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSessionLimits")
            .field("max", &self.max)
            .field("max_per_owner", &self.max_per_owner)
            .finish_non_exhaustive()
    }
}

/// The most MCP sessions whose token is remembered; beyond it the oldest are forgotten
/// (and a request on a forgotten session is refused: the client opens a new one).
const MAX_BOUND_SESSIONS: usize = 10_000;

/// The answer to a request naming an MCP session this server does not know (never opened,
/// deleted, expired): `404`, as the MCP transport asks, with a JSON-RPC error a client can
/// show, whatever the method (a second `DELETE` of one session included).
pub(crate) fn unknown_session(id: &str) -> Response {
    let shown: String = id.chars().take(80).collect();
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32001,
        "message": format!(
            "MCP session {shown:?} is not known here (it ended, expired or was never opened); \
             start a new session with initialize"
        ),
    }});
    (StatusCode::NOT_FOUND, axum::Json(reply)).into_response()
}

/// The `404` for a request of an MCP session this server does not have: one that names
/// another replica says so ([`session_elsewhere`]).
pub(crate) fn missing_session(id: &str, here: &str) -> Response {
    match toolshed_mcp::replica_of(id).filter(|home| *home != here) {
        Some(home) => {
            tracing::info!(session = %id, %home, "an MCP session's request reached another replica");
            session_elsewhere(id, home, here)
        }
        None => unknown_session(id),
    }
}

/// The `404` for a request of an MCP session that lives on replica `home`, not on this one.
pub(crate) fn session_elsewhere(id: &str, home: &str, here: &str) -> Response {
    let shown: String = id.chars().take(80).collect();
    let home: String = home.chars().take(63).collect();
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32001,
        "message": format!(
            "MCP session {shown:?} belongs to replica `{home}`, and this is replica `{here}`: a \
             load balancer must send a session's requests to the replica its id begins with (the \
             part before the first `.`). Start a new session with initialize, or use protocol \
             2026-07-28, which keeps no session and needs no affinity"
        ),
        "data": {"replica": home, "this_replica": here},
    }});
    (StatusCode::NOT_FOUND, axum::Json(reply)).into_response()
}

impl RequestGuard {
    /// The token id the MCP session `id` was opened with (`Some(None)`: the server's own
    /// token); `None` for a session not known here (never opened, ended, or forgotten past
    /// [`MAX_BOUND_SESSIONS`]).
    pub(super) fn session_opener(&self, id: &str) -> Option<Opener> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.0.get(id).cloned()
    }

    /// Counts the session `id` just opened by `opener` against the limits; past one, closes
    /// it and answers `429` with the opener's own count and how to free room. Sessions that
    /// ended without a `DELETE` (closed while idle) are found and forgotten only when a
    /// limit seems reached, so the usual open costs no more than a count.
    pub(super) async fn admit_session(&self, id: &str, opener: &Opener) -> Result<(), Response> {
        let Some(limits) = &self.mcp_limits else {
            self.bind_session(id, opener.clone());
            return Ok(());
        };
        // Counted and bound as one step, so that sessions opened together cannot all pass.
        let bind_if_room = |guard: &Self| {
            let mut sessions = guard.sessions.lock().unwrap_or_else(|e| e.into_inner());
            let mine = sessions
                .0
                .values()
                .filter(|o| o.account == opener.account)
                .count();
            let total = sessions.0.len();
            if total < limits.max && mine < limits.max_per_owner {
                let (map, order) = &mut *sessions;
                if map.insert(id.to_string(), opener.clone()).is_none() {
                    order.push_back(id.to_string());
                }
                Ok(())
            } else {
                Err((total, mine))
            }
        };
        if bind_if_room(self).is_ok() {
            return Ok(());
        }
        // Sessions that ended without a `DELETE` (closed while idle) are forgotten only now.
        let known: Vec<String> = {
            let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            sessions.0.keys().cloned().collect()
        };
        for known in known {
            if !limits.sessions.is_open(&known).await {
                self.unbind_session(&known);
            }
        }
        let Err((total, mine)) = bind_if_room(self) else {
            return Ok(());
        };
        let who = if opener.token.is_some() {
            format!("`{}`", opener.account)
        } else {
            "the admin token".into()
        };
        let free = format!(
            "end the sessions you no longer use (HTTP DELETE /mcp with their mcp-session-id), or wait: an idle one closes after {} s ([mcp] session_idle_secs)",
            limits.idle_secs
        );
        let message = if mine >= limits.max_per_owner {
            format!(
                "{who} has {mine} MCP sessions open, the most one owner may keep ([mcp] max_sessions_per_owner); {free}"
            )
        } else {
            format!(
                "{total} MCP sessions are open on this server, the most it keeps ([mcp] max_sessions); {mine} of them are {who}'s; {free}"
            )
        };
        limits.sessions.close(id).await;
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
            "code": -32000,
            "message": message,
            "data": {"kind": "rate_limited", "open": mine, "limit": limits.max_per_owner.min(limits.max)},
        }});
        let mut response = (StatusCode::TOO_MANY_REQUESTS, axum::Json(reply)).into_response();
        response.headers_mut().insert(
            header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("60"),
        );
        Err(response)
    }

    /// Limits the MCP sessions open at once, all together and per owner.
    pub fn with_mcp_limits(mut self, limits: McpSessionLimits) -> Self {
        self.mcp_limits = Some(limits);
        self
    }

    fn bind_session(&self, id: &str, opener: Opener) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let (map, order) = &mut *sessions;
        if map.insert(id.to_string(), opener).is_none() {
            order.push_back(id.to_string());
        }
        while order.len() > MAX_BOUND_SESSIONS {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }

    pub(super) fn unbind_session(&self, id: &str) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.0.remove(id);
        sessions.1.retain(|s| s != id);
    }
}
