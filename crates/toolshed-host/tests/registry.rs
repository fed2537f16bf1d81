//! Discovery over the system, curated and user roots; clashes; lifecycle persisted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::json;
use support::{Behaviour, manifest, open, open_in, plugin, tool};
use toolshed_core::{BuiltinPlugin, EnvVar, ErrorKind, OwnerId, ToolSpec};
use toolshed_host::registry::Level;
use toolshed_host::{CallRequest, PluginState, Root};

use toolshed_test_support::files::write;

use toolshed_test_support::files::NOTES_MANIFEST as JS_PLUGIN;

#[tokio::test]
async fn user_plugins_are_discovered_and_a_broken_manifest_stops_nothing() {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root = workspace.path().join(".toolshed/plugins");
    write(&root, "notes/plugin.toml", JS_PLUGIN);
    write(
        &root,
        "broken/plugin.yaml",
        "id: acme.broken\nversion: 1.0.0\nname: Broken\nkind: js\ntools:\n  - name: bad name\n    description: x\n",
    );
    write(&root, "also-broken/manifest.json", "{\"id\": \"acme.b2\", ");
    write(
        &root,
        "mcp/info.json",
        r#"{"id":"acme.remote","version":"2.0.0","name":"Remote","kind":"mcp","entry":"npx server"}"#,
    );
    let t = open_in(
        workspace,
        data,
        vec![plugin(
            "system.echo",
            vec![tool(ToolSpec::new("echo", "e"), Behaviour::Echo)],
        )],
        "",
    )
    .await;
    let plugins = t.host.registry().plugins();
    let ids: Vec<(&str, Root, PluginState)> = plugins
        .iter()
        .map(|p| (p.id.as_str(), p.root, p.state))
        .collect();
    assert_eq!(
        ids,
        vec![
            ("system.echo", Root::System, PluginState::Running),
            ("acme.remote", Root::User, PluginState::Error),
            ("acme.notes", Root::User, PluginState::Error),
        ]
    );
    let notes = t.host.registry().plugin("acme.notes").unwrap();
    assert!(notes.reason.unwrap().contains("kind `js` cannot run"));
    assert_eq!(notes.tools, vec!["notes_search"]);

    let diags = t.host.registry().diagnostics();
    assert_eq!(diags.len(), 2, "{diags:?}");
    let broken = diags
        .iter()
        .find(|d| d.path.as_ref().unwrap().ends_with("broken/plugin.yaml"))
        .unwrap();
    assert_eq!(broken.level, Level::Error);
    assert_eq!(broken.field.as_deref(), Some("tools[0].name"));
    assert!(broken.problem.contains("`bad name`"), "{broken:?}");
    assert_eq!(broken.plugin_id.as_deref(), Some("acme.broken"));
    let syntax = diags
        .iter()
        .find(|d| d.path.as_ref().unwrap().ends_with("manifest.json"))
        .unwrap();
    assert_eq!(syntax.field.as_deref(), Some("(syntax)"));

    // The system plugin still works; the js plugin's tool explains why it cannot run.
    let owner = OwnerId::new("o");
    assert!(
        t.host
            .call(CallRequest::new("echo", json!({}), owner.clone(), "test"))
            .await
            .result
            .is_ok()
    );
    let err = t
        .host
        .call(CallRequest::new("notes_search", json!({}), owner, "test"))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("acme.notes"), "{err}");
}

#[tokio::test]
async fn duplicate_ids_keep_the_more_trusted_and_tool_clashes_are_reported() {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    // A user plugin that reuses a system plugin's id.
    write(
        &workspace.path().join(".toolshed/plugins"),
        "fake/plugin.toml",
        &JS_PLUGIN.replace("acme.notes", "system.one"),
    );
    let plugins = vec![
        plugin(
            "system.one",
            vec![tool(ToolSpec::new("shared", "from one"), Behaviour::Echo)],
        ),
        plugin(
            "system.two",
            vec![
                tool(ToolSpec::new("shared", "from two"), Behaviour::Echo),
                tool(ToolSpec::new("own", "o"), Behaviour::Echo),
            ],
        ),
    ];
    let t = open_in(workspace, data, plugins, "").await;
    let registry = t.host.registry();
    assert_eq!(registry.plugin("system.one").unwrap().root, Root::System);
    assert_eq!(registry.lookup("shared").unwrap().plugin_id, "system.one");
    assert!(registry.lookup("own").is_some());
    let diags = registry.diagnostics();
    assert!(
        diags.iter().any(|d| d.level == Level::Warning
            && d.problem
                .contains("plugin id `system.one` is already provided by the system root")),
        "{diags:?}"
    );
    assert!(
        diags.iter().any(|d| d.level == Level::Error
            && d.problem
                .contains("tool `shared` of plugin `system.two` clashes")
            && d.problem.contains("`system.one`")),
        "{diags:?}"
    );
}

