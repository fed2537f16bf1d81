//! The SSRF battery: every way a URL can point at this machine or a private network is
//! refused under `NetPolicy::Public` while a canary server on 127.0.0.1 counts the
//! connections it gets (none, every time); then the config allowlist opens loopback
//! servers deliberately, end to end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Not every helper of the shared server is used here.
#[allow(dead_code)]
use crate::server;

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use server::{Reply, Seen, Server, redirect, respond};
use toolshed_core::{CancellationToken, HttpClient, HttpRequest, NetPolicy, ToolError};
use toolshed_ops::net::{NetConfig, Resolver, parse_allowlist};
use toolshed_ops::{FollowedResponse, NetClient};

/// Answers from a fixed table, as a hostile or split-horizon DNS server could.
struct TableResolver(HashMap<&'static str, Vec<IpAddr>>);

#[async_trait]
impl Resolver for TableResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        match self.0.get(host) {
            Some(ips) => Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, "no such host")),
        }
    }
}

fn resolver() -> Arc<dyn Resolver> {
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    Arc::new(TableResolver(HashMap::from([
        ("loopback.test", vec![ip("127.0.0.1")]),
        ("private.test", vec![ip("10.0.0.1")]),
        ("metadata.test", vec![ip("169.254.169.254")]),
        ("ula.test", vec![ip("fd00::1")]),
        ("mixed.test", vec![ip("93.184.216.34"), ip("127.0.0.1")]),
        (
            "mixed-v6.test",
            vec![ip("2606:4700::1"), ip("::ffff:127.0.0.1")],
        ),
        ("docs.internal", vec![ip("127.0.0.1")]),
        ("app.test", vec![ip("127.0.0.1")]),
    ])))
}

/// A client with the test resolver and `allow` as its `[web] allow`.
fn client(allow: &[&str]) -> NetClient {
    NetClient::with_config(NetConfig {
        allow: parse_allowlist(allow).unwrap(),
        ..NetConfig::default()
    })
    .with_resolver(resolver())
}

fn get(url: &str) -> HttpRequest {
    HttpRequest {
        method: "GET".into(),
        url: url.into(),
        headers: Vec::new(),
        body: None,
        timeout: Duration::from_secs(10),
        max_response_bytes: 1 << 20,
    }
}

async fn fetch(client: &NetClient, url: &str) -> Result<FollowedResponse, ToolError> {
    client
        .send_following(get(url), &NetPolicy::Public, &CancellationToken::new(), 5)
        .await
}

fn ok(seen: &Seen) -> Reply {
    respond(200, &[("content-type", "text/plain")], seen.path.as_bytes())
}

/// Every forbidden spelling of a destination, pointed at `port` where a port fits, with a
/// word the refusal must contain.
fn forbidden(port: u16) -> Vec<(String, &'static str)> {
    let p = port;
    vec![
        (format!("http://127.0.0.1:{p}/"), "loopback"),
        (format!("http://2130706433:{p}/"), "loopback"),
        (format!("http://0177.0.0.1:{p}/"), "loopback"),
        (format!("http://0x7f.0.0.1:{p}/"), "loopback"),
        (format!("http://0x7f000001:{p}/"), "loopback"),
        (format!("http://127.1:{p}/"), "loopback"),
        (format!("http://[::1]:{p}/"), "loopback"),
        (format!("http://[::ffff:127.0.0.1]:{p}/"), "loopback"),
        (format!("http://[::ffff:7f00:1]:{p}/"), "loopback"),
        (format!("http://[::127.0.0.1]:{p}/"), "loopback"),
        (format!("http://[2002:7f00:1::]:{p}/"), "loopback"),
        (format!("http://[64:ff9b::7f00:1]:{p}/"), "loopback"),
        (format!("http://localhost:{p}/"), "name for this machine"),
        (format!("http://localhost.:{p}/"), "name for this machine"),
        (format!("http://LocalHost:{p}/"), "name for this machine"),
        (format!("http://127.0.0.1.:{p}/"), "loopback"),
        (
            format!("http://foo.localhost:{p}/"),
            "name for this machine",
        ),
        (
            format!("http://evil.com@127.0.0.1:{p}/"),
            "user name or password",
        ),
        (format!("http://127.0.0.1:{p}\\@evil.com/"), "loopback"),
        (
            format!("http://loopback.test:{p}/"),
            "resolves to 127.0.0.1",
        ),
        (format!("http://private.test:{p}/"), "resolves to 10.0.0.1"),
        (format!("http://metadata.test:{p}/"), "cloud metadata"),
        (format!("http://ula.test:{p}/"), "unique local"),
        (format!("http://mixed.test:{p}/"), "resolves to 127.0.0.1"),
        (format!("http://mixed-v6.test:{p}/"), "loopback"),
        (
            "http://169.254.169.254/latest/meta-data/".into(),
            "metadata",
        ),
        ("http://[fd00:ec2::254]/".into(), "metadata"),
        ("http://10.0.0.1/".into(), "private"),
        ("http://[fe80::1]/".into(), "link-local"),
        ("http://100.64.0.1/".into(), "carrier-grade"),
        ("http://0.0.0.0/".into(), "unspecified"),
        ("http://metadata.google.internal/".into(), "metadata"),
        ("file:///etc/passwd".into(), "only http and https"),
        (format!("ftp://127.0.0.1:{p}/"), "only http and https"),
        (
            format!("gopher://127.0.0.1:{p}/_GET"),
            "only http and https",
        ),
        ("data:text/plain,hello".into(), "only http and https"),
    ]
}

