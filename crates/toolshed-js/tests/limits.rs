//! Runaway code is stopped with a clear error and the plugin stays usable; other plugins
//! are not held up meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use support::{Started, TestPlugin, strings};
use tokio::sync::mpsc;
use toolshed_core::{
    CallContext, Capabilities, ErrorKind, Grants, ProgressSink, ToolCaller, ToolError, ToolOutput,
};
use toolshed_js::JsLimits;

/// Every looping call must end within this, whatever the machine.
const LIVENESS: Duration = Duration::from_secs(30);

const RUNAWAY: &str = r#"
let calls = 0;
export function activate(context) {
  const action = (name, run) => ({ name, description: "d", run });
  context.registerActions([
    action("ok", () => `ok ${++calls}`),
    action("spin", (inputs, ctx) => { ctx.progress("spinning"); while (true) {} }),
    action("spin_caught", () => { try { while (true) {} } catch (e) { return "caught it"; } }),
    action("spin_later", async (inputs, ctx) => { await null; ctx.progress("spinning"); for (;;) {} }),
    action("bomb", () => { let a = []; while (true) a.push("x".repeat(1e6)); }),
    action("map_bomb", () => { const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }); }),
    action("throw_null", () => { throw null; }),
    action("throw_null_later", async () => { await null; throw null; }),
    action("hoard", () => { globalThis.hoard = []; while (true) globalThis.hoard.push("y".repeat(1e6)); }),
    action("recurse", () => { function f(n) { return f(n + 1) + 1; } return f(0); }),
    action("forever", () => new Promise(() => {})),
    action("microtask_flood", () => { const again = () => Promise.resolve().then(again); again(); return "returned"; }),
    action("nested", (inputs, ctx) => ctx.tools.call("slow_tool", {})),
  ]);
}
"#;

fn runaway(id: &str, limits: JsLimits) -> TestPlugin {
    TestPlugin::new(id, RUNAWAY)
        .limits(limits)
        .capabilities(Capabilities {
            tools: strings(&["slow_tool"]),
            ..Capabilities::default()
        })
        .grants(Grants {
            tools: strings(&["slow_tool"]),
            ..Grants::default()
        })
}

/// A context whose progress reports go to the returned channel.
fn watched(timeout: Duration) -> (CallContext, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut ctx = CallContext::for_test(timeout);
    ctx.progress = ProgressSink::new(move |p| {
        let _ = tx.send(p.message.unwrap_or_default());
    });
    (ctx, rx)
}

async fn expect_ok_after(p: &Started, what: &str) {
    let ok = p
        .plugin
        .tools()
        .into_iter()
        .find(|t| t.spec().name.ends_with("_ok"))
        .unwrap();
    let out = ok
        .call(CallContext::for_test(support::CALL_TIMEOUT), json!({}))
        .await
        .unwrap_or_else(|e| panic!("after {what}, a normal call failed: {e}"));
    assert!(
        out.text_joined().starts_with("ok "),
        "{}",
        out.text_joined()
    );
}

#[tokio::test]
async fn an_endless_loop_is_stopped_while_another_plugin_keeps_working() {
    let a = runaway("acme.loopy", JsLimits::default()).start().await;
    let b = runaway("acme.other", JsLimits::default()).start().await;
    let (ctx, mut progress) = watched(LIVENESS);
    let spin = a.tool("loopy_spin");
    let looping = tokio::spawn(async move { spin.call(ctx, json!({})).await });
    assert_eq!(progress.recv().await.as_deref(), Some("spinning"));

    // A is looping on its thread; B answers meanwhile.
    let answer = b.call("other_ok", json!({})).await.unwrap();
    assert_eq!(answer.text_joined(), "ok 1");
    assert!(
        !looping.is_finished(),
        "B answered while A was still looping"
    );

    let err = tokio::time::timeout(LIVENESS, looping)
        .await
        .expect("the loop was stopped")
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(
        err.to_string().contains("ran past its 5 s CPU limit"),
        "{err}"
    );
    expect_ok_after(&a, "an endless loop").await;
}

