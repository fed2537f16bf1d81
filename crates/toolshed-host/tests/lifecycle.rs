//! Plugins built by a loader from their directories: loaded when enabled, dropped when
//! disabled, read again on reload; grants checked against the manifest and handed to the
//! loader; user plugin directories watched for plugins added, changed and removed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};
use support::text_plugins::{Fixture, MANIFEST, call, host_on, open, open_with, write};
use toolshed_core::{
    BuiltinPlugin, CallContext, OwnerId, Plugin, PluginKind, PluginManifest, SyncTool, Tool,
    ToolOutput, ToolSpec,
};
use toolshed_host::registry::RegistryError;
use toolshed_host::{CallRequest, Event, PluginState};

#[tokio::test]
async fn a_loaded_plugin_runs_and_is_dropped_when_disabled() {
    let f = open(true).await;
    let registry = f.host.registry();
    let info = registry.plugin("acme.text").unwrap();
    assert_eq!(info.state, PluginState::Running, "{:?}", info.reason);
    assert_eq!(info.tools, vec!["text_hello"]);
    let out = call(&f.host, "text_hello").await.unwrap();
    let loaded = out.structured.unwrap();
    assert_eq!(loaded["config"]["colour"], "red");
    assert_eq!(loaded["grants"]["http"], json!([]));
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 1);

    registry.set_enabled("acme.text", false).await.unwrap();
    assert_eq!(f.loader.stops.stops(), 1);
    let err = call(&f.host, "text_hello").await.unwrap_err();
    assert!(err.to_string().contains("disabled"), "{err}");
    // The tool list is remembered while the plugin is off.
    assert_eq!(
        registry.plugin("acme.text").unwrap().tools,
        vec!["text_hello"]
    );

    registry.set_enabled("acme.text", true).await.unwrap();
    call(&f.host, "text_hello").await.unwrap();
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        2,
        "enabling loads it afresh (by its first call)"
    );
}

