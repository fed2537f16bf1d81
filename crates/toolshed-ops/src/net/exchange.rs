//! One request and its response over one connection: the checked request ([`Outgoing`]),
//! what changes on a redirect, and the HTTP/1.1 exchange with hyper.

use std::error::Error as StdError;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use toolshed_core::{HttpRequest, HttpResponse, ToolError};
use url::{Position, Url};

use super::policy::Target;
use super::{MAX_REQUEST_BODY, NetConfig};

/// A request whose method, URL, headers and body were checked, ready to send (again, on a
/// redirect).
#[derive(Debug, Clone)]
pub(super) struct Outgoing {
    pub method: Method,
    pub target: Target,
    /// Headers to send besides `Host`, which comes from the target.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    pub max_response_bytes: usize,
    /// Told how many body bytes have arrived, as they arrive.
    pub progress: Option<BodyProgress>,
}

/// Called with the number of response body bytes received so far, after each chunk.
#[derive(Clone)]
pub(super) struct BodyProgress(pub std::sync::Arc<dyn Fn(u64) + Send + Sync>);

impl std::fmt::Debug for BodyProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodyProgress")
    }
}

impl Outgoing {
    /// Checks `request`; adds `user_agent` unless the caller set one.
    pub(super) fn from_request(
        request: HttpRequest,
        user_agent: &HeaderValue,
    ) -> Result<Self, ToolError> {
        let method = parse_method(&request.method)?;
        let target = Target::parse(&request.url)?;
        let body = request.body.unwrap_or_default();
        if body.len() > MAX_REQUEST_BODY {
            return Err(ToolError::invalid(format!(
                "the request body is {} bytes; toolshed sends at most {} bytes (16 MiB). Send less, or split it into several requests",
                body.len(),
                MAX_REQUEST_BODY
            )));
        }
        let mut headers = Vec::with_capacity(request.headers.len() + 1);
        let mut has_agent = false;
        for (name, value) in &request.headers {
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                ToolError::invalid(format!(
                    "`{}` is not a valid header name; use letters, digits and `-`",
                    name.chars().take(100).collect::<String>()
                ))
            })?;
            // The value is never echoed: it may be a credential.
            let value = HeaderValue::from_bytes(value.trim().as_bytes()).map_err(|_| {
                ToolError::invalid(format!(
                    "the value of header `{name}` contains a line break or another control character; remove it"
                ))
            })?;
            if name == header::HOST {
                let expected = target.host_header();
                if !value.as_bytes().eq_ignore_ascii_case(expected.as_bytes()) {
                    return Err(ToolError::invalid(format!(
                        "the Host header does not match the URL's host `{expected}`; toolshed sets Host from the URL, so remove the header or change the URL"
                    )));
                }
                continue;
            }
            if set_by_client(&name) {
                continue;
            }
            has_agent |= name == header::USER_AGENT;
            headers.push((name, value));
        }
        if !has_agent {
            headers.push((header::USER_AGENT, user_agent.clone()));
        }
        // The call's trace context, when the user turned that on ([telemetry]
        // propagate_http) and the caller did not set its own.
        let traced = headers.iter().any(|(name, _)| name == "traceparent");
        if !traced {
            for (name, value) in toolshed_core::trace_context::http_headers() {
                if let Ok(value) = HeaderValue::from_str(&value) {
                    headers.push((HeaderName::from_static(name), value));
                }
            }
        }
        Ok(Self {
            method,
            target,
            headers,
            body: Bytes::from(body),
            max_response_bytes: request.max_response_bytes,
            progress: None,
        })
    }

    /// The request to send after a `status` redirect to `url`, as browsers do it: `303`
    /// turns anything but `HEAD` into a `GET` without a body, `301` and `302` turn a `POST`
    /// into one; `307` and `308` keep method and body. Credentials (`Authorization`,
    /// `Cookie`, `Proxy-Authorization`) are dropped when the origin changes, so a redirect
    /// cannot carry them to a host they were not meant for.
    pub(super) fn redirected(&self, status: u16, url: Url) -> Result<Self, ToolError> {
        let target = Target::from_url(url)?;
        let mut next = Self {
            method: self.method.clone(),
            target,
            headers: self.headers.clone(),
            body: self.body.clone(),
            max_response_bytes: self.max_response_bytes,
            progress: self.progress.clone(),
        };
        let to_get = (status == 303 && next.method != Method::HEAD)
            || (matches!(status, 301 | 302) && next.method == Method::POST);
        if to_get {
            next.method = Method::GET;
            next.body = Bytes::new();
            next.headers.retain(|(name, _)| !describes_body(name));
        }
        if !self.target.same_origin(&next.target) {
            next.headers.retain(|(name, _)| !is_credential(name));
        }
        Ok(next)
    }

    fn to_hyper(&self) -> Result<Request<Full<Bytes>>, ToolError> {
        let path = &self.target.url[Position::BeforePath..Position::AfterQuery];
        let uri: Uri = path.parse().map_err(|e| {
            ToolError::invalid(format!(
                "the path of `{}` cannot be sent in an HTTP request ({e}); percent-encode unusual characters",
                self.target.shown()
            ))
        })?;
        let host = HeaderValue::from_str(&self.target.host_header()).map_err(|_| {
            ToolError::Internal(format!(
                "the host of `{}` is not a valid Host header",
                self.target.shown()
            ))
        })?;
        let mut request = Request::new(Full::new(self.body.clone()));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        headers.insert(header::HOST, host);
        for (name, value) in &self.headers {
            headers.append(name.clone(), value.clone());
        }
        Ok(request)
    }
}

