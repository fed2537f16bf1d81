//! Downloads against a loopback HTTP/1.1 server with range support that can break a
//! response off halfway and redirect to a refused address.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolshed_core::{CallContext, Progress, ProgressSink, ToolError, ToolOutput};
use toolshed_ops::net::parse_allowlist;
use toolshed_ops::{NetClient, NetConfig, Ops, Services};

/// The file served: 600 KiB of a pattern.
fn payload() -> Vec<u8> {
    (0..600 * 1024)
        .map(|i| ((i * 31 + 7) % 251) as u8)
        .collect()
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the server saw: the path and the Range header of each request.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Serves `/file` (ranges honoured), `/cut` (the first answer breaks off halfway; later
/// ones honour ranges), `/moved` (302 to `/file`) and `/evil` (302 to a link-local
/// address).
async fn server() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let cut_once = Arc::new(Mutex::new(true));
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let (log, cut_once) = (log.clone(), cut_once.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let range = head.lines().find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.eq_ignore_ascii_case("range")
                        .then(|| v.trim().to_string())
                });
                log.lock().unwrap().push((path.clone(), range.clone()));
                let redirect = |to: &str| {
                    format!(
                        "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                };
                match path.as_str() {
                    "/moved" => {
                        let _ = stream.write_all(redirect("/file").as_bytes()).await;
                        return;
                    }
                    "/evil" => {
                        let _ = stream
                            .write_all(
                                redirect("http://169.254.169.254/latest/meta-data").as_bytes(),
                            )
                            .await;
                        return;
                    }
                    "/file" | "/cut" => {}
                    _ => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            .await;
                        return;
                    }
                }
                let data = payload();
                let start = range
                    .as_deref()
                    .and_then(|r| r.strip_prefix("bytes="))
                    .and_then(|r| r.trim_end_matches('-').parse::<usize>().ok())
                    .unwrap_or(0);
                let body = &data[start..];
                let head = if start > 0 {
                    format!(
                        "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {start}-{}/{}\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n",
                        body.len(),
                        data.len() - 1,
                        data.len()
                    )
                } else {
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                };
                let _ = stream.write_all(head.as_bytes()).await;
                let cut =
                    path == "/cut" && std::mem::replace(&mut *cut_once.lock().unwrap(), false);
                let sent = if cut { body.len() / 2 } else { body.len() };
                let _ = stream.write_all(&body[..sent]).await;
                let _ = stream.flush().await;
            });
        }
    });
    (base, seen)
}

struct Setup {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    plugin: Arc<dyn toolshed_core::Plugin>,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let net = Arc::new(NetClient::with_config(NetConfig {
        allow: parse_allowlist(&["127.0.0.1"]).unwrap(),
        ..NetConfig::default()
    }));
    let services = Services::new(Ops::local(&root).unwrap()).with_net(net);
    Setup {
        plugin: super::plugin(&services),
        root,
        _dir: dir,
    }
}

impl Setup {
    async fn call(
        &self,
        tool: &str,
        args: Value,
        progress: ProgressSink,
    ) -> Result<ToolOutput, ToolError> {
        let tool = self
            .plugin
            .tools()
            .into_iter()
            .find(|t| t.spec().name == tool)
            .unwrap();
        let mut ctx = CallContext::for_test(Duration::from_secs(30));
        ctx.progress = progress;
        tool.call(ctx, args).await
    }
}

