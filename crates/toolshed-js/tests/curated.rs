//! The curated plugins shipped in `plugins/`, run as toolshed runs them: loaded from their
//! directories with their real manifests, in QuickJS, reaching a local server on 127.0.0.1
//! through the real HTTP client (`toolshed_ops::NetClient`). The servers answer like Slack,
//! DingTalk, Feishu and GitHub do and check what they are sent (see `curated/services.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "curated/github.rs"]
mod github;
#[path = "curated/homeassistant.rs"]
mod homeassistant;
#[path = "curated/services.rs"]
mod services;
use crate::support;
#[path = "curated/webhook.rs"]
mod webhook;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use services::GITHUB_TOKEN;
use toolshed_core::{
    CallContext, Grants, LoadRequest, Plugin, PluginLoader, PluginManifest, ToolError, ToolOutput,
};
use toolshed_host::manifest::load_manifest;
use toolshed_js::JsLoader;
use toolshed_ops::net::AllowRule;
use toolshed_ops::{NetClient, NetConfig, Ops, Services};

const PLUGINS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins");

const SLACK_TOKEN: &str = "slackHookSecretToken0123456789";
const DING_TOKEN: &str = "dingAccessToken9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a";
const DING_SECRET: &str = "SECdingSigningSecret0123456789abcdef";
const FEISHU_TOKEN: &str = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const FEISHU_SECRET: &str = "feishuSignatureSecret42";
const GENERIC_TOKEN: &str = "genericHookToken0123456789";
const WRONG_SECRET: &str = "SECwrongSigningSecret9876543210";
const WRONG_TOKEN: &str = "wrongHookToken0123456789abcdef";

/// Every value that must never show in a tool's output, an error or a log line.
const SECRETS: &[&str] = &[
    SLACK_TOKEN,
    DING_TOKEN,
    DING_SECRET,
    FEISHU_TOKEN,
    FEISHU_SECRET,
    GENERIC_TOKEN,
    WRONG_SECRET,
    WRONG_TOKEN,
    GITHUB_TOKEN,
    "ghp_someoneElsesRevokedToken000000000",
    services::HASS_TOKEN,
    "hassWrongToken0123456789",
];

// ---- Harness ----

/// A curated plugin, started from its directory with its manifest.
struct Curated {
    plugin: Arc<dyn Plugin>,
    config: Map<String, Value>,
}

impl Curated {
    /// Starts `plugins/<dir>` with config `values` over the manifest's defaults (as the
    /// host resolves it) and `http` granted, in English.
    async fn start(dir: &str, values: Value, http: Vec<String>) -> Self {
        Self::start_in(dir, values, http, "en").await
    }

    async fn start_in(dir: &str, values: Value, http: Vec<String>, language: &str) -> Self {
        capture_logs();
        let dir = plugin_dir(dir);
        let manifest = manifest_of(&dir);
        let config = resolved(&manifest, values);
        // The tests' servers are on loopback: opened as `[web] allow` would.
        let net = NetClient::with_config(NetConfig {
            allow: vec![AllowRule::parse("127.0.0.1").unwrap()],
            ..NetConfig::default()
        });
        let plugin = JsLoader::new(&Services::new(Ops::memory()).with_net(Arc::new(net)))
            .with_language(language)
            .load(LoadRequest {
                manifest,
                dir,
                config: config.clone(),
                grants: Grants {
                    http,
                    ..Grants::default()
                },
            })
            .unwrap();
        plugin.init().await.unwrap();
        Self { plugin, config }
    }

