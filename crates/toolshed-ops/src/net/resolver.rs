//! Turning a host name into addresses: the [`Resolver`] the client asks, replaceable so
//! tests can make a name resolve to whatever they need.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;

/// Resolves host names for a [`NetClient`](super::NetClient).
///
/// The client asks once per request (and once per redirect hop), checks every address the
/// answer holds against the policy, and dials only those addresses; the resolver is never
/// asked twice for one connection. So a test resolver that answers `127.0.0.1` for
/// `rebind.example` shows exactly what a hostile DNS server could do, and
/// [`NetPolicy::Public`](toolshed_core::NetPolicy::Public) must refuse it.
///
/// IP literals in URLs never reach the resolver.
#[async_trait]
pub trait Resolver: Send + Sync {
    /// The addresses of `host` (a lowercase ASCII name without a trailing dot), each with
    /// `port`. An empty answer is treated as "no such host".
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The system resolver (`getaddrinfo` through [`tokio::net::lookup_host`]): `/etc/hosts`,
/// then DNS, as every other program on the machine resolves.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl Resolver for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }
}

/// A shared resolver that can sit in a `#[derive(Debug)]` struct.
#[derive(Clone)]
pub(crate) struct SharedResolver(pub Arc<dyn Resolver>);

impl fmt::Debug for SharedResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolver")
    }
}