/// The refusal's text, failing the test when the request was not refused. A policy
/// refusal is `Denied`; a URL refused for its form (scheme, credentials) is
/// `InvalidArguments`; a redirect to such a URL is `Failed` naming the redirect.
fn refusal(url: &str, result: Result<FollowedResponse, ToolError>) -> String {
    match result {
        Err(e @ (ToolError::Denied { .. } | ToolError::InvalidArguments { .. })) => e.to_string(),
        Err(ToolError::Failed(message)) if message.contains("redirected to") => message,
        other => panic!("{url} was not refused: {other:?}"),
    }
}

/// The canary answers when asked through an explicit grant, so a count of zero means
/// nothing reached it, not that it was down.
async fn assert_untouched(canary: &Server) {
    assert_eq!(canary.connections(), 0, "the canary was reached");
    let grant = NetPolicy::Only(vec![format!("127.0.0.1:{}", canary.port)]);
    NetClient::new()
        .send(
            get(&canary.url("/alive")),
            &grant,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(canary.connections(), 1);
}

#[tokio::test]
async fn every_forbidden_form_is_refused_without_a_connection() {
    let canary = Server::start(ok).await;
    // An allowlist naming something else must not open the canary.
    let client = client(&["127.0.0.1:1", "docs.internal:1", "192.168.7.0/24"]);
    for (url, why) in forbidden(canary.port) {
        let message = refusal(&url, fetch(&client, &url).await);
        assert!(message.contains(why), "{url}: {message}");
        // The plain `send` refuses the same way.
        let sent = client
            .send(get(&url), &NetPolicy::Public, &CancellationToken::new())
            .await;
        assert!(sent.is_err(), "{url}: {sent:?}");
    }
    assert_untouched(&canary).await;
}

#[tokio::test]
async fn a_redirect_to_each_forbidden_form_is_refused_at_that_hop() {
    let canary = Server::start(ok).await;
    let targets = forbidden(canary.port);
    let locations: Vec<String> = targets.iter().map(|(url, _)| url.clone()).collect();
    let origin = Server::start(move |seen| {
        let i: usize = seen.path.trim_start_matches("/hop/").parse().unwrap();
        redirect(302, &locations[i])
    })
    .await;
    // A range rule (not the canary's) so that a port other than 80 and 443 is not refused
    // before the name is resolved: the hop is judged by its addresses, as here it must be.
    let client = client(&[&format!("127.0.0.1:{}", origin.port), "192.168.7.0/24"]);
    for (i, (url, why)) in targets.iter().enumerate() {
        let message = refusal(url, fetch(&client, &origin.url(&format!("/hop/{i}"))).await);
        assert!(message.contains("redirected to"), "{url}: {message}");
        assert!(message.contains(why), "{url}: {message}");
    }
    assert_eq!(origin.seen().len(), targets.len());
    assert_untouched(&canary).await;
}

#[tokio::test]
async fn a_redirect_chain_is_refused_at_the_first_forbidden_hop() {
    let canary = Server::start(ok).await;
    let to_canary = canary.url("/");
    let origin = Server::start(move |seen| match seen.path.as_str() {
        "/1" => redirect(301, "/2"),
        "/2" => redirect(307, "http://loopback.test:1/"),
        _ => redirect(302, &to_canary),
    })
    .await;
    let client = client(&[&format!("127.0.0.1:{}", origin.port)]);
    let message = refusal("chain", fetch(&client, &origin.url("/1")).await);
    assert!(message.contains("loopback.test"), "{message}");
    assert_untouched(&canary).await;
}

#[tokio::test]
async fn allowlisted_host_names_reach_loopback_servers_end_to_end() {
    let server = Server::start(ok).await;
    let canary = Server::start(ok).await;
    let port = server.port;

    // A listed name, any port; its loopback address is what the person meant.
    let followed = fetch(
        &client(&["docs.internal"]),
        &format!("http://docs.internal:{port}/a"),
    )
    .await
    .unwrap();
    assert_eq!(followed.response.status, 200);
    assert_eq!(followed.response.body, b"/a");
    assert_eq!(
        server.seen()[0].header("host"),
        Some(format!("docs.internal:{port}").as_str())
    );

    // A listed name and port: that port only.
    let client = client(&[&format!("docs.internal:{port}")]);
    fetch(&client, &format!("http://docs.internal:{port}/b"))
        .await
        .unwrap();
    let url = format!("http://docs.internal:{}/", canary.port);
    let message = refusal(&url, fetch(&client, &url).await);
    assert!(
        message.contains("`docs.internal` is a private-use name"),
        "{message}"
    );
    // Other names resolving to the same address stay refused.
    let url = format!("http://app.test:{port}/");
    refusal(&url, fetch(&client, &url).await);

    assert_eq!(server.seen().len(), 2);
    assert_untouched(&canary).await;
}

#[tokio::test]
async fn allowlisted_addresses_and_ranges_reach_loopback_servers_end_to_end() {
    let server = Server::start(ok).await;
    let canary = Server::start(ok).await;
    let port = server.port;

    // One address and port.
    let client_one = client(&[&format!("127.0.0.1:{port}")]);
    fetch(&client_one, &server.url("/one")).await.unwrap();
    // Its other spellings are the same address.
    fetch(&client_one, &format!("http://2130706433:{port}/dec"))
        .await
        .unwrap();
    let url = canary.url("/");
    refusal(&url, fetch(&client_one, &url).await);

    // A range: literals inside it and names resolving into it, on any port.
    let range = client(&["127.0.0.0/8"]);
    fetch(&range, &server.url("/range")).await.unwrap();
    fetch(&range, &format!("http://app.test:{port}/name"))
        .await
        .unwrap();
    // Outside the range, still refused; a reserved name stays refused unless listed.
    for url in [
        format!("http://private.test:{}/", canary.port),
        format!("http://mixed-v6.test:{}/", canary.port),
        format!("http://localhost:{}/", canary.port),
        format!("http://[::1]:{}/", canary.port),
    ] {
        refusal(&url, fetch(&range, &url).await);
    }

    // A redirect between allowed destinations is followed.
    let hop_to = format!("http://app.test:{port}/landed");
    let origin = Server::start(move |seen| match seen.path.as_str() {
        "/start" => redirect(302, &hop_to),
        _ => ok(seen),
    })
    .await;
    let followed = fetch(&range, &origin.url("/start")).await.unwrap();
    assert_eq!(followed.response.body, b"/landed");
    assert_eq!(followed.url, format!("http://app.test:{port}/landed"));

    let paths: Vec<String> = server.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/one", "/dec", "/range", "/name", "/landed"]);
    assert_untouched(&canary).await;
}

/// The variable that turns [`proxy_child`] from a no-op into the real check.
const CHILD_TARGET: &str = "TOOLSHED_SSRF_PROXY_CHILD_TARGET";

/// Proxy variables are ignored: the client never reads them. Setting them in this process
/// would race with the other tests, so a child process (this test binary, running only
/// [`proxy_child`]) gets them, with the canary as the proxy, and fetches a server the
/// allowlist opens. The canary must see nothing; the server must see the request.
#[tokio::test]
async fn environment_proxies_are_ignored() {
    let canary = Server::start(ok).await;
    let server = Server::start(ok).await;
    let proxy = canary.url("/");
    let exe = std::env::current_exe().unwrap();
    let target = server.url("/through");
    // Blocking wait on a worker thread: the servers keep running on the runtime meanwhile.
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args([
                "--exact",
                "ssrf::proxy_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_TARGET, target)
            .env("HTTP_PROXY", &proxy)
            .env("http_proxy", &proxy)
            .env("HTTPS_PROXY", &proxy)
            .env("https_proxy", &proxy)
            .env("ALL_PROXY", &proxy)
            .env("all_proxy", &proxy)
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(
        output.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("1 passed"), "{stdout}");
    assert_eq!(server.seen().len(), 1);
    assert_eq!(server.seen()[0].path, "/through");
    assert_eq!(canary.connections(), 0);
}

/// Run by [`environment_proxies_are_ignored`] in a child process; passes at once otherwise.
#[tokio::test]
async fn proxy_child() {
    let Ok(url) = std::env::var(CHILD_TARGET) else {
        return;
    };
    let port = url::Url::parse(&url).unwrap().port().unwrap();
    let followed = fetch(&client(&[&format!("127.0.0.1:{port}")]), &url)
        .await
        .unwrap();
    assert_eq!(followed.response.status, 200);
}
