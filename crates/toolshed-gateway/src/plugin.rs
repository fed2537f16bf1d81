//! The `mcp` plugin kind: a server's tools as toolshed tools.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};
use toolshed_core::{
    CallContext, Health, Library, LoadRequest, McpServer, Plugin, PluginError, PluginKind,
    PluginLoader, PluginManifest, Tool, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::sandbox::SandboxMode;
use toolshed_ops::{CatalogSignals, Services};

use crate::client::{Era, RpcError};
use crate::convert;
use crate::http::HttpTarget;
use crate::library::{Offers, ServerLibrary};
use crate::names;
use crate::pins::{self, PinMode};
use crate::upstream::{Launch, Upstream};

/// Builds plugins of kind `mcp`.
pub struct McpLoader {
    services: Services,
}

impl McpLoader {
    /// A loader starting servers through `services`' process backend (and so its sandbox).
    pub fn new(services: Services) -> Self {
        Self { services }
    }
}

impl PluginLoader for McpLoader {
    fn kind(&self) -> PluginKind {
        PluginKind::Mcp
    }

    /// Degraded when the server withheld tools at its last start (kept with its pins).
    fn idle_health(&self, request: &LoadRequest) -> Health {
        let withheld = pins::read(&pins::pins_path(&request.dir)).withheld;
        let id = &request.manifest.id;
        let name = id.strip_prefix("mcp.").unwrap_or(id);
        pins::withheld_reason(name, &withheld).map_or(Health::Ok, Health::Degraded)
    }

    fn load(&self, request: LoadRequest) -> Result<Arc<dyn Plugin>, PluginError> {
        let server =
            request.manifest.mcp.clone().ok_or_else(|| {
                PluginError("a plugin of kind `mcp` needs an `[mcp]` table".into())
            })?;
        let prefix = names::prefix(&request.manifest);
        let mut launch = launch(&server, &request.config)?;
        launch.network_hosts = network_hosts(&request.grants.http);
        // A server may ask a model only when its manifest declares `llm` and it is granted.
        launch.sampling = request.manifest.capabilities.llm && request.grants.llm;
        launch.cache = cache_dir(&request.manifest.id);
        // A server reached over HTTP is dialled by the host's client, under the web rules.
        if let Some(http) = &mut launch.http {
            http.net = Some(self.services.net.clone());
        }
        let writes_files = server.writes_files();
        // Messages name the server as mounted: its prefix, or its name when it keeps its own.
        let label = if prefix.is_empty() {
            names::group(&prefix, &request.manifest.id)
                .trim_start_matches("mcp:")
                .to_string()
        } else {
            prefix.clone()
        };
        let upstream = Arc::new(Upstream::new(
            label,
            launch,
            self.services.ops.process.clone(),
            Some(crate::log::log_path(&request.dir)),
        ));
        Ok(Arc::new(McpPlugin {
            lister: Arc::new(Lister {
                group: names::group(&prefix, &request.manifest.id),
                prefix,
                upstream,
                pins: pins::pins_path(&request.dir),
                pin_mode: PinMode::parse(server.pin.as_deref()),
                withheld: std::sync::Mutex::new(Vec::new()),
                tools: std::sync::RwLock::new(Vec::new()),
                writes_files,
            }),
            base: request.manifest,
            idle: (server.idle_timeout_secs > 0)
                .then(|| Duration::from_secs(server.idle_timeout_secs)),
            manifest: OnceLock::new(),
            library: OnceLock::new(),
            catalog: self.services.catalog.clone(),
            watches: std::sync::Mutex::new(Vec::new()),
        }))
    }
}

/// `text` with every `${config.KEY}` replaced by that config value (strings as they are,
/// other values as JSON); an unknown key is an error naming it.
fn substitute(text: &str, config: &Map<String, Value>) -> Result<String, PluginError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${config.") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "${config.".len()..];
        let end = after.find('}').ok_or_else(|| {
            PluginError(format!(
                "`{text}` has a `${{config.` without its closing `}}`"
            ))
        })?;
        let key = &after[..end];
        match config.get(key) {
            Some(Value::String(s)) => out.push_str(s),
            Some(Value::Null) | None => {
                return Err(PluginError(format!(
                    "`${{config.{key}}}` has no value: set it with `toolshed plugins config ID {key} VALUE`"
                )));
            }
            Some(other) => out.push_str(&other.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The hosts a mounted server may reach: those granted to its plugin, or the sandbox's
/// own rules (public hosts, `[web] allow`) when it was granted `*`.
fn network_hosts(granted: &[String]) -> Option<Vec<String>> {
    if granted.iter().any(|h| h == "*") {
        None
    } else {
        Some(granted.to_vec())
    }
}

/// Where a mounted server keeps its package caches: `$XDG_CACHE_HOME/toolshed/mcp/ID`
/// (`~/.cache/…`), outside toolshed's data directory, which sandboxed commands never see.
fn cache_dir(id: &str) -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache")))?;
    base.is_absolute()
        .then(|| base.join("toolshed").join("mcp").join(id))
}

fn launch(server: &McpServer, config: &Map<String, Value>) -> Result<Launch, PluginError> {
    let sandbox = match &server.sandbox {
        None => None,
        Some(mode) => Some(SandboxMode::parse(mode).map_err(|e| PluginError(e.to_string()))?),
    };
    Ok(Launch {
        program: substitute(&server.command, config)?,
        args: server
            .args
            .iter()
            .map(|a| substitute(a, config))
            .collect::<Result<_, _>>()?,
        env: server
            .env
            .iter()
            .map(|(k, v)| Ok((k.clone(), substitute(v, config)?)))
            .collect::<Result<_, PluginError>>()?,
        workdir: server.cwd.clone().unwrap_or_else(|| ".".into()),
        sandbox,
        start_timeout: (server.start_timeout_ms > 0)
            .then(|| Duration::from_millis(server.start_timeout_ms)),
        http: match &server.url {
            None => None,
            Some(url) => Some(HttpTarget {
                url: substitute(url, config)?,
                headers: server
                    .headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), substitute(v, config)?)))
                    .collect::<Result<_, PluginError>>()?,
                net: None,
            }),
        },
        network_hosts: Some(Vec::new()),
        cache: None,
        era: Era::parse(server.protocol.as_deref()),
        sampling: false,
    })
}

