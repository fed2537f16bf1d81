//! The `system.web` plugin: `web_fetch` (a page as readable Markdown), `web_search`
//! (SearXNG, Brave, Tavily, Exa or Firecrawl behind one trait) and `firecrawl_scrape`.
//!
//! ```text
//! {"url": "https://example.com/post", "format": "markdown"}
//! → URL: https://example.com/post
//!   Status: 200 OK
//!   Content-Type: text/html; charset=utf-8
//!   Title: A post
//!
//!   # A post
//!   ...
//! ```
//!
//! Every request goes through the host's one HTTP client ([`HttpClientHandle`] in the call's
//! extensions): pages under [`NetPolicy::Public`](toolshed_core::NetPolicy::Public), so a
//! prompt-injected URL cannot reach the local network, and search APIs under
//! [`NetPolicy::Only`](toolshed_core::NetPolicy::Only) their configured host, since a
//! person named it (a self-hosted SearXNG on the LAN works).
//!
//! The search providers are configured through the plugin's env contract. The plugin reads
//! the variables at call time from a [`WebEnv`], the process environment by default; tests
//! inject their own, because the process environment is shared by every test thread.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use toolshed_core::{
    BuiltinPlugin, CallContext, EnvVar, Plugin, PluginKind, PluginManifest, Tool, ToolError,
    ToolOutput, ToolSpec,
};
use toolshed_ops::{NetClient, Services};

mod duckduckgo;
mod fetch;
pub use toolshed_kit::html;
mod providers;
mod search;
mod spec;
#[cfg(test)]
mod tests;

pub use providers::{ProviderRequest, SearchProvider, SearchResult};

/// The group every web tool belongs to.
pub const GROUP: &str = "web";

/// The variables of the env contract, with what each is for and whether it is a secret.
pub const ENV_VARS: &[(&str, &str, bool)] = &[
    (
        "SEARXNG_URL",
        "Base URL of a SearXNG instance with the JSON format enabled (e.g. http://searx.lan:8080); selects the SearXNG provider",
        false,
    ),
    ("BRAVE_API_KEY", "Brave Search API key", true),
    (
        "BRAVE_BASE_URL",
        "Overrides the Brave Search API base URL (tests, proxies)",
        false,
    ),
    ("TAVILY_API_KEY", "Tavily API key", true),
    (
        "TAVILY_BASE_URL",
        "Overrides the Tavily API base URL",
        false,
    ),
    ("EXA_API_KEY", "Exa API key", true),
    ("EXA_BASE_URL", "Overrides the Exa API base URL", false),
    (
        "FIRECRAWL_API_KEY",
        "Firecrawl API key (search and firecrawl_scrape)",
        true,
    ),
    (
        "FIRECRAWL_BASE_URL",
        "Overrides the Firecrawl API base URL (a self-hosted Firecrawl)",
        false,
    ),
    (
        "PERPLEXITY_API_KEY",
        "Perplexity API key (its Search API)",
        true,
    ),
    (
        "PERPLEXITY_BASE_URL",
        "Overrides the Perplexity API base URL",
        false,
    ),
    (
        "DEEPSEEK_API_KEY",
        "DeepSeek API key: its chat model names pages for a query (no search index)",
        true,
    ),
    (
        "DEEPSEEK_BASE_URL",
        "Overrides the DeepSeek API base URL (an OpenAI-compatible chat/completions)",
        false,
    ),
    (
        "DEEPSEEK_SEARCH_MODEL",
        "The DeepSeek model asked (default deepseek-chat)",
        false,
    ),
    (
        "DUCKDUCKGO_BASE_URL",
        "Overrides the base URL of DuckDuckGo's HTML results page, the keyless fallback (tests, proxies)",
        false,
    ),
];

/// How the web tools behave beyond their variables: `[web.search]` in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `web_search` falls back to DuckDuckGo's HTML page (keyless, best effort) when no
    /// keyed provider is configured.
    pub keyless_fallback: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            keyless_fallback: true,
        }
    }
}

/// A snapshot of the variables the web tools read. Empty values count as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebEnv {
    vars: BTreeMap<String, String>,
}

impl WebEnv {
    /// The variables of [`ENV_VARS`] as the process environment has them now.
    pub fn from_process() -> Self {
        Self::from_process_or(&std::collections::BTreeMap::new())
    }

