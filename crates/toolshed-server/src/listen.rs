//! Accepting connections with limits: how many at once, how long a client may take to send
//! a request's head (which also ends idle keep-alive connections) and its body.
//!
//! `axum::serve` holds a connection for as long as the client keeps it open, however slowly
//! it sends; five hundred such connections starve real clients of file descriptors. Here
//! hyper serves each connection with a header-read timeout, every request body gets a
//! deadline, and at most `max_connections` are open — never more than half the process's
//! descriptors ([`connection_cap`]), so that commands, files and the database keep theirs.
//! At the limit, a new connection is taken anyway and the connection idle the longest (no
//! request being answered: one between keep-alive requests, or one still sending its first
//! head) is closed to make room; only when every connection is busy does the new one wait.
//! `TCP_NODELAY` is set on each, so a reply written in two parts is not held back by
//! Nagle's algorithm.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// How many connections may be open with `soft` descriptors: `configured`, but never more
/// than half of them (at least 16), the other half kept for commands, files, plugins and
/// the database.
pub fn connection_cap(configured: usize, soft: u64) -> usize {
    let half = usize::try_from(soft / 2).unwrap_or(usize::MAX).max(16);
    configured.max(1).min(half)
}

/// One open connection, as the accept loop sees it.
struct Open {
    /// Requests being answered now (a response body still streaming counts).
    busy: Arc<AtomicUsize>,
    /// When it last began or finished answering a request (ms since the loop started).
    last_active: Arc<AtomicU64>,
    /// Closes it at once.
    shed: tokio_util::sync::CancellationToken,
}

/// The open connections, by the order they were accepted.
#[derive(Default)]
struct OpenConnections {
    next: u64,
    open: BTreeMap<u64, Open>,
}

/// The most shed connections given their second to end at once; past it, a new
/// connection waits for a place (so a flood of connections cannot take every descriptor).
const MAX_CLOSING: usize = 64;

impl OpenConnections {
    /// Closes the connection idle the longest; whether there was one.
    fn shed_oldest_idle(&mut self) -> bool {
        let idle = self
            .open
            .iter()
            .filter(|(_, c)| c.busy.load(Ordering::SeqCst) == 0 && !c.shed.is_cancelled())
            .min_by_key(|(n, c)| (c.last_active.load(Ordering::SeqCst), **n))
            .map(|(n, _)| *n);
        match idle.and_then(|n| self.open.get(&n)) {
            Some(connection) => {
                connection.shed.cancel();
                true
            }
            None => false,
        }
    }
}

/// Counts a request as being answered until dropped (with the response body, when it has
/// one), and notes when it ended.
struct Busy {
    busy: Arc<AtomicUsize>,
    last_active: Arc<AtomicU64>,
    epoch: std::time::Instant,
}

