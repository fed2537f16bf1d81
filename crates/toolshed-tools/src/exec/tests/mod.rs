//! The command tools on real processes in a temporary workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolshed_core::{CallContext, OwnerId, Plugin, PortDirectory, ToolError, ToolOutput};
use toolshed_ops::{Ops, Services};

struct H {
    exec: Arc<dyn Plugin>,
    process: Arc<dyn Plugin>,
    ports: Arc<PortDirectory>,
    dir: tempfile::TempDir,
    config: Map<String, Value>,
}

impl H {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let services = Services::new(Ops::local(dir.path()).unwrap());
        Self {
            exec: super::exec_plugin(&services),
            process: super::process_plugin(&services),
            ports: services.ports.clone(),
            dir,
            config: Map::new(),
        }
    }

    fn ctx(&self, owner: &str, timeout: Duration) -> CallContext {
        let mut ctx = CallContext::for_test(timeout);
        ctx.owner = OwnerId::new(owner);
        ctx.config = self.config.clone();
        ctx
    }

    async fn call_with(
        &self,
        ctx: CallContext,
        tool: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        let tool = self
            .exec
            .tools()
            .into_iter()
            .chain(self.process.tools())
            .find(|t| t.spec().name == tool)
            .expect("tool exists");
        tool.call(ctx, args).await
    }

    async fn call_as(&self, owner: &str, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        self.call_with(self.ctx(owner, Duration::from_secs(60)), tool, args)
            .await
    }

    async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        self.call_as("alice", tool, args).await
    }
}

fn structured(out: &ToolOutput) -> &Value {
    out.structured.as_ref().expect("structured content")
}

/// Whether any process's command line contains `needle`.
fn running(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            return false;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(") ").next().is_some_and(|s| s.starts_with('Z'));
        !zombie
            && String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(needle)
    })
}