    /// [`WebEnv::from_process`], taking from `files` (the workspace's `.env` files) what
    /// the process environment does not set.
    pub fn from_process_or(files: &BTreeMap<String, String>) -> Self {
        let vars = ENV_VARS
            .iter()
            .filter_map(|(name, _, _)| {
                std::env::var(name)
                    .ok()
                    .or_else(|| files.get(*name).cloned())
                    .map(|value| (name.to_string(), value))
            })
            .collect();
        Self { vars }
    }

    /// A snapshot holding exactly `vars`.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `name`, if set and not empty (surrounding whitespace trimmed).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }
}

/// Where the plugin reads its variables: the process environment at each call, or a fixed
/// snapshot.
#[derive(Debug, Clone)]
enum EnvSource {
    /// The process environment, over the workspace's `.env` files.
    Process(Arc<BTreeMap<String, String>>),
    Fixed(Arc<WebEnv>),
}

impl EnvSource {
    fn read(&self) -> Arc<WebEnv> {
        match self {
            Self::Process(files) => Arc::new(WebEnv::from_process_or(files)),
            Self::Fixed(env) => env.clone(),
        }
    }
}

/// The `system.web` plugin over the services' HTTP client, reading its variables from the
/// process environment.
pub fn plugin(services: &Services) -> Arc<dyn Plugin> {
    plugin_with_settings(services, Settings::default())
}

/// [`plugin`] with `settings` (`[web.search]`).
pub fn plugin_with_settings(services: &Services, settings: Settings) -> Arc<dyn Plugin> {
    build(
        services,
        EnvSource::Process(services.env_files.clone()),
        settings,
    )
}

/// The `system.web` plugin reading its variables from `env` instead of the process
/// environment (tests, embedders).
pub fn plugin_with_env(services: &Services, env: WebEnv, settings: Settings) -> Arc<dyn Plugin> {
    build(services, EnvSource::Fixed(Arc::new(env)), settings)
}

fn build(services: &Services, env: EnvSource, settings: Settings) -> Arc<dyn Plugin> {
    let tool = |spec: ToolSpec, run: Run| -> Arc<dyn Tool> {
        Arc::new(WebTool {
            spec,
            env: env.clone(),
            net: services.net.clone(),
            run,
            settings,
        })
    };
    let tools = vec![
        tool(spec::web_fetch(), Run::Fetch),
        tool(spec::web_search(), Run::Search),
        tool(spec::firecrawl_scrape(), Run::Scrape),
    ];
    let mut manifest = PluginManifest::new(
        "system.web",
        env!("CARGO_PKG_VERSION"),
        "Web",
        PluginKind::Builtin,
    );
    manifest.description =
        "Fetch web pages as readable Markdown and search the web (SearXNG, Brave, Tavily, Exa, Firecrawl; keyless DuckDuckGo as the fallback).".into();
    manifest.tags = vec![GROUP.to_string()];
    // None is required on its own: any one provider is enough for web_search, and
    // web_fetch needs none. web_search names them when none is set.
    manifest.env = ENV_VARS
        .iter()
        .map(|(name, description, secret)| EnvVar {
            name: name.to_string(),
            description: Some(description.to_string()),
            required: false,
            secret: *secret,
        })
        .collect();
    Arc::new(BuiltinPlugin::new(manifest, tools))
}

#[derive(Debug, Clone, Copy)]
enum Run {
    Fetch,
    Search,
    Scrape,
}

struct WebTool {
    spec: ToolSpec,
    env: EnvSource,
    net: Arc<NetClient>,
    run: Run,
    settings: Settings,
}

#[async_trait]
impl Tool for WebTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn unavailable(&self) -> Option<(String, Vec<String>)> {
        let unconfigured = match self.run {
            Run::Fetch => return None,
            Run::Search if self.settings.keyless_fallback => return None,
            Run::Search => search::unconfigured_search(&self.env.read()),
            Run::Scrape => search::unconfigured_scrape(&self.env.read()),
        };
        match unconfigured? {
            ToolError::Unconfigured { message, variables } => Some((message, variables)),
            other => Some((other.to_string(), Vec::new())),
        }
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        match self.run {
            Run::Fetch => fetch::run(&ctx, &self.net, args).await,
            Run::Search => {
                search::run(&ctx, &self.net, &self.env.read(), self.settings, args).await
            }
            Run::Scrape => search::scrape(&ctx, &self.net, &self.env.read(), args).await,
        }
    }
}

/// How long a request may take: what is left of the call's deadline, at most `cap`.
fn request_timeout(ctx: &CallContext, cap: std::time::Duration) -> std::time::Duration {
    ctx.deadline
        .saturating_duration_since(std::time::Instant::now())
        .min(cap)
        .max(std::time::Duration::from_millis(1))
}