trait Count {
    fn stops(&self) -> usize;
}
impl Count for Arc<AtomicUsize> {
    fn stops(&self) -> usize {
        self.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn reload_reads_the_directory_again_and_a_failing_init_is_an_error_state() {
    let f = open(true).await;
    let registry = f.host.registry();
    write(&f.plugins, "text/tools.txt", "text_hello\ntext_bye\n");
    let info = registry.reload("acme.text").await.unwrap();
    assert_eq!(info.state, PluginState::Running);
    assert_eq!(info.tools, vec!["text_hello", "text_bye"]);
    call(&f.host, "text_bye").await.unwrap();

    write(&f.plugins, "text/fail", "main.js: SyntaxError at line 3");
    let info = registry.reload("acme.text").await.unwrap();
    assert_eq!(info.state, PluginState::Error);
    assert!(
        info.reason
            .as_deref()
            .unwrap()
            .contains("SyntaxError at line 3"),
        "{info:?}"
    );
    assert!(registry.lookup("text_bye").is_none());

    std::fs::remove_file(f.plugins.join("text/fail")).unwrap();
    write(
        &f.plugins,
        "text/plugin.toml",
        &MANIFEST.replace("acme.text", "acme.other"),
    );
    let info = registry.reload("acme.text").await.unwrap();
    assert_eq!(info.state, PluginState::Error);
    assert!(info.reason.unwrap().contains("acme.other"));
}

#[tokio::test]
async fn only_declared_capabilities_are_granted_and_grants_reach_the_plugin() {
    let f = open(true).await;
    let registry = f.host.registry();
    let info = registry.grants("acme.text").await.unwrap();
    assert_eq!(info.declared, vec!["fs-read:notes"]);
    assert_eq!(info.wildcards, vec!["http"]);
    assert!(info.granted.is_empty());

    for bad in [
        "tool:calculator",
        "fs-write:notes",
        "fs-read:secrets",
        "http:/x",
    ] {
        let err = registry
            .change_grants("acme.text", &[bad.to_string()], &[])
            .await
            .unwrap_err();
        assert!(matches!(err, RegistryError::Invalid(_)), "{bad}: {err}");
    }
    assert!(
        registry
            .grants("acme.text")
            .await
            .unwrap()
            .granted
            .is_empty()
    );

    let mut events = f.host.events().subscribe();
    let info = registry
        .change_grants(
            "acme.text",
            &["http:127.0.0.1:9".into(), "fs-read:notes/2026".into()],
            &[],
        )
        .await
        .unwrap();
    assert_eq!(info.granted, vec!["fs-read:notes/2026", "http:127.0.0.1:9"]);
    let loaded = call(&f.host, "text_hello")
        .await
        .unwrap()
        .structured
        .unwrap();
    assert_eq!(loaded["grants"]["http"], json!(["127.0.0.1:9"]));
    assert_eq!(loaded["grants"]["fs_read"], json!(["notes/2026"]));
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        2,
        "reloaded with the grants"
    );
    drop(events.try_recv());

    registry
        .change_grants("acme.text", &[], &["http:127.0.0.1:9".into()])
        .await
        .unwrap();
    let loaded = call(&f.host, "text_hello")
        .await
        .unwrap()
        .structured
        .unwrap();
    assert_eq!(loaded["grants"]["http"], json!([]));

    // Another process grants: the running host reloads the plugin on its next sync.
    let other =
        toolshed_host::StateStore::open(&f.host.data_dir().join(toolshed_host::DB_FILE)).unwrap();
    other
        .change_grants("acme.text", &["http:api.example.com".into()], &[])
        .unwrap();
    let changed = registry.sync_from_store().await.unwrap();
    assert_eq!(changed, vec!["acme.text".to_string()]);
    let loaded = call(&f.host, "text_hello")
        .await
        .unwrap()
        .structured
        .unwrap();
    assert_eq!(loaded["grants"]["http"], json!(["api.example.com"]));

    // Uninstalling forgets the grants.
    registry.uninstall("acme.text").await.unwrap();
    assert!(other.grants("acme.text").unwrap().is_empty());
}

/// The next plugin state change on the bus (call events are skipped).
fn next_state_change(
    events: &mut tokio::sync::broadcast::Receiver<Event>,
) -> (String, PluginState) {
    loop {
        if let Event::PluginStateChanged {
            plugin_id, state, ..
        } = events.try_recv().expect("a state change was published")
        {
            return (plugin_id, state);
        }
    }
}

#[tokio::test]
async fn the_user_roots_are_watched_for_installs_changes_and_removals() {
    let f = open(false).await;
    let registry = f.host.registry();
    let mut events = f.host.events().subscribe();
    let mut catalog = registry.catalog_changes();
    catalog.mark_unchanged();
    assert!(registry.rescan_user_roots().await.is_empty());

    // A plugin appears (as an install renames it into place).
    let staging = f.plugins.join(".staging-x");
    write(&staging, "plugin.toml", MANIFEST);
    write(&staging, "tools.txt", "text_hello\n");
    assert!(
        registry.rescan_user_roots().await.is_empty(),
        "hidden staging is ignored"
    );
    std::fs::rename(&staging, f.plugins.join("text")).unwrap();
    assert!(
        registry.rescan_user_roots().await.is_empty(),
        "a change is applied once two looks agree"
    );
    assert_eq!(registry.rescan_user_roots().await, vec!["acme.text"]);
    assert!(catalog.has_changed().unwrap());
    call(&f.host, "text_hello").await.unwrap();
    assert_eq!(
        next_state_change(&mut events),
        ("acme.text".to_string(), PluginState::Running)
    );

    // Its files change: it is reloaded once they settle.
    write(&f.plugins, "text/tools.txt", "text_hello\ntext_more\n");
    assert!(registry.rescan_user_roots().await.is_empty());
    assert_eq!(registry.rescan_user_roots().await, vec!["acme.text"]);
    assert_eq!(
        next_state_change(&mut events),
        ("acme.text".to_string(), PluginState::Running)
    );
    call(&f.host, "text_more").await.unwrap();

    // A broken copy beside it is a diagnostic, not a plugin.
    write(&f.plugins, "broken/plugin.toml", "id = ");
    registry.rescan_user_roots().await;
    registry.rescan_user_roots().await;
    assert!(
        registry.diagnostics().iter().any(|d| d
            .path
            .as_ref()
            .unwrap()
            .ends_with("broken/plugin.toml")),
        "{:?}",
        registry.diagnostics()
    );

    // It is removed: its tools go at once.
    std::fs::remove_dir_all(f.plugins.join("text")).unwrap();
    assert_eq!(registry.rescan_user_roots().await, vec!["acme.text"]);
    assert!(registry.plugin("acme.text").is_none());
    assert!(call(&f.host, "text_hello").await.is_err());
    assert_eq!(
        next_state_change(&mut events),
        ("acme.text".to_string(), PluginState::Uninstalled)
    );
}

#[tokio::test]
async fn a_plugin_kind_without_a_loader_says_so() {
    let f = open(true).await;
    // The same plugin as kind mcp, which nothing here loads.
    write(
        &f.plugins,
        "text/plugin.toml",
        &format!(
            "{}\n[mcp]\ncommand = \"true\"\n",
            MANIFEST.replace("kind = \"js\"", "kind = \"mcp\"")
        ),
    );
    let info = f.host.registry().reload("acme.text").await.unwrap();
    assert_eq!(info.state, PluginState::Error);
    assert!(info.reason.unwrap().contains("kind `mcp` cannot run"));
}

#[tokio::test]
async fn a_later_process_lists_recorded_tools_and_runs_the_code_at_the_first_call() {
    let f = open(true).await;
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        1,
        "the first start runs the code"
    );
    let f = reopen(f, false, "").await;
    let registry = f.host.registry();
    assert_eq!(
        registry.plugin("acme.text").unwrap().state,
        PluginState::Running
    );
    assert!(
        registry.lookup("text_hello").is_some(),
        "listed from the record"
    );
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        0,
        "no code ran at start"
    );
    let out = call(&f.host, "text_hello").await.unwrap();
    assert_eq!(out.structured.unwrap()["config"]["colour"], "red");
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        1,
        "the first call ran it"
    );
    call(&f.host, "text_hello").await.unwrap();
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 1, "once");

    // Its files change while nothing runs: the next process runs the code at start again.
    write(&f.plugins, "text/tools.txt", "text_hello\ntext_new\n");
    let f = reopen(f, false, "").await;
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 1);
    call(&f.host, "text_new").await.unwrap();
}