    async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let mut ctx = CallContext::for_test(Duration::from_secs(30));
        ctx.config = self.config.clone();
        let tool = self
            .plugin
            .tools()
            .into_iter()
            .find(|t| t.spec().name == tool)
            .unwrap_or_else(|| panic!("no tool {tool}"));
        tool.call(ctx, args).await
    }

    /// Calls `tool`, which must succeed; returns its structured result.
    async fn ok(&self, tool: &str, args: Value) -> Value {
        match self.call(tool, args).await {
            Ok(out) => {
                assert_clean(&out.text_joined());
                out.structured.expect("a structured result")
            }
            Err(e) => panic!("{tool} failed: {e}"),
        }
    }

    /// Calls `tool`, which must fail; returns the error text.
    async fn fail(&self, tool: &str, args: Value) -> String {
        match self.call(tool, args).await {
            Ok(out) => panic!("{tool} succeeded: {}", out.text_joined()),
            Err(e) => {
                let text = e.to_string();
                assert!(matches!(e, ToolError::Failed(_)), "{e:?}");
                assert_clean(&text);
                text
            }
        }
    }

    fn tool_names(&self) -> Vec<String> {
        self.plugin
            .tools()
            .iter()
            .map(|t| t.spec().name.clone())
            .collect()
    }
}

fn plugin_dir(dir: &str) -> PathBuf {
    Path::new(PLUGINS).join(dir)
}

