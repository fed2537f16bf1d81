//! The one HTTP client every toolshed network feature uses: [`NetClient`].
//!
//! Sandboxed plugins reach it through their `http` capability with
//! [`NetPolicy::Only`]`(granted hosts)`; the web tools with [`NetPolicy::Public`]. Both go
//! through the same checks, in this order, on every request and on every redirect hop:
//!
//! 1. **The URL**, parsed with the WHATWG rules: only `http` and `https`, no
//!    `user:password@` (credentials belong in a header, not in a URL that ends up in logs),
//!    and the host normalized, so `http://2130706433/` and `http://0x7f.1/` are seen as the
//!    `127.0.0.1` they are.
//! 2. **The policy on the host.** `Only`: the host (and port, if the entry names one) must
//!    be in the list, compared case-insensitively; nothing else is reachable, and addresses
//!    are not filtered, since a person named that host. `Public`: names for this machine or
//!    a private network (`localhost`, `*.localhost`, `*.local`, `*.internal` including
//!    `metadata.google.internal`, `*.home.arpa`) and literal non-public addresses are
//!    refused.
//! 3. **Every resolved address** (under `Public`): the client resolves the name itself and
//!    refuses it if *any* address is loopback, private (RFC 1918, `fc00::/7`), link-local
//!    (`169.254/16` with the `169.254.169.254` metadata address, `fe80::/10`), carrier-grade
//!    NAT (`100.64/10`), unspecified, broadcast, multicast, documentation or benchmarking,
//!    or an IPv6 form of one of those (IPv4-mapped, IPv4-compatible, NAT64, 6to4).
//! 4. **The connection goes to a checked address**, never to the name: there is no second
//!    resolution a rebinding DNS server could answer differently. TLS still verifies the
//!    certificate against the URL's host name.
//!
//! **The allowlist** ([`NetConfig::allow`], `[web] allow` in the configuration) opens
//! chosen destinations to `Public`: a listed host name (with its port, if the entry names
//! one) is reached whatever it resolves to, and a listed address or CIDR range is reached
//! as a literal or among a name's addresses. Everything else is checked as above; a
//! reserved name such as `localhost` stays refused unless the name itself is listed. The
//! allowlist does not widen `Only`.
//!
//! **Names are resolved by a [`Resolver`]**: the system's by default, another through
//! [`NetClient::with_resolver`] (tests make names resolve to private addresses with it).
//!
//! **Proxies are never used**: the client dials the checked address itself and reads no
//! environment variable, so `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` change
//! nothing (a proxy would resolve and connect on its own, past every check here).
//!
//! Redirects are not followed by [`HttpClient::send`]; [`NetClient::send_following`]
//! follows them, running all the checks again on each hop.
//!
//! Limits: a connect timeout (10 s by default, for the lookup, each TCP connect and the TLS
//! handshake), the request's own `timeout` for the whole exchange (redirects included),
//! response headers capped at 64 KiB and 100 headers, the response body cut at the
//! request's `max_response_bytes` (the connection is dropped there, the rest never read),
//! request bodies up to 16 MiB. Cancelling the token drops the connection at once.
//!
//! Not done: HTTP/2, configured proxies, connection reuse, cookies, transparent decompression.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolshed_core::ToolError> {
//! use std::time::Duration;
//! use toolshed_core::{CancellationToken, HttpClient, HttpRequest, NetPolicy};
//! use toolshed_ops::net::NetClient;
//!
//! let client = NetClient::new();
//! let request = HttpRequest {
//!     method: "GET".into(),
//!     url: "https://example.com/".into(),
//!     headers: vec![("accept".into(), "text/html".into())],
//!     body: None,
//!     timeout: Duration::from_secs(30),
//!     max_response_bytes: 1 << 20,
//! };
//! let cancel = CancellationToken::new();
//! let page = client.send_following(request.clone(), &NetPolicy::Public, &cancel, 5).await?;
//! println!("{} from {}", page.response.status, page.url);
//!
//! // Refused before anything is resolved or dialled:
//! let local = HttpRequest { url: "http://127.0.0.1:8080/".into(), ..request };
//! assert!(client.send(local, &NetPolicy::Public, &cancel).await.is_err());
//! # Ok(()) }
//! ```