/// Sends `out` over `io` (a connected TCP or TLS stream) and reads the response, keeping at
/// most `max_response_bytes` of the body. The connection is dropped as soon as this
/// returns: nothing is pooled, and a body cut short is not read further.
pub(super) async fn exchange<IO>(
    io: IO,
    out: &Outgoing,
    config: &NetConfig,
) -> Result<HttpResponse, ToolError>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let request = out.to_hyper()?;
    let host = out.target.authority();
    let (mut sender, connection) = handshake(io, config, &host).await?;
    let limit = out.max_response_bytes;
    let progress = out.progress.clone();
    let work = async move {
        let response = sender.send_request(request).await?;
        let (parts, body) = response.into_parts();
        let (body, truncated) = read_capped(body, limit, progress).await?;
        Ok::<_, hyper::Error>((parts, body, truncated))
    };
    // The connection future does the reading and writing; it runs here, in this task,
    // so dropping this future (timeout, cancel) closes the socket at once.
    tokio::pin!(connection);
    tokio::pin!(work);
    let outcome = tokio::select! {
        outcome = &mut work => outcome,
        closed = &mut connection => {
            // The response may be complete in hyper's buffers; let the reader finish and
            // prefer the connection's error, which says more, if it cannot.
            match (work.await, closed) {
                (Ok(done), _) => Ok(done),
                (Err(_), Err(e)) | (Err(e), Ok(())) => Err(e),
            }
        }
    };
    let (parts, body, truncated) = outcome.map_err(|e| failure(&host, &e, config))?;
    Ok(HttpResponse {
        status: parts.status.as_u16(),
        headers: header_list(&parts.headers),
        body,
        truncated,
    })
}

/// A response whose body arrives as it comes: [`super::NetClient::send_streaming`].
#[derive(Debug)]
pub struct StreamingResponse {
    /// The status code.
    pub status: u16,
    /// Response headers, in order, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body, chunk by chunk; it ends with the body, or with an error (the connection
    /// broke, or the body passed `max_response_bytes`). Dropping it closes the connection.
    pub body: tokio::sync::mpsc::Receiver<Result<Bytes, String>>,
}

/// Sends `out` over `io` and returns once the response head has arrived; a task of its own
/// reads the body into [`StreamingResponse::body`] while the receiver is kept, and closes
/// the connection when it is dropped.
pub(super) async fn exchange_streaming<IO>(
    io: IO,
    out: &Outgoing,
    config: &NetConfig,
) -> Result<StreamingResponse, ToolError>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let request = out.to_hyper()?;
    let host = out.target.authority();
    let (mut sender, connection) = handshake(io, config, &host).await?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let response = match sender.send_request(request).await {
        Ok(response) => response,
        Err(e) => {
            driver.abort();
            return Err(failure(&host, &e, config));
        }
    };
    let (parts, mut body) = response.into_parts();
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let limit = out.max_response_bytes;
    tokio::spawn(async move {
        let mut seen = 0usize;
        loop {
            let frame = tokio::select! {
                () = tx.closed() => break,
                frame = body.frame() => frame,
            };
            let chunk = match frame {
                None => break,
                Some(Err(e)) => {
                    let _ = tx.send(Err(format!("the response broke off: {e}"))).await;
                    break;
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(chunk) => chunk,
                    Err(_) => continue, // trailers
                },
            };
            seen += chunk.len();
            if seen > limit {
                let _ = tx
                    .send(Err(format!("the response passed {limit} bytes")))
                    .await;
                break;
            }
            if tx.send(Ok(chunk)).await.is_err() {
                break;
            }
        }
        drop(sender);
        driver.abort();
    });
    Ok(StreamingResponse {
        status: parts.status.as_u16(),
        headers: header_list(&parts.headers),
        body: rx,
    })
}

