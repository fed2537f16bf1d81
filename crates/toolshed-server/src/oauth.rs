//! Keeps the OAuth issuer's signing keys (`[server.oauth] jwks_url`) fresh for the guard.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use toolshed_core::{HttpClient, HttpRequest, NetPolicy};
use toolshed_host::oauth::{Jwks, OAuthConfig};
use toolshed_ops::NetClient;

/// How often the keys are fetched anyway.
const EVERY: Duration = Duration::from_secs(300);
/// The least time between two fetches a token naming an unknown key may cause.
const AT_MOST_EVERY: Duration = Duration::from_secs(10);
/// How soon a failed fetch is tried again.
const RETRY: Duration = Duration::from_secs(2);

/// Fetches the JWKS now, then every [`EVERY`], and when `refresh` is woken (at most every
/// [`AT_MOST_EVERY`]), until `stop`.
pub(crate) async fn refresh_keys(
    net: Arc<NetClient>,
    config: OAuthConfig,
    jwks: Arc<RwLock<Jwks>>,
    refresh: Arc<Notify>,
    stop: CancellationToken,
) {
    loop {
        let wait = match fetch(&net, &config.jwks_url, &stop).await {
            Ok(keys) => {
                tracing::debug!(keys = keys.len(), "OAuth signing keys fetched");
                *jwks.write().unwrap_or_else(|e| e.into_inner()) = keys;
                EVERY
            }
            Err(e) => {
                tracing::warn!(url = %config.jwks_url, error = %e, "cannot fetch the OAuth signing keys");
                RETRY
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(AT_MOST_EVERY.min(wait)) => {}
        }
        if wait > AT_MOST_EVERY {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(wait - AT_MOST_EVERY) => {}
                () = refresh.notified() => {}
            }
        }
    }
}

async fn fetch(net: &NetClient, url: &str, stop: &CancellationToken) -> Result<Jwks, String> {
    let host = toolshed_host::oauth::http_host(url).map_err(|e| e.to_string())?;
    let request = HttpRequest {
        method: "GET".into(),
        url: url.to_string(),
        headers: vec![("accept".into(), "application/json".into())],
        body: None,
        timeout: Duration::from_secs(10),
        max_response_bytes: 1024 * 1024,
    };
    // The operator named this host: it may be private or loopback.
    let response = net
        .send(request, &NetPolicy::Only(vec![host]), stop)
        .await
        .map_err(|e| e.to_string())?;
    if response.status != 200 {
        return Err(format!("HTTP {}", response.status));
    }
    Jwks::parse(&response.body).map_err(|e| e.to_string())
}