mod address;
mod allow;
mod connect;
mod exchange;
mod host_pattern;
mod policy;
mod resolver;

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use hyper::header::HeaderValue;
use toolshed_core::{
    CancellationToken, HttpClient, HttpRequest, HttpResponse, NetPolicy, ToolError,
};
use tracing::Instrument as _;

pub use address::non_public_reason;
pub use allow::{AllowRule, AllowRuleError, parse_allowlist};
use exchange::Outgoing;
pub use exchange::StreamingResponse;
pub use host_pattern::{HostPattern, HostPatternError};
/// A chunk of a [`StreamingResponse`]'s body.
pub use hyper::body::Bytes;
use policy::Target;
pub(crate) use policy::egress_addresses;
pub use policy::{Destination, destination, redact_url};
use resolver::SharedResolver;
pub use resolver::{Resolver, SystemResolver};

/// The largest request body sent: 16 MiB.
pub const MAX_REQUEST_BODY: usize = 16 << 20;
/// The default for [`NetConfig::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default for [`NetConfig::max_head_bytes`]: 64 KiB.
pub const DEFAULT_MAX_HEAD_BYTES: usize = 64 << 10;
/// The default for [`NetConfig::max_headers`].
pub const DEFAULT_MAX_HEADERS: usize = 100;
/// The `user-agent` sent when the caller sets none.
pub const DEFAULT_USER_AGENT: &str = concat!("toolshed/", env!("CARGO_PKG_VERSION"));

/// The limits of a [`NetClient`]; [`Default`] is what toolshed uses.
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// How long resolving the host, each TCP connect and the TLS handshake may take.
    pub connect_timeout: Duration,
    /// The most bytes of response status line and headers accepted.
    pub max_head_bytes: usize,
    /// The most response headers accepted.
    pub max_headers: usize,
    /// The `user-agent` sent when the request sets none.
    pub user_agent: String,
    /// Destinations [`NetPolicy::Public`] reaches although they are not public
    /// (`[web] allow`); see [`AllowRule`]. Empty by default.
    pub allow: Vec<AllowRule>,
}

impl Default for NetConfig {
    fn default() -> Self {
        Self {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_head_bytes: DEFAULT_MAX_HEAD_BYTES,
            max_headers: DEFAULT_MAX_HEADERS,
            user_agent: DEFAULT_USER_AGENT.to_string(),
            allow: Vec::new(),
        }
    }
}

/// A response reached through redirects, from [`NetClient::send_following`].
#[derive(Debug, Clone)]
pub struct FollowedResponse {
    /// The final response (not a redirect).
    pub response: HttpResponse,
    /// The URL that gave it.
    pub url: String,
    /// The URLs that redirected, in order, starting with the one requested; empty when
    /// the first answer was final.
    pub redirected_from: Vec<String>,
}

/// The HTTP/1.1 client behind every toolshed network feature; see the [module
/// docs](self) for what it refuses and why. One connection per request, nothing pooled:
/// every request is checked and dialled afresh. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct NetClient {
    config: NetConfig,
    user_agent: HeaderValue,
    resolver: SharedResolver,
    #[cfg(feature = "tls")]
    /// Made on the first HTTPS request: a server that never fetches never loads the TLS
    /// code or copies the trust anchors.
    tls: std::sync::OnceLock<Result<std::sync::Arc<tokio_rustls::rustls::ClientConfig>, String>>,
}

impl Default for NetClient {
    fn default() -> Self {
        Self::new()
    }
}

impl NetClient {
    /// A client with the default limits ([`NetConfig::default`]).
    pub fn new() -> Self {
        Self::with_config(NetConfig::default())
    }