fn manifest_of(dir: &Path) -> PluginManifest {
    load_manifest(&dir.join("plugin.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// The configuration as the host hands it to a plugin: the manifest's defaults, then the
/// values set.
fn resolved(manifest: &PluginManifest, values: Value) -> Map<String, Value> {
    let mut config = Map::new();
    for field in &manifest.config {
        if let Some(default) = &field.default {
            config.insert(field.key.clone(), default.clone());
        }
    }
    for (key, value) in values.as_object().cloned().unwrap_or_default() {
        assert!(
            manifest.config.iter().any(|f| f.key == key),
            "{} has no config key {key}",
            manifest.id
        );
        config.insert(key, value);
    }
    config
}

/// Asserts that no secret shows in `text` or in anything logged so far.
fn assert_clean(text: &str) {
    let logs = logs();
    for secret in SECRETS {
        assert!(!text.contains(secret), "`{secret}` leaked into: {text}");
        assert!(
            !logs.contains(secret),
            "`{secret}` leaked into the logs:\n{logs}"
        );
    }
}

/// Every log line of this test binary, down to debug (one subscriber for all modules).
fn capture_logs() {
    support::captured_logs();
}

fn logs() -> String {
    String::from_utf8_lossy(&support::captured_logs().lock().unwrap()).into_owned()
}
// ---- Manifests ----

/// The tools each plugin's README documents.
const WEBHOOK_TOOLS: &[&str] = &["webhook_send"];
const HASS_TOOLS: &[&str] = &["iot_query", "iot_control"];
const GITHUB_TOOLS: &[&str] = &[
    "github_list_issues",
    "github_get_issue",
    "github_list_pulls",
    "github_get_pull",
    "github_get_file",
];

/// Set to write each curated plugin's `recorded-tools.json` afresh.
const RECORD_AGAIN: &str = "TOOLSHED_RECORD_CURATED";

/// Each curated plugin ships the tools its code registers, in English and in Chinese, made
/// from its files as they are (`toolshed_host::shipped`): a first start lists them without
/// running the code. Run with `TOOLSHED_RECORD_CURATED=1` to make the files again after
/// changing a plugin.
#[tokio::test]
async fn curated_plugins_ship_the_tools_their_code_registers() {
    use toolshed_host::shipped::{self, ShippedEntry, ShippedTools};
    let again = std::env::var_os(RECORD_AGAIN).is_some();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(PLUGINS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("plugin.toml").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 3, "{dirs:?}");
    let mut stale = Vec::new();
    for dir in dirs {
        let manifest = manifest_of(&dir);
        let config = shipped::first_start_config(&manifest);
        let mut made = ShippedTools::default();
        for language in ["en", "zh"] {
            let loader = JsLoader::new(&Services::new(Ops::memory())).with_language(language);
            let variant = loader.record_variant();
            let plugin = loader
                .load(LoadRequest {
                    manifest: manifest.clone(),
                    dir: dir.clone(),
                    config: config.clone(),
                    grants: Grants::default(),
                })
                .unwrap();
            plugin.init().await.unwrap();
            plugin.start().await.unwrap();
            let tools = plugin.tools().iter().map(|t| t.spec().clone()).collect();
            plugin.stop().await.unwrap();
            let key = shipped::key(&dir, &variant, &config).expect("the plugin's files hash");
            made.entries.push(ShippedEntry {
                variant,
                key,
                tools,
            });
        }
        let path = dir.join(shipped::FILE);
        let text = serde_json::to_string_pretty(&made).unwrap() + "\n";
        if again {
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(path);
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} no longer list what the plugins' code registers (a plugin or toolshed changed): \
         run `{RECORD_AGAIN}=1 cargo test -p toolshed-js --test integration curated_plugins_ship` \
         and commit the files"
    );
}

#[tokio::test]
async fn curated_manifests_load_and_serve_the_documented_tools() {
    for (dir, id, tools, secrets) in [
        (
            "webhook",
            "toolshed.webhook",
            WEBHOOK_TOOLS,
            &["url", "signing_secret"][..],
        ),
        ("github", "toolshed.github", GITHUB_TOOLS, &["token"][..]),
        (
            "homeassistant",
            "toolshed.homeassistant",
            HASS_TOOLS,
            &["token"][..],
        ),
    ] {
        let manifest = manifest_of(&plugin_dir(dir));
        assert_eq!(manifest.id, id);
        assert_eq!(manifest.kind, toolshed_core::PluginKind::Js);
        let secret_keys: Vec<&str> = manifest
            .config
            .iter()
            .filter(|f| f.secret)
            .map(|f| f.key.as_str())
            .collect();
        assert_eq!(secret_keys, secrets, "{id}");

        let plugin = Curated::start(dir, json!({}), vec![]).await;
        assert_eq!(plugin.tool_names(), tools, "{id}");
        let readme = std::fs::read_to_string(plugin_dir(dir).join("README.md")).unwrap();
        for tool in tools {
            assert!(
                readme.contains(tool),
                "{dir}/README.md does not mention {tool}"
            );
        }
        assert!(readme.contains(&format!("toolshed plugins grant {id}")));
    }

    let webhook = manifest_of(&plugin_dir("webhook"));
    assert_eq!(webhook.capabilities.network, ["*"]);
    let format = webhook.config.iter().find(|f| f.key == "format").unwrap();
    assert_eq!(
        format.options,
        [
            json!("slack"),
            json!("dingtalk"),
            json!("feishu"),
            json!("generic")
        ]
    );
    assert_eq!(format.default, Some(json!("slack")));
    assert!(webhook.config.iter().any(|f| f.key == "url" && f.required));
    let github = manifest_of(&plugin_dir("github"));
    assert_eq!(github.capabilities.network, ["api.github.com", "*"]);

    // Every GitHub tool only reads; sending a message is neither read-only nor idempotent.
    let gh = Curated::start("github", json!({}), vec![]).await;
    for tool in gh.plugin.tools() {
        let a = tool.spec().annotations;
        assert!(
            a.read_only && a.idempotent && a.open_world && !a.destructive,
            "{a:?}"
        );
    }
    let wh = Curated::start("webhook", json!({}), vec![]).await;
    let send = wh.plugin.tools().into_iter().next().unwrap();
    let a = send.spec().annotations;
    assert!(!a.read_only && !a.idempotent && !a.destructive && a.open_world);
    assert!(send.spec().input_schema.get("required").is_none());

    // Reading devices is read-only; controlling them is destructive, so policy can ask.
    let hass = Curated::start("homeassistant", json!({}), vec![]).await;
    for tool in hass.plugin.tools() {
        let a = tool.spec().annotations;
        match tool.spec().name.as_str() {
            "iot_query" => assert!(a.read_only && !a.destructive && a.open_world, "{a:?}"),
            _ => assert!(!a.read_only && a.destructive && a.open_world, "{a:?}"),
        }
    }

    // lang.json: the labels in Chinese when the host speaks it.
    let zh = Curated::start_in("webhook", json!({}), vec![], "zh").await;
    let title = zh.plugin.tools()[0].spec().title.clone();
    assert_eq!(title.as_deref(), Some("发送群消息"));
    let zh = Curated::start_in("github", json!({}), vec![], "zh_CN.UTF-8").await;
    let title = zh.plugin.tools()[0].spec().title.clone();
    assert_eq!(title.as_deref(), Some("列出 GitHub 议题"));
}