/// A mounted MCP server.
pub struct McpPlugin {
    base: PluginManifest,
    idle: Option<Duration>,
    lister: Arc<Lister>,
    /// The manifest with the server's tools, once listed.
    manifest: OnceLock<PluginManifest>,
    catalog: Arc<CatalogSignals>,
    /// Its resources and prompts, once started, when the server offers any.
    library: OnceLock<Option<Arc<dyn Library>>>,
    /// Background work: stopping an idle server, following its list changes.
    watches: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// Lists a server's tools and keeps them: at `init`, and again whenever it says they
/// changed.
struct Lister {
    prefix: String,
    /// Its tools' group: `mcp:<prefix>`, or `mcp:<name>` for a server keeping its names.
    group: String,
    upstream: Arc<Upstream>,
    /// Where its tools' pinned digests are kept.
    pins: std::path::PathBuf,
    pin_mode: PinMode,
    /// Tools not mounted because their definition changed since it was pinned.
    withheld: std::sync::Mutex<Vec<String>>,
    tools: std::sync::RwLock<Vec<Arc<dyn Tool>>>,
    /// The server is a local process whose sandbox lets it write the workspace.
    writes_files: bool,
}

#[async_trait]
impl Plugin for McpPlugin {
    fn manifest(&self) -> &PluginManifest {
        self.manifest.get().unwrap_or(&self.base)
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.lister
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Starts the server and lists its tools.
    async fn init(&self) -> Result<(), PluginError> {
        self.lister.list().await?;
        let mut manifest = self.base.clone();
        manifest.tools = self.tools().iter().map(|t| t.spec().clone()).collect();
        let info = self.lister.upstream.info().await.unwrap_or_default();
        if manifest.description.is_empty()
            && let Some(instructions) = info["instructions"].as_str()
        {
            manifest.description = instructions.to_string();
        }
        let _ = self.manifest.set(manifest);
        let offers = Offers::from_info(&info);
        let _ = self.library.set(offers.any().then(|| {
            Arc::new(ServerLibrary::new(
                self.lister.prefix.clone(),
                self.lister.upstream.clone(),
                offers,
            )) as Arc<dyn Library>
        }));
        Ok(())
    }

    async fn start(&self) -> Result<(), PluginError> {
        let mut watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(idle) = self.idle {
            let upstream = Arc::downgrade(&self.lister.upstream);
            let every = (idle / 4).max(Duration::from_millis(100));
            watches.push(tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(upstream) = upstream.upgrade() else {
                        return;
                    };
                    upstream.stop_if_idle(idle).await;
                }
            }));
        }
        // A server that says its tools changed is listed again, and the host told.
        let lister = Arc::downgrade(&self.lister);
        let changed = self.lister.upstream.tools_changed.clone();
        let catalog = self.catalog.clone();
        let id = self.base.id.clone();
        watches.push(tokio::spawn(async move {
            loop {
                changed.notified().await;
                let Some(lister) = lister.upgrade() else {
                    return;
                };
                match lister.list().await {
                    Ok(()) => {
                        let count = lister.tools.read().unwrap_or_else(|e| e.into_inner()).len();
                        lister.upstream.note(&format!(
                            "the server said its tools changed (list_changed); {count} listed"
                        ));
                        catalog.tools_changed(&id);
                    }
                    Err(e) => tracing::warn!(plugin = %id, error = %e, "cannot list the MCP server's changed tools"),
                }
            }
        }));
        Ok(())
    }

    async fn stop(&self) -> Result<(), PluginError> {
        let watches = std::mem::take(&mut *self.watches.lock().unwrap_or_else(|e| e.into_inner()));
        for watch in watches {
            watch.abort();
            // Wait for it to end: one running on another thread may be writing the log.
            let _ = watch.await;
        }
        self.lister.upstream.stop().await;
        Ok(())
    }

    fn library(&self) -> Option<Arc<dyn Library>> {
        self.library.get().cloned().flatten()
    }

    async fn health(&self) -> Health {
        if let Some(why) = self.lister.upstream.failure() {
            return Health::Degraded(why);
        }
        let withheld = self
            .lister
            .withheld
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let name = self.base.id.strip_prefix("mcp.").unwrap_or(&self.base.id);
        pins::withheld_reason(name, &withheld).map_or(Health::Ok, Health::Degraded)
    }
}