    /// A client with `config`'s limits. A `user_agent` that is not a valid header value is
    /// replaced by [`DEFAULT_USER_AGENT`].
    pub fn with_config(config: NetConfig) -> Self {
        let user_agent = HeaderValue::from_str(&config.user_agent)
            .unwrap_or(HeaderValue::from_static(DEFAULT_USER_AGENT));
        Self {
            config,
            user_agent,
            resolver: SharedResolver(std::sync::Arc::new(SystemResolver)),
            #[cfg(feature = "tls")]
            tls: std::sync::OnceLock::new(),
        }
    }

    /// This client, resolving host names with `resolver` instead of the system's (tests
    /// use it to make a name resolve to private addresses).
    pub fn with_resolver(mut self, resolver: std::sync::Arc<dyn Resolver>) -> Self {
        self.resolver = SharedResolver(resolver);
        self
    }

    /// The limits and allowlist this client was built with.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// Sends `request` and follows up to `max_redirects` redirects (`301`, `302`, `303`,
    /// `307`, `308` with a `Location`), checking `policy` again on every hop: a redirect
    /// from a granted host to one that is not, or from a public address to a private one,
    /// is refused. `303` (and `301`/`302` after a `POST`) continue as a `GET` without the
    /// body; `Authorization`, `Cookie` and `Proxy-Authorization` are dropped when a hop
    /// changes scheme, host or port. `request.timeout` covers the whole chain. One more
    /// redirect than allowed is an error naming where it pointed.
    pub async fn send_following(
        &self,
        request: HttpRequest,
        policy: &NetPolicy,
        cancel: &CancellationToken,
        max_redirects: usize,
    ) -> Result<FollowedResponse, ToolError> {
        let limit = request.timeout;
        let out = Outgoing::from_request(request, &self.user_agent)?;
        guarded(self.follow(out, policy, max_redirects), limit, cancel).await
    }

    /// [`NetClient::send_following`], telling `progress` how many body bytes of the final
    /// response have arrived after each chunk (a download's progress).
    pub async fn send_following_with_progress(
        &self,
        request: HttpRequest,
        policy: &NetPolicy,
        cancel: &CancellationToken,
        max_redirects: usize,
        progress: std::sync::Arc<dyn Fn(u64) + Send + Sync>,
    ) -> Result<FollowedResponse, ToolError> {
        let limit = request.timeout;
        let mut out = Outgoing::from_request(request, &self.user_agent)?;
        out.progress = Some(exchange::BodyProgress(progress));
        guarded(self.follow(out, policy, max_redirects), limit, cancel).await
    }

    async fn follow(
        &self,
        mut out: Outgoing,
        policy: &NetPolicy,
        max_redirects: usize,
    ) -> Result<FollowedResponse, ToolError> {
        let mut redirected_from: Vec<String> = Vec::new();
        loop {
            let response = match self.send_one(&out, policy).await {
                Ok(response) => response,
                Err(e) => {
                    return Err(match redirected_from.last() {
                        Some(from) => after_redirect(e, from, &out.target),
                        None => e,
                    });
                }
            };
            let Some(location) = redirect_location(response.status, &response.headers) else {
                return Ok(FollowedResponse {
                    response,
                    url: out.target.url.to_string(),
                    redirected_from,
                });
            };
            out = next_hop(
                out,
                response.status,
                location,
                &mut redirected_from,
                max_redirects,
            )?;
        }
    }