#[tokio::test]
async fn a_download_is_streamed_verified_and_put_in_place_with_progress() {
    let (base, seen) = server().await;
    let s = setup();
    let reports: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = {
        let reports = reports.clone();
        ProgressSink::new(move |p| reports.lock().unwrap().push(p))
    };
    let data = payload();
    let out = s
        .call(
            "download_file",
            json!({ "url": format!("{base}/moved"), "path": "data/blob.bin", "sha256": sha(&data) }),
            sink,
        )
        .await
        .unwrap();
    let got = out.structured.unwrap();
    assert_eq!(got["bytes"], data.len());
    assert_eq!(got["sha256"], sha(&data));
    assert_eq!(got["resumed"], false);
    assert_eq!(std::fs::read(s.root.join("data/blob.bin")).unwrap(), data);
    assert!(!s.root.join("data/.blob.bin.toolshed-partial").exists());
    let reports = reports.lock().unwrap().clone();
    assert!(reports.len() >= 3, "{reports:?}");
    // Each report says more than the one before: MCP progress only grows.
    assert!(
        reports.windows(2).all(|w| w[1].progress > w[0].progress),
        "{reports:?}"
    );
    assert_eq!(reports.last().unwrap().progress, Some(data.len() as f64));
    assert_eq!(reports.last().unwrap().total, Some(data.len() as f64));
    assert_eq!(seen.lock().unwrap().len(), 2, "the redirect was followed");

    // An existing file is kept unless the call says to replace it.
    let e = s
        .call(
            "download_file",
            json!({ "url": format!("{base}/file"), "path": "data/blob.bin" }),
            ProgressSink::discard(),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("overwrite: true"), "{e}");
}

#[tokio::test]
async fn an_interrupted_download_resumes_with_a_range_request() {
    let (base, seen) = server().await;
    let s = setup();
    let data = payload();
    let args = json!({ "url": format!("{base}/cut"), "path": "big.bin", "sha256": sha(&data) });
    let e = s
        .call("download_file", args.clone(), ProgressSink::discard())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("call again to resume"), "{e}");
    assert!(
        !s.root.join("big.bin").exists(),
        "nothing half is put in place"
    );
    let partial = std::fs::metadata(s.root.join(".big.bin.toolshed-partial"))
        .unwrap()
        .len();
    assert!(partial > 0 && partial < data.len() as u64);

    let out = s
        .call("download_file", args, ProgressSink::discard())
        .await
        .unwrap();
    let got = out.structured.unwrap();
    assert_eq!(got["resumed"], true);
    assert_eq!(std::fs::read(s.root.join("big.bin")).unwrap(), data);
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[1].1.as_deref(),
        Some(format!("bytes={partial}-").as_str())
    );
}

#[tokio::test]
async fn a_wrong_checksum_or_a_refused_redirect_keeps_nothing() {
    let (base, _seen) = server().await;
    let s = setup();
    let e = s
        .call(
            "download_file",
            json!({ "url": format!("{base}/file"), "path": "x.bin", "sha256": "0".repeat(64) }),
            ProgressSink::discard(),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not the expected"), "{e}");
    assert!(!s.root.join("x.bin").exists() && !s.root.join(".x.bin.toolshed-partial").exists());

    let e = s
        .call(
            "download_file",
            json!({ "url": format!("{base}/evil"), "path": "y.bin" }),
            ProgressSink::discard(),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("169.254.169.254"), "{e}");
    // The client's own redirect loop refused it, naming the hop (a second loop in the
    // download tool did not).
    assert!(e.to_string().contains("redirected to"), "{e}");
    assert!(!s.root.join("y.bin").exists());
}

#[tokio::test]
async fn a_batch_downloads_several_and_reports_each() {
    let (base, _seen) = server().await;
    let s = setup();
    let out = s
        .call(
            "download_batch",
            json!({ "items": [
                { "url": format!("{base}/file"), "path": "a.bin" },
                { "url": format!("{base}/moved"), "path": "b.bin" },
                { "url": format!("{base}/missing"), "path": "c.bin" }
            ], "concurrency": 2 }),
            ProgressSink::discard(),
        )
        .await
        .unwrap();
    assert!(out.is_error, "one failed");
    let got = out.structured.unwrap();
    assert_eq!(got["downloaded"], 2);
    assert_eq!(got["failed"], 1);
    assert!(got["items"][2]["error"].as_str().unwrap().contains("404"));
    assert_eq!(std::fs::read(s.root.join("b.bin")).unwrap(), payload());
}
