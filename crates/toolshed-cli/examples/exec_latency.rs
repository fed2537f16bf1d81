//! Command execution latency: `exec_command` through the whole pipeline, unsandboxed and
//! in the default sandbox (`workspace-write`, through the sandbox helper named by
//! `TOOLSHED_BIN`: `toolshed-sandbox`, or `toolshed` itself), against a raw spawn of the same command, and a PTY write/read
//! round trip. Run by `bench/exec_latency.sh`; see docs/benchmarks.md.
//!
//! Usage: TOOLSHED_BIN=target/release/toolshed-sandbox exec_latency [ROUNDS]
//! (default 300 per measurement, interleaved)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::json;
use toolshed_core::OwnerId;
use toolshed_host::config::ConfigSources;
use toolshed_host::{CallRequest, Host};
use toolshed_ops::process::{SpawnRequest, Stream, Tty};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("ROUNDS is a number"))
        .unwrap_or(300);
    let helper = std::env::var_os("TOOLSHED_BIN").expect("TOOLSHED_BIN names the toolshed binary");
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let sandboxed_data = tempfile::tempdir().unwrap();
    let config = |mode: &str| {
        ConfigSources {
            workspace: workspace.path().to_path_buf(),
            env: vec![("TOOLSHED_SANDBOX__MODE".into(), mode.into())],
            ..Default::default()
        }
        .load()
        .unwrap()
    };
    let host = Host::builder(workspace.path(), data.path())
        .config(config("full-access"))
        .plugins(toolshed_tools::system_plugins)
        .open()
        .await
        .unwrap();
    let sandboxed = Host::builder(workspace.path(), sandboxed_data.path())
        .config(config("workspace-write"))
        .sandbox_helper(helper)
        .plugins(toolshed_tools::system_plugins)
        .open()
        .await
        .unwrap();
    let ops = host.services().ops.clone();
    let boxed_ops = sandboxed.services().ops.clone();
    let shell = if std::path::Path::new("/bin/bash").exists() || which("bash") {
        "bash"
    } else {
        "sh"
    };

    println!("rounds: {rounds} per measurement, interleaved; shell: {shell}");
    for cmd in ["true", "echo hi"] {
        let mut raw = Vec::new();
        let mut backend = Vec::new();
        let mut tool = Vec::new();
        let mut boxed = Vec::new();
        let mut boxed_backend = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            let out = std::process::Command::new(shell)
                .arg("-c")
                .arg(cmd)
                .current_dir(workspace.path())
                .output()
                .unwrap();
            assert!(out.status.success());
            raw.push(t.elapsed());

            let t = Instant::now();
            let p = ops
                .process
                .spawn(&SpawnRequest::new(shell).arg("-c").arg(cmd))
                .unwrap();
            let exit = p.wait(Duration::from_secs(10)).await.unwrap();
            assert!(exit.status.success());
            backend.push(t.elapsed());

            tool.push(exec_command(&host, cmd).await);
            boxed.push(exec_command(&sandboxed, cmd).await);

            let t = Instant::now();
            let p = boxed_ops
                .process
                .spawn(&SpawnRequest::new(shell).arg("-c").arg(cmd))
                .unwrap();
            let exit = p.wait(Duration::from_secs(10)).await.unwrap();
            assert!(exit.status.success());
            boxed_backend.push(t.elapsed());
        }
        let boxed_backend = median(boxed_backend);
        let (r, b, t, s) = (median(raw), median(backend), median(tool), median(boxed));
        println!(
            "`{cmd}`: raw spawn {:.2} ms · backend spawn+wait {:.2} ms · exec_command via pipeline {:.2} ms · overhead over raw {:+.2} ms (backend {:+.2} ms)",
            ms(r),
            ms(b),
            ms(t),
            ms(t) - ms(r),
            ms(b) - ms(r)
        );
        println!(
            "`{cmd}`: exec_command sandboxed {:.2} ms · unsandboxed {:.2} ms · sandbox overhead {:+.2} ms · sandboxed over raw {:+.2} ms (backend sandboxed spawn+wait {:.2} ms)",
            ms(s),
            ms(t),
            ms(s) - ms(t),
            ms(s) - ms(r),
            ms(boxed_backend)
        );
    }

    // PTY round trip on the backend: write a line to `cat` in a terminal, read it back.
    let p = ops
        .process
        .spawn(&SpawnRequest::new("cat").tty(Tty::DEFAULT))
        .unwrap();
    let mut since = 0u64;
    let mut trips = Vec::new();
    for i in 0..rounds {
        let line = format!("ping{i}\n");
        let t = Instant::now();
        p.write(line.as_bytes()).unwrap();
        let want = format!("ping{i}");
        let mut got = String::new();
        // cat in a terminal: the echo and cat's own copy both come back.
        while got.matches(&want).count() < 2 {
            let chunk = p
                .read_wait(Stream::Combined, since, 4096, Duration::from_secs(5))
                .await;
            since = chunk.next;
            got.push_str(&String::from_utf8_lossy(&chunk.bytes));
        }
        trips.push(t.elapsed());
    }
    println!(
        "PTY round trip (backend, write a line to cat and read both copies): {:.3} ms median",
        ms(median(trips))
    );

    // The same through write_stdin: the reply waits for output to go quiet (50 ms).
    let started = host
        .call(CallRequest::new(
            "exec_command",
            json!({ "cmd": "cat", "tty": true, "yield_ms": 0 }),
            OwnerId::new("bench"),
            "bench",
        ))
        .await
        .result
        .unwrap();
    let id = started.structured.as_ref().unwrap()["session_id"].clone();
    let mut replies = Vec::new();
    for i in 0..rounds.min(50) {
        let t = Instant::now();
        let out = host
            .call(CallRequest::new(
                "write_stdin",
                json!({ "session_id": id, "chars": format!("pong{i}\n"), "yield_ms": 5000 }),
                OwnerId::new("bench"),
                "bench",
            ))
            .await
            .result
            .unwrap();
        assert!(out.text_joined().contains(&format!("pong{i}")));
        replies.push(t.elapsed());
    }
    println!(
        "write_stdin round trip via pipeline (includes the 50 ms quiet wait): {:.2} ms median",
        ms(median(replies))
    );
    host.shutdown().await;
    sandboxed.shutdown().await;
}

/// How long `exec_command` of `cmd` takes through the pipeline of `host`.
async fn exec_command(host: &Host, cmd: &str) -> Duration {
    let t = Instant::now();
    let result = host
        .call(CallRequest::new(
            "exec_command",
            json!({ "cmd": cmd }),
            OwnerId::new("bench"),
            "bench",
        ))
        .await;
    let output = result.result.unwrap();
    assert!(!output.is_error, "{}", output.text_joined());
    t.elapsed()
}

fn which(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}
