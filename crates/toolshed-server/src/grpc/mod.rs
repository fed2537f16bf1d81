//! The gRPC door (feature `grpc`): the plugin manager's service of
//! `proto/toolshed/v1/plugin_manager.proto` — list plugins and tools, execute (answered, or
//! streamed with progress and log messages before the result), and the plugin lifecycle —
//! served by `toolshed serve --grpc-port N` beside the HTTP server.
//!
//! Nothing here is a second way in: every request passes the HTTP server's guard (the
//! bearer token, an agent token or an OAuth issuer's JWT as `authorization` metadata, a
//! loopback `:authority`, the limit on failed logins), needs the scope its REST twin needs (`tools:list`,
//! `tools:call`, `plugins:admin`), and every call runs through the host's pipeline as door
//! `grpc`, owned as over REST (`x-toolshed-owner` metadata), so policy, approvals, hooks
//! and the audit apply. Errors are gRPC statuses named after the HTTP status REST answers
//! (`NOT_FOUND`, `INVALID_ARGUMENT`, `PERMISSION_DENIED`, …) with the same message.

mod calls;
mod messages;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{self, StatusCode, header};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::{Code, Status};

use toolshed_host::Host;
use toolshed_host::identity::Caller;

use crate::guard::Rejection;
use crate::{BearerToken, RequestGuard, ServeError};

/// The service's full name, the first part of every method's path.
pub const SERVICE: &str = "toolshed.v1.PluginManager";

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Serves the gRPC door on `listener` with the server's `token` (and the host's agent
/// tokens) until `shutdown` completes; then it stops accepting, lets the calls running
/// finish within `[server] shutdown_grace_secs`, and cancels those still running then.
pub async fn serve_grpc(
    host: Arc<Host>,
    listener: TcpListener,
    token: BearerToken,
    max_message_bytes: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let local = listener.local_addr().map_err(ServeError::Address)?;
    let server = host.config().config.server.clone();
    let guard = RequestGuard::new(local, token, max_message_bytes)
        .with_agent_tokens(host.tokens().detached())
        .with_workspace(host.workspace_name().to_string())
        .with_failure_limit(server.max_auth_failures)
        .with_extra_names(&server.allowed_hosts, &server.allowed_origins);
    let stop = CancellationToken::new();
    // An OAuth issuer's JWTs are accepted here as over HTTP.
    let guard = crate::serve::with_oauth(
        guard,
        server.oauth.clone(),
        host.services().net.clone(),
        &stop,
    );
    let host_for_grace = host.clone();
    let service = PluginManager {
        host,
        guard: Arc::new(guard),
        stop: stop.clone(),
        max_message_bytes,
    };
    let grace = std::time::Duration::from_secs(server.shutdown_grace_secs);
    let signal = async move {
        shutdown.await;
        // As over HTTP: the calls running get the grace period, then are cancelled.
        tokio::spawn(async move {
            host_for_grace.dispatcher().until_idle(grace).await;
            stop.cancel();
        });
    };
    tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .max_concurrent_streams(Some(server.max_connections.clamp(1, 1024) as u32))
        .serve_with_incoming_shutdown(
            service,
            tonic::transport::server::TcpIncoming::from(listener),
            signal,
        )
        .await
        .map_err(|e| ServeError::Serve(std::io::Error::other(e)))
}

/// The service: the host, the guard every request passes, and the token that cancels
/// the calls running when the door closes.
#[derive(Clone)]
struct PluginManager {
    host: Arc<Host>,
    guard: Arc<RequestGuard>,
    stop: CancellationToken,
    max_message_bytes: usize,
}

impl NamedService for PluginManager {
    const NAME: &'static str = SERVICE;
}

impl<B> tower_service::Service<http::Request<B>> for PluginManager
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.route(request).await) })
    }
}

impl PluginManager {
    /// Answers one request: authenticated, then sent to its method.
    async fn route<B>(self, request: http::Request<B>) -> http::Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send,
    {
        let Some(method) = request
            .uri()
            .path()
            .strip_prefix('/')
            .and_then(|p| p.strip_prefix(SERVICE))
            .and_then(|p| p.strip_prefix('/'))
            .map(str::to_string)
        else {
            return Status::unimplemented(format!(
                "no service at {}; this server offers {SERVICE} (proto/toolshed/v1/plugin_manager.proto)",
                request.uri().path()
            ))
            .into_http();
        };
        let caller = match self.authenticate(&request) {
            Ok(caller) => caller,
            Err(status) => return status.into_http(),
        };
        calls::dispatch(self, &method, caller, request).await
    }

    /// The caller of `request`, checked by the HTTP server's guard. HTTP/2 carries the
    /// host as `:authority`, which the guard reads as `Host`.
    fn authenticate<B>(&self, request: &http::Request<B>) -> Result<Caller, Status> {
        let peer = request
            .extensions()
            .get::<tonic::transport::server::TcpConnectInfo>()
            .and_then(|info| info.remote_addr)
            .map(|addr: SocketAddr| addr.ip());
        let mut headers = request.headers().clone();
        if !headers.contains_key(header::HOST)
            && let Some(authority) = request.uri().authority()
            && let Ok(value) = http::HeaderValue::from_str(authority.as_str())
        {
            headers.insert(header::HOST, value);
        }
        match self.guard.check(peer, request.uri(), &headers) {
            Ok(Some(caller)) => Ok(caller),
            // No path of this door is open.
            Ok(None) => Err(Status::unauthenticated(Rejection::MissingToken.parts().2)),
            Err(rejection) => {
                tracing::debug!(reason = ?rejection, "gRPC request refused");
                let (status, _, message) = rejection.parts();
                Err(Status::new(code_of(status), message))
            }
        }
    }
}

/// The gRPC code for what REST answers with `status`.
pub(crate) fn code_of(status: StatusCode) -> Code {
    match status.as_u16() {
        200..=299 => Code::Ok,
        400 | 413 | 422 | 431 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::NotFound,
        409 => Code::FailedPrecondition,
        408 | 504 => Code::DeadlineExceeded,
        429 => Code::ResourceExhausted,
        499 => Code::Cancelled,
        501 => Code::Unimplemented,
        503 => Code::Unavailable,
        _ => Code::Internal,
    }
}

/// The status for an error REST would answer.
pub(crate) fn status_of(error: &crate::ApiError) -> Status {
    Status::new(code_of(error.status), error.message.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_http_status_rest_answers() {
        assert_eq!(code_of(StatusCode::BAD_REQUEST), Code::InvalidArgument);
        assert_eq!(code_of(StatusCode::UNAUTHORIZED), Code::Unauthenticated);
        assert_eq!(code_of(StatusCode::FORBIDDEN), Code::PermissionDenied);
        assert_eq!(code_of(StatusCode::NOT_FOUND), Code::NotFound);
        assert_eq!(code_of(StatusCode::CONFLICT), Code::FailedPrecondition);
        assert_eq!(code_of(StatusCode::GATEWAY_TIMEOUT), Code::DeadlineExceeded);
        assert_eq!(
            code_of(StatusCode::TOO_MANY_REQUESTS),
            Code::ResourceExhausted
        );
        assert_eq!(code_of(StatusCode::INTERNAL_SERVER_ERROR), Code::Internal);
    }
}
