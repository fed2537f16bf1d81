//! One running language server: started inside the command sandbox, initialized, kept in
//! step with the files it was shown, and followed (diagnostics, progress, status) from its
//! notifications.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Notify;
use toolshed_ops::process::{OutputLimits, Process, ProcessOps, SpawnRequest, Stdin, Stop, Stream};

use super::languages::Language;
use super::rpc::{Rpc, RpcError};
use super::text::Encoding;
use super::uri::uri_of;

/// How long a server may take to answer `initialize`.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(60);
/// The most documents kept open with one server; the least recently used is closed.
const MAX_OPEN: usize = 200;
/// The most messages a server logged that are kept, for the reason of a failure.
const MAX_LOG: usize = 20;

/// A document the server was shown, as it was shown.
struct Doc {
    version: i32,
    text: String,
    used: u64,
}

/// Diagnostics the server published for one document.
#[derive(Clone)]
pub(crate) struct Published {
    /// Counts publications, across documents, when this one came.
    pub generation: u64,
    /// The document version they are about, when the server says.
    pub version: Option<i32>,
    pub diagnostics: Vec<lsp_types::Diagnostic>,
}

#[derive(Default)]
struct State {
    docs: HashMap<String, Doc>,
    diagnostics: HashMap<String, Published>,
    /// Work in progress the server reported (`$/progress`), by token, with its title.
    progress: HashMap<String, String>,
    /// What rust-analyzer's `experimental/serverStatus` said last.
    quiescent: Option<bool>,
    /// Counts every notification that may change what a wait waits for.
    events: u64,
    /// When the last of those came.
    last_event: Option<Instant>,
    uses: u64,
    log: VecDeque<String>,
}

/// A running language server.
pub(crate) struct Server {
    pub language: Language,
    /// Its root, relative to the workspace (`.` for the workspace itself).
    pub root: String,
    pub encoding: Encoding,
    rpc: Rpc,
    process: Arc<Process>,
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
    /// Serializes what is sent about documents, so versions go out in order.
    sync: tokio::sync::Mutex<()>,
    pub last_used: Mutex<Instant>,
    pub request_timeout: Duration,
    /// Its project's directories under watch, once set.
    watch: Mutex<Option<super::watch::Watch>>,
}

