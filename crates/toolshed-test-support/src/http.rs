//! A tiny HTTP/1.1 server on 127.0.0.1 that records what it is sent and answers what the
//! test scripts: one request per connection, then it closes. The HTTP client's tests, the
//! SSRF battery and the http and web tools' tests all use it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target: path and query, as sent.
    pub path: String,
    /// Names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body, as sent.
    pub body: Vec<u8>,
}

impl Seen {
    /// The value of header `name` (lowercase), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the server does with a request.
pub enum Reply {
    /// Writes these bytes and closes.
    Raw(Vec<u8>),
    /// Never answers; reports [`Event::Closed`] when the client goes away.
    Silent,
}

/// Something the test can wait for.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A request was read (its path).
    Request(String),
    /// A client of a silent reply closed its connection.
    Closed,
}

/// A response with a `content-length` and `connection: close`.
pub fn respond(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut out = format!("HTTP/1.1 {status} Scripted\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    Reply::Raw(bytes)
}

/// A redirect to `location`.
pub fn redirect(status: u16, location: &str) -> Reply {
    respond(status, &[("location", location)], b"")
}

type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// The server: it runs until the test's runtime ends.
pub struct Server {
    /// Its port on 127.0.0.1.
    pub port: u16,
    connections: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Seen>>>,
    events: mpsc::UnboundedReceiver<Event>,
}

impl Server {
    /// Starts a server answering every request with `handler`.
    pub async fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (events_tx, events) = mpsc::unbounded_channel();
        let handler: Handler = Arc::new(handler);
        {
            let connections = connections.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::SeqCst);
                    let handler = handler.clone();
                    let seen = seen.clone();
                    let events = events_tx.clone();
                    tokio::spawn(serve(stream, handler, seen, events));
                }
            });
        }
        Server {
            port,
            connections,
            seen,
            events,
        }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Requests read so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The next event, failing the test after 10 s.
    pub async fn next_event(&mut self) -> Event {
        tokio::time::timeout(Duration::from_secs(10), self.events.recv())
            .await
            .expect("no server event within 10 s")
            .expect("server stopped")
    }
}

async fn serve(
    mut stream: TcpStream,
    handler: Handler,
    seen: Arc<Mutex<Vec<Seen>>>,
    events: mpsc::UnboundedSender<Event>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            break end;
        }
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if buf.is_empty() && chunk[0] == 0x16 {
            // A TLS ClientHello: answer in plain text, which no TLS client accepts.
            let _ = stream.write_all(b"HTTP/1.1 400 Not TLS\r\n\r\n").await;
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_string();
    let path = request_line.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        body.extend_from_slice(&chunk[..n]);
    }
    let request = Seen {
        method,
        path: path.clone(),
        headers,
        body,
    };
    seen.lock().unwrap().push(request.clone());
    let reply = handler(&request);
    let _ = events.send(Event::Request(path));
    match reply {
        Reply::Raw(bytes) => {
            // The client may hang up early (a capped body); that is not the server's error.
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Reply::Silent => {
            while let Ok(n) = stream.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
            }
            let _ = events.send(Event::Closed);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