impl Lister {
    /// Lists the server's tools (starting it if needed) and mounts those its pins allow.
    async fn list(&self) -> Result<(), PluginError> {
        let client = self.upstream.peer().await.map_err(PluginError)?;
        let listed = client.list_all("tools/list", "tools").await.map_err(|e| {
            let why = match e {
                RpcError::Server { message } => message,
                RpcError::Closed(why) => why,
            };
            PluginError(format!(
                "MCP server `{}` did not list its tools: {why}",
                self.upstream.name
            ))
        })?;
        let listed = self.check_pins(listed);
        let originals: Vec<String> = listed
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_string())
            .collect();
        let group = self.group.clone();
        let names = names::mounted_names(&self.prefix, &originals);
        let tools: Vec<Arc<dyn Tool>> = listed
            .iter()
            .zip(originals)
            .zip(names)
            .map(|((tool, original), name)| {
                let spec = convert::spec(tool, &name, &group);
                Arc::new(MountedTool {
                    writes_itself: self.writes_files && !spec.annotations.read_only,
                    spec,
                    original,
                    upstream: self.upstream.clone(),
                }) as Arc<dyn Tool>
            })
            .collect();
        *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools;
        Ok(())
    }

    /// The listed tools that may be mounted: those whose definition matches its pin (a new
    /// tool is pinned now); the others are withheld in strict mode, mounted with a warning
    /// in `warn` mode. Pins are written back when they changed.
    fn check_pins(&self, listed: Vec<Value>) -> Vec<Value> {
        if self.pin_mode == PinMode::Off {
            return listed;
        }
        let mut pins = pins::read(&self.pins);
        let before = pins.clone();
        let mut withheld = Vec::new();
        let mut kept = Vec::with_capacity(listed.len());
        for tool in listed {
            let name = tool["name"].as_str().unwrap_or_default().to_string();
            let digest = pins::digest(&tool);
            match pins.tools.get(&name) {
                Some(pinned) if *pinned == digest => kept.push(tool),
                Some(_) if self.pin_mode == PinMode::Strict => {
                    tracing::warn!(server = %self.upstream.name, tool = %name, "a pinned MCP tool changed its definition; withheld until accepted");
                    withheld.push(name);
                }
                Some(_) => {
                    tracing::warn!(server = %self.upstream.name, tool = %name, "a pinned MCP tool changed its definition (pin = \"warn\": mounted anyway)");
                    kept.push(tool);
                }
                None => {
                    pins.tools.insert(name, digest);
                    kept.push(tool);
                }
            }
        }
        // Kept for processes that list this server from its record without starting it.
        pins.withheld.clone_from(&withheld);
        if pins != before
            && let Err(e) = pins::write(&self.pins, &pins)
        {
            tracing::warn!(server = %self.upstream.name, error = %e, "cannot write the MCP server's pins; its tools are pinned for this run only");
        }
        *self.withheld.lock().unwrap_or_else(|e| e.into_inner()) = withheld;
        kept
    }
}