#[tokio::test]
async fn the_cpu_limit_cannot_be_caught_and_restarts_after_each_await() {
    let limits = JsLimits {
        cpu_per_call: Duration::from_millis(300),
        ..JsLimits::default()
    };
    let p = runaway("acme.caught", limits).start().await;
    for action in ["spin_caught", "spin_later"] {
        let err = tokio::time::timeout(LIVENESS, p.call(&format!("caught_{action}"), json!({})))
            .await
            .expect("stopped")
            .unwrap_err();
        assert!(
            err.to_string().contains("300 ms CPU limit"),
            "{action}: {err}"
        );
        expect_ok_after(&p, action).await;
    }
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_and_its_memory_reclaimed() {
    let p = runaway("acme.bomb", JsLimits::default()).start().await;
    for round in 0..2 {
        let err = tokio::time::timeout(LIVENESS, p.call("bomb_bomb", json!({})))
            .await
            .expect("stopped")
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Failed);
        assert!(
            err.to_string()
                .contains("ran out of its 64 MiB memory limit"),
            "round {round}: {err}"
        );
        expect_ok_after(&p, "a memory bomb").await;
    }
}

#[tokio::test]
async fn a_map_that_outgrows_the_memory_limit_says_so() {
    let p = runaway("acme.mapbomb", JsLimits::default()).start().await;
    let err = tokio::time::timeout(LIVENESS, p.call("mapbomb_map_bomb", json!({})))
        .await
        .expect("stopped")
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("ran out of its 64 MiB memory limit"),
        "{err}"
    );
    expect_ok_after(&p, "a Map bomb").await;
}

/// A script's own `throw null` is its own error, not the memory limit (which also throws
/// `null`, when QuickJS cannot allocate the error): told apart by whether the memory limit
/// refused an allocation during the call — also right after a call that did run out.
#[tokio::test]
async fn a_script_that_throws_null_is_not_told_it_ran_out_of_memory() {
    let p = runaway("acme.nullish", JsLimits::default()).start().await;
    for action in [
        "nullish_throw_null",
        "nullish_map_bomb",
        "nullish_throw_null_later",
    ] {
        let err = tokio::time::timeout(LIVENESS, p.call(action, json!({})))
            .await
            .expect("ended")
            .unwrap_err();
        let text = err.to_string();
        if action == "nullish_map_bomb" {
            assert!(text.contains("memory limit"), "{action}: {text}");
        } else {
            assert!(text.contains("threw `null`"), "{action}: {text}");
            assert!(!text.contains("memory"), "{action}: {text}");
        }
    }
}

#[tokio::test]
async fn memory_kept_after_running_out_rebuilds_the_runtime() {
    let p = runaway("acme.hoard", JsLimits::default()).start().await;
    assert_eq!(p.text("hoard_ok", json!({})).await, "ok 1");
    let err = tokio::time::timeout(LIVENESS, p.call("hoard_hoard", json!({})))
        .await
        .expect("stopped")
        .unwrap_err();
    assert!(err.to_string().contains("memory limit"), "{err}");
    // The heap stayed full, so the runtime was rebuilt: module state starts over.
    assert_eq!(p.text("hoard_ok", json!({})).await, "ok 1");
    assert_eq!(p.plugin.health().await, toolshed_core::Health::Ok);
}

#[tokio::test]
async fn deep_recursion_is_stopped() {
    let p = runaway("acme.deep", JsLimits::default()).start().await;
    let err = tokio::time::timeout(LIVENESS, p.call("deep_recurse", json!({})))
        .await
        .expect("stopped")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    let text = err.to_string();
    assert!(text.contains("1 MiB stack limit"), "{text}");
    assert!(text.contains("Maximum call stack size exceeded"), "{text}");
    expect_ok_after(&p, "deep recursion").await;
}

#[tokio::test]
async fn a_promise_nothing_can_settle_fails_at_once() {
    let p = runaway("acme.never", JsLimits::default()).start().await;
    let err = tokio::time::timeout(LIVENESS, p.call("never_forever", json!({})))
        .await
        .expect("ended")
        .unwrap_err();
    assert!(err.to_string().contains("can never settle"), "{err}");
    expect_ok_after(&p, "an unsettled promise").await;
}