#[tokio::test]
async fn curated_root_is_between_system_and_user() {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let curated = tempfile::tempdir().unwrap();
    write(curated.path(), "notes/plugin.toml", JS_PLUGIN);
    write(
        &workspace.path().join(".toolshed/plugins"),
        "notes/plugin.toml",
        &JS_PLUGIN.replace("0.1.0", "9.9.9"),
    );
    let config = support::config_from(workspace.path(), "");
    let host = toolshed_host::Host::builder(workspace.path(), data.path())
        .config(config)
        .curated_dir(curated.path())
        .open()
        .await
        .unwrap();
    let notes = host.registry().plugin("acme.notes").unwrap();
    assert_eq!(
        (notes.root, notes.version.as_str()),
        (Root::Curated, "0.1.0")
    );
}

#[tokio::test]
async fn enable_and_disable_persist_across_restarts() {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let make = || {
        vec![plugin(
            "system.echo",
            vec![tool(ToolSpec::new("echo", "e"), Behaviour::Echo)],
        )]
    };
    let t = open_in(workspace, data, make(), "").await;
    let mut events = t.host.events().subscribe();
    let info = t
        .host
        .registry()
        .set_enabled("system.echo", false)
        .await
        .unwrap();
    assert_eq!(info.state, PluginState::Disabled);
    assert!(matches!(
        events.try_recv().unwrap(),
        toolshed_host::Event::PluginStateChanged {
            state: PluginState::Disabled,
            ..
        }
    ));
    let err = t
        .host
        .call(CallRequest::new(
            "echo",
            json!({}),
            OwnerId::new("o"),
            "test",
        ))
        .await
        .result
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("toolshed plugins enable system.echo"),
        "{err}"
    );
    let err = t
        .host
        .registry()
        .set_enabled("system.ech", true)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("did you mean system.echo"), "{err}");

    let support::TestHost {
        host,
        workspace,
        data,
    } = t;
    host.shutdown().await;
    drop(host);
    let t = open_in(workspace, data, make(), "").await;
    assert_eq!(
        t.host.registry().plugin("system.echo").unwrap().state,
        PluginState::Disabled
    );
    t.host
        .registry()
        .set_enabled("system.echo", true)
        .await
        .unwrap();
    assert!(
        t.host
            .call(CallRequest::new(
                "echo",
                json!({}),
                OwnerId::new("o"),
                "test"
            ))
            .await
            .result
            .is_ok()
    );
}

#[tokio::test]
async fn a_missing_required_env_var_degrades_the_plugin_and_its_tools_say_what_to_set() {
    let mut m = manifest("system.needs_env");
    m.env.push(EnvVar {
        name: "TOOLSHED_TEST_SURELY_UNSET_VAR".into(),
        description: Some("a token".into()),
        required: true,
        secret: true,
    });
    let p = std::sync::Arc::new(BuiltinPlugin::new(
        m,
        vec![tool(ToolSpec::new("needs_env", "n"), Behaviour::Echo)],
    ));
    let t = open(vec![p], "").await;
    assert_eq!(
        t.host.registry().plugin("system.needs_env").unwrap().state,
        PluginState::Degraded
    );
    let err = t
        .host
        .call(CallRequest::new(
            "needs_env",
            json!({}),
            OwnerId::new("o"),
            "test",
        ))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unconfigured);
    assert!(
        err.to_string().contains("TOOLSHED_TEST_SURELY_UNSET_VAR"),
        "{err}"
    );
}

#[tokio::test]
async fn choices_another_process_records_are_applied_and_announced() {
    let t = open(
        vec![plugin(
            "system.echo",
            vec![tool(ToolSpec::new("echo", "e"), Behaviour::Echo)],
        )],
        "",
    )
    .await;
    let mut events = t.host.events().subscribe();
    let mut catalog = t.host.registry().catalog_changes();
    catalog.mark_unchanged();
    assert!(
        t.host
            .registry()
            .sync_from_store()
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        !catalog.has_changed().unwrap(),
        "nothing changed, nothing announced"
    );

    // `toolshed plugins disable system.echo` in another process writes the same database.
    let other =
        toolshed_host::StateStore::open(&t.data.path().join(toolshed_host::DB_FILE)).unwrap();
    other.set_plugin_enabled("system.echo", false).unwrap();
    let changed = t.host.registry().sync_from_store().await.unwrap();
    assert_eq!(changed, vec!["system.echo".to_string()]);
    assert!(t.host.registry().lookup("echo").is_none());
    assert!(catalog.has_changed().unwrap());
    assert!(matches!(
        events.try_recv().unwrap(),
        toolshed_host::Event::PluginStateChanged {
            state: PluginState::Disabled,
            ..
        }
    ));

    other.set_plugin_enabled("system.echo", true).unwrap();
    assert_eq!(t.host.registry().sync_from_store().await.unwrap().len(), 1);
    assert!(t.host.registry().lookup("echo").is_some());
}

#[tokio::test]
async fn forgetting_a_plugin_forgets_its_cached_config_too() {
    let store = toolshed_host::StateStore::open_in_memory().unwrap();
    store
        .set_config_value("acme.notes", "colour", &json!("red"), false)
        .unwrap();
    assert_eq!(store.config_values("acme.notes").unwrap()["colour"], "red");
    store.forget_plugin("acme.notes").unwrap();
    assert!(store.config_values("acme.notes").unwrap().is_empty());
}