    /// [`NetClient::send_streaming`], following up to `max_redirects` redirects as
    /// [`NetClient::send_following`] does (the same hop rules, in [`next_hop`]): a
    /// download streamed to disk. `request.timeout` covers reaching each head; a redirect's
    /// body is dropped unread. Returns the final response, its URL and the URLs that
    /// redirected.
    pub async fn send_streaming_following(
        &self,
        request: HttpRequest,
        policy: &NetPolicy,
        cancel: &CancellationToken,
        max_redirects: usize,
    ) -> Result<(StreamingResponse, String, Vec<String>), ToolError> {
        let limit = request.timeout;
        let mut out = Outgoing::from_request(request, &self.user_agent)?;
        let mut redirected_from: Vec<String> = Vec::new();
        loop {
            let open = async {
                let io = self.connect(&out, policy).await?;
                exchange::exchange_streaming(io, &out, &self.config).await
            };
            let response = match guarded(open, limit, cancel).await {
                Ok(response) => response,
                Err(e) => {
                    return Err(match redirected_from.last() {
                        Some(from) => after_redirect(e, from, &out.target),
                        None => e,
                    });
                }
            };
            let Some(location) =
                redirect_location(response.status, &response.headers).map(str::to_string)
            else {
                return Ok((response, out.target.url.to_string(), redirected_from));
            };
            let status = response.status;
            drop(response);
            out = next_hop(out, status, &location, &mut redirected_from, max_redirects)?;
        }
    }

    /// Sends `request` once (a redirect is returned as it is) and returns as soon as the
    /// response head has arrived, with the body to read as it comes (server-sent events,
    /// a long answer): the same checks as [`HttpClient::send`]; `request.timeout` covers
    /// reaching the head, `max_response_bytes` the whole body, and dropping the body
    /// closes the connection.
    pub async fn send_streaming(
        &self,
        request: HttpRequest,
        policy: &NetPolicy,
        cancel: &CancellationToken,
    ) -> Result<StreamingResponse, ToolError> {
        let limit = request.timeout;
        let out = Outgoing::from_request(request, &self.user_agent)?;
        let open = async {
            let io = self.connect(&out, policy).await?;
            exchange::exchange_streaming(io, &out, &self.config).await
        };
        guarded(open, limit, cancel).await
    }

    /// One request, no redirects, no deadline: the checks, the connection, the exchange.
    async fn send_one(
        &self,
        out: &Outgoing,
        policy: &NetPolicy,
    ) -> Result<HttpResponse, ToolError> {
        let io = self.connect(out, policy).await?;
        let response = exchange::exchange(io, out, &self.config).await?;
        // Method, host and status only: header values and bodies may hold secrets.
        tracing::debug!(
            method = %out.method,
            host = %out.target.host,
            status = response.status,
            "http request"
        );
        Ok(response)
    }

    /// The checks on the target and its addresses, then a connection to a checked address
    /// (with TLS for an https URL).
    async fn connect(&self, out: &Outgoing, policy: &NetPolicy) -> Result<Io, ToolError> {
        let allow = &self.config.allow;
        policy::check_target(&out.target, policy, allow)?;
        policy::precheck_port(&out.target, policy, allow)?;
        #[cfg(not(feature = "tls"))]
        if out.target.tls {
            return Err(ToolError::Failed(format!(
                "`{}` is an https URL, but this toolshed was built without TLS (the `tls` feature of toolshed-ops); use an http URL or a build with TLS",
                out.target.shown()
            )));
        }
        let limit = self.config.connect_timeout;
        let addresses = connect::resolve(self.resolver.0.as_ref(), &out.target, limit).await?;
        policy::check_resolved(&out.target, &addresses, policy, allow)?;
        policy::check_port(&out.target, &addresses, policy, allow)?;
        let tcp = connect::dial(&out.target, &addresses, limit).await?;
        if !out.target.tls {
            return Ok(Box::new(tcp));
        }
        self.over_tls(out, tcp).await
    }

    #[cfg(feature = "tls")]
    async fn over_tls(&self, out: &Outgoing, tcp: tokio::net::TcpStream) -> Result<Io, ToolError> {
        let config = self
            .tls
            .get_or_init(connect::tls::client_config)
            .as_ref()
            .map_err(|e| ToolError::Internal(format!("TLS could not be set up: {e}")))?;
        let limit = self.config.connect_timeout;
        let stream = connect::tls::handshake(config, &out.target, tcp, limit).await?;
        Ok(Box::new(stream))
    }