impl Server {
    /// Starts the server of `language` for the project at `root` (workspace-relative;
    /// `workspace` is the workspace's absolute path) and initializes it.
    pub(crate) async fn start(
        processes: &dyn ProcessOps,
        language: &Language,
        workspace: &Path,
        root: &str,
        request_timeout: Duration,
        remote: bool,
    ) -> Result<Self, String> {
        let Some((program, args)) = language.command.split_first() else {
            return Err(format!("[lsp.{}] command is empty", language.name));
        };
        let resolved = if remote {
            // Looked up on the workspace's machine when it starts.
            std::path::PathBuf::from(program)
        } else {
            let (language, program) = (language.clone(), program.clone());
            let dir = workspace.join(root);
            tokio::task::spawn_blocking(move || super::program::locate(&language, &program, &dir))
                .await
                .map_err(|e| e.to_string())??
        };
        let mut request = SpawnRequest::new(resolved.display().to_string())
            .args(args.iter().cloned())
            .workdir(root)
            .stdin(Stdin::Stream)
            .limits(OutputLimits {
                head_bytes: 4 * 1024,
                tail_bytes: 32 * 1024,
                kill_after_bytes: None,
            });
        // The configured server stays visible to itself wherever it is installed.
        request.visible = std::iter::once(resolved.clone())
            .filter(|_| !remote)
            .chain(args.iter().map(std::path::PathBuf::from))
            .filter(|p| p.is_absolute())
            .collect();
        let process = Arc::new(processes.spawn(&request).map_err(|e| {
            format!(
                "cannot start the {} language server `{program}`: {e}",
                language.name
            )
        })?);
        let stdio = process
            .take_stdio()
            .ok_or("this process backend cannot hand over a child's pipes")?;
        let pipes = stdio
            .into_pipes()
            .map_err(|e| format!("cannot use the language server's pipes: {e}"))?;
        let state: Arc<Mutex<State>> = Arc::default();
        let changed = Arc::new(Notify::new());
        let on_notice = {
            let (state, changed) = (state.clone(), changed.clone());
            Box::new(move |method: &str, params: Value| {
                if notice(&state, method, params) {
                    changed.notify_waiters();
                }
            })
        };
        let root_abs = workspace.join(root);
        let folder_uri = uri_of(&root_abs);
        let settings = language.settings.clone();
        let folders = json!([{"uri": folder_uri, "name": root_abs.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "workspace".into())}]);
        let answer_folders = folders.clone();
        let on_request = Box::new(move |method: &str, params: &Value| match method {
            "workspace/configuration" => {
                let items = params["items"].as_array().map_or(0, Vec::len);
                Some(Value::Array(
                    (0..items)
                        .map(|i| {
                            let section = params["items"][i]["section"].as_str().unwrap_or("");
                            section_of(&settings, section)
                        })
                        .collect(),
                ))
            }
            "workspace/workspaceFolders" => Some(answer_folders.clone()),
            "window/workDoneProgress/create"
            | "client/registerCapability"
            | "client/unregisterCapability"
            | "window/showMessageRequest"
            | "workspace/diagnostic/refresh"
            | "workspace/semanticTokens/refresh"
            | "workspace/inlayHint/refresh"
            | "workspace/codeLens/refresh" => Some(Value::Null),
            // Edits reach the workspace only through the rename tool.
            "workspace/applyEdit" => {
                Some(json!({"applied": false, "failureReason": "toolshed applies edits itself"}))
            }
            _ => None,
        });
        let rpc = Rpc::start(pipes.0, pipes.1, on_notice, on_request);
        let capabilities: lsp_types::ClientCapabilities = serde_json::from_value(json!({
            "general": {"positionEncodings": ["utf-8", "utf-16"]},
            "window": {"workDoneProgress": true},
            "workspace": {
                "configuration": true,
                "workspaceFolders": true,
                "symbol": {"dynamicRegistration": false},
                "workspaceEdit": {"documentChanges": true},
            },
            "textDocument": {
                "synchronization": {"didSave": true, "dynamicRegistration": false},
                "definition": {"linkSupport": true},
                "implementation": {"linkSupport": true},
                "references": {},
                "hover": {"contentFormat": ["markdown", "plaintext"]},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                "rename": {"prepareSupport": false},
                "publishDiagnostics": {"versionSupport": true},
            },
            "experimental": {"serverStatusNotification": true},
        }))
        .map_err(|e| format!("client capabilities: {e}"))?;
        let params = json!({
            // Not toolshed's pid: the server runs in a PID namespace of its own, where that
            // number is some other process or none, and a server that watches its parent
            // (pyright) would exit when it seems gone.
            "processId": Value::Null,
            "clientInfo": {"name": "toolshed", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": folder_uri,
            "workspaceFolders": folders,
            "capabilities": capabilities,
            "initializationOptions": language.settings.get("initialization_options").cloned().unwrap_or(Value::Null),
        });
        let server = Self {
            language: language.clone(),
            root: root.to_string(),
            encoding: Encoding::Utf16,
            rpc,
            process,
            state,
            changed,
            sync: tokio::sync::Mutex::new(()),
            last_used: Mutex::new(Instant::now()),
            request_timeout,
            watch: Mutex::new(None),
        };
        let init = tokio::select! {
            answer = server.rpc.call("initialize", params, INITIALIZE_TIMEOUT) => answer.map_err(|e| e.to_string()),
            () = server.rpc.closed() => Err("it exited".to_string()),
        };
        let init = match init {
            Ok(init) => init,
            Err(e) => {
                server.process.wait(Duration::from_millis(300)).await;
                let tail = server.stderr_tail();
                server.process.terminate(Stop::graceful()).await;
                return Err(format!(
                    "the {} language server `{program}` failed to start: {e}{tail}",
                    language.name
                ));
            }
        };
        let encoding = Encoding::from_negotiated(init["capabilities"]["positionEncoding"].as_str());
        // A server that reports its status (rust-analyzer does, when asked, without saying
        // so in its capabilities) is loading until it says it is quiescent.
        let reports_status = init["capabilities"]["experimental"]["serverStatusNotification"]
            == json!(true)
            || init["serverInfo"]["name"]
                .as_str()
                .is_some_and(|n| n.contains("rust-analyzer"));
        if reports_status {
            let mut state = server.state.lock().unwrap_or_else(|e| e.into_inner());
            state.quiescent.get_or_insert(false);
        }
        server
            .rpc
            .notify("initialized", json!({}))
            .await
            .map_err(|e| format!("the {} language server: {e}", language.name))?;
        tracing::debug!(capabilities = %init["capabilities"], "language server capabilities");
        tracing::info!(language = %language.name, root, pid = server.process.pid(), ?encoding, "language server started");
        Ok(Self { encoding, ..server })
    }

