//! The web dashboard: a page, its script and its style, embedded in the binary and served
//! at `/` by `toolshed serve`; everything it shows it reads from the REST API.
//!
//! Two ways in:
//! - the token, typed once into the page, kept in the tab's session storage and sent as
//!   `Authorization: Bearer` like any client's;
//! - a one-time login link (`toolshed dashboard`, `toolshed serve --open`): `/login?code=…`
//!   where the code is short-lived, used once, and signed with the token (so another
//!   process that can read the token can make one, and nobody else can). It is exchanged
//!   for an `HttpOnly`, `SameSite=Strict` session cookie scoped to `/api/`; every
//!   state-changing request made with that cookie must also carry the session's CSRF token
//!   in `X-CSRF-Token`. The cookie counts only on `/api/…`, from this server's own origin,
//!   never for a WebSocket; the proxy strips it from what it forwards to apps.
//!
//! The guard's Host and Origin checks apply to every path here as to the API.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hmac::{KeyInit, Mac};
use serde::Deserialize;
use serde_json::json;

use crate::token::BearerToken;

/// The header the dashboard's page sends with its requests (`X-Toolshed-Client:
/// dashboard`): its own reads, made as the admin, are then not audited as calls.
pub(crate) const CLIENT_HEADER: &str = "x-toolshed-client";

/// The session cookie's name.
pub(crate) const COOKIE: &str = "toolshed_session";
/// The header a cookie session's state-changing requests carry.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// How long a login link works.
pub const CODE_LIFETIME: Duration = Duration::from_secs(120);
/// How long a dashboard session lasts.
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// The most dashboard sessions at once; a new one ends the oldest.
const MAX_SESSIONS: usize = 64;

const INDEX: &str = include_str!("../dashboard/index.html");
const SCRIPT: &str = include_str!("../dashboard/app.js");
const PAGES: &str = include_str!("../dashboard/pages.js");
const STYLE: &str = include_str!("../dashboard/app.css");

/// The paths served without a token (the guard still checks Host and Origin).
pub(crate) const OPEN_PATHS: &[&str] =
    &["/", "/ui/app.js", "/ui/pages.js", "/ui/app.css", "/login"];
/// Where the page asks who it is signed in as (and for its CSRF token).
pub(crate) const SESSION_PATH: &str = "/api/ui/session";
/// Where the page signs out.
pub(crate) const LOGOUT_PATH: &str = "/api/ui/logout";

/// What a page may load: its own script and style, images it makes itself, requests to
/// its own origin; nothing framed, nothing from elsewhere.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The dashboard's sessions and the login codes already used.
#[derive(Default)]
pub(crate) struct Sessions {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sessions(<redacted>)")
    }
}

#[derive(Default)]
struct Inner {
    /// Session id → (CSRF token, when it ends).
    sessions: HashMap<String, (String, SystemTime)>,
    /// Codes used, until they would have expired anyway.
    used: HashMap<String, SystemTime>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `bytes` random bytes as hex; `None` when the system's random source fails (then no
/// code or session is made: never a guessable one).
fn random_hex(bytes: usize) -> Option<String> {
    toolshed_core::secret::random_hex(bytes).ok()
}

fn signature(token: &BearerToken, message: &str) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(token.reveal().as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(b"toolshed dashboard login\0");
    mac.update(message.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A one-time login code, good for [`CODE_LIFETIME`]; `None` when the system's random
/// source fails.
pub fn login_code(token: &BearerToken) -> Option<String> {
    let expires = now_secs() + CODE_LIFETIME.as_secs();
    let message = format!("{expires}.{}", random_hex(12)?);
    let mac = signature(token, &message);
    Some(format!("{message}.{mac}"))
}

impl Sessions {
    /// Exchanges a login code for a new session id; `None` when the code is forged,
    /// expired or used.
    fn redeem(&self, token: &BearerToken, code: &str) -> Option<String> {
        let (message, mac) = code.rsplit_once('.')?;
        let expected = signature(token, message);
        // Compared in full whatever differs first.
        if !toolshed_core::secret::constant_time_eq(mac.as_bytes(), expected.as_bytes()) {
            return None;
        }
        let expires: u64 = message.split('.').next()?.parse().ok()?;
        if expires < now_secs() || expires > now_secs() + CODE_LIFETIME.as_secs() {
            return None;
        }
        let now = SystemTime::now();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.used.retain(|_, until| *until > now);
        inner.sessions.retain(|_, (_, until)| *until > now);
        if inner.used.contains_key(message) {
            return None;
        }
        inner.used.insert(
            message.to_string(),
            now + CODE_LIFETIME + Duration::from_secs(60),
        );
        if inner.sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = inner
                .sessions
                .iter()
                .min_by_key(|(_, (_, until))| *until)
                .map(|(id, _)| id.clone())
        {
            inner.sessions.remove(&oldest);
        }
        let id = random_hex(32)?;
        if inner.sessions.contains_key(&id) {
            return None;
        }
        let csrf = random_hex(16)?;
        inner
            .sessions
            .insert(id.clone(), (csrf, now + SESSION_LIFETIME));
        Some(id)
    }

    /// The CSRF token of the live session whose cookie `headers` carry (any cookie of the
    /// name: another page may have set one more, which must not hide the real one).
    pub(crate) fn csrf_of(&self, headers: &HeaderMap) -> Option<String> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let now = SystemTime::now();
        session_cookies(headers).find_map(|id| {
            let (csrf, until) = inner.sessions.get(id)?;
            (*until > now).then(|| csrf.clone())
        })
    }

    fn end(&self, headers: &HeaderMap) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for id in session_cookies(headers) {
            inner.sessions.remove(id);
        }
    }
}

/// The session ids in a request's cookies.
fn session_cookies(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
}

/// Removes the session cookie from a request's `Cookie` headers (keeping the others):
/// for requests toolshed forwards to an app it proxies.
pub(crate) fn strip_session_cookie(headers: &mut HeaderMap) {
    let kept: Vec<String> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .map(str::trim)
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some(COOKIE))
        .map(String::from)
        .collect();
    headers.remove(header::COOKIE);
    if !kept.is_empty()
        && let Ok(value) = HeaderValue::from_str(&kept.join("; "))
    {
        headers.insert(header::COOKIE, value);
    }
}