/// Shuts `f`'s host down and opens another on the same directories, as a later process
/// would, with a loader that parks when `parks` and has record variant `variant`.
async fn reopen(f: Fixture, parks: bool, variant: &str) -> Fixture {
    let Fixture { host, _dirs, .. } = f;
    host.shutdown().await;
    drop(host);
    open_with(_dirs.0, _dirs.1, parks, variant).await
}

/// A workspace and a data dir holding the text plugin (failing to start with `fail`).
fn text_plugin_dirs(fail: Option<&str>) -> (tempfile::TempDir, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let plugins = data.path().join(toolshed_host::PLUGINS_DIR);
    write(&plugins, "text/plugin.toml", MANIFEST);
    write(&plugins, "text/tools.txt", "text_hello\n");
    if let Some(reason) = fail {
        write(&plugins, "text/fail", reason);
    }
    (workspace, data)
}

#[tokio::test]
async fn tools_recorded_in_one_language_are_listed_afresh_in_another() {
    let (workspace, data) = text_plugin_dirs(None);
    let f = open_with(workspace, data, false, "en").await;
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 1, "recorded");
    let f = reopen(f, false, "en").await;
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        0,
        "listed from the record"
    );
    let f = reopen(f, false, "zh").await;
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        1,
        "another language runs the code to list its tools again"
    );
}

#[tokio::test]
async fn a_plugin_that_parks_stops_once_its_tools_are_recorded_and_starts_at_its_first_call() {
    let (workspace, data) = text_plugin_dirs(None);
    let f = open_with(workspace, data, true, "").await;
    let registry = f.host.registry();
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        1,
        "its code ran once"
    );
    assert_eq!(
        f.loader.stops.stops(),
        1,
        "and stopped once its tools were recorded"
    );
    assert_eq!(
        registry.plugin("acme.text").unwrap().state,
        PluginState::Running
    );
    assert!(registry.lookup("text_hello").is_some(), "still listed");

    let out = call(&f.host, "text_hello").await.unwrap();
    assert_eq!(out.structured.unwrap()["config"]["colour"], "red");
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        2,
        "the first call started it again"
    );
    call(&f.host, "text_hello").await.unwrap();
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 2, "once");

    // Disabled, the started code stops; enabled again, it is listed from the record.
    registry.set_enabled("acme.text", false).await.unwrap();
    assert_eq!(f.loader.stops.stops(), 2);
    registry.set_enabled("acme.text", true).await.unwrap();
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        2,
        "not run to list it"
    );
    call(&f.host, "text_hello").await.unwrap();
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 3);
}

