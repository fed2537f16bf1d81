//! The Node.js runtime: a plugin that needs Node's built-in modules (`crypto`, `fs`,
//! `path`, …) or npm packages runs in a `node` process of its own, started through the
//! host's process backend and so inside the command sandbox, behind the same plugin
//! interface as a QuickJS one ([`spawn`] gives the same handle as the QuickJS thread's).
//!
//! - **The choice** is made once, at load, from the plugin's files (`toolshed_core::runtime`): a
//!   `require`/`import` of a Node built-in, or `dependencies` in its `package.json`. Every
//!   other plugin stays in QuickJS, which starts faster and has tighter limits.
//! - **The sandbox**: read-only (writable workspace only with an `fs-write` grant), its own
//!   network whose only way out is a proxy reaching the hosts granted to the plugin (none:
//!   no network), toolshed's data dir hidden except for the plugin's own directory, shown
//!   read-only. The host script tunnels `http`, `https` and `fetch` through that proxy.
//! - **The protocol**: one JSON object per line; the host script (`host.js`) comes on the
//!   command line, the plugin's settings in the first line (`init`). Calls run
//!   concurrently in Node; each has its deadline and cancellation here. What the plugin
//!   asks of the host (`ctx.tools.call`, `ctx.memory`, `ctx.events.publish`) comes back as
//!   `host` requests, checked against its grants like QuickJS's, run with the call's
//!   context.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use toolshed_core::{CallContext, CancellationToken, ToolError};
use toolshed_ops::Process;
use toolshed_ops::process::{OutputLimits, SpawnRequest, Stdin, Stop, Stream};
use toolshed_ops::sandbox::SandboxMode;

use crate::action::ActionDef;
use crate::engine::{CallRequest, HostError, JsReturn};
use crate::limits::show_duration;
use crate::worker::{Failure, HEALTH_ACTION, Ready, WorkerConfig, WorkerHandle, set_failure};

mod requests;
use requests::{answer, host_request};

/// The host side of the protocol, run by `node -e`.
const HOST_SCRIPT: &str = concat!(
    include_str!("host.js"),
    "\nconst staticActions = ",
    include_str!("../static_actions.js"),
    ";\nconst spacesApi = ",
    include_str!("../spaces_api.js"),
    ";\n"
);
/// Node's own start-up, on top of the activation limit.
const START_GRACE: Duration = Duration::from_secs(5);
/// How long `deactivate()` and exiting may take before the process tree is killed.
const STOP_WAIT: Duration = Duration::from_secs(3);
/// The V8 heap limit given to a plugin's process, in MiB.
const HEAP_MIB: u64 = 256;
/// The longest protocol line accepted beyond the output limit (JSON quoting, the rest of
/// the message).
const LINE_SLACK: usize = 1 << 20;
/// Log lines kept per call, and outside calls in all.
const MAX_LOG_LINES: usize = 200;
const MAX_BACKGROUND_LOG_LINES: usize = 1000;
/// The longest log line or progress message kept.
const MAX_TEXT: usize = 4096;
const MAX_PROGRESS: usize = 1000;
/// Lines read from the process and not yet handled; lines written to it and not yet sent.
const INCOMING_LINES: usize = 64;
const OUTGOING_LINES: usize = 256;
/// How long a call the caller stopped may keep running in the process before the
/// process is stopped.
const OVERDUE: Duration = Duration::from_secs(3);
/// Host requests in flight per call.
const MAX_HOST_OPS: usize = 64;
/// The `node` program on the host's `PATH`, or the standard one when `PATH` is unset
/// (Debian also names it `nodejs`).
pub(crate) fn find_node() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| toolshed_ops::process::DEFAULT_PATH.into());
    ["node", "nodejs"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// Starts the plugin's Node.js process and activates it; the same handle and readiness
/// report as [`crate::worker::spawn`].
pub(crate) fn spawn(config: WorkerConfig) -> Result<(WorkerHandle, Ready), String> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| "a Node.js plugin must be started inside a tokio runtime".to_string())?;
    let (commands_tx, commands_rx) = mpsc::channel(config.limits.max_queued_calls.max(1));
    let (ready_tx, ready_rx) = oneshot::channel();
    let (exited_tx, exited_rx) = oneshot::channel::<()>();
    let shutdown = CancellationToken::new();
    let failure: Failure = Arc::new(Mutex::new(None));
    let task_shutdown = shutdown.clone();
    let task_failure = failure.clone();
    runtime.spawn(async move {
        let _exited = exited_tx;
        serve(config, commands_rx, task_shutdown, ready_tx, task_failure).await;
    });
    Ok((
        WorkerHandle {
            commands: commands_tx,
            shutdown,
            exited: exited_rx,
            failure,
        },
        ready_rx,
    ))
}

