//! The egress filter of `network = "filtered"`: an HTTP proxy on a UNIX socket, owned by
//! the host, that applies the web tools' rules to every destination a sandboxed command
//! asks for.
//!
//! A filtered command is in a private network with only its loopback. The host's network
//! keeper (or, for a helper run by hand, the sandbox's first process) listens on
//! `127.0.0.1:PROXY_PORT` there and carries each connection to this proxy's socket; the command finds it through `HTTP_PROXY` and
//! `HTTPS_PROXY`. The proxy takes `CONNECT host:port` (HTTPS, and any TCP a client tunnels)
//! and absolute-form requests (`GET http://host/…`), resolves the host, and dials it only
//! when every address is public or `[web] allow` opens it — loopback, private ranges,
//! link-local and cloud metadata are refused with `403` and the reason.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use toolshed_core::NetPolicy;

use crate::net::AllowRule;

/// The port the proxy answers on inside a filtered sandbox.
pub const PROXY_PORT: u16 = 3128;
/// The most connections through the proxy at once, all commands together.
const MAX_CONNECTIONS: usize = 256;
/// The largest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// How long dialling one address may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A running egress proxy; when dropped, it stops taking connections and its socket and
/// directory are removed.
#[derive(Debug)]
pub(crate) struct EgressProxy {
    dir: PathBuf,
    socket: PathBuf,
    stopped: Arc<std::sync::atomic::AtomicBool>,
}

impl EgressProxy {
    /// The proxy's socket.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// Starts a proxy applying `allow` on a socket in a new private directory: public
    /// hosts, and what `allow` opens.
    pub(crate) fn start(allow: Vec<AllowRule>) -> io::Result<Self> {
        Self::start_with(NetPolicy::Public, allow)
    }

    /// Starts a proxy that reaches only `hosts` (`host` or `host:port`) within the web
    /// rules: for a command whose hosts were named (a mounted MCP server's `--allow-host`).
    /// The list narrows what `allow` and the public internet give; a loopback, private or
    /// metadata address stays closed unless `allow` opens it too.
    pub(crate) fn within(hosts: Vec<String>, allow: Vec<AllowRule>) -> io::Result<Self> {
        Self::start_with(NetPolicy::PublicWithin(hosts), allow)
    }

    fn start_with(policy: NetPolicy, allow: Vec<AllowRule>) -> io::Result<Self> {
        let dir = super::private_dir("toolshed-egress")?;
        let socket = dir.join("egress.sock");
        let listener = UnixListener::bind(&socket)?;
        let rules = Arc::new((policy, allow));
        let open = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = stopped.clone();
        std::thread::Builder::new()
            .name("toolshed-egress".into())
            .spawn(move || {
                for client in listener.incoming().flatten() {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    if open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                        open.fetch_sub(1, Ordering::AcqRel);
                        let _ = refuse(&client, 503, "too many connections through the proxy");
                        continue;
                    }
                    let (rules, open) = (Arc::clone(&rules), Arc::clone(&open));
                    let spawned = std::thread::Builder::new()
                        .name("toolshed-egress-conn".into())
                        .spawn(move || {
                            let _ = serve(client, &rules.0, &rules.1);
                            open.fetch_sub(1, Ordering::AcqRel);
                        });
                    // A thread that cannot start drops the client: its connection closes.
                    drop(spawned);
                }
            })?;
        Ok(Self {
            dir,
            socket,
            stopped,
        })
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        // The listening thread wakes for one last connection and ends.
        self.stopped.store(true, Ordering::Release);
        let _ = UnixStream::connect(&self.socket);
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Answers `status` with `why` and closes. The `x-toolshed-refused` header tells the
/// proxy's own answer from a server's (the browser reports it as a refusal).
fn refuse(mut client: &UnixStream, status: u16, why: &str) -> io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        502 => "Bad Gateway",
        _ => "Service Unavailable",
    };
    let body = format!("toolshed sandbox: {why}\n");
    write!(
        client,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nx-toolshed-refused: {status}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    client.flush()
}

