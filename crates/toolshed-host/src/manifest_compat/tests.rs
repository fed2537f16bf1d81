//! The mapping of each foreign format, field by field.

use super::*;
use serde_json::json;

fn run(file: &str, value: Value) -> Normalized {
    normalize(Path::new(file), value)
}

#[test]
fn a_native_manifest_is_untouched() {
    let v = json!({"id": "a.b", "version": "1.0.0", "name": "B", "kind": "js", "bogus": 1});
    let n = run("plugin.json", v.clone());
    assert_eq!(n.value, v);
    assert_eq!(n.dialect, Dialect::Toolshed);
    assert!(n.notes.is_empty());
}

#[test]
fn agent_spaces_fields_become_names_translations_and_an_entry() {
    let n = run(
        "info.json",
        json!({
            "id": "spaces.weather", "version": "1.2.0",
            "name_zh": "天气", "name_en": "Weather",
            "description_en": "Forecasts.", "description_zh": "天气预报。",
            "tags_en": ["weather"], "tags_zh": ["天气"],
            "type": "tool", "entries": {"view": "index.html", "main": "main.js"},
            "hasView": true, "hasWorkflow": false
        }),
    );
    let v = &n.value;
    assert_eq!(v["name"], "Weather");
    assert_eq!(v["description"], "Forecasts.");
    assert_eq!(v["tags"], json!(["weather"]));
    assert_eq!(
        v["translations"]["zh"],
        json!({"name": "天气", "description": "天气预报。", "tags": ["天气"]})
    );
    assert_eq!(v["entry"], "main.js");
    assert_eq!(v["kind"], "js");
    let ignored: Vec<&str> = n
        .notes
        .iter()
        .filter(|n| n.action == "ignored")
        .map(|n| n.field.as_str())
        .collect();
    let mut ignored = ignored;
    ignored.sort_unstable();
    assert_eq!(ignored, ["hasView", "hasWorkflow", "type"]);
    // The view is a part for Agent Spaces' own window: kept and shown, never run.
    assert_eq!(v["client"], json!(["view (index.html)"]));
}

#[test]
fn icons_homepages_and_client_only_plugins_are_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("icon.png"), b"png").unwrap();
    let manifest = dir.path().join("web-plugin.json");
    let n = normalize(
        &manifest,
        json!({
            "id": "workflow.board", "version": "1.0.0", "name": "Board", "type": "client",
            "homepage": "https://example.com/board",
            "entries": {"client": {"url": "https://example.com/c.js", "format": "esm"}}
        }),
    );
    let v = &n.value;
    assert_eq!(v["icon"], "icon.png", "probed beside the manifest");
    assert_eq!(v["homepage"], "https://example.com/board");
    assert_eq!(v["client"], json!(["client (https://example.com/c.js)"]));
    assert_eq!(
        v["kind"], "js",
        "a client-only plugin is listed and runs with no tools"
    );
    let n = normalize(
        &manifest,
        json!({"id": "a.b", "version": "1.0.0", "name": "B", "iconPath": "img/i.svg", "entries": {"server": "main.js"}}),
    );
    assert_eq!(n.value["icon"], "img/i.svg");
}

#[test]
fn agent_spaces_config_entries_are_read_as_written() {
    // Failed before: `desc`, `value` and `placeholder` were unknown fields, a number
    // written as text was refused for a number field, and `{label, value}` options did
    // not hold the default.
    let n = run(
        "info.json",
        json!({
            "id": "workflow.probe", "version": "1.0.0", "name": "Probe",
            "entries": {"server": "main.js"},
            "config": [
                {"key": "defaultTimeout", "label": "Timeout", "desc": "Milliseconds.",
                 "type": "number", "value": "30000", "placeholder": "30000"},
                {"key": "apiKey", "label": "API key", "desc": "Your key.", "type": "string",
                 "value": "", "required": true, "placeholder": "sk-..."},
                {"key": "model", "label": "Model", "type": "select", "value": "b",
                 "options": [{"label": "Model A", "value": "a"}, {"label": "Model B", "value": "b"}]},
                {"key": "secure", "label": "TLS", "type": "boolean", "value": true}
            ]
        }),
    );
    let manifest: toolshed_core::PluginManifest =
        serde_json::from_value(n.value.clone()).unwrap_or_else(|e| panic!("{e}: {}", n.value));
    let field = |k: &str| manifest.config.iter().find(|f| f.key == k).unwrap().clone();
    assert_eq!(field("defaultTimeout").default, Some(json!(30000)));
    assert_eq!(
        field("defaultTimeout").description.as_deref(),
        Some("Milliseconds.")
    );
    assert!(field("apiKey").secret && field("apiKey").required);
    assert!(!field("model").secret && !field("defaultTimeout").secret);
    assert_eq!(field("model").options, vec![json!("a"), json!("b")]);
    assert_eq!(field("model").default, Some(json!("b")));
    assert_eq!(field("secure").default, Some(json!(true)));
    assert!(
        n.notes
            .iter()
            .any(|note| note.field == "config[0].placeholder" && note.action == "ignored"),
        "{:?}",
        n.notes
    );
    for key in [
        "apiKey",
        "api_key",
        "accessKeySecret",
        "token",
        "pass",
        "password",
    ] {
        assert!(names_a_credential(key), "{key}");
    }
    for key in [
        "accessKeyId",
        "region",
        "bucket",
        "defaultTimeout",
        "keyword",
    ] {
        assert!(!names_a_credential(key), "{key}");
    }
}

