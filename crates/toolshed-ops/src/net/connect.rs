//! Resolving a host and dialling one of its addresses, then TLS on top.
//!
//! Resolution happens here, once, and the addresses it returns are the ones the policy
//! checks and the ones dialled: nothing resolves the name a second time, so a DNS answer
//! that changes between the check and the connection (DNS rebinding) changes nothing.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::net::TcpStream;
use toolshed_core::ToolError;
use url::Host;

use super::policy::Target;
use super::resolver::Resolver;

/// The addresses `target`'s host stands for: the address itself for a literal, otherwise
/// what `resolver` answers, in its order, without duplicates.
pub(super) async fn resolve(
    resolver: &dyn Resolver,
    target: &Target,
    limit: Duration,
) -> Result<Vec<SocketAddr>, ToolError> {
    let name = match &target.host {
        Host::Ipv4(ip) => return Ok(vec![SocketAddr::new(IpAddr::V4(*ip), target.port)]),
        Host::Ipv6(ip) => return Ok(vec![SocketAddr::new(IpAddr::V6(*ip), target.port)]),
        Host::Domain(name) => name,
    };
    let answer = tokio::time::timeout(limit, resolver.resolve(name, target.port))
        .await
        .map_err(|_| {
            ToolError::Failed(format!(
                "looking up `{name}` took longer than {limit:?}; the DNS server may be unreachable. Retry later"
            ))
        })?
        .map_err(|e| {
            ToolError::Failed(format!(
                "could not resolve `{name}`: {e}; check the spelling of the host"
            ))
        })?;
    let mut addresses: Vec<SocketAddr> = Vec::new();
    for address in answer {
        // The URL's port, whatever a resolver put in its answer: the port checked is the
        // port dialled.
        let address = SocketAddr::new(address.ip(), target.port);
        if !addresses.contains(&address) {
            addresses.push(address);
        }
    }
    if addresses.is_empty() {
        return Err(ToolError::Failed(format!(
            "`{name}` has no addresses; check the spelling of the host"
        )));
    }
    Ok(addresses)
}

/// How many times a connection refused or reset at once is tried again: nothing was sent
/// yet, so this is safe whatever the request (a server restarting, a port not yet open).
pub(super) const DIAL_RETRIES: u32 = 2;

/// A TCP connection to the first of `addresses` that answers, each given `limit`; when
/// every address refused at once (not a timeout), tried again [`DIAL_RETRIES`] times after
/// 250 ms and 500 ms, each retry logged and recorded on the call's audit note.
pub(super) async fn dial(
    target: &Target,
    addresses: &[SocketAddr],
    limit: Duration,
) -> Result<TcpStream, ToolError> {
    let mut attempt = 0;
    loop {
        let (error, timed_out) = match dial_once(target, addresses, limit).await {
            Ok(stream) => return Ok(stream),
            Err(failed) => failed,
        };
        if timed_out || attempt >= DIAL_RETRIES {
            return Err(error);
        }
        attempt += 1;
        toolshed_core::AuditNote::record_retry(format!(
            "connecting to `{}` (attempt {} of {}) after: {error}",
            target.authority(),
            attempt + 1,
            DIAL_RETRIES + 1
        ));
        tokio::time::sleep(Duration::from_millis(250) * attempt).await;
    }
}

/// One round over `addresses`; the error says whether an address timed out.
async fn dial_once(
    target: &Target,
    addresses: &[SocketAddr],
    limit: Duration,
) -> Result<TcpStream, (ToolError, bool)> {
    let mut failures = Vec::new();
    let mut timed_out = false;
    for address in addresses {
        match tokio::time::timeout(limit, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                // Requests are written whole; waiting for more bytes only adds latency.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => failures.push(format!("{address}: {e}")),
            Err(_) => {
                timed_out = true;
                failures.push(format!("{address}: no answer within {limit:?}"));
            }
        }
    }
    Err((
        ToolError::Failed(format!(
            "could not connect to `{}` ({}); the server may be down or the port closed. Check the URL, or retry later",
            target.authority(),
            failures.join("; ")
        )),
        timed_out,
    ))
}

/// TLS for the `https` scheme.
#[cfg(feature = "tls")]
pub(super) mod tls {
    use std::net::IpAddr;
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::net::TcpStream;
    use tokio_rustls::TlsConnector;
    use tokio_rustls::client::TlsStream;
    use tokio_rustls::rustls::pki_types::ServerName;
    use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
    use toolshed_core::ToolError;
    use url::Host;

    use super::super::policy::Target;

    /// The client configuration every connection shares: the ring provider, TLS 1.2 and
    /// 1.3, the webpki-roots trust anchors, ALPN `http/1.1`.
    pub(crate) fn client_config() -> Result<Arc<ClientConfig>, String> {
        let roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// The TLS handshake over `tcp`, the certificate checked against the URL's host (the
    /// name, not the address dialled).
    pub(crate) async fn handshake(
        config: &Arc<ClientConfig>,
        target: &Target,
        tcp: TcpStream,
        limit: Duration,
    ) -> Result<TlsStream<TcpStream>, ToolError> {
        let name = match &target.host {
            Host::Domain(name) => ServerName::try_from(name.clone()).map_err(|e| {
                ToolError::Failed(format!(
                    "`{name}` cannot be used as a TLS server name ({e}); use a plain DNS name"
                ))
            })?,
            Host::Ipv4(ip) => ServerName::IpAddress(IpAddr::V4(*ip).into()),
            Host::Ipv6(ip) => ServerName::IpAddress(IpAddr::V6(*ip).into()),
        };
        let connector = TlsConnector::from(config.clone());
        match tokio::time::timeout(limit, connector.connect(name, tcp)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(e)) => Err(ToolError::Failed(format!(
                "the TLS handshake with `{}` failed: {e}; the certificate may be expired, issued for another name or by an unknown authority, or the port may not speak TLS",
                target.authority()
            ))),
            Err(_) => Err(ToolError::Failed(format!(
                "the TLS handshake with `{}` did not finish within {limit:?}; the server may be overloaded or the port may not speak TLS",
                target.authority()
            ))),
        }
    }
}