/// One tool of a mounted server.
struct MountedTool {
    spec: ToolSpec,
    /// The tool's name on its server.
    original: String,
    upstream: Arc<Upstream>,
    /// Its server is a local process that may write the workspace (not `read-only`, not
    /// reached over HTTP), and the server does not say the tool only reads.
    writes_itself: bool,
}

#[async_trait]
impl Tool for MountedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn writes_past_the_boundary(&self) -> bool {
        self.writes_itself
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let upstream = &self.upstream;
        let _in_flight = upstream.begin();
        let client = upstream.peer().await.map_err(ToolError::Failed)?;
        // What the server asks during the call goes to this call's person and model, and is
        // asked no longer once the call ends, however it ends.
        let asked = ctx.cancel.child_token();
        let _ended = asked.clone().drop_guard();
        let asks = Arc::new(crate::asks::Asks::new(
            ctx.owner.0.clone(),
            ctx.asker.clone(),
            ctx.sampler.clone(),
            upstream.may_sample(),
            asked,
            ctx.log.clone(),
        ));
        let _ = client.shared_name().set(upstream.name.clone());
        let mut input: Option<(Value, Option<String>)> = None;
        for _round in 0..=MAX_INPUT_ROUNDS {
            let (id, reply) = client
                .start_call(
                    &self.original,
                    &args,
                    ctx.progress.clone(),
                    asks.clone(),
                    input.as_ref(),
                )
                .await
                .map_err(|e| self.failed(e))?;
            // Dropped (the call abandoned) before its reply: the server's requests are not
            // taken for it any more.
            let _forget = Forget(&client, id);
            let answer = tokio::select! {
                answer = client.finish(id, reply) => answer,
                () = ctx.cancel.cancelled() => {
                    // Tell the server, so it stops the work too.
                    client.cancel(id, "the call was cancelled or its deadline passed").await;
                    return Err(ToolError::Cancelled);
                }
            };
            let mut result = match answer {
                Ok(result) => result,
                Err(RpcError::Server { message }) => {
                    return Err(ToolError::Failed(format!(
                        "MCP server `{}` refused the call: {message}",
                        upstream.name
                    )));
                }
                Err(RpcError::Closed(why)) => {
                    return Err(ToolError::Failed(upstream.broken(&why).await));
                }
            };
            // A 2026-07-28 server asks by answering `input_required`: its questions are put
            // to the call's person and model, and the call made again with the answers.
            if result["resultType"].as_str() != Some("input_required") {
                return Ok(convert::output(result));
            }
            let requests = result
                .get_mut("inputRequests")
                .map(Value::take)
                .and_then(|r| match r {
                    Value::Object(map) => Some(map),
                    _ => None,
                })
                .unwrap_or_default();
            let state = result["requestState"].as_str().map(String::from);
            let responses = crate::asks::input_responses(&asks, &upstream.name, &requests)
                .await
                .map_err(|why| {
                    ToolError::Failed(format!(
                        "MCP server `{}` asked for input: {why}",
                        upstream.name
                    ))
                })?;
            input = Some((responses, state));
        }
        Err(ToolError::Failed(format!(
            "MCP server `{}` asked for input more than {MAX_INPUT_ROUNDS} times in one call; it was stopped",
            upstream.name
        )))
    }
}

/// Forgets a call of the server when dropped.
struct Forget<'a>(&'a crate::client::Client, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.end_call(self.1);
    }
}

/// The most `input_required` rounds one call of a mounted 2026-07-28 server may take.
const MAX_INPUT_ROUNDS: usize = 8;

impl MountedTool {
    fn failed(&self, e: RpcError) -> ToolError {
        ToolError::Failed(match e {
            RpcError::Server { message } => {
                format!("MCP server `{}`: {message}", self.upstream.name)
            }
            RpcError::Closed(why) => format!("MCP server `{}`: {why}", self.upstream.name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_values_fill_args_and_env() {
        let mut config = Map::new();
        config.insert("token".into(), json!("s3cret"));
        config.insert("port".into(), json!(8080));
        assert_eq!(
            substitute("Bearer ${config.token}:${config.port}", &config).unwrap(),
            "Bearer s3cret:8080"
        );
        let err = substitute("${config.missing}", &config).unwrap_err().0;
        assert!(err.contains("`${config.missing}` has no value"), "{err}");
        assert!(substitute("${config.token", &config).is_err());
    }
}