    /// Whether it still runs and answers.
    pub(crate) fn alive(&self) -> bool {
        !self.rpc.is_closed() && self.process.is_running()
    }

    /// Marks it used now.
    pub(crate) fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Why it stopped, for a message: how it exited and the end of what it said.
    pub(crate) fn stderr_tail(&self) -> String {
        let all = self
            .process
            .snapshot(Stream::Stderr)
            .joined(|_| b"\n".to_vec());
        let text = String::from_utf8_lossy(&all);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let mut tail = lines[lines.len().saturating_sub(5)..].join("\n");
        if tail.is_empty() {
            let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            tail = state.log.iter().cloned().collect::<Vec<_>>().join("\n");
        }
        if tail.is_empty() {
            String::new()
        } else {
            format!("; it said:\n{tail}")
        }
    }

    /// Sends a request, waiting at most the request timeout (or `deadline`, if sooner).
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value, String> {
        self.touch();
        let started = Instant::now();
        // Answers computed before a change arrived are asked again (`ContentModified`),
        // within the same time.
        for attempt in 0..3 {
            let timeout = self
                .request_timeout
                .saturating_sub(started.elapsed())
                .min(deadline.saturating_duration_since(Instant::now()));
            match self.rpc.call(method, params.clone(), timeout).await {
                Err(e) if attempt < 2 && e.content_modified() => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                other => return other.map_err(|e| e.to_string()),
            }
        }
        Err("the language server kept answering `content modified`".into())
    }

    /// Shows the server `text` as the content of the document at `path` (absolute):
    /// opened the first time, changed (and saved) when it differs from what it was shown.
    /// Whether anything was sent.
    pub(crate) async fn show(&self, path: &Path, text: &str) -> Result<bool, RpcError> {
        let _order = self.sync.lock().await;
        let uri = uri_of(path);
        let language_id = self.language.language_id(path);
        // What to send, worked out first; the record changes only once it is sent, so a
        // call given up half way leaves the document to be sent again next time.
        let (version, messages, evicted) = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.uses += 1;
            let uses = state.uses;
            match state.docs.get_mut(&uri) {
                Some(doc) if doc.text == text => {
                    doc.used = uses;
                    return Ok(false);
                }
                Some(doc) => {
                    let version = doc.version + 1;
                    let id = json!({"uri": uri, "version": version});
                    (
                        version,
                        vec![
                            (
                                "textDocument/didChange",
                                json!({"textDocument": id, "contentChanges": [{"text": text}]}),
                            ),
                            (
                                "textDocument/didSave",
                                json!({"textDocument": {"uri": uri}}),
                            ),
                        ],
                        None,
                    )
                }
                None => {
                    let evicted = (state.docs.len() >= MAX_OPEN)
                        .then(|| {
                            state
                                .docs
                                .iter()
                                .min_by_key(|(_, d)| d.used)
                                .map(|(u, _)| u.clone())
                        })
                        .flatten();
                    (
                        1,
                        vec![(
                            "textDocument/didOpen",
                            json!({"textDocument": {"uri": uri, "languageId": language_id, "version": 1, "text": text}}),
                        )],
                        evicted,
                    )
                }
            }
        };
        if let Some(old) = evicted {
            self.rpc
                .notify(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": old}}),
                )
                .await?;
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.docs.remove(&old);
            state.diagnostics.remove(&old);
        }
        for (method, params) in messages {
            self.rpc.notify(method, params).await?;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.uses += 1;
        let used = state.uses;
        state.docs.insert(
            uri,
            Doc {
                version,
                text: text.to_string(),
                used,
            },
        );
        // Quiet is counted from what was sent, not from what the server said before.
        state.last_event = Some(Instant::now());
        Ok(true)
    }