/// One client connection: read the request head, check the destination, relay.
fn serve(client: UnixStream, policy: &NetPolicy, allow: &[AllowRule]) -> io::Result<()> {
    client.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = reader.read_until(b'\n', &mut head)?;
        if n == 0 {
            return Ok(());
        }
        if head.len() > MAX_HEAD {
            return refuse(&client, 400, "the request head is too large");
        }
        if head[before..] == *b"\r\n" || head[before..] == *b"\n" {
            break;
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n").flat_map(|l| l.split('\n'));
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (method, target, version) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    let (host, port, path) = if method.eq_ignore_ascii_case("CONNECT") {
        match split_authority(target, 443) {
            Some((h, p)) => (h, p, None),
            None => return refuse(&client, 400, &format!("`{target}` is not host:port")),
        }
    } else {
        let Some(rest) = target.strip_prefix("http://") else {
            return refuse(
                &client,
                400,
                "only CONNECT and absolute http:// requests go through this proxy",
            );
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        match split_authority(authority, 80) {
            Some((h, p)) => (h, p, Some(path.to_string())),
            None => return refuse(&client, 400, &format!("`{authority}` is not a host")),
        }
    };
    let addresses = match crate::net::egress_addresses(&host, port, policy, allow) {
        Ok(addresses) => addresses,
        Err(why) => return refuse(&client, 403, &why),
    };
    let Some(upstream) = addresses
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, CONNECT_TIMEOUT).ok())
    else {
        return refuse(&client, 502, &format!("cannot connect to {host}:{port}"));
    };
    let _ = upstream.set_nodelay(true);
    let mut upstream_write = upstream.try_clone()?;
    match path {
        None => {
            (&client).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        }
        Some(path) => {
            // Origin form, the proxy's own headers dropped, one request per connection.
            let mut out = format!("{method} {path} {version}\r\n");
            for line in lines {
                let name = line
                    .split(':')
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if line.is_empty()
                    || name.starts_with("proxy-")
                    || name == "connection"
                    || name == "keep-alive"
                {
                    continue;
                }
                out.push_str(line);
                out.push_str("\r\n");
            }
            out.push_str("connection: close\r\n\r\n");
            upstream_write.write_all(out.as_bytes())?;
        }
    }
    // Bytes the client sent after the head (a body, a TLS hello) go first.
    let buffered = reader.buffer().to_vec();
    upstream_write.write_all(&buffered)?;
    relay(reader.into_inner(), client, upstream)
}

/// `host:port` (or `[v6]:port`, or `host` with `default`), split.
fn split_authority(authority: &str, default: u16) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default,
            None => return None,
        };
        (host.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse().ok()?),
            None => (authority.to_string(), default),
        }
    };
    (!host.is_empty() && port > 0).then_some((host, port))
}

/// Copies both ways until both sides are done.
fn relay(mut from_client: UnixStream, client: UnixStream, upstream: TcpStream) -> io::Result<()> {
    from_client.set_read_timeout(None)?;
    let mut to_upstream = upstream.try_clone()?;
    let up = std::thread::spawn(move || {
        let _ = io::copy(&mut from_client, &mut to_upstream);
        let _ = to_upstream.shutdown(Shutdown::Write);
    });
    let mut from_upstream = upstream;
    let mut to_client = client;
    let _ = io::copy(&mut from_upstream, &mut to_client);
    let _ = to_client.shutdown(Shutdown::Write);
    let _ = up.join();
    Ok(())
}

/// The namespace side: carries each connection to `127.0.0.1:PROXY_PORT` to the proxy's
/// socket. Runs in the network keeper (or a sandbox's first process), on threads of its own.
pub(super) fn bridge(listener: std::net::TcpListener, socket: PathBuf) {
    for client in listener.incoming().flatten() {
        let socket = socket.clone();
        let _ = std::thread::Builder::new().spawn(move || {
            let Ok(upstream) = UnixStream::connect(&socket) else {
                return;
            };
            let (Ok(mut client_read), Ok(mut upstream_write)) =
                (client.try_clone(), upstream.try_clone())
            else {
                return;
            };
            let up = std::thread::spawn(move || {
                let _ = io::copy(&mut client_read, &mut upstream_write);
                let _ = upstream_write.shutdown(Shutdown::Write);
            });
            let (mut upstream_read, mut client_write) = (upstream, client);
            let _ = io::copy(&mut upstream_read, &mut client_write);
            let _ = client_write.shutdown(Shutdown::Write);
            let _ = up.join();
        });
    }
}

/// The way in: each connection to the inbound socket names a port on its first line
/// (`8080\n`) and is carried to `127.0.0.1:<port>` of the namespace — how the host's port
/// proxy reaches a dev server in a sandbox with a network of its own.
pub(super) fn inbound(listener: UnixListener) {
    for client in listener.incoming().flatten() {
        let _ = std::thread::Builder::new().spawn(move || {
            let mut reader = BufReader::new(match client.try_clone() {
                Ok(c) => c,
                Err(_) => return,
            });
            let mut line = String::new();
            let read = (&mut reader).take(8).read_line(&mut line);
            let port = match read.ok().and_then(|_| line.trim().parse::<u16>().ok()) {
                Some(port) if port > 0 => port,
                _ => return,
            };
            let Ok(upstream) = TcpStream::connect(("127.0.0.1", port)) else {
                return;
            };
            let buffered = reader.buffer().to_vec();
            let Ok(mut upstream_write) = upstream.try_clone() else {
                return;
            };
            if upstream_write.write_all(&buffered).is_err() {
                return;
            }
            let _ = relay(reader.into_inner(), client, upstream);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::split_authority;

    #[test]
    fn authorities_split_into_host_and_port() {
        let split = |a: &str, d: u16| split_authority(a, d);
        assert_eq!(
            split("example.com:8443", 443),
            Some(("example.com".into(), 8443))
        );
        assert_eq!(split("example.com", 80), Some(("example.com".into(), 80)));
        assert_eq!(split("[::1]:8080", 443), Some(("::1".into(), 8080)));
        assert_eq!(split("[fd00::1]", 443), Some(("fd00::1".into(), 443)));
        for bad in ["", ":80", "host:0", "host:x", "[::1", "[::1]x"] {
            assert_eq!(split(bad, 80), None, "{bad}");
        }
    }
}
