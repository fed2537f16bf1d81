//! Activation: a broken plugin fails `init` with a reason naming the problem; a good one
//! can be stopped and started again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{TestPlugin, one_action};
use toolshed_core::Health;
use toolshed_js::JsLimits;

async fn init_error(main: &str) -> String {
    TestPlugin::new("acme.broken", main).init_error().await
}

fn register(actions: &str) -> String {
    format!("export function activate(context) {{ context.registerActions({actions}); }}")
}

#[tokio::test]
async fn a_plugin_that_registers_no_actions_keeps_running_with_no_tools() {
    // Failed before: each was put in `error` ("registerActions was given no actions"),
    // although the docs say such a plugin keeps running.
    for main in [
        "export function activate(context) { context.logger.info('a client part'); }".to_string(),
        register("[]"),
        register("(t) => []"),
    ] {
        let started = TestPlugin::new("acme.quiet", &main).start().await;
        assert!(started.plugin.tools().is_empty(), "{main}");
    }
}

#[tokio::test]
async fn broken_scripts_fail_activation_with_a_reason() {
    let cases: Vec<(String, &[&str])> = vec![
        (
            "export function activate(context) {\n  context.registerActions([{ name: 'a', \n}".into(),
            &["main.js could not be loaded", "SyntaxError", "main.js:"],
        ),
        (
            "throw new Error('config file missing');\nexport function activate() {}".into(),
            &["main.js could not be loaded", "config file missing"],
        ),
        (
            "export function start(context) {}".into(),
            &["does not export a function named `activate`"],
        ),
        (
            "export function activate(context) { throw new TypeError('no way'); }".into(),
            &["activate() threw", "TypeError: no way"],
        ),
        (
            "export async function activate(context) { await null; throw new Error('later'); }"
                .into(),
            &["activate() threw", "later"],
        ),
        (register("'greet'"), &["takes an array of actions"]),
        (
            register(
                "[{ name: 'greet', description: 'd', run() {} }, { name: 'greet', description: 'e', run() {} }]",
            ),
            &["two actions are named `greet`"],
        ),
        (
            register(
                "[{ name: 'greet', description: 'd', properties: { count: { type: 'int' } }, run() {} }]",
            ),
            &["action `greet`", "property `count`", "unknown type `int`"],
        ),
        (
            register("[{ name: 'greet', run() {} }]"),
            &["action `greet`", "`description` is required"],
        ),
        (
            register("[{ name: 'greet', description: 'd', run: 'nope' }]"),
            &["`greet`", "`run` must be a function"],
        ),
        (
            register("[{ name: 'Greet!', description: 'd', run() {} }]"),
            &["name `Greet!` is not valid"],
        ),
        (
            "export function activate(context) { try { context.registerActions([{ name: 'x' }]); } catch (e) {} }"
                .into(),
            &["`description` is required"],
        ),
        (
            "export function activate(context) { context.registerActions((t) => { throw new Error('factory broke'); }); }"
                .into(),
            &["activate() threw", "factory broke"],
        ),
        (
            "export async function activate(context) { await new Promise(() => {}); }".into(),
            &["activate()", "can never settle"],
        ),
        (
            "export function activate() { const a = []; while (true) a.push('z'.repeat(1e6)); }"
                .into(),
            &["activate()", "ran out of the plugin's 64 MiB memory limit"],
        ),
    ];
    for (main, expected) in cases {
        let error = init_error(&main).await;
        for part in expected {
            assert!(
                error.contains(part),
                "for\n{main}\nexpected `{part}` in: {error}"
            );
        }
    }
}

#[tokio::test]
async fn too_many_actions_fail_activation() {
    let list: Vec<String> = (0..5)
        .map(|i| format!("{{ name: 'a{i}', description: 'd', run() {{}} }}"))
        .collect();
    let error = TestPlugin::new("acme.many", &register(&format!("[{}]", list.join(","))))
        .limits(JsLimits {
            max_actions: 4,
            ..JsLimits::default()
        })
        .init_error()
        .await;
    assert!(
        error.contains("registers 5 actions; the limit is 4"),
        "{error}"
    );
}

#[tokio::test]
async fn a_hanging_activation_is_stopped_at_its_limit() {
    let limits = JsLimits {
        activate_timeout: Duration::from_millis(500),
        ..JsLimits::default()
    };
    for main in [
        "export function activate() { while (true) {} }",
        "while (true) {}\nexport function activate() {}",
    ] {
        let started = Instant::now();
        let error = TestPlugin::new("acme.hang", main)
            .limits(limits.clone())
            .init_error()
            .await;
        assert!(
            error.contains("did not finish within the 500 ms activation limit"),
            "{error}"
        );
        assert!(started.elapsed() < Duration::from_secs(30), "liveness");
    }
}

#[tokio::test]
async fn a_plugin_can_be_stopped_and_started_again() {
    let main = one_action(
        "count",
        "globalThis.n = (globalThis.n || 0) + 1; return String(globalThis.n);",
    );
    let p = TestPlugin::new("acme.again", &main).start().await;
    assert_eq!(p.plugin.health().await, Health::Ok);
    assert_eq!(p.text("again_count", json!({})).await, "1");
    assert_eq!(p.text("again_count", json!({})).await, "2");
    p.plugin.stop().await.unwrap();
    assert!(p.plugin.tools().is_empty());
    assert!(matches!(p.plugin.health().await, Health::Failed(_)));
    p.plugin.init().await.unwrap();
    assert_eq!(
        p.text("again_count", json!({})).await,
        "1",
        "a fresh runtime"
    );
    // init on a running plugin restarts it.
    p.plugin.init().await.unwrap();
    assert_eq!(p.text("again_count", json!({})).await, "1");
    assert_eq!(p.plugin.tools().len(), 1);
}

#[tokio::test]
async fn actions_are_fixed_once_active() {
    let main = r#"
let saved;
export function activate(context) {
  saved = context;
  context.registerActions([{ name: "late", description: "d", run() {
    try { saved.registerActions([{ name: "extra", description: "d", run() {} }]); return "accepted"; }
    catch (e) { return e.message; }
  } }]);
}
"#;
    let p = TestPlugin::new("acme.fixed", main).start().await;
    let text = p.text("fixed_late", json!({})).await;
    assert!(text.contains("only works while activate() runs"), "{text}");
    assert_eq!(p.plugin.tools().len(), 1);
}

#[tokio::test]
async fn unusable_limits_are_refused_at_load() {
    let err = TestPlugin::new("acme.limits", &one_action("a", "return 1;"))
        .limits(JsLimits {
            cpu_per_call: Duration::ZERO,
            ..JsLimits::default()
        })
        .load()
        .err()
        .unwrap();
    assert!(err.to_string().contains("above zero"), "{err}");
}