/// An HTTP/1.1 connection over `io`, with the configured limits on response heads.
async fn handshake<IO>(
    io: IO,
    config: &NetConfig,
    host: &str,
) -> Result<
    (
        http1::SendRequest<Full<Bytes>>,
        http1::Connection<TokioIo<IO>, Full<Bytes>>,
    ),
    ToolError,
>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = http1::Builder::new();
    builder
        .max_header_size(config.max_head_bytes)
        .max_headers(config.max_headers);
    builder
        .handshake::<_, Full<Bytes>>(TokioIo::new(io))
        .await
        .map_err(|e| failure(host, &e, config))
}

/// Response headers as (lowercase name, value) pairs.
fn header_list(headers: &hyper::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// Reads `body` until it ends or `limit` bytes are kept; `true` when something was left.
async fn read_capped(
    mut body: Incoming,
    limit: usize,
    progress: Option<BodyProgress>,
) -> Result<(Vec<u8>, bool), hyper::Error> {
    let mut kept = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(chunk) = frame?.into_data() else {
            continue; // trailers
        };
        let room = limit - kept.len();
        if chunk.len() > room {
            kept.extend_from_slice(&chunk[..room]);
            return Ok((kept, true));
        }
        kept.extend_from_slice(&chunk);
        if let Some(progress) = &progress {
            (progress.0)(kept.len() as u64);
        }
    }
    Ok((kept, false))
}

fn parse_method(method: &str) -> Result<Method, ToolError> {
    let upper = method.trim().to_ascii_uppercase();
    let parsed = Method::from_bytes(upper.as_bytes()).map_err(|_| {
        ToolError::invalid(format!(
            "`{}` is not an HTTP method; use GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS",
            method.chars().take(40).collect::<String>()
        ))
    })?;
    if parsed == Method::CONNECT {
        return Err(ToolError::invalid(
            "CONNECT is not supported; toolshed sends ordinary requests only",
        ));
    }
    Ok(parsed)
}

/// Headers about framing and the connection itself: the client sets them from the body
/// and the connection it opened, so a caller's values are dropped.
fn set_by_client(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "content-length"
            | "transfer-encoding"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "upgrade"
            | "te"
            | "trailer"
    )
}

/// Headers that describe a body; dropped with the body when a redirect turns into a GET.
fn describes_body(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "content-type" | "content-encoding" | "content-language" | "content-location"
    )
}

/// Headers that carry credentials; dropped on a redirect to another origin.
fn is_credential(name: &HeaderName) -> bool {
    *name == header::AUTHORIZATION
        || *name == header::COOKIE
        || *name == header::PROXY_AUTHORIZATION
}

/// A hyper error as a message for the model. hyper's messages never include header values.
fn failure(host: &str, error: &hyper::Error, config: &NetConfig) -> ToolError {
    let mut detail = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        source = cause.source();
    }
    // `is_parse_too_large` needs hyper's server feature; its message is what tells.
    let message = if error.is_parse() && detail.contains("too large") {
        format!(
            "the response headers from `{host}` are over {} bytes or {} headers; toolshed refuses such responses",
            config.max_head_bytes, config.max_headers
        )
    } else if error.is_parse() || error.is_parse_status() {
        format!(
            "`{host}` did not answer with valid HTTP/1.1 ({detail}); check the port, and http vs https"
        )
    } else if error.is_incomplete_message() {
        format!(
            "`{host}` closed the connection before the response was complete ({detail}); retry later"
        )
    } else {
        format!("the request to `{host}` failed: {detail}")
    };
    ToolError::Failed(message)
}
