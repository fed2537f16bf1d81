//! Which owner a request's calls run as: a handle the client names, an agent token's
//! owner, the shared HTTP owner, or the connection's own fresh one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;
use toolshed_core::OwnerId;
use toolshed_host::identity::Caller;

use super::listing::Bound;
use super::{MAX_OWNER_LEN, McpServer, OWNER_HEADER, OWNER_META_KEY, SHARED_HTTP_OWNER};

impl McpServer {
    /// The session hooks of this connection: the start ones fire once its host is open
    /// (without hurrying a host that waits for the client's roots), the end ones when the
    /// connection is gone.
    pub(super) fn session_started(&self, peer: &rmcp::Peer<RoleServer>, http: bool) {
        let client = peer.peer_info().map(|info| {
            serde_json::json!({"name": info.client_info.name, "version": info.client_info.version})
        });
        let info = serde_json::json!({
            "transport": if http { "http" } else { "stdio" },
            "client": client,
        });
        let binding = self.binding.clone();
        let owner = self.owner.clone();
        let fire = move |host: &std::sync::Arc<toolshed_host::Host>| {
            let life = host.session_started(&owner.0, &owner, info);
            let _ = binding.session.set(life);
        };
        if let Some(bound) = self.binding.ready.get() {
            return fire(&bound.host);
        }
        let Some(opening) = &self.binding.opening else {
            return;
        };
        let mut outcome = opening.outcome.clone();
        tokio::spawn(async move {
            let host = match outcome.wait_for(Option::is_some).await {
                Ok(opened) => match opened.as_ref() {
                    Some(Ok((host, _))) => host.clone(),
                    _ => return,
                },
                Err(_) => return,
            };
            fire(&host);
        });
    }

    /// The owner a request runs as: a handle the client names (the `toolshed/owner` request
    /// `_meta` key, or the `X-Toolshed-Owner` HTTP header), else the shared HTTP owner for a
    /// stateless HTTP request, else this connection's own. With an agent token, the token's
    /// owner, which a handle may only narrow to a sub-owner.
    pub(super) fn owner_for(
        &self,
        bound: &Bound,
        context: &RequestContext<RoleServer>,
    ) -> Result<OwnerId, McpError> {
        let parts = context.extensions.get::<http::request::Parts>();
        let from_meta = context.meta.get(OWNER_META_KEY).map(|v| match v {
            Value::String(s) => Ok(s.as_str()),
            _ => Err(bad_owner(&v.to_string())),
        });
        let from_header = parts
            .and_then(|p| p.headers.get(OWNER_HEADER))
            .map(|v| v.to_str().map_err(|_| bad_owner("(not text)")));
        let requested = from_meta.or(from_header).transpose()?;
        if let Some(caller) = Self::caller_for(bound, context).filter(Caller::is_agent) {
            return caller
                .owner_for(requested)
                .map_err(|m| McpError::invalid_params(m.to_string(), None));
        }
        match requested {
            Some(handle) => valid_owner(handle),
            None if parts.is_some_and(|p| !p.headers.contains_key("mcp-session-id")) => {
                Ok(OwnerId::new(SHARED_HTTP_OWNER))
            }
            None => Ok(self.owner.clone()),
        }
    }
}

fn bad_owner(value: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "owner handle {value} is not valid: use 1 to {MAX_OWNER_LEN} characters of letters, digits and . _ : @ -"
        ),
        None,
    )
}

/// Whether a client-supplied owner handle is acceptable: 1 to [`MAX_OWNER_LEN`] letters,
/// digits and `. _ : @ -`, with `/` between the parts of a sub-owner (`alice/task-7`).
pub fn valid_owner_handle(handle: &str) -> bool {
    toolshed_host::identity::check_owner(handle).is_ok()
}

fn valid_owner(handle: &str) -> Result<OwnerId, McpError> {
    if valid_owner_handle(handle) {
        Ok(OwnerId::new(handle))
    } else {
        let shown: String = handle.chars().take(MAX_OWNER_LEN).collect();
        Err(bad_owner(&format!("{shown:?}")))
    }
}

pub(super) fn new_owner() -> OwnerId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    OwnerId::new(format!("mcp-{micros:x}-{}-{n}", std::process::id()))
}