    /// The version the server was last shown of `uri` (0: not open).
    pub(crate) fn version(&self, uri: &str) -> i32 {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.docs.get(uri).map_or(0, |d| d.version)
    }

    /// Keeps `watch` for as long as the server lives.
    pub(crate) fn keep_watch(&self, watch: super::watch::Watch) {
        *self.watch.lock().unwrap_or_else(|e| e.into_inner()) = Some(watch);
    }

    /// Tells the server of files changed on disk that it was not shown (those it was are
    /// compared with the disk before every request anyway).
    pub(crate) async fn files_changed(&self, changes: Vec<(PathBuf, super::watch::Change)>) {
        let changes: Vec<Value> = {
            let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            changes
                .into_iter()
                .map(|(path, change)| (uri_of(&path), change))
                .filter(|(uri, _)| !state.docs.contains_key(uri))
                .map(|(uri, change)| json!({"uri": uri, "type": change as u8}))
                .collect()
        };
        if !changes.is_empty() {
            let _ = self
                .rpc
                .notify(
                    "workspace/didChangeWatchedFiles",
                    json!({"changes": changes}),
                )
                .await;
        }
    }

    /// Forgets a document that is gone.
    pub(crate) async fn close(&self, path: &Path) -> Result<(), RpcError> {
        let _order = self.sync.lock().await;
        let uri = uri_of(path);
        let was_open = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.diagnostics.remove(&uri);
            state.docs.remove(&uri).is_some()
        };
        if was_open {
            self.rpc
                .notify(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": uri}}),
                )
                .await?;
        }
        Ok(())
    }

    /// The URIs of the open documents.
    pub(crate) fn open_documents(&self) -> Vec<String> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.docs.keys().cloned().collect()
    }

    /// What the server was last shown of `uri`.
    pub(crate) fn shown(&self, uri: &str) -> Option<String> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.docs.get(uri).map(|d| d.text.clone())
    }

    /// The diagnostics published so far, by URI.
    pub(crate) fn diagnostics(&self) -> HashMap<String, Published> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.diagnostics.clone()
    }

    /// How many diagnostics publications of `uri` came so far (0: none).
    pub(crate) fn generation(&self, uri: &str) -> u64 {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.diagnostics.get(uri).map_or(0, |p| p.generation)
    }

    /// Waits until `ready` holds, the server is gone, or `deadline` passes; whether it held.
    async fn wait_for(&self, deadline: Instant, ready: impl Fn(&State) -> bool) -> bool {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if ready(&state) {
                    return true;
                }
            }
            if !self.alive() {
                return false;
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(deadline.into()) => return false,
                () = self.rpc.closed() => return false,
            }
        }
    }

    /// Waits until the server is done loading the project (not counting a `cargo check`
    /// running after a save), or `deadline`; whether it is.
    pub(crate) async fn loaded(&self, deadline: Instant) -> bool {
        self.wait_for(deadline, |s| {
            s.quiescent != Some(false) && s.progress.values().all(|title| is_check(title))
        })
        .await
    }

    /// Waits until the server is idle (no work in progress, a check included) and has said
    /// nothing new for `quiet`, and, when `uri` and `after` are given, has published
    /// diagnostics of `uri` after generation `after`. Whether it settled before `deadline`.
    pub(crate) async fn settled(
        &self,
        deadline: Instant,
        quiet: Duration,
        fresh: Option<(&str, u64)>,
    ) -> bool {
        loop {
            // A report counts when it came after `after` and, if it names the version it
            // is about, is about the version shown now.
            let idle = |s: &State| {
                s.quiescent != Some(false)
                    && s.progress.is_empty()
                    && fresh.is_none_or(|(uri, after)| {
                        let shown = s.docs.get(uri).map_or(0, |d| d.version);
                        s.diagnostics.get(uri).is_some_and(|p| {
                            p.generation > after && p.version.is_none_or(|v| v >= shown)
                        })
                    })
            };
            if !self.wait_for(deadline, idle).await {
                return false;
            }
            // Quiet since the last thing it said: at once when that was long enough ago.
            let (events, since) = {
                let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                (
                    state.events,
                    state.last_event.map_or(quiet, |t| t.elapsed()),
                )
            };
            if since < quiet {
                let until = (Instant::now() + (quiet - since)).min(deadline);
                tokio::time::sleep_until(until.into()).await;
            }
            let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.events == events && idle(&state) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
        }
    }

    /// Asks it to shut down, then stops its process tree.
    pub(crate) async fn stop(&self) {
        if self.alive() {
            let _ = self
                .rpc
                .call("shutdown", Value::Null, Duration::from_secs(2))
                .await;
            let _ = self.rpc.notify("exit", Value::Null).await;
            self.process.wait(Duration::from_secs(1)).await;
        }
        self.process.terminate(Stop::graceful()).await;
    }
}