impl Busy {
    fn begin(
        busy: &Arc<AtomicUsize>,
        last_active: &Arc<AtomicU64>,
        epoch: std::time::Instant,
    ) -> Self {
        busy.fetch_add(1, Ordering::SeqCst);
        last_active.store(millis_since(epoch), Ordering::SeqCst);
        Self {
            busy: busy.clone(),
            last_active: last_active.clone(),
            epoch,
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.last_active
            .store(millis_since(self.epoch), Ordering::SeqCst);
        self.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

fn millis_since(epoch: std::time::Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A response body that keeps its request counted as busy until it is sent (or dropped).
struct BusyBody {
    inner: Body,
    _busy: Busy,
}

impl HttpBody for BusyBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// What the error of a body cut off by the body timeout says: the doors answer `408` for
/// it, by its type ([`is_body_timeout`]) where they hold the error, and by these words where
/// they hold only its text (rmcp's reply; REST's errors once they are `ApiError`s).
pub(crate) const BODY_TIMED_OUT: &str = "was not received within";

/// A request body cut off by `[server] body_timeout_secs`.
#[derive(Debug)]
pub(crate) struct BodyTimedOut {
    limit_secs: u64,
}

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body {BODY_TIMED_OUT} {} s ([server] body_timeout_secs); send it whole, or raise the limit",
            self.limit_secs
        )
    }
}

impl std::error::Error for BodyTimedOut {}

/// Whether `error`, or an error it wraps, is a [`BodyTimedOut`].
pub(crate) fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(e) = source {
        if e.is::<BodyTimedOut>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// A request body that fails once its deadline passes.
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
            let limit_secs = self.limit.as_secs();
            return Poll::Ready(Some(Err(BodyTimedOut { limit_secs }.into())));
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
    let connections: Arc<std::sync::Mutex<OpenConnections>> = Arc::default();
    let closing_now = Arc::new(AtomicUsize::new(0));
    let epoch = std::time::Instant::now();
    let shed_one = |connections: &std::sync::Mutex<OpenConnections>| {
        if closing_now.load(Ordering::SeqCst) >= MAX_CLOSING {
            return false;
        }
        let shed = connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .shed_oldest_idle();
        if shed {
            closing_now.fetch_add(1, Ordering::SeqCst);
        }
        shed
    };
    // Closed when shutdown begins; every connection task holds `closing` and `done`.
    let (closing_tx, closing) = watch::channel(());
    let (done_tx, done) = watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        let (stream, remote) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (something else holds them: make room by closing
                    // an idle connection) or a connection reset before it was accepted:
                    // wait a moment rather than spin, then go on.
                    let shed = shed_one(&connections);
                    tracing::warn!(error = %e, closed_an_idle_connection = shed, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(if shed { 5 } else { 50 })).await;
                    continue;
                }
            },
        };
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                // At the limit: close the connection idle the longest for this one; when
                // every connection is answering a request, this one waits, and asks again
                // as connections fall idle.
                let mut waited = None;
                loop {
                    shed_one(&connections);
                    tokio::select! {
                        () = &mut shutdown => break,
                        slot = tokio::time::timeout(
                            Duration::from_millis(250),
                            slots.clone().acquire_owned(),
                        ) => match slot {
                            Ok(Ok(slot)) => {
                                waited = Some(slot);
                                break;
                            }
                            Ok(Err(_)) => break,
                            Err(_) => continue,
                        },
                    }
                }
                match waited {
                    Some(slot) => slot,
                    None => break,
                }
            }
        };
        let busy = Arc::new(AtomicUsize::new(0));
        let last_active = Arc::new(AtomicU64::new(millis_since(epoch)));
        let shed = tokio_util::sync::CancellationToken::new();
        let number = {
            let mut open = connections.lock().unwrap_or_else(|e| e.into_inner());
            let number = open.next;
            open.next += 1;
            open.open.insert(
                number,
                Open {
                    busy: busy.clone(),
                    last_active: last_active.clone(),
                    shed: shed.clone(),
                },
            );
            number
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let body_timeout = limits.body_timeout;
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let counted = Busy::begin(&busy, &last_active, epoch);
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
                let response = response.unwrap_or_else(|e| match e {});
                Ok::<_, Infallible>(response.map(|inner| {
                    Body::new(BusyBody {
                        inner,
                        _busy: counted,
                    })
                }))
            }
        });
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let mut closing = closing.clone();
        let done = done.clone();
        let connections = connections.clone();
        let closing_now = closing_now.clone();
        let mut slot = Some(slot);
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                }
                // Shed for a new connection: it was answering nothing a moment ago. Closed
                // as hyper closes an idle connection — a request that began meanwhile, or
                // a reply still being written, finishes first — or dropped after a second
                // (a client still sending its first head).
                () = shed.cancelled() => {
                    // Its place goes to the new connection at once; it has a second to end.
                    drop(slot.take());
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(1), connection.as_mut()).await;
                }
                _ = closing.changed() => {
                    connection.as_mut().graceful_shutdown();
                    if let Err(e) = connection.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                }
            }
            connections
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .open
                .remove(&number);
            if shed.is_cancelled() {
                // Counted when it was picked, however it ended.
                closing_now.fetch_sub(1, Ordering::SeqCst);
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
