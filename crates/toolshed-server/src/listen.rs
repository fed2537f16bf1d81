//! Accepting connections with limits: how many at once, how long a client may take to send
//! a request's head (which also ends idle keep-alive connections) and its body.
//!
//! `axum::serve` holds a connection for as long as the client keeps it open, however slowly
//! it sends; five hundred such connections starve real clients of file descriptors. Here
//! hyper serves each connection with a header-read timeout, every request body gets a
//! deadline, and at most `max_connections` are open: past that, new connections wait in
//! the kernel's backlog until one closes. `TCP_NODELAY` is set on each, so a reply written
//! in two parts is not held back by Nagle's algorithm.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// The limits of [`serve_connections`].
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// The longest a connection may take to send a request head, counted from when the
    /// server starts waiting for it (so an idle keep-alive connection closes after it too).
    pub header_timeout: Duration,
    /// The longest a client may take to send a request body.
    pub body_timeout: Duration,
    /// The most connections open at once.
    pub max_connections: usize,
}

/// A request body that fails once its deadline passes.
/// What the error of a body cut off by the body timeout says (and what the doors look for
/// to answer `408`).
pub(crate) const BODY_TIMED_OUT: &str = "was not received within";

struct TimedBody {
    inner: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            let limit = self.limit.as_secs();
            return Poll::Ready(Some(Err(format!(
                "the request body {BODY_TIMED_OUT} {limit} s ([server] body_timeout_secs); send it whole, or raise the limit"
            )
            .into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` completes; then stops
/// accepting, asks every connection to finish its current request and close, and returns
/// once all have.
pub(crate) async fn serve_connections(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // Closed when shutdown begins; every connection task holds `closing` and `done`.
    let (closing_tx, closing) = watch::channel(());
    let (done_tx, done) = watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let (stream, remote) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was accepted:
                    // wait a moment rather than spin, then go on.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let body_timeout = limits.body_timeout;
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let mut request = request.map(|inner| {
                Body::new(TimedBody {
                    inner,
                    deadline: Box::pin(tokio::time::sleep(body_timeout)),
                    limit: body_timeout,
                })
            });
            request.extensions_mut().insert(ConnectInfo(remote));
            let mut router = router.clone();
            async move {
                let response =
                    <Router as tower_service::Service<Request<Body>>>::call(&mut router, request)
                        .await;
                Ok::<_, Infallible>(response.unwrap_or_else(|e| match e {}))
            }
        });
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let mut closing = closing.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                }
                _ = closing.changed() => {
                    connection.as_mut().graceful_shutdown();
                    if let Err(e) = connection.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                }
            }
            drop(done);
            drop(slot);
        });
    }
    drop(listener);
    drop(closing);
    let _ = closing_tx.send(());
    drop(closing_tx);
    drop(done);
    done_tx.closed().await;
    Ok(())
}