/// Whether a progress title is a check after a save (rust-analyzer's `cargo check`), which
/// answers to requests need not wait for.
fn is_check(title: &str) -> bool {
    let t = title.to_ascii_lowercase();
    t.starts_with("cargo") || t.contains("check") || t.contains("clippy")
}

/// The settings of `section` (`rust-analyzer`, `python.analysis`) under `[lsp.NAME]
/// settings`, or null.
fn section_of(settings: &serde_json::Map<String, Value>, section: &str) -> Value {
    let Some(all) = settings.get("settings") else {
        return Value::Null;
    };
    if section.is_empty() {
        return all.clone();
    }
    let mut at = all;
    for part in section.split('.') {
        match at.get(part) {
            Some(next) => at = next,
            None => return Value::Null,
        }
    }
    at.clone()
}

/// Folds a notification into the state; whether a wait may care.
fn notice(state: &Mutex<State>, method: &str, params: Value) -> bool {
    tracing::debug!(method, %params, "language server notification");
    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
    match method {
        "textDocument/publishDiagnostics" => {
            let Ok(published) =
                serde_json::from_value::<lsp_types::PublishDiagnosticsParams>(params)
            else {
                return false;
            };
            let generation = state.events + 1;
            // Keyed as toolshed spells URIs: servers escape paths differently.
            let uri = super::uri::normalize(published.uri.as_str());
            state.diagnostics.insert(
                uri,
                Published {
                    generation,
                    version: published.version,
                    diagnostics: published.diagnostics,
                },
            );
        }
        "$/progress" => {
            let token = match &params["token"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match params["value"]["kind"].as_str() {
                Some("begin") => {
                    let title = params["value"]["title"].as_str().unwrap_or("").to_string();
                    state.progress.insert(token, title);
                }
                Some("end") => {
                    state.progress.remove(&token);
                }
                _ => return false,
            }
        }
        "experimental/serverStatus" => {
            state.quiescent = params["quiescent"].as_bool();
        }
        "window/logMessage" | "window/showMessage" => {
            // Errors and warnings only, for the reason of a failure.
            if params["type"].as_u64().is_some_and(|t| t <= 2) {
                let message: String = params["message"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(500)
                    .collect();
                if state.log.len() >= MAX_LOG {
                    state.log.pop_front();
                }
                state.log.push_back(message);
            }
            return false;
        }
        _ => return false,
    }
    state.events += 1;
    state.last_event = Some(Instant::now());
    true
}
