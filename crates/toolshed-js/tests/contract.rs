//! The plugin contract as a plugin author sees it: activation, schemas, defaults, return
//! values, errors, `t`, the logger, config, and the absence of ambient globals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use serde_json::json;
use support::{TestPlugin, one_action};
use toolshed_core::{CallContext, ErrorKind, PluginKind, PluginLoader};
use toolshed_js::JsLoader;

const HELLO: &str = r#"
export async function activate(context) {
  context.logger.info("activating", context.id, { region: context.config.region });
  context.registerActions([
    {
      name: "greet",
      label: "Greet",
      description: "Greet someone.",
      properties: {
        name: { type: "string", description: "Who to greet", default: "world" },
        tone: { type: "string", enum: ["warm", "dry"], required: true },
        times: { type: "number", description: "How many times" },
      },
      annotations: { readOnly: true, openWorld: false },
      async run(inputs, ctx) {
        const word = inputs.tone === "warm" ? "Hello" : "Hi";
        return Array(inputs.times ?? 1).fill(`${word}, ${inputs.name}!`).join(" ");
      },
    },
    {
      name: "info",
      description: "Show what the plugin sees.",
      run: (inputs, ctx) => ({ id: ctx.id, region: ctx.config.region, cancelled: ctx.cancelled() }),
    },
  ]);
}
"#;

#[tokio::test]
async fn hello_plugin_registers_tools_with_conservative_schemas() {
    let p = TestPlugin::new("acme.hello-world", HELLO)
        .config(json!({"region": "eu"}))
        .start()
        .await;
    let names: Vec<String> = p
        .plugin
        .tools()
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    assert_eq!(names, ["hello_world_greet", "hello_world_info"]);

    let greet = p.tool("hello_world_greet");
    let spec = greet.spec();
    assert_eq!(spec.title.as_deref(), Some("Greet"));
    assert_eq!(spec.description, "Greet someone.");
    assert_eq!(
        spec.input_schema,
        json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "Who to greet", "default": "world" },
                "tone": { "type": "string", "enum": ["warm", "dry"] },
                "times": { "type": "number", "description": "How many times" }
            },
            "required": ["tone"],
            "additionalProperties": false
        })
    );
    assert!(spec.annotations.read_only && !spec.annotations.open_world);
    assert_eq!(spec.output_schema, None);

    // Defaults fill in what the caller left out.
    assert_eq!(
        p.text("hello_world_greet", json!({"tone": "warm"})).await,
        "Hello, world!"
    );
    assert_eq!(
        p.text(
            "hello_world_greet",
            json!({"tone": "dry", "name": "Ada", "times": 2})
        )
        .await,
        "Hi, Ada! Hi, Ada!"
    );

    // Load-time config in activate, call-time config in run.
    let mut ctx = CallContext::for_test(support::CALL_TIMEOUT);
    ctx.config = json!({"region": "us"}).as_object().cloned().unwrap();
    let out = p
        .call_with("hello_world_info", ctx, json!({}))
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"id": "acme.hello-world", "region": "us", "cancelled": false}))
    );
    p.plugin.stop().await.unwrap();
    let err = greet
        .call(
            CallContext::for_test(support::CALL_TIMEOUT),
            json!({"tone": "dry"}),
        )
        .await;
    assert!(err.unwrap_err().to_string().contains("stopped"));
}

#[tokio::test]
async fn factory_form_gets_t_with_language_fallbacks() {
    let main = r#"
export function activate(context) {
  context.registerActions((t) => [{
    name: "hi",
    label: t("label"),
    description: t("description"),
    properties: { name: { type: "string", default: "Ada" } },
    run: (inputs, ctx) => [ctx.t("hello", { name: inputs.name }), ctx.t("only_en"), ctx.t("missing.key"), context.t("nested.deep")],
  }]);
}
"#;
    let lang = r#"{
  "en": { "label": "Say hi", "description": "Greets in English.", "hello": "Hello {name}", "only_en": "English only", "nested": { "deep": "found" } },
  "zh": { "label": "打招呼", "hello": "你好 {name}" }
}"#;
    let zh = TestPlugin::new("acme.lang", main)
        .file("lang.json", lang)
        .language("zh_CN.UTF-8")
        .start()
        .await;
    let tool = zh.tool("lang_hi");
    assert_eq!(tool.spec().title.as_deref(), Some("打招呼"));
    assert_eq!(
        tool.spec().description,
        "Greets in English.",
        "falls back to en"
    );
    let out = zh.call("lang_hi", json!({})).await.unwrap();
    let list: serde_json::Value = serde_json::from_str(&out.text_joined()).unwrap();
    assert_eq!(
        list,
        json!(["你好 Ada", "English only", "missing.key", "found"])
    );
    assert_eq!(out.structured, None, "arrays are not structured content");

    let en = TestPlugin::new("acme.lang", main)
        .file("lang.json", lang)
        .language("en_US")
        .start()
        .await;
    assert_eq!(en.tool("lang_hi").spec().title.as_deref(), Some("Say hi"));
}