/// Whether the cookie may stand for the token on this request: only on the API and the
/// dashboard's own routes under `/api/` (never on `/mcp` or a proxied app), never to open
/// a WebSocket (no CSRF check guards its handshake), and, when the request says where it
/// comes from, only from this server's own origin (a page on another local port is
/// another origin).
pub(crate) fn cookie_allowed(uri: &axum::http::Uri, headers: &HeaderMap) -> bool {
    if !uri.path().starts_with("/api/") || headers.contains_key(header::UPGRADE) {
        return false;
    }
    match headers.get(header::ORIGIN) {
        None => true,
        Some(origin) => {
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
            host.is_some_and(|host| origin.as_bytes() == format!("http://{host}").as_bytes())
        }
    }
}

#[derive(Clone)]
struct DashState {
    token: BearerToken,
    sessions: Arc<Sessions>,
    info: Arc<serde_json::Value>,
}

/// The dashboard's routes; `info` (the workspace, the sandbox) is shown on its overview.
pub(crate) fn routes(
    token: BearerToken,
    sessions: Arc<Sessions>,
    info: serde_json::Value,
) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/ui/app.js", get(script))
        .route("/ui/pages.js", get(pages))
        .route("/ui/app.css", get(style))
        .route("/login", get(login))
        .route(SESSION_PATH, get(session))
        .route(LOGOUT_PATH, post(logout))
        .with_state(DashState {
            token,
            sessions,
            info: Arc::new(info),
        })
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

async fn index() -> Response {
    let mut response = asset(INDEX, "text/html; charset=utf-8");
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

async fn pages() -> Response {
    asset(PAGES, "text/javascript; charset=utf-8")
}

async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

#[derive(Deserialize)]
struct LoginQuery {
    code: Option<String>,
}

async fn login(State(state): State<DashState>, Query(query): Query<LoginQuery>) -> Response {
    let session = query
        .code
        .as_deref()
        .and_then(|code| state.sessions.redeem(&state.token, code));
    let Some(id) = session else {
        let mut response = (
            StatusCode::UNAUTHORIZED,
            "This login link has expired or was used already. Run `toolshed dashboard` for a new one, or open the dashboard and enter the token (`toolshed token`).\n",
        )
            .into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return response;
    };
    let cookie = format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/api/; Max-Age={}",
        SESSION_LIFETIME.as_secs()
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        headers.insert(header::SET_COOKIE, value);
    }
    response
}

/// Who the page is signed in as, and the CSRF token of a cookie session (guarded).
async fn session(State(state): State<DashState>, headers: HeaderMap) -> Response {
    let csrf = state.sessions.csrf_of(&headers);
    axum::Json(json!({
        "cookie": csrf.is_some(), "csrf": csrf, "version": env!("CARGO_PKG_VERSION"),
        "info": *state.info,
    }))
    .into_response()
}

async fn logout(State(state): State<DashState>, headers: HeaderMap) -> Response {
    state.sessions.end(&headers);
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "toolshed_session=; HttpOnly; SameSite=Strict; Path=/api/; Max-Age=0",
        ),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_works_once_and_only_with_its_token() {
        let token = BearerToken::new("a".repeat(40)).unwrap();
        let other = BearerToken::new("b".repeat(40)).unwrap();
        let sessions = Sessions::default();
        let code = login_code(&token).unwrap();
        assert!(
            sessions.redeem(&other, &code).is_none(),
            "signed with another token"
        );
        let last = if code.ends_with('0') { '1' } else { '0' };
        let forged = format!("{}{last}", &code[..code.len() - 1]);
        assert!(sessions.redeem(&token, &forged).is_none(), "forged");
        let id = sessions.redeem(&token, &code).unwrap();
        assert!(sessions.redeem(&token, &code).is_none(), "used twice");
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            format!("a=b; {COOKIE}={id}").parse().unwrap(),
        );
        assert!(sessions.csrf_of(&headers).is_some());
        let expired = {
            let message = format!("{}.{}", now_secs() - 1, random_hex(12).unwrap());
            format!("{message}.{}", signature(&token, &message))
        };
        assert!(sessions.redeem(&token, &expired).is_none(), "expired");
        sessions.end(&headers);
        assert!(sessions.csrf_of(&headers).is_none(), "ended");
    }
}