async fn serve(
    config: WorkerConfig,
    commands: mpsc::Receiver<CallRequest>,
    shutdown: CancellationToken,
    ready: oneshot::Sender<Result<Vec<ActionDef>, String>>,
    failure: Failure,
) {
    let mut node = match Node::start(&config) {
        Ok(node) => node,
        Err(reason) => {
            let _ = ready.send(Err(reason));
            return;
        }
    };
    let limit = config.limits.activate_timeout;
    let activated = tokio::select! {
        biased;
        _ = shutdown.cancelled() => return,
        outcome = tokio::time::timeout(limit + START_GRACE, node.activate(&config)) => outcome,
    };
    let defs = match activated {
        Ok(Ok(defs)) => defs,
        Ok(Err(reason)) => {
            let _ = ready.send(Err(reason));
            return;
        }
        Err(_) => {
            let _ = ready.send(Err(format!(
                "activation did not finish within {}",
                show_duration(limit)
            )));
            return;
        }
    };
    if ready.send(Ok(defs)).is_err() {
        return;
    }
    node.run(&config, commands, shutdown, failure).await;
}

/// One call waiting for Node's answer.
struct Pending {
    reply: oneshot::Sender<Result<JsReturn, ToolError>>,
    ctx: CallContext,
    /// Stops the deadline watcher and the host requests when the call ends.
    done: CancellationToken,
    logs: usize,
    progress: usize,
    host_ops: usize,
}

struct Node {
    process: Arc<Process>,
    plugin_id: String,
    /// The process's output, a line at a time (parsed as each is handled).
    incoming: mpsc::Receiver<Vec<u8>>,
    out: mpsc::Sender<String>,
    background_logs: usize,
}

impl Node {
    fn start(config: &WorkerConfig) -> Result<Self, String> {
        let program = find_node().ok_or_else(|| {
            "it needs Node.js, which is not installed here: install it (`apt-get install nodejs`) and reload the plugin".to_string()
        })?;
        let processes = &config.access.processes;
        // Always a sandbox, whatever the host's mode: a Node.js plugin is never run with
        // full access (a host without a sandbox refuses to start it, saying why).
        let sandbox = if config.reach.has_fs_write() {
            SandboxMode::WorkspaceWrite
        } else {
            SandboxMode::ReadOnly
        };
        let mut request = SpawnRequest::new(program.display().to_string())
            .args([
                format!("--max-old-space-size={HEAP_MIB}"),
                "-e".into(),
                HOST_SCRIPT.into(),
            ])
            .stdin(Stdin::Stream)
            .limits(OutputLimits {
                head_bytes: 8 * 1024,
                tail_bytes: 64 * 1024,
                kill_after_bytes: None,
            })
            .env("NODE_ENV", "production");
        for (name, value) in &config.env {
            request = request.env(name, value);
        }
        request.sandbox = Some(sandbox);
        request.network_hosts = Some(config.reach.host_list());
        request.visible = vec![config.dir.clone()];
        request.revealed = vec![config.dir.clone()];
        let process = processes
            .spawn(&request)
            .map_err(|e| format!("its Node.js process cannot start: {e}"))?;
        let process = Arc::new(process);
        let stdio = process
            .take_stdio()
            .ok_or("this process backend cannot hand over a child's stdin and stdout")?;
        let (reader, writer) = stdio
            .into_pipes()
            .map_err(|e| format!("cannot talk to its Node.js process: {e}"))?;
        let max_line = config.limits.max_output_bytes.saturating_add(LINE_SLACK);
        let (incoming_tx, incoming) = mpsc::channel(INCOMING_LINES);
        tokio::spawn(read_lines(
            reader,
            incoming_tx,
            max_line,
            config.plugin_id.clone(),
        ));
        let (out, out_rx) = mpsc::channel(OUTGOING_LINES);
        tokio::spawn(write_lines(writer, out_rx));
        Ok(Self {
            process,
            plugin_id: config.plugin_id.clone(),
            incoming,
            out,
            background_logs: 0,
        })
    }