/// Writes `recorded-tools.json` into the text plugin's directory: `text_hello` described as
/// `description`, keyed to the plugin's files as they are (or to other files when `stale`).
fn ship_tools(plugins: &std::path::Path, description: &str, stale: bool) {
    use toolshed_host::shipped::{self, ShippedEntry, ShippedTools};
    let dir = plugins.join("text");
    let manifest = toolshed_host::manifest::load_manifest(&dir.join("plugin.toml")).unwrap();
    let config = shipped::first_start_config(&manifest);
    assert_eq!(config["colour"], "red");
    let mut key = shipped::key(&dir, "", &config).unwrap();
    if stale {
        key = shipped::key(&dir, "another language", &config).unwrap();
    }
    let shipped = ShippedTools {
        entries: vec![ShippedEntry {
            variant: String::new(),
            key,
            tools: vec![ToolSpec::new("text_hello", description)],
        }],
    };
    let text = serde_json::to_string(&shipped).unwrap();
    write(plugins, &format!("text/{}", shipped::FILE), &text);
}

#[tokio::test]
async fn a_first_start_lists_a_plugin_from_the_tools_it_ships_without_running_it() {
    let (workspace, data) = text_plugin_dirs(None);
    let plugins = data.path().join(toolshed_host::PLUGINS_DIR);
    ship_tools(&plugins, "As shipped.", false);
    let f = open_with(workspace, data, true, "").await;
    let registry = f.host.registry();
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        0,
        "its code did not run"
    );
    let listed = registry.lookup("text_hello").expect("listed");
    assert_eq!(listed.tool.spec().description, "As shipped.");
    assert_eq!(
        registry.plugin("acme.text").unwrap().state,
        PluginState::Running
    );

    // The first call runs it; it registers its own description, which the record takes.
    let out = call(&f.host, "text_hello").await.unwrap();
    assert_eq!(out.structured.unwrap()["config"]["colour"], "red");
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 1);
    let f = reopen(f, true, "").await;
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        0,
        "listed from the record"
    );
    let listed = f.host.registry().lookup("text_hello").unwrap();
    assert_eq!(listed.tool.spec().description, "Says how it was loaded.");
}

#[tokio::test]
async fn shipped_tools_made_from_other_files_are_not_used() {
    let (workspace, data) = text_plugin_dirs(None);
    let plugins = data.path().join(toolshed_host::PLUGINS_DIR);
    ship_tools(&plugins, "As shipped.", true);
    let f = open_with(workspace, data, true, "").await;
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 1, "its code ran");
    let listed = f.host.registry().lookup("text_hello").unwrap();
    assert_eq!(listed.tool.spec().description, "Says how it was loaded.");

    // Nor is a file that is not a record, and a plugin whose files changed since.
    let (workspace, data) = text_plugin_dirs(None);
    let plugins = data.path().join(toolshed_host::PLUGINS_DIR);
    ship_tools(&plugins, "As shipped.", false);
    write(&plugins, "text/tools.txt", "text_hello\ntext_bye\n");
    let f = open_with(workspace, data, true, "").await;
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 1, "its code ran");
    assert!(f.host.registry().lookup("text_bye").is_some());
    let (workspace, data) = text_plugin_dirs(None);
    let plugins = data.path().join(toolshed_host::PLUGINS_DIR);
    write(&plugins, "text/recorded-tools.json", "not json");
    let f = open_with(workspace, data, true, "").await;
    assert_eq!(f.loader.loads.load(Ordering::SeqCst), 1, "its code ran");
}