    #[cfg(not(feature = "tls"))]
    async fn over_tls(&self, out: &Outgoing, _tcp: tokio::net::TcpStream) -> Result<Io, ToolError> {
        Err(ToolError::Internal(format!(
            "`{}` reached TLS in a build without it",
            out.target.shown()
        )))
    }
}

/// A connection to a checked address: TCP, or TLS over it.
type Io = Box<dyn Connection>;

/// What an exchange reads and writes.
trait Connection: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Connection for T {}

#[async_trait]
impl HttpClient for NetClient {
    /// Sends `request` once; a redirect is returned as it is.
    async fn send(
        &self,
        request: HttpRequest,
        policy: &NetPolicy,
        cancel: &CancellationToken,
    ) -> Result<HttpResponse, ToolError> {
        let limit = request.timeout;
        // A span only inside a call's trace: requests made outside one (the telemetry
        // exporter's own) would each start a trace of their own.
        let span = if tracing::Span::current().is_none() {
            tracing::Span::none()
        } else {
            tracing::info_span!(target: toolshed_core::TRACE, "http.request", http.request.method = %request.method)
        };
        let out = Outgoing::from_request(request, &self.user_agent)?;
        guarded(self.send_one(&out, policy), limit, cancel)
            .instrument(span)
            .await
    }
}

/// Runs `work` until it ends, `limit` passes ([`ToolError::Timeout`]) or `cancel` fires
/// ([`ToolError::Cancelled`]); in both of the latter `work` is dropped, and with it the
/// connection.
async fn guarded<T>(
    work: impl Future<Output = Result<T, ToolError>>,
    limit: Duration,
    cancel: &CancellationToken,
) -> Result<T, ToolError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Cancelled),
        outcome = tokio::time::timeout(limit, work) => {
            outcome.unwrap_or(Err(ToolError::Timeout(limit)))
        }
    }
}

/// Where a redirect response points, if it is one this client follows.
fn redirect_location(status: u16, headers: &[(String, String)]) -> Option<&str> {
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    headers
        .iter()
        .find(|(name, _)| name == "location")
        .map(|(_, value)| value.as_str())
}

/// The one redirect rule, for every loop that follows: `out` answered `status` pointing to
/// `location`; the request for the next hop (303 and POST-after-301/302 as a GET without
/// the body, credentials dropped when the origin changes — [`Outgoing::redirected`]), or
/// the error when there have been `max` already or the target cannot be followed. The
/// next hop is checked against the policy when it is sent, like any request.
fn next_hop(
    out: Outgoing,
    status: u16,
    location: &str,
    redirected_from: &mut Vec<String>,
    max: usize,
) -> Result<Outgoing, ToolError> {
    let from = out.target.shown();
    if redirected_from.len() >= max {
        return Err(ToolError::Failed(format!(
            "`{from}` redirects again ({status} to `{}`) after {max} redirects; toolshed stopped there. Request that URL directly if it is the right one",
            out.target.url.join(location).map_or_else(
                |_| policy::redact_url(location),
                |u| { policy::redact_url(u.as_str()) }
            )
        )));
    }
    let next = out
        .target
        .url
        .join(location)
        .map_err(|e| {
            ToolError::Failed(format!(
                "`{from}` redirected to `{}`, which is not a valid URL ({e})",
                policy::redact_url(location)
            ))
        })
        .and_then(|url| out.redirected(status, url))
        .map_err(|e| match e {
            // `message` shows the new URL, without credentials it may carry.
            ToolError::InvalidArguments { message, .. } => ToolError::Failed(format!(
                "`{from}` redirected to a URL that cannot be followed: {message}"
            )),
            other => other,
        })?;
    redirected_from.push(out.target.url.to_string());
    Ok(next)
}

/// Says which redirect led to a refused hop.
fn after_redirect(error: ToolError, from: &str, to: &Target) -> ToolError {
    match error {
        ToolError::Denied { rule, message } => ToolError::Denied {
            rule,
            message: format!(
                "`{}` redirected to `{}`, which is refused: {message}",
                policy::redact_url(from),
                to.shown()
            ),
        },
        other => other,
    }
}