#[tokio::test]
async fn a_built_in_schema_that_does_not_compile_fails_its_calls_not_the_start() {
    let broken = ToolSpec::new("broken", "b").input_schema(json!({
        "type": "object",
        "properties": {"a": {"type": "nonsense"}}
    }));
    let t = open(
        vec![plugin(
            "system.mixed",
            vec![
                tool(broken, Behaviour::Echo),
                tool(ToolSpec::new("fine", "f"), Behaviour::Echo),
            ],
        )],
        "",
    )
    .await;
    let call = |name: &str| {
        t.host
            .call(CallRequest::new(name, json!({}), OwnerId::new("t"), "cli"))
    };
    assert!(call("fine").await.result.is_ok());
    let err = call("broken").await.result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Internal);
    assert!(
        err.to_string().contains("`broken` does not compile"),
        "{err}"
    );
}

async fn call_heavy(host: &toolshed_host::Host) -> toolshed_host::CallResult {
    host.call(CallRequest::new(
        "heavy",
        json!({}),
        OwnerId::new("o"),
        "test",
    ))
    .await
}

/// A built-in that waits for a person to turn it on (as the browser does).
struct OffByDefault(std::sync::Arc<dyn toolshed_core::Plugin>);

#[async_trait::async_trait]
impl toolshed_core::Plugin for OffByDefault {
    fn manifest(&self) -> &toolshed_core::PluginManifest {
        self.0.manifest()
    }

    fn tools(&self) -> Vec<std::sync::Arc<dyn toolshed_core::Tool>> {
        self.0.tools()
    }

    fn enabled_by_default(&self) -> bool {
        false
    }
}

#[tokio::test]
async fn a_builtin_off_by_default_waits_to_be_enabled_and_the_choice_lasts() {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let make = || -> Vec<std::sync::Arc<dyn toolshed_core::Plugin>> {
        vec![std::sync::Arc::new(OffByDefault(plugin(
            "system.heavy",
            vec![tool(ToolSpec::new("heavy", "h"), Behaviour::Echo)],
        )))]
    };
    let t = open_in(workspace, data, make(), "").await;
    assert_eq!(
        t.host.registry().plugin("system.heavy").unwrap().state,
        PluginState::Disabled
    );
    let err = call_heavy(&t.host).await.result.unwrap_err().to_string();
    assert!(
        err.contains("toolshed plugins enable system.heavy"),
        "{err}"
    );
    t.host
        .registry()
        .set_enabled("system.heavy", true)
        .await
        .unwrap();
    assert!(call_heavy(&t.host).await.result.is_ok());

    // Enabled by a person, it stays enabled when the host starts again.
    let support::TestHost {
        host,
        workspace,
        data,
    } = t;
    host.shutdown().await;
    drop(host);
    let t = open_in(workspace, data, make(), "").await;
    assert_eq!(
        t.host.registry().plugin("system.heavy").unwrap().state,
        PluginState::Running
    );
    assert!(call_heavy(&t.host).await.result.is_ok());
}

#[tokio::test]
async fn a_plugin_stops_when_its_dependency_goes_and_starts_when_it_is_back() {
    let base = plugin(
        "system.base",
        vec![tool(ToolSpec::new("base_ping", "b"), Behaviour::Echo)],
    );
    let mut m = manifest("system.needy");
    m.dependencies.insert("system.base".into(), "*".into());
    let needy = std::sync::Arc::new(BuiltinPlugin::new(
        m,
        vec![tool(ToolSpec::new("needy_ping", "n"), Behaviour::Echo)],
    ));
    let t = open(vec![base, needy], "").await;
    let registry = t.host.registry();
    assert_eq!(
        registry.plugin("system.needy").unwrap().state,
        PluginState::Running
    );

    registry.set_enabled("system.base", false).await.unwrap();
    let needy = registry.plugin("system.needy").unwrap();
    assert_eq!(needy.state, PluginState::Error);
    assert!(
        needy
            .reason
            .as_deref()
            .unwrap()
            .contains("`system.base` is disabled"),
        "{needy:?}"
    );
    // While it is missing, enabling the plugin that needs it is refused, naming it.
    registry.set_enabled("system.needy", false).await.unwrap();
    let err = registry
        .set_enabled("system.needy", true)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("toolshed plugins enable system.base"),
        "{err}"
    );

    registry.set_enabled("system.base", true).await.unwrap();
    registry.set_enabled("system.needy", true).await.unwrap();
    assert_eq!(
        registry.plugin("system.needy").unwrap().state,
        PluginState::Running
    );
    // Disabled and enabled again: the dependent follows both ways by itself.
    registry.set_enabled("system.base", false).await.unwrap();
    assert_eq!(
        registry.plugin("system.needy").unwrap().state,
        PluginState::Error
    );
    registry.set_enabled("system.base", true).await.unwrap();
    assert_eq!(
        registry.plugin("system.needy").unwrap().state,
        PluginState::Running
    );
}