#[tokio::test]
async fn return_values_map_to_outputs() {
    let main = r#"
export function activate(context) {
  const action = (name, run, extra = {}) => ({ name, description: "d", run, ...extra });
  context.registerActions([
    action("text", () => "plain"),
    action("object", async () => ({ a: 1, nested: { b: [true] } })),
    action("number", () => 42),
    action("nothing", () => undefined),
    action("func", () => () => 1),
    action("big", (inputs) => "x".repeat(inputs.n)),
    action("typed", (inputs) => inputs.n === 1 ? { count: 3 } : "not an object",
      { properties: { n: { type: "integer" } }, outputs: { count: { type: "integer", required: true } } }),
  ]);
}
"#;
    let p = TestPlugin::new("acme.returns", main).start().await;
    assert_eq!(p.text("returns_text", json!({})).await, "plain");
    let obj = p.call("returns_object", json!({})).await.unwrap();
    assert_eq!(
        obj.structured,
        Some(json!({"a": 1, "nested": {"b": [true]}}))
    );
    assert!(obj.text_joined().contains("\"nested\""));
    assert_eq!(p.text("returns_number", json!({})).await, "42");
    assert!(
        p.call("returns_nothing", json!({}))
            .await
            .unwrap()
            .content
            .is_empty()
    );
    let err = p.call("returns_func", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("function"), "{err}");

    let limit = 1024 * 1024;
    assert!(p.call("returns_big", json!({"n": limit})).await.is_ok());
    let err = p
        .call("returns_big", json!({"n": limit + 1}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("1048577 bytes") && err.to_string().contains("1 MiB"),
        "{err}"
    );

    let typed = p.tool("returns_typed");
    assert_eq!(
        typed.spec().output_schema,
        Some(
            json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]})
        )
    );
    let ok = p.call("returns_typed", json!({"n": 1})).await.unwrap();
    assert_eq!(ok.structured, Some(json!({"count": 3})));
    let err = p.call("returns_typed", json!({"n": 2})).await.unwrap_err();
    assert!(err.to_string().contains("declares `outputs`"), "{err}");
}

#[tokio::test]
async fn thrown_errors_become_failed_with_the_message_alone() {
    let main = r#"export function activate(context) {
  context.registerActions([
    { name: "throws", description: "d", run() {
        throw new Error("the widget is broken");
    } },
    { name: "type_error", description: "d", async run() { const x = undefined; return x.field; } },
    { name: "throws_string", description: "d", run() { throw "plain string"; } },
  ]);
}
"#;
    let p = TestPlugin::new("acme.errors", main).start().await;
    let err = p.call("errors_throws", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    let text = err.to_string();
    // The model gets the message; the plugin's source position goes to the log only.
    assert_eq!(text, "the widget is broken");
    assert!(!text.contains("/tmp"), "no host paths: {text}");
    let err = p.call("errors_type_error", json!({})).await.unwrap_err();
    assert!(err.to_string().starts_with("TypeError: "), "{err}");
    let err = p.call("errors_throws_string", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("plain string"), "{err}");
    // Still usable.
    assert!(p.call("errors_throws", json!({})).await.is_err());
}

#[tokio::test]
async fn no_ambient_globals() {
    let main = one_action(
        "probe",
        r#"return {
          require: typeof require, process: typeof process, fetch: typeof fetch,
          std: typeof std, os: typeof os, console: typeof console, setTimeout: typeof setTimeout,
          http: typeof ctx.http, fs: typeof ctx.fs, tools: typeof ctx.tools,
          importSibling: await import("./other.js").then(() => "loaded", (e) => "refused"),
          importHost: await import("/etc/hostname").then(() => "loaded", (e) => "refused"),
        };"#,
    );
    let p = TestPlugin::new("acme.bare", &main)
        .file("other.js", "export const x = 1;")
        .start()
        .await;
    let out = p.call("bare_probe", json!({})).await.unwrap();
    assert_eq!(
        out.structured,
        Some(json!({
            "require": "undefined", "process": "undefined", "fetch": "function",
            "std": "undefined", "os": "undefined", "console": "object",
            "setTimeout": "function", "http": "undefined", "fs": "undefined",
            "tools": "undefined", "importSibling": "loaded", "importHost": "refused"
        })),
        "the plugin's own files load (tests/modules.rs), nothing else does; console, timers and \
         fetch are the host's, under the grants (tests/globals.rs)"
    );
}