#[tokio::test]
async fn endless_promise_jobs_are_stopped_and_the_runtime_rebuilt() {
    let limits = JsLimits {
        cpu_per_call: Duration::from_millis(300),
        ..JsLimits::default()
    };
    let p = runaway("acme.flood", limits).start().await;
    assert_eq!(p.text("flood_ok", json!({})).await, "ok 1");
    let err = tokio::time::timeout(LIVENESS, p.call("flood_microtask_flood", json!({})))
        .await
        .expect("stopped")
        .unwrap_err();
    assert!(err.to_string().contains("CPU limit"), "{err}");
    assert_eq!(p.text("flood_ok", json!({})).await, "ok 1", "rebuilt");
}

/// A tool caller whose tool never answers; it records the context it was given.
struct Hanging(Mutex<Vec<CallContext>>);

#[async_trait]
impl ToolCaller for Hanging {
    async fn call_tool(
        &self,
        ctx: &CallContext,
        _caller: &str,
        _name: &str,
        _args: Value,
    ) -> Result<ToolOutput, ToolError> {
        self.0.lock().unwrap().push(ctx.clone());
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_host_promise_that_never_settles_ends_at_the_deadline() {
    let p = runaway("acme.stuck", JsLimits::default()).start().await;
    let caller = Arc::new(Hanging(Mutex::new(Vec::new())));
    let mut ctx = CallContext::for_test(Duration::from_millis(500));
    ctx.caller = Some(caller.clone());
    let err = tokio::time::timeout(LIVENESS, p.call_with("stuck_nested", ctx, json!({})))
        .await
        .expect("ended")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let nested = caller.0.lock().unwrap().clone();
    assert_eq!(nested.len(), 1);
    assert!(
        nested[0].cancel.is_cancelled(),
        "the abandoned host call was cancelled"
    );
    expect_ok_after(&p, "an abandoned host promise").await;
}

#[tokio::test]
async fn cancelling_stops_a_running_call() {
    let p = runaway("acme.cancel", JsLimits::default()).start().await;
    let (ctx, mut progress) = watched(LIVENESS);
    let cancel = ctx.cancel.clone();
    let spin = p.tool("cancel_spin");
    let running = tokio::spawn(async move { spin.call(ctx, json!({})).await });
    assert_eq!(progress.recv().await.as_deref(), Some("spinning"));
    cancel.cancel();
    let err = tokio::time::timeout(LIVENESS, running)
        .await
        .expect("stopped")
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Cancelled);
    expect_ok_after(&p, "a cancelled call").await;
}

#[tokio::test]
async fn calls_queue_one_at_a_time_and_a_full_queue_is_busy() {
    let limits = JsLimits {
        cpu_per_call: Duration::from_secs(2),
        max_queued_calls: 1,
        ..JsLimits::default()
    };
    let p = runaway("acme.busy", limits).start().await;
    let (ctx, mut progress) = watched(LIVENESS);
    let spin = p.tool("busy_spin");
    let running = tokio::spawn(async move { spin.call(ctx, json!({})).await });
    assert_eq!(progress.recv().await.as_deref(), Some("spinning"));
    let ok = p.tool("busy_ok");
    // Poll the second call once: that queues it behind the spinning one.
    let mut queued = Box::pin(ok.call(CallContext::for_test(LIVENESS), json!({})));
    tokio::select! {
        biased;
        _ = &mut queued => panic!("a call ran while the plugin was spinning"),
        _ = async {} => {}
    }
    let busy = ok
        .call(CallContext::for_test(LIVENESS), json!({}))
        .await
        .unwrap_err();
    assert!(busy.to_string().contains("busy"), "{busy}");
    assert!(
        busy.to_string().contains("1 calls are already waiting"),
        "{busy}"
    );
    let spun = tokio::time::timeout(LIVENESS, running)
        .await
        .unwrap()
        .unwrap();
    assert!(spun.is_err());
    let queued = tokio::time::timeout(LIVENESS, queued).await.unwrap();
    assert_eq!(queued.unwrap().text_joined(), "ok 1");
}

#[tokio::test]
async fn the_calls_deadline_stops_running_code_before_the_cpu_limit() {
    let p = runaway("acme.late", JsLimits::default()).start().await;
    let ctx = CallContext::for_test(Duration::from_millis(300));
    let err = tokio::time::timeout(LIVENESS, p.call_with("late_spin", ctx, json!({})))
        .await
        .expect("stopped")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    expect_ok_after(&p, "a call past its deadline").await;
}