    /// Queues a line for the process, waiting while the queue is full (activation and
    /// stopping, which have their own limits).
    async fn send(&self, message: Value) {
        let _ = self.out.send(message.to_string()).await;
    }

    /// Queues a line for the process without waiting: `false` when the queue is full (the
    /// process stopped reading its input) or gone.
    fn send_now(&self, message: Value) -> bool {
        self.out.try_send(message.to_string()).is_ok()
    }

    /// What the process printed last, for saying why it stopped.
    fn last_words(&self) -> String {
        let snapshot = self.process.snapshot(Stream::Stderr);
        let text = String::from_utf8_lossy(&snapshot.tail);
        let text = text.trim();
        let start = text.len().saturating_sub(800);
        let start = (start..=text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(text.len());
        let tail = &text[start..];
        if tail.is_empty() {
            match self.process.exit() {
                Some(exit) => format!("its Node.js process exited ({:?})", exit.status),
                None => "its Node.js process closed its output".into(),
            }
        } else {
            format!("its Node.js process exited: {tail}")
        }
    }

    async fn activate(&mut self, config: &WorkerConfig) -> Result<Vec<ActionDef>, String> {
        let translations = crate::i18n::Translations::load(&config.dir, &config.language)?;
        let languages: Map<String, Value> = translations
            .other_languages()
            .into_iter()
            .map(|(language, tables)| (language, Value::Array(tables.tables())))
            .collect();
        let strings = translations.tables();
        self.send(json!({
            "op": "init",
            "id": config.plugin_id,
            "version": config.version,
            "dir": config.dir,
            "entry": config.entry,
            "config": config.config,
            "strings": strings,
            "languages": languages,
            "contextFirst": config.context_first,
            "env": config.env,
            "catalog": config.catalog.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
        }))
        .await;
        loop {
            let Some(line) = self.incoming.recv().await else {
                return Err(format!("during activation, {}", self.last_words()));
            };
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            match message["op"].as_str() {
                Some("log") => self.log(&message, None),
                Some("ready") => return defs_from(&message, config),
                Some("failed") => {
                    let error = &message["error"];
                    let text = error["message"].as_str().unwrap_or("activation failed");
                    let at = error["stack"].as_str().unwrap_or("").trim();
                    return Err(if at.is_empty() {
                        format!("activation failed: {text}")
                    } else {
                        format!("activation failed: {text} ({at})")
                    });
                }
                _ => {}
            }
        }
    }

    fn log(&mut self, message: &Value, pending: Option<&mut Pending>) {
        let count = match pending {
            Some(p) => {
                p.logs += 1;
                p.logs
            }
            None => {
                self.background_logs += 1;
                self.background_logs
            }
        };
        let limit = if message["call"].is_null() {
            MAX_BACKGROUND_LOG_LINES
        } else {
            MAX_LOG_LINES
        };
        if count > limit {
            if count == limit + 1 {
                tracing::warn!(plugin = %self.plugin_id, "the plugin logs too much; further lines are dropped");
            }
            return;
        }
        let text = cut(message["text"].as_str().unwrap_or(""), MAX_TEXT);
        let plugin = &self.plugin_id;
        match message["level"].as_str() {
            Some("error") => tracing::error!(plugin = %plugin, "{text}"),
            Some("warn") => tracing::warn!(plugin = %plugin, "{text}"),
            Some("debug") => tracing::debug!(plugin = %plugin, "{text}"),
            _ => tracing::info!(plugin = %plugin, "{text}"),
        }
    }

    async fn run(
        mut self,
        config: &WorkerConfig,
        mut commands: mpsc::Receiver<CallRequest>,
        shutdown: CancellationToken,
        failure: Failure,
    ) {
        let mut pending: HashMap<u64, Pending> = HashMap::new();
        let (stops_tx, mut stops) = mpsc::unbounded_channel::<(u64, ToolError)>();
        let mut next: u64 = 1;
        let mut dead: Option<String> = None;
        // The call the process is running: calls go one at a time (as in QuickJS), so a
        // host request can only ever act for the call that is running.
        let mut running: Option<u64> = None;
        // When a stopped call that the process has not finished must be done by.
        let mut overdue: Option<tokio::time::Instant> = None;
        loop {
            let failed: Option<String> = tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                Some((id, error)) = stops.recv() => {
                    let mut failed = None;
                    if let Some(call) = pending.remove(&id) {
                        call.done.cancel();
                        let _ = call.reply.send(Err(error));
                        if !self.send_now(json!({"op": "cancel", "call": id})) {
                            failed = Some("it stopped reading its input".to_string());
                        }
                        overdue = Some(tokio::time::Instant::now() + OVERDUE);
                    }
                    failed
                }
                _ = async { tokio::time::sleep_until(overdue.unwrap_or_else(tokio::time::Instant::now)).await }, if overdue.is_some() && dead.is_none() => {
                    Some("a call went on past its deadline and did not stop when cancelled (a loop that never awaits?)".to_string())
                }
                line = self.incoming.recv(), if dead.is_none() => match line {
                    Some(line) => {
                        if let Ok(message) = serde_json::from_slice::<Value>(&line) {
                            if message["op"] == "done" && message["call"].as_u64() == running {
                                running = None;
                                overdue = None;
                            }
                            self.handle(config, message, &mut pending).await
                        } else {
                            None
                        }
                    }
                    None => Some(self.last_words()),
                },
                request = commands.recv(), if running.is_none() || dead.is_some() => {
                    let Some(request) = request else { break };
                    if let Some(reason) = &dead {
                        let _ = request.reply.send(Err(ToolError::Failed(format!(
                            "plugin `{}` is not working: {reason}; reload the plugin",
                            self.plugin_id
                        ))));
                        continue;
                    }
                    // The caller gave up while it waited for the previous call.
                    if request.cancel.is_cancelled() || std::time::Instant::now() >= request.ctx.deadline {
                        let _ = request.reply.send(Err(ToolError::Cancelled));
                        continue;
                    }
                    let id = next;
                    next += 1;
                    running = Some(id);
                    if self.start_call(id, request, &stops_tx, &mut pending) {
                        None
                    } else {
                        Some("it stopped reading its input".to_string())
                    }
                }
            };
            if let Some(reason) = failed {
                tracing::warn!(plugin = %self.plugin_id, %reason, "the plugin's Node.js process is stopped");
                set_failure(&failure, format!("{reason}; reload the plugin"));
                for (_, call) in pending.drain() {
                    call.done.cancel();
                    let _ = call.reply.send(Err(ToolError::Failed(format!(
                        "plugin `{}` is not working: {reason}",
                        self.plugin_id
                    ))));
                }
                // Nothing of it keeps running: not its loops, not its connections.
                self.process.start_stop(Stop::graceful());
                dead = Some(reason);
                running = None;
                overdue = None;
            }
        }
        for (_, call) in pending.drain() {
            call.done.cancel();
            let _ = call.reply.send(Err(ToolError::Failed(format!(
                "plugin `{}` stopped during the call",
                self.plugin_id
            ))));
        }
        if dead.is_none() {
            self.send(json!({"op": "stop"})).await;
            let _ = tokio::time::timeout(STOP_WAIT, self.process.wait(STOP_WAIT)).await;
        }
        self.process.terminate(Stop::graceful()).await;
    }

