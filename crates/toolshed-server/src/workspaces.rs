//! Agent tokens pinned to another workspace (their `workspace:` scope): a server given
//! [`Workspaces`] opens that workspace's host at the first request such a token makes and
//! hands it the token's requests, each answered by that host's own router (its guard, its
//! pipeline, its audit). Without it, the guard refuses them, naming both workspaces.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use toolshed_host::Host;
use toolshed_host::Tokens;
use toolshed_host::identity::TOKEN_PREFIX;

use crate::error::ApiError;

/// The most workspaces besides its own one server opens for pinned tokens.
pub const MAX_WORKSPACES: usize = 16;

/// The most tokens whose pin is remembered; past it the memory starts over.
const MAX_REMEMBERED: usize = 10_000;

/// Why a workspace could not be opened, as the embedder's opener says.
pub type OpenError = Box<dyn std::error::Error + Send + Sync>;

type Open = dyn Fn(String) -> BoxFuture<'static, Result<Arc<Host>, OpenError>> + Send + Sync;

/// How a server opens the host of a workspace a token is pinned to (a directory or a
/// remote URL, as [`toolshed_host::identity::workspace_pin`] spells it): the embedder's
/// own way of opening a host, with its configuration, plugins and sandbox helper.
#[derive(Clone)]
pub struct Workspaces(Arc<Open>);

impl Workspaces {
    /// Opens workspaces with `open`; its error is shown to the client.
    pub fn new(
        open: impl Fn(String) -> BoxFuture<'static, Result<Arc<Host>, OpenError>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self(Arc::new(open))
    }
}

impl std::fmt::Debug for Workspaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspaces").finish_non_exhaustive()
    }
}

/// One workspace opened for pinned tokens: its host and the router serving it.
type Opened = Arc<tokio::sync::OnceCell<(Arc<Host>, Router)>>;

/// The routing of pinned tokens' requests, and the workspaces opened for them.
pub(crate) struct Routes {
    served: String,
    tokens: Tokens<'static>,
    open: Workspaces,
    make: Box<dyn Fn(Arc<Host>) -> Router + Send + Sync>,
    /// Token id → the workspace it is pinned to, for tokens seen authenticated.
    pins: Mutex<HashMap<String, Option<String>>>,
    opened: Mutex<HashMap<String, Opened>>,
}

impl Routes {
    /// Routes for a server serving `served`, checking tokens with `tokens`, opening other
    /// workspaces with `open` and serving each with the router `make` builds.
    pub(crate) fn new(
        served: String,
        tokens: Tokens<'static>,
        open: Workspaces,
        make: impl Fn(Arc<Host>) -> Router + Send + Sync + 'static,
    ) -> Self {
        Self {
            served,
            tokens,
            open,
            make: Box::new(make),
            pins: Mutex::default(),
            opened: Mutex::default(),
        }
    }

    /// The other workspace the request's agent token is pinned to, if any. A token is
    /// authenticated the first time its id is seen; later its id finds the pin, and the
    /// workspace's own guard checks the whole token on every request.
    fn pinned(&self, request: &Request) -> Option<String> {
        let value = request
            .headers()
            .get(header::AUTHORIZATION)?
            .to_str()
            .ok()?;
        let (scheme, token) = value.split_at_checked(7)?;
        let token = token.trim();
        if !scheme.eq_ignore_ascii_case("bearer ") || !token.starts_with(TOKEN_PREFIX) {
            return None;
        }
        let id = token[TOKEN_PREFIX.len()..].split('_').next()?.to_string();
        let known = self.pins.lock().ok()?.get(&id).cloned();
        let pin = match known {
            Some(pin) => pin,
            None => {
                // Not live (or not a token): the served workspace's guard answers.
                let record = self.tokens.authenticate(token).ok()??;
                let pin = record.workspace().map(str::to_string);
                let mut pins = self.pins.lock().ok()?;
                if pins.len() >= MAX_REMEMBERED {
                    pins.clear();
                }
                pins.insert(id, pin.clone());
                pin
            }
        };
        pin.filter(|pin| *pin != self.served)
    }

    /// The router of workspace `pin`, opening its host on first use.
    async fn router(&self, pin: &str) -> Result<Router, ApiError> {
        let cell = {
            let mut opened = self
                .opened
                .lock()
                .map_err(|_| ApiError::internal("the workspace table is poisoned"))?;
            let full = opened.len() >= MAX_WORKSPACES;
            match opened.get(pin) {
                Some(cell) => cell.clone(),
                None if full => {
                    return Err(ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "unavailable",
                        format!(
                            "this server already serves {MAX_WORKSPACES} other workspaces for \
                             pinned tokens; serve {pin} with its own `toolshed serve --workspace \
                             {pin}`"
                        ),
                    ));
                }
                None => opened.entry(pin.to_string()).or_default().clone(),
            }
        };
        let (_, router) = cell
            .get_or_try_init(|| async {
                let host = (self.open.0)(pin.to_string()).await.map_err(|why| {
                    ApiError::new(
                        StatusCode::BAD_GATEWAY,
                        "unavailable",
                        format!(
                            "cannot open workspace {pin}, which this token is pinned to: {why}"
                        ),
                    )
                })?;
                tracing::info!(workspace = %pin, "opened a workspace for the tokens pinned to it");
                let router = (self.make)(host.clone());
                Ok::<_, ApiError>((host, router))
            })
            .await?;
        Ok(router.clone())
    }

    /// Shuts down the hosts opened for pinned tokens.
    pub(crate) async fn shutdown(&self) {
        let opened: Vec<Opened> = match self.opened.lock() {
            Ok(mut opened) => opened.drain().map(|(_, cell)| cell).collect(),
            Err(_) => return,
        };
        for cell in opened {
            if let Some((host, _)) = cell.get() {
                host.shutdown().await;
            }
        }
    }
}

/// Hands a request made with a token pinned to another workspace to that workspace's
/// router; the rest go on.
pub(crate) async fn route(
    State(routes): State<Arc<Routes>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(pin) = routes.pinned(&request) else {
        return next.run(request).await;
    };
    match routes.router(&pin).await {
        Ok(mut router) => match tower_service::Service::call(&mut router, fresh(request)).await {
            Ok(response) => response,
            Err(never) => match never {},
        },
        Err(error) => error.into_response(),
    }
}

/// The request as the client sent it, for another router: what this one added left
/// behind, the peer's address kept for the guard.
fn fresh(request: Request) -> Request {
    let (parts, body) = request.into_parts();
    let mut fresh = Request::new(body);
    *fresh.method_mut() = parts.method;
    *fresh.uri_mut() = parts.uri;
    *fresh.version_mut() = parts.version;
    *fresh.headers_mut() = parts.headers;
    if let Some(peer) = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
    {
        fresh.extensions_mut().insert(*peer);
    }
    fresh
}
