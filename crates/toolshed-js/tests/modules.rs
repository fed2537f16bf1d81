//! Modules: ES imports and CommonJS `require` of the plugin's own files and JSON, never
//! outside the plugin directory; `deactivate` when the plugin stops.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::json;
use support::{TestPlugin, captured_logs};

#[tokio::test]
async fn an_es_module_imports_its_files_and_json() {
    let main = r#"
import { greet } from "./lib/actions.js";
import settings from "./settings.json";
import * as shared from "./lib/shared";
export function activate(context) {
  context.registerActions([{ name: "hello", description: "d",
    run: (inputs) => greet(inputs.who) + shared.mark + settings.punctuation }]);
}
"#;
    let p = TestPlugin::new("acme.esm", main)
        .file(
            "lib/actions.js",
            "import { prefix } from './shared.js';\nexport const greet = (who) => prefix + who;",
        )
        .file(
            "lib/shared.js",
            "export const prefix = 'Hello, ';\nexport const mark = ' :)';",
        )
        .file("settings.json", r#"{"punctuation": "!"}"#)
        .start()
        .await;
    assert_eq!(
        p.text("esm_hello", json!({"who": "Ada"})).await,
        "Hello, Ada :)!"
    );
}

#[tokio::test]
async fn a_commonjs_plugin_requires_its_files_as_node_would() {
    // As the seeds write them: exports.activate, module.exports, require without an
    // extension, a JSON require, and a cycle between two files.
    let main = r#"
const actions = require('./actions');
const shared = require('./shared.js');
const meta = require('./meta.json');
exports.activate = function (context) {
  context.registerActions(actions.list(shared, meta));
};
exports.deactivate = function () {};
"#;
    let p = TestPlugin::new("acme.cjs", main)
        .file(
            "actions.js",
            r#"
const shared = require('./shared');
module.exports = {
  list: (s, meta) => [{ name: "describe", description: "d",
    run: () => [s.name, meta.version, shared === s, typeof __filename, __filename, __dirname].join(" ") }],
};
"#,
        )
        .file(
            "shared.js",
            "exports.name = 'shared';\nexports.seesActions = typeof require('./actions') === 'object';",
        )
        .file("meta.json", r#"{"version": 3}"#)
        .start()
        .await;
    assert_eq!(
        p.text("cjs_describe", json!({})).await,
        "shared 3 true string actions.js "
    );
}

#[tokio::test]
async fn nothing_outside_the_plugin_and_no_packages_can_be_loaded() {
    for (main, wanted) in [
        (
            "import { s } from '../secret.js';\nexport function activate() {}".to_string(),
            "leads outside the plugin directory",
        ),
        (
            "import _ from 'lodash';\nexport function activate() {}".to_string(),
            "names a package or a URL",
        ),
        (
            "import x from './missing.js';\nexport function activate() {}".to_string(),
            "is not a file of the plugin",
        ),
        (
            "const s = require('../../secret');\nexports.activate = () => {};".to_string(),
            "leads outside the plugin directory",
        ),
        // Node's own modules choose the Node.js runtime, which this in-memory backend
        // cannot start.
        (
            "const fs = require('fs');\nexports.activate = () => {};".to_string(),
            "its Node.js process cannot start",
        ),
        (
            "import data from './broken.json';\nexport function activate() {}".to_string(),
            "not valid JSON",
        ),
    ] {
        let err = TestPlugin::new("acme.escape", &main)
            .file("broken.json", "{nope")
            .init_error()
            .await;
        assert!(err.contains(wanted), "{main}: {err}");
    }
}

#[tokio::test]
async fn a_file_linked_out_of_the_plugin_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("secret.js"),
        "export const s = 'leaked';",
    )
    .unwrap();
    let (plugin, dir) = TestPlugin::new(
        "acme.link",
        "import { s } from './secret.js';\nexport function activate(c) { c.registerActions([{ name: 'a', description: 'd', run: () => s }]); }",
    )
    .load()
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.js"),
        dir.path().join("secret.js"),
    )
    .unwrap();
    let err = plugin.init().await.unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");
}