    /// Sends call `id` to the process; `false` when it stopped reading its input.
    fn start_call(
        &self,
        id: u64,
        request: CallRequest,
        stops: &mpsc::UnboundedSender<(u64, ToolError)>,
        pending: &mut HashMap<u64, Pending>,
    ) -> bool {
        let CallRequest {
            action,
            inputs,
            ctx,
            cancel,
            started,
            reply,
            ..
        } = request;
        let done = CancellationToken::new();
        let deadline = ctx.deadline;
        let stops = stops.clone();
        let watch = done.clone();
        tokio::spawn(async move {
            let stopped = tokio::select! {
                _ = watch.cancelled() => return,
                _ = cancel.cancelled() => ToolError::Cancelled,
                _ = tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)) => {
                    ToolError::Timeout(deadline.saturating_duration_since(started))
                }
            };
            let _ = stops.send((id, stopped));
        });
        let message = json!({
            "op": "call",
            "call": id,
            "action": if action == HEALTH_ACTION { "\u{0}health" } else { action.as_str() },
            "inputs": inputs,
            "config": ctx.config,
        });
        pending.insert(
            id,
            Pending {
                reply,
                ctx,
                done,
                logs: 0,
                progress: 0,
                host_ops: 0,
            },
        );
        self.send_now(message)
    }

    /// Handles one message of the process; the reason it must stop, if the message shows
    /// one.
    async fn handle(
        &mut self,
        config: &WorkerConfig,
        message: Value,
        pending: &mut HashMap<u64, Pending>,
    ) -> Option<String> {
        let call = message["call"].as_u64();
        match message["op"].as_str() {
            Some("log") => {
                let entry = call.and_then(|c| pending.get_mut(&c));
                self.log(&message, entry);
            }
            Some("progress") => {
                if let Some(p) = call.and_then(|c| pending.get_mut(&c)) {
                    p.progress += 1;
                    if p.progress <= MAX_PROGRESS {
                        let text = cut(message["message"].as_str().unwrap_or(""), MAX_TEXT);
                        p.ctx.progress.message(text);
                    }
                }
            }
            Some("done") => {
                let p = call.and_then(|c| pending.remove(&c))?;
                p.done.cancel();
                let _ = p.reply.send(self.result(config, &message));
            }
            Some("host") => {
                let p = call.and_then(|c| pending.get_mut(&c))?;
                let id = message["id"].clone();
                p.host_ops += 1;
                if p.host_ops > MAX_HOST_OPS {
                    let error = HostError::from(format!(
                        "more than {MAX_HOST_OPS} host operations in one call"
                    ));
                    if !self.send_now(answer(&id, Err(error))) {
                        return Some("it stopped reading its input".into());
                    }
                    return None;
                }
                let out = self.out.clone();
                let ctx = p.ctx.clone();
                let done = p.done.clone();
                let method = message["method"].as_str().unwrap_or("").to_string();
                let params = message["params"].clone();
                let config = config.clone();
                tokio::spawn(async move {
                    let result = tokio::select! {
                        _ = done.cancelled() => return,
                        result = host_request(&config, &ctx, &method, params) => result,
                    };
                    // A process that stopped reading gets no answer; its call ends by
                    // its deadline.
                    let _ = out.try_send(answer(&id, result).to_string());
                });
            }
            _ => {}
        }
        None
    }

    fn result(&self, config: &WorkerConfig, message: &Value) -> Result<JsReturn, ToolError> {
        if let Some(error) = message.get("error") {
            let text = error["message"].as_str().unwrap_or("the action failed");
            if let Some(at) = error["stack"].as_str().filter(|s| !s.trim().is_empty()) {
                tracing::info!(plugin = %self.plugin_id, at = %at.trim(), "an action failed: {text}");
            }
            return Err(ToolError::Failed(text.to_string()));
        }
        let result = &message["result"];
        let limit = config.limits.max_output_bytes;
        let too_big = |size: usize| {
            ToolError::Failed(format!(
                "the action's result is {size} bytes; the limit is {limit}"
            ))
        };
        match result["kind"].as_str() {
            Some("text") => {
                let text = result["value"].as_str().unwrap_or("").to_string();
                if text.len() > limit {
                    return Err(too_big(text.len()));
                }
                Ok(JsReturn::Text(text))
            }
            Some("json") => {
                let size = result["value"].to_string().len();
                if size > limit {
                    return Err(too_big(size));
                }
                Ok(JsReturn::Json(result["value"].clone()))
            }
            _ => Ok(JsReturn::Nothing),
        }
    }
}