#[tokio::test]
async fn a_plugin_that_fails_to_start_does_not_park_and_says_why() {
    let (workspace, data) = text_plugin_dirs(Some("activate() threw: no token"));
    let f = open_with(workspace, data, true, "").await;
    let info = f.host.registry().plugin("acme.text").unwrap();
    assert_eq!(info.state, PluginState::Error);
    assert!(info.reason.unwrap().contains("no token"));
    assert!(f.host.registry().lookup("text_hello").is_none());
}

/// A tool that calls `target` through the host, as plugin `caller`.
struct Relay {
    spec: ToolSpec,
    caller: &'static str,
    target: &'static str,
}

#[async_trait]
impl Tool for Relay {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(
        &self,
        ctx: CallContext,
        _args: Value,
    ) -> Result<ToolOutput, toolshed_core::ToolError> {
        let caller = ctx
            .caller
            .clone()
            .expect("the host hands out a tool caller");
        caller
            .call_tool(&ctx, self.caller, self.target, json!({}))
            .await
    }
}

fn relay(id: &'static str, name: &'static str, target: &'static str) -> Arc<dyn Plugin> {
    let tool = Arc::new(Relay {
        spec: ToolSpec::new(name, "Calls another tool."),
        caller: id,
        target,
    }) as Arc<dyn Tool>;
    Arc::new(BuiltinPlugin::new(
        PluginManifest::new(id, "1.0.0", id, PluginKind::Builtin),
        vec![tool],
    ))
}

#[tokio::test]
async fn nested_calls_keep_the_callers_narrowing_and_never_wait_for_themselves() {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let echo = Arc::new(BuiltinPlugin::new(
        PluginManifest::new("t.echo", "1.0.0", "echo", PluginKind::Builtin),
        vec![Arc::new(SyncTool::new(
            ToolSpec::new("echo", "Echoes."),
            |_: &CallContext, args: Value| Ok(ToolOutput::structured(args)),
        )) as Arc<dyn Tool>],
    ));
    let host = host_on(
        &workspace,
        &data,
        vec![
            echo,
            relay("t.a", "a_to_echo", "echo"),
            relay("t.b", "b_to_a", "a_to_b"),
            relay("t.c", "a_to_b", "b_to_a"),
        ],
        vec![],
    )
    .await;
    let request = |tool: &str| CallRequest::new(tool, json!({}), OwnerId::new("t"), "cli");

    // Allowed, and recorded as a call of its own.
    let done = host.call(request("a_to_echo")).await;
    assert!(done.result.is_ok(), "{:?}", done.result);

    // A caller narrowed to `a_*` reaches `echo` neither directly nor through a plugin.
    let rules = toolshed_host::CompiledRules::compile(
        "--tools",
        &toolshed_host::config::ReviewRules {
            allow: vec!["a_*".to_string()],
            ..Default::default()
        },
    )
    .expect("valid globs");
    let mut narrowed = request("a_to_echo");
    narrowed.selection = Some(Arc::new(rules));
    let err = host.call(narrowed).await.result.unwrap_err();
    assert!(err.to_string().contains("`echo` is not available"), "{err}");

    // b_to_a (plugin t.b) -> a_to_b (t.c) -> b_to_a again: refused, not a wait until the
    // deadline.
    let err = host.call(request("b_to_a")).await.result.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("already serving") && text.contains("t.b -> t.c"),
        "{text}"
    );
}

#[tokio::test]
async fn a_disabled_plugin_stays_off_when_its_files_change_or_it_is_installed_again() {
    let f = open(true).await;
    let registry = f.host.registry();
    registry.set_enabled("acme.text", false).await.unwrap();
    let loads = f.loader.loads.load(Ordering::SeqCst);
    write(&f.plugins, "text/tools.txt", "text_hello\ntext_more\n");
    registry.rescan_user_roots().await;
    assert_eq!(registry.rescan_user_roots().await, vec!["acme.text"]);
    registry.adopt(&f.plugins.join("text")).await;
    let info = registry.plugin("acme.text").unwrap();
    assert_eq!(info.state, PluginState::Disabled, "{info:?}");
    assert_eq!(
        f.loader.loads.load(Ordering::SeqCst),
        loads,
        "its code never ran"
    );
    assert!(call(&f.host, "text_hello").await.is_err());
}