/// Whether a process matching `needle` shows up within 10 s: a command started in the
/// background may not have forked yet when its tool returns, on a loaded machine.
async fn started(needle: &str) -> bool {
    for _ in 0..100 {
        if running(needle) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

async fn gone(needle: &str) -> bool {
    for _ in 0..100 {
        if !running(needle) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn a_quick_command_returns_its_exit_code_and_output() {
    let h = H::new();
    let out = h
        .call(
            "exec_command",
            json!({"cmd": "echo out; echo err >&2; exit 3"}),
        )
        .await
        .unwrap();
    assert!(out.is_error, "a non-zero exit is an error result");
    let s = structured(&out);
    assert_eq!(s["exit_code"], 3);
    assert_eq!(s["running"], false);
    assert!(s.get("session_id").is_none(), "{s}");
    assert_eq!(s["output"], "out\nerr\n");
    assert!(out.text_joined().ends_with("s]"), "{}", out.text_joined());

    let ok = h
        .call(
            "exec_command",
            json!({"cmd": "printf '\\033[31mred\\033[0m\\n'"}),
        )
        .await
        .unwrap();
    assert!(!ok.is_error);
    assert_eq!(structured(&ok)["output"], "red\n", "escapes are removed");
}

#[tokio::test]
async fn a_command_killed_by_a_signal_is_an_error_result() {
    let h = H::new();
    let out = h
        .call("exec_command", json!({"cmd": "echo before; kill -9 $$"}))
        .await
        .unwrap();
    let s = structured(&out);
    assert_eq!(s["signal"], 9, "{s}");
    assert!(out.is_error, "a crash or a kill is a failure: {s}");
}

#[tokio::test]
async fn a_backgrounded_sleep_does_not_hold_the_call() {
    let h = H::new();
    let started = Instant::now();
    let out = h
        .call(
            "exec_command",
            json!({"cmd": "sleep 31.25 & echo started", "yield_ms": 20000}),
        )
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(structured(&out)["exit_code"], 0);
    assert!(
        out.text_joined().contains("kept its output open"),
        "{}",
        out.text_joined()
    );
    assert!(
        gone("sleep 31.25").await,
        "the finished command's tree was stopped"
    );
}

#[tokio::test]
async fn yes_is_capped_and_killed() {
    let h = H::new();
    let out = h
        .call(
            "exec_command",
            json!({"cmd": "yes", "yield_ms": 30000, "max_output_bytes": 4096}),
        )
        .await
        .unwrap();
    assert!(out.is_error);
    let s = structured(&out);
    assert!(
        s["note"]
            .as_str()
            .unwrap()
            .contains("more output than the limit"),
        "{s}"
    );
    assert!(s["omitted_bytes"].as_u64().unwrap() > 1_000_000, "{s}");
    assert!(
        out.text_joined().len() < 8192,
        "the reply keeps to its budget"
    );
}

#[tokio::test]
async fn a_timeout_kills_the_tree_including_a_setsid_grandchild() {
    let h = H::new();
    let out = h
        .call(
            "exec_command",
            // Durations no other test uses: `gone` looks for them among all processes, and
            // tests run in parallel.
            json!({"cmd": "setsid sleep 33.5 & sleep 61.7", "timeout_ms": 500, "yield_ms": 10000}),
        )
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(
        out.text_joined().contains("timed out"),
        "{}",
        out.text_joined()
    );
    assert!(gone("sleep 33.5").await, "the setsid grandchild survived");
    assert!(gone("sleep 61.7").await);
}

#[tokio::test]
async fn a_long_command_becomes_a_session_to_wait_on_read_and_terminate() {
    let h = H::new();
    let out = h
        .call(
            "exec_command",
            json!({"cmd": "echo one; sleep 0.5; echo two; sleep 34.5", "yield_ms": 200}),
        )
        .await
        .unwrap();
    let s = structured(&out);
    assert_eq!(s["running"], true);
    let id = s["session_id"].as_u64().unwrap();
    assert!(out.text_joined().contains("still running as session"));

    let mut all = s["output"].as_str().unwrap().to_string();
    for _ in 0..20 {
        if all.contains("two") {
            break;
        }
        let more = h
            .call(
                "command_run_read_output",
                json!({"session_id": id, "wait_ms": 3000}),
            )
            .await
            .unwrap();
        all.push_str(structured(&more)["output"].as_str().unwrap());
    }
    assert!(all.contains("one\ntwo\n"), "{all}");

    let from_start = h
        .call(
            "command_run_read_output",
            json!({"session_id": id, "since": 0}),
        )
        .await
        .unwrap();
    assert!(
        structured(&from_start)["output"]
            .as_str()
            .unwrap()
            .starts_with("one\n")
    );

    let listed = h.call("command_run_list", json!({})).await.unwrap();
    assert_eq!(structured(&listed)["sessions"][0]["session_id"], id);

    let waited = h
        .call(
            "command_run_wait",
            json!({"session_id": id, "timeout_ms": 100}),
        )
        .await
        .unwrap();
    assert_eq!(structured(&waited)["running"], true);

    let stopped = h
        .call("command_run_terminate", json!({"session_id": id}))
        .await
        .unwrap();
    assert_eq!(structured(&stopped)["running"], false);
    assert!(gone("sleep 34.5").await);
}

#[tokio::test]
async fn a_pty_session_runs_python_takes_ctrl_c_and_exits() {
    let h = H::new();
    let out = h
        .call(
            "exec_command",
            json!({"cmd": "python3 -q", "tty": true, "yield_ms": 300}),
        )
        .await
        .unwrap();
    let id = structured(&out)["session_id"]
        .as_u64()
        .expect("python keeps running");
    let mut seen = String::new();
    let mut answer = h
        .call(
            "write_stdin",
            json!({"session_id": id, "chars": "6 * 7\n", "yield_ms": 5000}),
        )
        .await
        .unwrap();
    seen.push_str(structured(&answer)["output"].as_str().unwrap());
    for _ in 0..20 {
        if seen.contains("42") {
            break;
        }
        answer = h
            .call(
                "write_stdin",
                json!({"session_id": id, "chars": "", "yield_ms": 500}),
            )
            .await
            .unwrap();
        seen.push_str(structured(&answer)["output"].as_str().unwrap());
    }
    assert!(seen.contains("42"), "{seen}");

    // The interrupt goes once the statement runs (it says so): on a loaded machine a
    // fixed pause could send it while python is still reading the line, and the
    // REPL then only drops the line.
    let mut started = String::new();
    for _ in 0..40 {
        let reply = h
            .call(
                "write_stdin",
                json!({"session_id": id, "chars": if started.is_empty() { "import time; print('sleep' + 'ing'); time.sleep(30)\n" } else { "" }, "yield_ms": 300}),
            )
            .await
            .unwrap();
        started.push_str(structured(&reply)["output"].as_str().unwrap());
        if started.contains("sleeping") {
            break;
        }
    }
    assert!(started.contains("sleeping"), "{started}");
    let mut interrupted = String::new();
    let mut reply = h
        .call(
            "write_stdin",
            json!({"session_id": id, "chars": "\u{3}", "yield_ms": 5000}),
        )
        .await
        .unwrap();
    interrupted.push_str(structured(&reply)["output"].as_str().unwrap());
    for _ in 0..20 {
        if interrupted.contains("KeyboardInterrupt") {
            break;
        }
        reply = h
            .call(
                "write_stdin",
                json!({"session_id": id, "chars": "", "yield_ms": 500}),
            )
            .await
            .unwrap();
        interrupted.push_str(structured(&reply)["output"].as_str().unwrap());
    }
    assert!(interrupted.contains("KeyboardInterrupt"), "{interrupted}");

    h.call(
        "write_stdin",
        json!({"session_id": id, "chars": "exit()\n", "yield_ms": 2000}),
    )
    .await
    .unwrap();
    let done = h
        .call(
            "command_run_wait",
            json!({"session_id": id, "timeout_ms": 10000}),
        )
        .await
        .unwrap();
    assert_eq!(structured(&done)["running"], false);
    assert_eq!(structured(&done)["exit_code"], 0);
}

#[tokio::test]
async fn writing_to_a_session_without_input_says_how_to_get_one() {
    let h = H::new();
    let out = h
        .call("exec_command", json!({"cmd": "sleep 35.5", "yield_ms": 0}))
        .await
        .unwrap();
    let id = structured(&out)["session_id"].as_u64().unwrap();
    let err = h
        .call("write_stdin", json!({"session_id": id, "chars": "x"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("tty=true"), "{err}");
    h.call(
        "command_run_terminate",
        json!({"session_id": id, "force": true}),
    )
    .await
    .unwrap();

    let piped = h
        .call(
            "exec_command",
            json!({"cmd": "read line; echo got $line", "stdin": true, "yield_ms": 0}),
        )
        .await
        .unwrap();
    let id = structured(&piped)["session_id"].as_u64().unwrap();
    let reply = h
        .call(
            "write_stdin",
            json!({"session_id": id, "chars": "hello\n", "yield_ms": 5000}),
        )
        .await
        .unwrap();
    assert!(
        structured(&reply)["output"]
            .as_str()
            .unwrap()
            .contains("got hello")
    );
}

#[tokio::test]
async fn sessions_are_invisible_to_other_owners() {
    let h = H::new();
    let out = h
        .call("exec_command", json!({"cmd": "sleep 36.5", "yield_ms": 0}))
        .await
        .unwrap();
    let id = structured(&out)["session_id"].as_u64().unwrap();
    for (tool, args) in [
        ("command_run_read_output", json!({"session_id": id})),
        (
            "command_run_wait",
            json!({"session_id": id, "timeout_ms": 0}),
        ),
        ("command_run_terminate", json!({"session_id": id})),
        ("write_stdin", json!({"session_id": id, "chars": ""})),
    ] {
        let err = h.call_as("mallory", tool, args).await.unwrap_err();
        assert!(matches!(err, ToolError::NotFound(_)), "{tool}: {err}");
    }
    let theirs = h
        .call_as("mallory", "command_run_list", json!({}))
        .await
        .unwrap();
    assert_eq!(structured(&theirs)["sessions"], json!([]));
    h.call(
        "command_run_terminate",
        json!({"session_id": id, "force": true}),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn the_session_limit_evicts_finished_sessions_and_then_refuses() {
    let mut h = H::new();
    h.config.insert("max_sessions".into(), json!(2));
    let a = h
        .call("exec_command", json!({"cmd": "sleep 37.5", "yield_ms": 0}))
        .await
        .unwrap();
    let b = h
        .call("exec_command", json!({"cmd": "sleep 37.5", "yield_ms": 0}))
        .await
        .unwrap();
    let err = h
        .call("exec_command", json!({"cmd": "true", "yield_ms": 0}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Conflict(_)), "{err}");
    assert!(err.to_string().contains("max_sessions"), "{err}");
    let a = structured(&a)["session_id"].as_u64().unwrap();
    h.call(
        "command_run_terminate",
        json!({"session_id": a, "force": true}),
    )
    .await
    .unwrap();
    // The finished session makes room.
    h.call("exec_command", json!({"cmd": "true"}))
        .await
        .unwrap();
    let b = structured(&b)["session_id"].as_u64().unwrap();
    h.call(
        "command_run_terminate",
        json!({"session_id": b, "force": true}),
    )
    .await
    .unwrap();
    assert!(gone("sleep 37.5").await);
}

#[tokio::test]
async fn one_owner_cannot_take_every_session_and_sub_owners_count_as_theirs() {
    let mut h = H::new();
    h.config.insert("max_sessions_per_owner".into(), json!(2));
    let mut ids = Vec::new();
    for owner in ["alice", "alice/task-1"] {
        let out = h
            .call_as(
                owner,
                "exec_command",
                json!({"cmd": "sleep 38.5", "yield_ms": 0}),
            )
            .await
            .unwrap();
        ids.push((owner, structured(&out)["session_id"].as_u64().unwrap()));
    }
    let err = h
        .call_as("alice/task-2", "exec_command", json!({"cmd": "true"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Conflict(_)), "{err}");
    let said = err.to_string();
    assert!(
        said.contains("`alice` has 2") && said.contains("max_sessions_per_owner"),
        "{said}"
    );
    // Bob is not held up by Alice.
    h.call_as("bob", "exec_command", json!({"cmd": "true"}))
        .await
        .unwrap();
    for (owner, id) in ids {
        h.call_as(
            owner,
            "command_run_terminate",
            json!({"session_id": id, "force": true}),
        )
        .await
        .unwrap();
    }
    assert!(gone("sleep 38.5").await);
}

#[tokio::test]
async fn a_cancelled_call_kills_its_process_tree() {
    let h = H::new();
    let ctx = h.ctx("alice", Duration::from_secs(60));
    let cancel = ctx.cancel.clone();
    let call = h.call_with(
        ctx,
        "exec_command",
        json!({"cmd": "setsid sleep 38.5 & sleep 38.25", "yield_ms": 30000}),
    );
    let fire = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, fire);
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert!(gone("sleep 38.5").await && gone("sleep 38.25").await);
}

#[tokio::test]
async fn bad_input_gets_clear_errors() {
    let h = H::new();
    let err = h
        .call("exec_command", json!({"cmd": "echo a\u{0}b"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("NUL"), "{err}");
    let err = h
        .call("exec_command", json!({"cmd": "pwd", "workdir": "../.."}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains(".."), "{err}");
    let err = h
        .call(
            "exec_command",
            json!({"cmd": "pwd", "workdir": "no/such/dir"}),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::NotFound(_)), "{err}");
    // Outside the schema's bounds: a direct call skips the pipeline's schema validation, and
    // the check on the typed value names the argument.
    for bad in [json!(0), json!(1u64 << 40)] {
        let err = h
            .call("exec_command", json!({"cmd": "true", "timeout_ms": bad}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("timeout_ms"), "{err}");
        assert!(err.to_string().contains("out of range"), "{err}");
    }
    // Not a whole number of milliseconds at all: reading the arguments refuses it (the
    // pipeline's schema validation refuses it first, at /timeout_ms: see args.rs).
    let err = h
        .call("exec_command", json!({"cmd": "true", "timeout_ms": -5}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    let missing = h
        .call("exec_command", json!({"cmd": "no-such-program-xyz"}))
        .await
        .unwrap();
    assert_eq!(structured(&missing)["exit_code"], 127);
    assert!(
        structured(&missing)["output"]
            .as_str()
            .unwrap()
            .contains("not found")
    );
    let binary = h
        .call(
            "exec_command",
            json!({"cmd": "printf 'ok \\377\\376 \\033]0;title\\007end'"}),
        )
        .await
        .unwrap();
    assert_eq!(structured(&binary)["output"], "ok \u{fffd}\u{fffd} end");
}

#[tokio::test]
async fn stopping_the_plugins_stops_every_session_and_process() {
    let h = H::new();
    h.call("exec_command", json!({"cmd": "sleep 41.5", "yield_ms": 0}))
        .await
        .unwrap();
    h.call("process_exec", json!({"cmd": "sleep 41.75"}))
        .await
        .unwrap();
    h.call("shell", json!({"command": "sleep 41.25 &"}))
        .await
        .unwrap();
    h.exec.stop().await.unwrap();
    h.process.stop().await.unwrap();
    assert!(gone("sleep 41.5").await && gone("sleep 41.75").await && gone("sleep 41.25").await);
}

#[tokio::test]
async fn output_past_the_kept_head_is_returned_whole_when_it_fits() {
    let h = H::new();
    // 40,000 bytes: more than the backend's 32 KiB head, less than the budget.
    let out = h
        .call(
            "exec_command",
            json!({"cmd": "python3 -c \"print('a' * 39999)\"", "max_output_bytes": 65536}),
        )
        .await
        .unwrap();
    let s = structured(&out);
    assert_eq!(s["omitted_bytes"], 0, "{}", s["note"]);
    assert_eq!(s["output"].as_str().unwrap().len(), 40_000);
    assert_eq!(s["next_offset"], 40_000);

    let over = h
        .call(
            "exec_command",
            json!({"cmd": "seq 1 100000", "max_output_bytes": 1000}),
        )
        .await
        .unwrap();
    let s = structured(&over);
    let text = s["output"].as_str().unwrap();
    assert!(text.starts_with("1\n2\n3\n"), "{text}");
    assert!(
        text.trim_end().ends_with("100000"),
        "the end is kept: {text}"
    );
    let shown = text
        .lines()
        .filter(|l| !l.contains("omitted"))
        .map(|l| l.len() + 1)
        .sum::<usize>();
    assert_eq!(
        s["omitted_bytes"].as_u64().unwrap() as usize + shown,
        588_895
    );
}

mod args;
mod process;
mod shell;