/// The actions Node reported as registered (each `{action, runnable}`), checked as
/// QuickJS's are, plus the manifest's tools served by exported functions.
fn defs_from(ready: &Value, config: &WorkerConfig) -> Result<Vec<ActionDef>, String> {
    let (prefix, plane) = (&config.prefix, config.plane);
    let actions = ready["actions"].as_array().cloned().unwrap_or_default();
    if actions.len() > config.limits.max_actions {
        return Err(format!(
            "registerActions refused the actions: the plugin registers {} actions; the limit is {}",
            actions.len(),
            config.limits.max_actions
        ));
    }
    let mut defs: Vec<ActionDef> = Vec::with_capacity(actions.len());
    for (i, item) in actions.iter().enumerate() {
        let json = &item["action"];
        // A node of an Agent Spaces workflow editor, not a tool.
        if json.get("tool") == Some(&Value::Bool(false)) {
            continue;
        }
        let number = i + 1;
        let def = ActionDef::parse(json, prefix, plane).map_err(|e| {
            let e = if e.starts_with("action `") {
                e
            } else {
                format!("action #{number}: {e}")
            };
            format!("registerActions refused the actions: {e}")
        })?;
        if item["runnable"] != Value::Bool(true) {
            return Err(format!(
                "registerActions refused the actions: action #{number} (`{}`): `run` must be a function (inputs, ctx) => result",
                def.name
            ));
        }
        let mut def = def;
        if let Some(Value::Object(translations)) = item.get("translations") {
            for (language, other) in translations {
                if let Ok(other) = ActionDef::parse(other, prefix, plane) {
                    def.spec.translations.insert(
                        language.clone(),
                        toolshed_core::ToolText {
                            title: other.spec.title,
                            description: other.spec.description,
                        },
                    );
                }
            }
        }
        if defs.iter().any(|d| d.name == def.name) {
            return Err(format!(
                "registerActions refused the actions: two actions are named `{}`; action names must be unique within a plugin",
                def.name
            ));
        }
        defs.push(def);
    }
    let exported: Vec<&str> = ready["catalog"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let registered = ready["registered"] == Value::Bool(true);
    for spec in &config.catalog {
        if exported.contains(&spec.name.as_str()) {
            if !defs.iter().any(|d| d.spec.name == spec.name) {
                defs.push(ActionDef::from_catalog(spec.clone(), prefix, plane));
            }
        } else if !registered {
            return Err(format!(
                "the manifest lists the tool `{}`, but {} neither registers actions nor exports a function named `{}`",
                spec.name, config.entry, spec.name
            ));
        }
    }
    if ready["exportsActivate"] != Value::Bool(true) && config.catalog.is_empty() {
        return Err(format!(
            "{} does not export a function named `activate`; add `exports.activate = (context) => {{ context.registerActions([...]) }}`",
            config.entry
        ));
    }
    Ok(defs)
}

/// Reads the process's output line by line (each at most `max_line` bytes; at most
/// [`INCOMING_LINES`] waiting). A longer line ends the plugin: the run loop sees the
/// channel close and stops the process.
async fn read_lines(
    mut reader: tokio::net::unix::pipe::Receiver,
    to: mpsc::Sender<Vec<u8>>,
    max_line: usize,
    plugin: String,
) {
    let mut buffer: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buffer.extend_from_slice(&chunk[..n]);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if to.send(line).await.is_err() {
                return;
            }
        }
        if buffer.len() > max_line {
            tracing::warn!(plugin = %plugin, "the plugin's Node.js process wrote a message longer than {max_line} bytes; stopping it");
            return;
        }
    }
}

async fn write_lines(
    mut writer: tokio::net::unix::pipe::Sender,
    mut lines: mpsc::Receiver<String>,
) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if writer.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