use support::captured_logs;

#[tokio::test]
async fn logger_writes_tracing_events_tagged_with_the_plugin_and_is_capped() {
    let logs = captured_logs();
    let main = r#"
export function activate(context) {
  context.logger.info("activated-marker-7731", 42, { k: "v" });
  context.registerActions([{ name: "chatty", description: "d", run(inputs, ctx) {
    ctx.logger.warn("call-marker-7731", "y".repeat(10000));
    for (let i = 0; i < 1000; i++) ctx.logger.debug("flood-marker-7731 " + i);
    return "done";
  } }]);
}
"#;
    let p = TestPlugin::new("acme.chatty", main).start().await;
    assert_eq!(p.text("chatty_chatty", json!({})).await, "done");
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let activated = text
        .lines()
        .find(|l| l.contains("activated-marker-7731"))
        .expect("activation line");
    assert!(activated.contains("INFO"), "{activated}");
    assert!(
        activated.contains("plugin=\"acme.chatty\"") || activated.contains("plugin=acme.chatty"),
        "{activated}"
    );
    assert!(
        activated.contains("activated-marker-7731 42 {\"k\":\"v\"}"),
        "{activated}"
    );
    let call = text
        .lines()
        .find(|l| l.contains("call-marker-7731"))
        .expect("call line");
    assert!(call.contains("WARN"), "{call}");
    assert!(
        call.len() < 4096 + 200,
        "capped at 4 KiB: {} bytes",
        call.len()
    );
    let flood = text
        .lines()
        .filter(|l| l.contains("flood-marker-7731"))
        .count();
    assert_eq!(
        flood, 199,
        "200 lines per call, one of which was the warn line"
    );
    assert!(text.contains("the rest of this call's lines are dropped"));
}

#[tokio::test]
async fn load_checks_the_entry_file_cheaply() {
    let (dir, loader) = (
        tempfile::tempdir().unwrap(),
        JsLoader::new(&toolshed_ops::Services::new(toolshed_ops::Ops::memory())),
    );
    let request = |entry: Option<&str>| {
        let mut manifest =
            toolshed_core::PluginManifest::new("acme.files", "0.1.0", "Files", PluginKind::Js);
        manifest.entry = entry.map(str::to_string);
        toolshed_core::LoadRequest {
            manifest,
            dir: dir.path().to_path_buf(),
            config: Default::default(),
            grants: Default::default(),
        }
    };
    let err = loader.load(request(None)).err().unwrap().to_string();
    assert!(err.contains("`main.js` does not exist"), "{err}");
    let err = loader
        .load(request(Some("../main.js")))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("`..`"), "{err}");
    let err = loader
        .load(request(Some("/etc/hostname")))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("absolute"), "{err}");
    std::fs::write(dir.path().join("big.js"), vec![b' '; 1024 * 1024 + 1]).unwrap();
    let err = loader
        .load(request(Some("big.js")))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("limit"), "{err}");
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/index.js"),
        one_action("x", "return 1;"),
    )
    .unwrap();
    let plugin = loader.load(request(Some("./src/index.js"))).unwrap();
    plugin.init().await.unwrap();
    assert_eq!(plugin.tools()[0].spec().name, "files_x");
    plugin.stop().await.unwrap();
}

#[tokio::test]
async fn progress_and_stale_ctx() {
    let main = r#"
let kept;
export function activate(context) {
  context.registerActions([
    { name: "report", description: "d", run(inputs, ctx) { ctx.progress("step 1"); ctx.progress("step 2"); kept = ctx; return "ok"; } },
    { name: "stale", description: "d", run() { try { kept.progress("late"); return "no error"; } catch (e) { return e.message; } } },
  ]);
}
"#;
    let p = TestPlugin::new("acme.progress", main).start().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut ctx = CallContext::for_test(support::CALL_TIMEOUT);
    ctx.progress = toolshed_core::ProgressSink::new(move |p| {
        sink.lock().unwrap().push(p.message.unwrap_or_default())
    });
    p.call_with("progress_report", ctx, json!({}))
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), ["step 1", "step 2"]);
    let text = p.text("progress_stale", json!({})).await;
    assert!(text.contains("call that has ended"), "{text}");
}