#[test]
fn fenix_fields_become_an_id_a_semver_and_tools() {
    let n = run(
        "plugin.yml",
        json!({
            "plugin_id": "Fenix.Notes", "version": 3, "name": "Notes", "plane": "control",
            "tool_catalog": [{"name": "notes_add", "description": "Add.", "parameters": {"type": "object"}, "handler": "add"}]
        }),
    );
    let v = &n.value;
    assert_eq!(v["id"], "fenix.notes");
    assert_eq!(v["version"], "3.0.0");
    assert_eq!(v["plane"], "program");
    assert_eq!(
        v["tools"],
        json!([{"name": "notes_add", "description": "Add.", "input_schema": {"type": "object"}}])
    );
    assert!(
        n.notes
            .iter()
            .any(|n| n.field == "tool_catalog[0].handler" && n.action == "ignored")
    );
}

#[test]
fn a_fenix_env_contract_is_the_plugins_env() {
    // Failed before: `env_contract` was ignored, so a required variable was never
    // enforced.
    for contract in [
        json!(["NOTES_DIR", {"name": "NOTES_TOKEN", "description": "API token.", "secret": true},
               {"key": "NOTES_DEBUG", "required": false}]),
        json!({"NOTES_DIR": true, "NOTES_TOKEN": {"desc": "API token.", "sensitive": true},
               "NOTES_DEBUG": {"optional": true}}),
    ] {
        let n = run(
            "plugin.yml",
            json!({"plugin_id": "fenix.notes", "version": 1, "name": "Notes", "kind": "js",
                   "env_contract": contract}),
        );
        let manifest: toolshed_core::PluginManifest =
            serde_json::from_value(n.value.clone()).unwrap_or_else(|e| panic!("{e}: {}", n.value));
        let var = |name: &str| {
            manifest
                .env
                .iter()
                .find(|v| v.name == name)
                .unwrap()
                .clone()
        };
        assert!(var("NOTES_DIR").required && !var("NOTES_DIR").secret);
        assert!(var("NOTES_TOKEN").required && var("NOTES_TOKEN").secret);
        assert_eq!(
            var("NOTES_TOKEN").description.as_deref(),
            Some("API token.")
        );
        assert!(!var("NOTES_DEBUG").required);
    }
}

#[test]
fn a_catalog_tools_attributes_are_kept() {
    // Failed before: mutates_state, streaming_support and operator_group were dropped,
    // and a tool declared `mutates_state: false` reported that it changes state.
    let n = run(
        "plugin.yml",
        json!({
            "plugin_id": "fenix.notes", "version": 1, "name": "Notes", "kind": "js",
            "tool_catalog": [
                {"name": "notes_list", "description": "List.", "parameters": {"type": "object"},
                 "mutates_state": false, "streaming_support": true, "operator_group": "notes"},
                {"name": "notes_add", "description": "Add.", "parameters": {"type": "object"},
                 "mutates_state": true}
            ]
        }),
    );
    let manifest: toolshed_core::PluginManifest =
        serde_json::from_value(n.value.clone()).unwrap_or_else(|e| panic!("{e}: {}", n.value));
    let list = &manifest.tools[0];
    assert!(
        list.annotations.read_only && list.streaming && list.group == "notes",
        "{list:?}"
    );
    assert!(!manifest.tools[1].annotations.read_only && manifest.tools[1].mutates_state);
    assert!(
        !n.notes.iter().any(|n| n.action == "ignored"),
        "{:?}",
        n.notes
    );
}

#[test]
fn cyrene_dependencies_and_author_are_kept() {
    let n = run(
        "plugin.json",
        json!({"version": "1.0", "name": "Weather Tools", "kind": "js",
               "author": {"name": "Ada", "email": "ada@example.com"},
               "dependencies": ["c.base", {"id": "c.more", "version": "^2"}]}),
    );
    // Failed before: without another foreign field (`hasView` was added to make it
    // one) the file was read as toolshed's own and refused; and it needed an `id`.
    assert_eq!(n.dialect, Dialect::Foreign);
    assert_eq!(n.value["id"], "weather-tools");
    assert_eq!(n.value["dialect"], "cyrene");
    assert_eq!(n.value["version"], "1.0.0");
    assert_eq!(n.value["author"], "Ada <ada@example.com>");
    assert_eq!(
        n.value["dependencies"],
        json!({"c.base": "*", "c.more": "^2"})
    );
}

#[test]
fn a_package_json_carries_its_manifest_under_toolshed() {
    let pkg = json!({
        "name": "@acme/notes", "version": "0.3.1", "description": "Notes.", "main": "index.js",
        "scripts": {"test": "x"}, "dependencies": {"left-pad": "1"},
        "toolshed": {"kind": "js", "capabilities": {"network": ["api.example.com"]}}
    });
    assert!(package_is_plugin(&pkg));
    assert!(!package_is_plugin(
        &json!({"name": "left-pad", "version": "1.0.0"})
    ));
    let n = run("package.json", pkg);
    assert_eq!(n.value["id"], "acme.notes");
    assert_eq!(n.value["name"], "@acme/notes");
    assert_eq!(n.value["entry"], "index.js");
    assert_eq!(n.value["version"], "0.3.1");
    assert!(n.value.get("scripts").is_none() && n.value.get("dependencies").is_none());
}