#[tokio::test]
async fn deactivate_runs_when_the_plugin_stops_and_cannot_hold_it_up() {
    let logs = captured_logs();
    let main = r#"
export function activate(context) {
  context.registerActions([{ name: "a", description: "d", run: () => "ok" }]);
}
export async function deactivate(context) {
  await null;
  context.logger.info("deactivated-marker-5521");
}
"#;
    let p = TestPlugin::new("acme.bye", main).start().await;
    assert_eq!(p.text("bye_a", json!({})).await, "ok");
    p.plugin.stop().await.unwrap();
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(text.contains("deactivated-marker-5521"), "{text}");

    // One that never ends is stopped at its limit, and the plugin stops anyway.
    let main = r#"
export function activate(context) {
  context.registerActions([{ name: "a", description: "d", run: () => "ok" }]);
}
export function deactivate() { for (;;) {} }
"#;
    let p = TestPlugin::new("acme.stuck", main).start().await;
    let started = std::time::Instant::now();
    p.plugin.stop().await.unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "liveness"
    );
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(text.contains("deactivate() did not finish"), "{text}");
}

#[tokio::test]
async fn a_health_export_is_what_the_plugin_reports() {
    use toolshed_core::Health;
    let plugin = |health: &str| {
        format!(
            "export function activate(c) {{ c.registerActions([{{ name: 'a', description: 'd', run: () => 'ok' }}]); }}\n{health}"
        )
    };
    let none = TestPlugin::new("acme.h", &plugin("")).start().await;
    assert_eq!(none.plugin.health().await, Health::Ok);
    let degraded = TestPlugin::new(
        "acme.h",
        &plugin("export async function health() { await null; return { status: 'degraded', message: 'token expires in 2 days' }; }"),
    )
    .start()
    .await;
    assert_eq!(
        degraded.plugin.health().await,
        Health::Degraded("token expires in 2 days".into())
    );
    let thrown = TestPlugin::new(
        "acme.h",
        &plugin("export function health() { throw new Error('upstream unreachable'); }"),
    )
    .start()
    .await;
    match thrown.plugin.health().await {
        Health::Failed(why) => assert!(why.contains("upstream unreachable"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Still serving calls between health checks.
    assert_eq!(thrown.text("h_a", json!({})).await, "ok");
}

fn catalog_tool(name: &str, schema: serde_json::Value) -> toolshed_core::ToolSpec {
    toolshed_core::ToolSpec::new(name, "A tool from the manifest's catalog.").input_schema(schema)
}

#[tokio::test]
async fn tools_the_manifest_lists_are_served_by_exported_functions() {
    // Fenix style: no activate, one exported function per listed tool, state kept.
    let main = r#"
const notes = [];
module.exports.note_add = (inputs) => { notes.push(inputs.text); return { count: notes.length, tag: inputs.tag }; };
module.exports.note_list = async () => notes.join(",");
"#;
    let schema = json!({"type": "object", "properties": {
        "text": {"type": "string"}, "tag": {"type": "string", "default": "general"}}});
    let p = TestPlugin::new("fenix.notes", main)
        .tools(vec![
            catalog_tool("note_add", schema),
            catalog_tool("note_list", json!({"type": "object"})),
        ])
        .start()
        .await;
    let names: Vec<String> = p
        .plugin
        .tools()
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    assert_eq!(
        names,
        ["note_add", "note_list"],
        "the catalog's names, unprefixed"
    );
    let added: serde_json::Value =
        serde_json::from_str(&p.text("note_add", json!({"text": "a"})).await).unwrap();
    assert_eq!(added, json!({"count": 1, "tag": "general"}));
    p.text("note_add", json!({"text": "b"})).await;
    assert_eq!(p.text("note_list", json!({})).await, "a,b");
}

#[tokio::test]
async fn a_listed_tool_without_its_function_fails_activation_by_name() {
    let error = TestPlugin::new("fenix.half", "module.exports.note_add = () => 1;")
        .tools(vec![
            catalog_tool("note_add", json!({"type": "object"})),
            catalog_tool("note_list", json!({"type": "object"})),
        ])
        .init_error()
        .await;
    assert!(
        error.contains("lists the tool `note_list`")
            && error.contains("exports a function named `note_list`"),
        "{error}"
    );
}
