//! `system.lsp`: code intelligence from language servers — definitions, references,
//! implementations, hover, symbols, diagnostics and renames — for the files of the
//! workspace.
//!
//! A server is started lazily for each language and project root (found by its markers:
//! `Cargo.toml`, `pyproject.toml`, `tsconfig.json`…), inside the command sandbox like any
//! command, kept warm, started again when it died, and stopped when idle. Before each
//! request the documents it was shown are compared with the files on disk and changes sent
//! (`didChange` and `didSave`), so edits made through the workspace tools are seen.
//! Positions are 1-based lines and columns in characters, converted to the server's
//! encoding (UTF-8 where it offers it, else UTF-16). A rename is applied through the
//! workspace's file layer, all-or-nothing and under read-before-edit.

#![warn(missing_docs, unreachable_pub)]

pub(crate) use toolshed_kit::{args, find_program, on_files};

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolshed_core::{
    CallContext, ConfigField, ConfigFieldType, Plugin, PluginError, PluginKind, PluginManifest,
    Tool, ToolAnnotations, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::process::ProcessOps;
use toolshed_ops::{Change, Expect, FileOps, ReadLog, Services};

mod format;
mod program;
mod rpc;
mod server;
mod text;
mod watch;

use server::Server;
use text::Encoding;

/// The plugin's id.
pub const PLUGIN_ID: &str = "system.lsp";
/// The config key that turns read-before-edit off for renames.
const READ_BEFORE_EDIT: &str = "require_read_before_edit";
/// The largest file shown to a server.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// How long diagnostics must stay unchanged to count as settled.
const QUIET: Duration = Duration::from_millis(400);

/// A language and the server that knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Language {
    /// Its name, as in `[lsp.NAME]`.
    pub name: String,
    /// The server's command line.
    pub command: Vec<String>,
    /// The file extensions it serves, without the dot.
    pub extensions: Vec<String>,
    /// Files that mark a project's root.
    pub markers: Vec<String>,
    /// How to install the server, for the `unconfigured` answer.
    pub install: String,
    /// `settings` (answered to `workspace/configuration`) and `initialization_options`.
    pub settings: Map<String, Value>,
}

impl Language {
    fn new(
        name: &str,
        command: &[&str],
        extensions: &[&str],
        markers: &[&str],
        install: &str,
    ) -> Self {
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_string()).collect();
        Self {
            name: name.into(),
            command: owned(command),
            extensions: owned(extensions),
            markers: owned(markers),
            install: install.into(),
            settings: Map::new(),
        }
    }

    /// The answer when its server is not installed.
    pub(crate) fn missing(&self, program: &str) -> String {
        format!(
            "the {} language server `{program}` is not installed (not found on PATH); install it — {} — or set `[lsp.{}] command`",
            self.name, self.install, self.name
        )
    }

    /// The protocol's language id of a file.
    pub(crate) fn language_id(&self, path: &Path) -> String {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match (self.name.as_str(), ext) {
            ("typescript", "tsx") => "typescriptreact".into(),
            ("typescript", "js" | "mjs" | "cjs") => "javascript".into(),
            ("typescript", "jsx") => "javascriptreact".into(),
            ("c", "cpp" | "cc" | "cxx" | "hpp" | "hh") => "cpp".into(),
            (name, _) => name.into(),
        }
    }

    fn serves(&self, path: &Path) -> bool {
        path.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| self.extensions.iter().any(|x| x.eq_ignore_ascii_case(e)))
    }
}

/// The languages known without configuration.
pub fn default_languages() -> Vec<Language> {
    vec![
        Language::new(
            "rust",
            &["rust-analyzer"],
            &["rs"],
            &["Cargo.toml"],
            "`rustup component add rust-analyzer`",
        ),
        Language::new(
            "python",
            &["pyright-langserver", "--stdio"],
            &["py", "pyi"],
            &[
                "pyproject.toml",
                "pyrightconfig.json",
                "setup.py",
                "setup.cfg",
                "requirements.txt",
            ],
            "`pip install pyright` (it needs node) or `npm install -g pyright`; or use pylsp: `[lsp.python] command = [\"pylsp\"]`",
        ),
        Language::new(
            "typescript",
            &["typescript-language-server", "--stdio"],
            &["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"],
            &["tsconfig.json", "jsconfig.json", "package.json"],
            "`npm install -g typescript-language-server typescript@5`",
        ),
        Language::new(
            "go",
            &["gopls"],
            &["go"],
            &["go.mod"],
            "the Go toolchain's gopls (Debian: `apt-get install gopls`)",
        ),
        Language::new(
            "c",
            &["clangd"],
            &["c", "h", "cc", "cpp", "cxx", "hpp", "hh"],
            &["compile_commands.json", "CMakeLists.txt", "Makefile"],
            "clangd (Debian: `apt-get install clangd`)",
        ),
    ]
}

/// What the plugin works with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The workspace's absolute path.
    pub workspace: PathBuf,
    /// The languages, in the order an extension is looked up.
    pub languages: Vec<Language>,
    /// A server unused this long is stopped.
    pub idle_timeout: Duration,
    /// The longest a request to a server may take.
    pub request_timeout: Duration,
    /// The most servers running at once; starting one more stops the least recently used.
    pub max_servers: usize,
}

impl Settings {
    /// The defaults for `workspace`.
    pub fn new(workspace: PathBuf) -> Self {
        Self {
            workspace,
            languages: default_languages(),
            idle_timeout: Duration::from_secs(600),
            request_timeout: Duration::from_secs(60),
            max_servers: 8,
        }
    }
}

/// What a URI's path may hold unescaped.
const PATH_SET: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The `file:` URI of an absolute path.
pub(crate) fn uri_of(path: &Path) -> String {
    format!(
        "file://{}",
        utf8_percent_encode(&path.to_string_lossy(), PATH_SET)
    )
}

/// A server's URI as toolshed spells it (servers escape paths differently).
pub(crate) fn normalize(uri: &str) -> String {
    path_of(uri).map_or_else(|| uri.to_string(), |p| uri_of(&p))
}

/// The absolute path of a `file:` URI.
pub(crate) fn path_of(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    Some(PathBuf::from(
        percent_decode_str(rest).decode_utf8().ok()?.into_owned(),
    ))
}

/// The servers running, by language and root.
struct Servers {
    settings: Settings,
    processes: Arc<dyn ProcessOps>,
    running: tokio::sync::Mutex<BTreeMap<(String, String), Arc<Server>>>,
    reaper: std::sync::OnceLock<()>,
}

impl Servers {
    /// The server for `language` at `root`, started (again) when needed; with a note when
    /// an earlier one had died.
    async fn get(
        self: &Arc<Self>,
        language: &Language,
        root: &str,
    ) -> Result<(Arc<Server>, Option<String>), ToolError> {
        self.reap_later();
        let key = (language.name.clone(), root.to_string());
        let mut running = self.running.lock().await;
        let mut note = None;
        if let Some(server) = running.get(&key) {
            if server.alive() {
                server.touch();
                return Ok((server.clone(), None));
            }
            note = Some(format!(
                "(the {} language server had stopped{}; it was started again)",
                language.name,
                server.stderr_tail()
            ));
            if let Some(dead) = running.remove(&key) {
                dead.stop().await;
            }
        }
        if running.len() >= self.settings.max_servers {
            let oldest = running
                .iter()
                .min_by_key(|(_, s)| *s.last_used.lock().unwrap_or_else(|e| e.into_inner()))
                .map(|(k, _)| k.clone());
            if let Some(old) = oldest.and_then(|k| running.remove(&k)) {
                old.stop().await;
            }
        }
        let server = Server::start(
            self.processes.as_ref(),
            language,
            &self.settings.workspace,
            root,
            self.settings.request_timeout,
        )
        .await
        .map_err(|message| {
            if message.contains("is not installed") {
                ToolError::Unconfigured {
                    message,
                    variables: vec![format!("lsp.{}.command", language.name)],
                }
            } else {
                ToolError::failed(message)
            }
        })?;
        let server = Arc::new(server);
        let wanted = {
            let language = language.clone();
            move |path: &Path| {
                language.serves(path)
                    || path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| language.markers.iter().any(|m| m == n))
            }
        };
        let root_abs = self.settings.workspace.join(root);
        // The walk over the project's directories is file-system work: off the async threads.
        let weak = Arc::downgrade(&server);
        let started = tokio::task::spawn_blocking(move || watch::start(&root_abs, weak, wanted))
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        match started {
            Ok(watch) => server.keep_watch(watch),
            Err(e) => {
                tracing::warn!(root, error = %e, "cannot watch the project for the language server; it hears of changes made through toolshed only")
            }
        }
        running.insert(key, server.clone());
        Ok((server, note))
    }

    /// The servers running now.
    async fn all(&self) -> Vec<Arc<Server>> {
        self.running.lock().await.values().cloned().collect()
    }

    /// Starts, once, the task that stops idle servers.
    fn reap_later(self: &Arc<Self>) {
        let weak: Weak<Self> = Arc::downgrade(self);
        let idle = self.settings.idle_timeout;
        self.reaper.get_or_init(|| {
            tokio::spawn(async move {
                let every = (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
                loop {
                    tokio::time::sleep(every).await;
                    let Some(servers) = weak.upgrade() else { return };
                    let mut running = servers.running.lock().await;
                    let idle_keys: Vec<_> = running
                        .iter()
                        .filter(|(_, s)| s.last_used.lock().unwrap_or_else(|e| e.into_inner()).elapsed() >= idle)
                        .map(|(k, _)| k.clone())
                        .collect();
                    for key in idle_keys {
                        if let Some(server) = running.remove(&key) {
                            tracing::info!(language = %key.0, root = %key.1, "stopping the idle language server");
                            server.stop().await;
                        }
                    }
                }
            });
        });
    }

    async fn stop_all(&self) {
        let all: Vec<_> = std::mem::take(&mut *self.running.lock().await)
            .into_values()
            .collect();
        for server in all {
            server.stop().await;
        }
    }
}

/// The plugin.
struct LspPlugin {
    manifest: PluginManifest,
    tools: Vec<Arc<dyn Tool>>,
    servers: Arc<Servers>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Definition,
    References,
    Implementation,
    Hover,
}

/// The `lsp` tool (questions, by `operation`) or `lsp_rename`.
struct LspTool {
    spec: ToolSpec,
    rename: bool,
    core: Arc<Core>,
}

/// What every tool of the plugin shares.
struct Core {
    servers: Arc<Servers>,
    files: Arc<dyn FileOps>,
    read_log: Arc<dyn ReadLog>,
    /// Why no tool can work here (no server installed at all), if so.
    unavailable: Option<String>,
}

fn default_limit() -> usize {
    50
}

/// Where in the code: a position, or a symbol.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PositionArgs {
    /// File, workspace-relative
    #[serde(default)]
    path: Option<String>,
    /// 1-based line
    #[serde(default)]
    #[schemars(range(min = 1))]
    line: Option<u32>,
    /// 1-based column, in characters
    #[serde(default)]
    #[schemars(range(min = 1))]
    column: Option<u32>,
    /// A name instead of line/column: found in `path` (on `line` if given), else in the workspace
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    symbol: Option<String>,
    /// Server's language when no path is given
    #[serde(default)]
    language: Option<String>,
    /// Results to skip (paging)
    #[serde(default)]
    offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DocumentArgs {
    /// File, workspace-relative
    #[schemars(length(min = 1))]
    path: String,
    /// Results to skip (paging)
    #[serde(default)]
    offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WorkspaceSymbolArgs {
    /// Name or part of it
    #[schemars(length(max = 200))]
    query: String,
    /// Language of the server to ask; left out: every project's in the workspace
    #[serde(default)]
    language: Option<String>,
    /// Results to skip (paging)
    #[serde(default)]
    offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiagnosticsArgs {
    /// File, workspace-relative; left out: every file the running servers reported on
    #[serde(default)]
    path: Option<String>,
    /// Results to skip (paging)
    #[serde(default)]
    offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RenameArgs {
    /// File, workspace-relative
    #[schemars(length(min = 1))]
    path: String,
    /// 1-based line
    #[serde(default)]
    #[schemars(range(min = 1))]
    line: Option<u32>,
    /// 1-based column, in characters
    #[serde(default)]
    #[schemars(range(min = 1))]
    column: Option<u32>,
    /// The name to rename, instead of line/column (found in `path`, on `line` if given)
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    symbol: Option<String>,
    /// The new name
    #[schemars(length(min = 1, max = 200))]
    new_name: String,
}

// What the `lsp` tool asks: every question, one tool (`lsp_rename`, which changes files,
// is a tool of its own). No doc comment: it would be the schema's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Operation {
    Definition,
    References,
    Implementation,
    Hover,
    DocumentSymbols,
    WorkspaceSymbols,
    Diagnostics,
}

impl Operation {
    /// The kind of a position query (definition, references, implementation, hover).
    fn kind(self) -> Kind {
        match self {
            Self::Definition => Kind::Definition,
            Self::References => Kind::References,
            Self::Implementation => Kind::Implementation,
            _ => Kind::Hover,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Definition => "definition",
            Self::References => "references",
            Self::Implementation => "implementation",
            Self::Hover => "hover",
            Self::DocumentSymbols => "document_symbols",
            Self::WorkspaceSymbols => "workspace_symbols",
            Self::Diagnostics => "diagnostics",
        }
    }
}

/// The `lsp` tool's arguments as a model reads them: every operation's, together. A call
/// is read again into its operation's own (which refuses what that operation does not
/// take).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Only its schema is used.
struct LspArgs {
    operation: Operation,
    /// File, workspace-relative
    #[serde(default)]
    path: Option<String>,
    /// 1-based line
    #[serde(default)]
    #[schemars(range(min = 1))]
    line: Option<u32>,
    /// 1-based column, in characters
    #[serde(default)]
    #[schemars(range(min = 1))]
    column: Option<u32>,
    /// A name instead of line/column: found in `path` (on `line` if given), else in the workspace
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    symbol: Option<String>,
    /// workspace_symbols: name or part
    #[serde(default)]
    #[schemars(length(max = 200))]
    query: Option<String>,
    /// The server's language when no path is given
    #[serde(default)]
    language: Option<String>,
    /// Results to skip (paging)
    #[serde(default)]
    offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: usize,
}

/// The `lsp` tool's arguments without `operation`, and the operation.
fn operation_of(args: Value) -> Result<(Operation, Value), ToolError> {
    let Value::Object(mut map) = args else {
        return Err(ToolError::invalid(
            "arguments must be an object with `operation`",
        ));
    };
    let operation = map.shift_remove("operation").ok_or_else(|| {
        ToolError::invalid("give `operation`: definition, references, implementation, hover, document_symbols, workspace_symbols or diagnostics")
    })?;
    let operation: Operation = serde_json::from_value(operation.clone()).map_err(|_| {
        ToolError::invalid(format!("`operation` {operation} is not one of definition, references, implementation, hover, document_symbols, workspace_symbols, diagnostics"))
    })?;
    Ok((operation, Value::Object(map)))
}

/// Reads an operation's own arguments, naming the operation when one does not belong.
fn parse_for<T: serde::de::DeserializeOwned>(
    operation: Operation,
    args: Value,
) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| {
        ToolError::invalid(format!(
            "invalid arguments for operation `{}`: {e}",
            operation.name()
        ))
    })
}

/// The `system.lsp` plugin.
// The root language servers are told (as a URI); files are opened through the jail.
#[allow(clippy::disallowed_methods)]
pub fn plugin(services: &Services, mut settings: Settings) -> Arc<dyn Plugin> {
    if let Ok(real) = settings.workspace.canonicalize() {
        settings.workspace = real;
    }
    let unavailable = program::unavailable(&settings.languages, &settings.workspace);
    let servers = Arc::new(Servers {
        settings,
        processes: services.ops.process.clone(),
        running: tokio::sync::Mutex::new(BTreeMap::new()),
        reaper: std::sync::OnceLock::new(),
    });
    let core = Arc::new(Core {
        servers: servers.clone(),
        files: services.ops.files.clone(),
        read_log: services.read_log.clone(),
        unavailable,
    });
    let read = ToolAnnotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    let specs: Vec<(ToolSpec, bool)> = vec![
        (
            ToolSpec::new("lsp", "Ask the language server about code. At path+line+column, path+symbol or a symbol alone: `definition`, `references`, `implementation` (of a trait or interface), `hover` (type and docs). `document_symbols`: a file's outline; `workspace_symbols`: find by name (`query`); `diagnostics`: errors and warnings now, of `path` or every file. Answers file:line:column with the line, paged.")
                .title("Code intelligence").input_schema(crate::args::schema::<LspArgs>()).annotations(read).touch(toolshed_core::TouchKind::Reads, "path"),
            false,
        ),
        (
            ToolSpec::new("lsp_rename", "Rename a symbol everywhere the language server finds it, applied to the files all-or-nothing; returns the diff. Changed files need a workspace_read first.")
                .title("Rename a symbol").input_schema(crate::args::schema::<RenameArgs>())
                .touch(toolshed_core::TouchKind::Writes, "path")
                .annotations(ToolAnnotations { read_only: false, destructive: true, idempotent: false, open_world: false }),
            true,
        ),
    ];
    let tools: Vec<Arc<dyn Tool>> = specs
        .into_iter()
        .map(|(spec, rename)| {
            let mut spec = spec.group("lsp");
            if rename {
                // Like workspace_edit: it rewrites files.
                spec.mutates_state = true;
                spec.danger = toolshed_core::Danger::Medium;
            }
            Arc::new(LspTool {
                spec,
                rename,
                core: core.clone(),
            }) as Arc<dyn Tool>
        })
        .collect();
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Code intelligence",
        PluginKind::Builtin,
    );
    manifest.description = "Definitions, references, hover, symbols, diagnostics and renames from language servers (rust-analyzer, pyright, typescript-language-server, gopls, clangd), run inside the command sandbox.".into();
    manifest.tags = vec!["lsp".into(), "code".into()];
    manifest.config = vec![ConfigField {
        key: READ_BEFORE_EDIT.into(),
        label: Some("Require read before rename".into()),
        field_type: ConfigFieldType::Boolean,
        description: Some("A rename changes only files the caller has read (workspace_read) in their current version.".into()),
        default: Some(json!(true)),
        options: Vec::new(),
        secret: false,
        required: false,
        writable: false,
    }];
    manifest.tools = tools.iter().map(|t| t.spec().clone()).collect();
    Arc::new(LspPlugin {
        manifest,
        tools,
        servers,
    })
}

#[async_trait]
impl Plugin for LspPlugin {
    fn manifest(&self) -> &PluginManifest {
        &self.manifest
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    async fn stop(&self) -> Result<(), PluginError> {
        self.servers.stop_all().await;
        Ok(())
    }
}

#[async_trait]
impl Tool for LspTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn unavailable(&self) -> Option<(String, Vec<String>)> {
        self.core.unavailable.clone().map(|why| (why, Vec::new()))
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let cancel = ctx.cancel.clone();
        let work = async {
            if !self.rename {
                let (operation, args) = operation_of(args)?;
                return match operation {
                    Operation::Definition
                    | Operation::References
                    | Operation::Implementation
                    | Operation::Hover => {
                        self.core
                            .position_query(operation.kind(), &ctx, parse_for(operation, args)?)
                            .await
                    }
                    Operation::DocumentSymbols => {
                        self.core
                            .document_symbols(&ctx, parse_for(operation, args)?)
                            .await
                    }
                    Operation::WorkspaceSymbols => {
                        self.core
                            .workspace_symbols(&ctx, parse_for(operation, args)?)
                            .await
                    }
                    Operation::Diagnostics => {
                        self.core
                            .diagnostics(&ctx, parse_for(operation, args)?)
                            .await
                    }
                };
            }
            self.core.rename(&ctx, crate::args::parse(args)?).await
        };
        tokio::select! {
            result = work => result,
            () = cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

/// A server shown a file (see [`Core::show_file`]).
struct Shown {
    server: Arc<Server>,
    note: Option<String>,
    fresh: Option<u64>,
}

/// A file of the workspace, read.
struct File {
    /// Workspace-relative, links resolved.
    rel: String,
    abs: PathBuf,
    text: String,
}

impl Core {
    fn settings(&self) -> &Settings {
        &self.servers.settings
    }

    /// Reads a workspace file (inside the jail).
    async fn file(&self, path: &str) -> Result<File, ToolError> {
        let asked = path.to_string();
        let (rel, contents) = crate::on_files(&self.files, move |files| {
            let rel = files.realpath(&asked)?;
            let contents = files.read(&rel, MAX_FILE_BYTES + 1)?;
            Ok((rel, contents))
        })
        .await?;
        if contents.bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(ToolError::invalid(format!(
                "`{path}` is larger than {MAX_FILE_BYTES} bytes; language tools work on smaller files"
            )));
        }
        let text = String::from_utf8(contents.bytes)
            .map_err(|_| ToolError::invalid(format!("`{path}` is not UTF-8 text")))?;
        let abs = self.settings().workspace.join(&rel);
        Ok(File { rel, abs, text })
    }

    /// The workspace-relative path of an absolute one inside the workspace.
    fn relative(&self, abs: &Path) -> Option<String> {
        abs.strip_prefix(&self.settings().workspace)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
            .map(|p| if p.is_empty() { ".".into() } else { p })
    }

    fn language_for(&self, path: &Path) -> Result<&Language, ToolError> {
        self.settings().languages.iter().find(|l| l.serves(path)).ok_or_else(|| {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            ToolError::invalid(format!(
                "no language server serves `.{ext}` files (known: {}); add its extensions to an `[lsp.NAME]` entry",
                self.settings().languages.iter().map(|l| format!("{} ({})", l.name, l.extensions.join(", "))).collect::<Vec<_>>().join("; ")
            ))
        })
    }

    fn language_named(&self, name: &str) -> Result<&Language, ToolError> {
        self.settings()
            .languages
            .iter()
            .find(|l| l.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                ToolError::invalid(format!(
                    "no language `{name}`; known: {}",
                    self.settings()
                        .languages
                        .iter()
                        .map(|l| l.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// The project root of `rel` for `language`: the highest directory from the workspace
    /// down to the file's own that holds one of its markers, else the workspace.
    fn root_for(&self, language: &Language, rel: &str) -> String {
        let workspace = &self.settings().workspace;
        let mut dir = PathBuf::new();
        let parents: Vec<_> = Path::new(rel)
            .parent()
            .map(|p| p.components().collect())
            .unwrap_or_default();
        let has_marker = |d: &Path| {
            language
                .markers
                .iter()
                .any(|m| workspace.join(d).join(m).is_file())
        };
        if has_marker(&dir) {
            return ".".into();
        }
        for part in parents {
            dir.push(part);
            if has_marker(&dir) {
                return dir.to_string_lossy().into_owned();
            }
        }
        ".".into()
    }

    /// The projects of the workspace for a query without a file: of `language` if named,
    /// else every language with a marker at the workspace root or one level down, and the
    /// servers running.
    async fn projects(&self, language: Option<&str>) -> Result<Vec<(Language, String)>, ToolError> {
        let workspace = &self.settings().workspace;
        let mut dirs = vec![String::from(".")];
        if let Ok(entries) = std::fs::read_dir(workspace) {
            let mut subdirs: Vec<String> = entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().to_str().map(String::from))
                .filter(|n| !n.starts_with('.') && n != "target" && n != "node_modules")
                .collect();
            subdirs.sort();
            dirs.extend(subdirs.into_iter().take(200));
        }
        let languages: Vec<&Language> = match language {
            Some(name) => vec![self.language_named(name)?],
            None => self.settings().languages.iter().collect(),
        };
        let mut found: Vec<(Language, String)> = Vec::new();
        for l in &languages {
            if let Some(dir) = dirs.iter().find(|d| {
                l.markers
                    .iter()
                    .any(|m| workspace.join(d).join(m).is_file())
            }) {
                found.push(((*l).clone(), dir.clone()));
            }
        }
        for s in self.servers.all().await {
            if languages.iter().any(|l| l.name == s.language.name)
                && !found
                    .iter()
                    .any(|(l, r)| l.name == s.language.name && *r == s.root)
            {
                found.push((s.language.clone(), s.root.clone()));
            }
        }
        if found.is_empty()
            && let Some(name) = language
        {
            found.push((self.language_named(name)?.clone(), ".".into()));
        }
        if found.is_empty() {
            return Err(ToolError::invalid(
                "no project found in the workspace for a query without a file (no Cargo.toml, pyproject.toml, tsconfig.json… at its root or one level down); give `path` or `language`",
            ));
        }
        Ok(found)
    }

    /// The server for a file, shown the file as it is now (and every document it was
    /// shown before brought up to date).
    async fn server_for(&self, file: &File) -> Result<(Arc<Server>, Option<String>), ToolError> {
        let shown = self.show_file(file).await?;
        Ok((shown.server, shown.note))
    }

    /// [`Self::server_for`], also saying whether the server must report on the file anew:
    /// `Some(generation)` when it was sent a new version (or never reported on it), the
    /// generation of its diagnostics before.
    async fn show_file(&self, file: &File) -> Result<Shown, ToolError> {
        let language = self.language_for(&file.abs)?.clone();
        let root = self.root_for(&language, &file.rel);
        let (server, note) = self.servers.get(&language, &root).await?;
        let uri = uri_of(&file.abs);
        let before = server.generation(&uri);
        let shown_before = server.version(&uri);
        self.refresh(&server, Some(&file.abs)).await?;
        server
            .show(&file.abs, &file.text)
            .await
            .map_err(ToolError::failed)?;
        let sent = server.version(&uri) != shown_before;
        Ok(Shown {
            server,
            note,
            fresh: (sent || before == 0).then_some(before),
        })
    }

    /// Brings every document `server` was shown up to date with the disk (but `except`,
    /// which the caller shows itself, as just read).
    async fn refresh(&self, server: &Server, except: Option<&Path>) -> Result<(), ToolError> {
        for uri in server.open_documents() {
            let Some(abs) = path_of(&uri) else { continue };
            if except == Some(abs.as_path()) {
                continue;
            }
            let Some(rel) = self.relative(&abs) else {
                continue;
            };
            match crate::on_files(&self.files, move |files| files.read(&rel, MAX_FILE_BYTES)).await
            {
                Ok(contents) => {
                    if let Ok(text) = String::from_utf8(contents.bytes) {
                        server.show(&abs, &text).await.map_err(ToolError::failed)?;
                    }
                }
                Err(ToolError::NotFound(_)) => {
                    server.close(&abs).await.map_err(ToolError::failed)?
                }
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// The server position of a request: from line/column, or from a symbol in the file.
    fn position(
        &self,
        file: &File,
        line: Option<u32>,
        column: Option<u32>,
        symbol: Option<&str>,
        encoding: Encoding,
    ) -> Result<(u32, u32), ToolError> {
        match (symbol, line, column) {
            (Some(symbol), line, _) => {
                let found = text::occurrences(&file.text, symbol);
                let hit = match line {
                    Some(l) => found.iter().find(|(n, _)| *n + 1 == l),
                    None => found.first(),
                };
                let (n, col) = *hit.ok_or_else(|| {
                    ToolError::NotFound(match line {
                        Some(l) => format!(
                            "`{symbol}` does not stand as a word on line {l} of `{}`",
                            file.rel
                        ),
                        None => format!("`{symbol}` does not stand as a word in `{}`", file.rel),
                    })
                })?;
                let line_text = text::line_of(&file.text, n).unwrap_or("");
                Ok((n, text::to_server(line_text, col, encoding)))
            }
            (None, Some(line), Some(column)) => {
                let line_text = text::line_of(&file.text, line - 1).ok_or_else(|| {
                    ToolError::invalid(format!(
                        "`{}` has {} lines; line {line} is past its end",
                        file.rel,
                        file.text.split('\n').count()
                    ))
                })?;
                Ok((line - 1, text::to_server(line_text, column, encoding)))
            }
            _ => Err(ToolError::invalid(
                "give `line` and `column` (1-based), or `symbol`",
            )),
        }
    }

    /// A deadline for waiting on a server: the call's, a little early, so an answer
    /// (even a partial one) gets back before the pipeline gives up.
    fn deadline(ctx: &CallContext) -> Instant {
        let left = ctx.deadline.saturating_duration_since(Instant::now());
        Instant::now() + left.saturating_sub(Duration::from_millis(500).min(left / 4))
    }

    async fn position_query(
        &self,
        kind: Kind,
        ctx: &CallContext,
        args: PositionArgs,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let Some(path) = args.path.as_deref() else {
            let symbol = args.symbol.as_deref().ok_or_else(|| {
                ToolError::invalid(
                    "give `path` (with line and column, or symbol), or a `symbol` name",
                )
            })?;
            return self
                .by_name(
                    kind,
                    ctx,
                    symbol,
                    args.language.as_deref(),
                    args.offset,
                    args.limit,
                )
                .await;
        };
        let file = self.file(path).await?;
        let (server, note) = self.server_for(&file).await?;
        let (line, character) = self.position(
            &file,
            args.line,
            args.column,
            args.symbol.as_deref(),
            server.encoding,
        )?;
        server.loaded(deadline).await;
        let here = format::Place::new(&file.rel, line, character, &file.text, server.encoding);
        let mut out = self
            .ask_at(
                ctx,
                kind,
                &server,
                &file.abs,
                line,
                character,
                deadline,
                args.offset,
                args.limit,
            )
            .await?;
        out.prefix(&format!("{} at {}", kind_label(kind), here.short()));
        if let Some(note) = note {
            out.prefix(&note);
        }
        Ok(out.into_output())
    }

    /// A position request at (`line`, `character`) of `abs`.
    #[allow(clippy::too_many_arguments)]
    async fn ask_at(
        &self,
        ctx: &CallContext,
        kind: Kind,
        server: &Server,
        abs: &Path,
        line: u32,
        character: u32,
        deadline: Instant,
        offset: usize,
        limit: usize,
    ) -> Result<format::Answer, ToolError> {
        let at = json!({"textDocument": {"uri": uri_of(abs)}, "position": {"line": line, "character": character}});
        let method = match kind {
            Kind::Definition => "textDocument/definition",
            Kind::References => "textDocument/references",
            Kind::Implementation => "textDocument/implementation",
            _ => "textDocument/hover",
        };
        let mut params = at;
        if kind == Kind::References {
            params["context"] = json!({"includeDeclaration": true});
        }
        let answer = server
            .request(method, params, deadline)
            .await
            .map_err(|e| self.server_error(server, &e))?;
        let reader = format::Reader::new(self, server, ctx);
        if kind == Kind::Hover {
            let hover: Option<lsp_types::Hover> = serde_json::from_value(answer).ok();
            return Ok(reader.hover(hover));
        }
        let locations = format::locations(answer);
        Ok(reader.locations(&locations, offset, limit).await)
    }

    fn server_error(&self, server: &Server, e: &str) -> ToolError {
        if server.alive() {
            ToolError::failed(format!("the {} language server: {e}", server.language.name))
        } else {
            ToolError::failed(format!(
                "the {} language server stopped{}; the next call starts it again",
                server.language.name,
                server.stderr_tail()
            ))
        }
    }

    /// A position request for a symbol known only by name: looked up in the workspace's
    /// symbols; a definition is where the symbol is declared.
    async fn by_name(
        &self,
        kind: Kind,
        ctx: &CallContext,
        symbol: &str,
        language: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let mut matches: Vec<(Arc<Server>, format::Symbol)> = Vec::new();
        for (server, answer) in self.ask_projects(language, symbol, deadline).await? {
            for s in format::symbols(answer) {
                if s.name == symbol || s.name.strip_suffix("()").is_some_and(|n| n == symbol) {
                    matches.push((server.clone(), s));
                }
            }
        }
        if matches.is_empty() {
            return Err(ToolError::NotFound(format!(
                "no symbol named `{symbol}` in the workspace; `lsp` with operation `workspace_symbols` finds names by part"
            )));
        }
        if kind == Kind::Definition {
            let server = matches[0].0.clone();
            let reader = format::Reader::new(self, &server, ctx);
            let locations: Vec<_> = matches
                .iter()
                .filter_map(|(_, s)| s.location.clone())
                .collect();
            let mut out = reader.locations(&locations, offset, limit).await;
            out.prefix(&format!("definition of `{symbol}`"));
            return Ok(out.into_output());
        }
        let (server, first) = &matches[0];
        let location = first.location.clone().ok_or_else(|| {
            ToolError::NotFound(format!("the server gave no position for `{symbol}`"))
        })?;
        let abs = path_of(location.uri.as_str())
            .ok_or_else(|| ToolError::failed("the server named a location that is not a file"))?;
        let rel = self.relative(&abs).ok_or_else(|| {
            ToolError::invalid(format!(
                "`{symbol}` is defined outside the workspace ({})",
                abs.display()
            ))
        })?;
        let file = self.file(&rel).await?;
        server
            .show(&file.abs, &file.text)
            .await
            .map_err(ToolError::failed)?;
        let mut out = self
            .ask_at(
                ctx,
                kind,
                server,
                &file.abs,
                location.range.start.line,
                location.range.start.character,
                deadline,
                offset,
                limit,
            )
            .await?;
        out.prefix(&format!("{} of `{symbol}`", kind_label(kind)));
        Ok(out.into_output())
    }

    /// `workspace/symbol` of `query` asked of the server of every project (of `language`,
    /// if named). A project whose server cannot start is passed over, unless it was the
    /// one asked for or every one failed.
    async fn ask_projects(
        &self,
        language: Option<&str>,
        query: &str,
        deadline: Instant,
    ) -> Result<Vec<(Arc<Server>, Value)>, ToolError> {
        let mut answers = Vec::new();
        let mut first_error = None;
        for (lang, root) in self.projects(language).await? {
            let asked = async {
                let (server, _) = self.servers.get(&lang, &root).await?;
                self.refresh(&server, None).await?;
                server.loaded(deadline).await;
                let answer = server
                    .request("workspace/symbol", json!({"query": query}), deadline)
                    .await
                    .map_err(|e| self.server_error(&server, &e))?;
                Ok::<_, ToolError>((server, answer))
            };
            match asked.await {
                Ok(answer) => answers.push(answer),
                Err(e) if language.is_none() => {
                    tracing::debug!(language = %lang.name, root, error = %e, "a project's language server was passed over");
                    first_error.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        match first_error {
            Some(e) if answers.is_empty() => Err(e),
            _ => Ok(answers),
        }
    }

    async fn document_symbols(
        &self,
        ctx: &CallContext,
        args: DocumentArgs,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let file = self.file(&args.path).await?;
        let (server, note) = self.server_for(&file).await?;
        server.loaded(deadline).await;
        let answer = server
            .request(
                "textDocument/documentSymbol",
                json!({"textDocument": {"uri": uri_of(&file.abs)}}),
                deadline,
            )
            .await
            .map_err(|e| self.server_error(&server, &e))?;
        let reader = format::Reader::new(self, &server, ctx);
        let mut out = reader.outline(&file, answer, args.offset, args.limit);
        if let Some(note) = note {
            out.prefix(&note);
        }
        Ok(out.into_output())
    }

    async fn workspace_symbols(
        &self,
        ctx: &CallContext,
        args: WorkspaceSymbolArgs,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let mut all: Vec<(Arc<Server>, format::Symbol)> = Vec::new();
        for (server, answer) in self
            .ask_projects(args.language.as_deref(), &args.query, deadline)
            .await?
        {
            all.extend(
                format::symbols(answer)
                    .into_iter()
                    .map(|s| (server.clone(), s)),
            );
        }
        let Some(first) = all.first().map(|(s, _)| s.clone()) else {
            return Ok(ToolOutput::text_and_structured(
                format!("no symbol matches `{}`", args.query),
                json!({"symbols": [], "total": 0}),
            ));
        };
        let reader = format::Reader::new(self, &first, ctx);
        let symbols: Vec<format::Symbol> = all.into_iter().map(|(_, s)| s).collect();
        Ok(reader
            .symbol_list(&symbols, args.offset, args.limit)
            .await
            .into_output())
    }

    async fn diagnostics(
        &self,
        ctx: &CallContext,
        args: DiagnosticsArgs,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let mut notes = Vec::new();
        let mut settled = true;
        let mut reports: Vec<(String, lsp_types::Diagnostic, Encoding)> = Vec::new();
        let servers: Vec<Arc<Server>> = match &args.path {
            Some(path) => {
                let file = self.file(path).await?;
                let Shown {
                    server,
                    note,
                    fresh,
                } = self.show_file(&file).await?;
                notes.extend(note);
                let uri = uri_of(&file.abs);
                // A document shown anew must be reported on again; one the server knows
                // as it is needs only a quiet server.
                let fresh = fresh.map(|before| (uri.as_str(), before));
                settled &= server.settled(deadline, QUIET, fresh).await;
                if let Some(published) = server.diagnostics().get(&uri) {
                    reports.extend(
                        published
                            .diagnostics
                            .iter()
                            .map(|d| (file.rel.clone(), d.clone(), server.encoding)),
                    );
                }
                vec![server]
            }
            None => {
                let servers = self.servers.all().await;
                for server in &servers {
                    self.refresh(server, None).await?;
                }
                for server in &servers {
                    settled &= server.settled(deadline, QUIET, None).await;
                    let mut published: Vec<_> = server.diagnostics().into_iter().collect();
                    published.sort_by(|a, b| a.0.cmp(&b.0));
                    for (uri, p) in published {
                        let Some(rel) = path_of(&uri).and_then(|abs| self.relative(&abs)) else {
                            continue;
                        };
                        reports.extend(
                            p.diagnostics
                                .into_iter()
                                .map(|d| (rel.clone(), d, server.encoding)),
                        );
                    }
                }
                if servers.is_empty() {
                    notes.push(
                        "no language server is running; give `path` to start the one for that file"
                            .to_string(),
                    );
                }
                servers
            }
        };
        if !settled {
            notes.push("(the language server was still working when the call's time ran out: these may change)".into());
        }
        let reader = match servers.first() {
            Some(server) => format::Reader::new(self, server, ctx),
            None => {
                return Ok(ToolOutput::text_and_structured(
                    notes.join("\n"),
                    json!({"diagnostics": [], "total": 0}),
                ));
            }
        };
        let mut out = reader.diagnostics(reports, args.offset, args.limit).await;
        for note in notes.iter().rev() {
            out.prefix(note);
        }
        Ok(out.into_output())
    }

    async fn rename(&self, ctx: &CallContext, args: RenameArgs) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let file = self.file(&args.path).await?;
        let (server, note) = self.server_for(&file).await?;
        let (line, character) = self.position(
            &file,
            args.line,
            args.column,
            args.symbol.as_deref(),
            server.encoding,
        )?;
        server.loaded(deadline).await;
        let answer = server
            .request(
                "textDocument/rename",
                json!({"textDocument": {"uri": uri_of(&file.abs)}, "position": {"line": line, "character": character}, "newName": args.new_name}),
                deadline,
            )
            .await
            .map_err(|e| self.server_error(&server, &e))?;
        let edit: Option<lsp_types::WorkspaceEdit> =
            serde_json::from_value(answer).map_err(|e| {
                ToolError::failed(format!(
                    "the language server's rename answer is not a workspace edit: {e}"
                ))
            })?;
        let edits = format::edits_of(edit.unwrap_or_default()).map_err(ToolError::failed)?;
        if edits.is_empty() {
            return Err(ToolError::NotFound(
                "the language server found nothing to rename there".into(),
            ));
        }
        // What every edit replaces: the name at the position asked about.
        let old_name = text::line_of(&file.text, line)
            .map(|l| text::word_at(l, text::from_server(l, character, server.encoding)))
            .filter(|w| !w.is_empty())
            .map(String::from);
        // Every file the rename touches: inside the workspace, as the server saw it, once.
        let mut planned: Vec<(String, PathBuf, String, String)> = Vec::new();
        for (uri, text_edits) in &edits {
            let abs = path_of(uri).ok_or_else(|| {
                ToolError::failed(format!("the rename names `{uri}`, which is not a file"))
            })?;
            let rel = self.relative(&abs).ok_or_else(|| ToolError::Denied {
                rule: "workspace".into(),
                message: format!(
                    "the rename would change `{}`, outside the workspace. No file was changed.",
                    abs.display()
                ),
            })?;
            let current = self.file(&rel).await?;
            if planned.iter().any(|(r, ..)| *r == current.rel) {
                return Err(ToolError::Conflict(format!(
                    "the server named `{}` twice (through a link?); the rename is refused. No file was changed.",
                    current.rel
                )));
            }
            if let Some(shown) = server.shown(uri)
                && shown != current.text
            {
                return Err(ToolError::Conflict(format!(
                    "`{rel}` changed while the rename was computed; run it again. No file was changed."
                )));
            }
            let new = apply(
                &current.text,
                text_edits,
                server.encoding,
                old_name.as_deref(),
            )
            .map_err(|e| ToolError::failed(format!("`{rel}`: {e}. No file was changed.")))?;
            planned.push((current.rel, current.abs, current.text, new));
        }
        // The files the server named are judged as if the call had named them: a policy
        // rule on `writes` and a read-only caller hold for each.
        let named: Vec<String> = planned.iter().map(|(rel, ..)| rel.clone()).collect();
        ctx.may_write(&named)?;
        let check = ctx
            .config
            .get(READ_BEFORE_EDIT)
            .and_then(Value::as_bool)
            .unwrap_or(true);
        if check {
            for (rel, _, before, _) in &planned {
                toolshed_kit::ledger::check(
                    self.read_log.as_ref(),
                    &ctx.owner,
                    rel,
                    rel,
                    before.as_bytes(),
                )
                .map_err(|e| match e {
                    ToolError::Conflict(m) => {
                        ToolError::Conflict(format!("{m}\nNo file was changed."))
                    }
                    other => other,
                })?;
            }
        }
        let commit: Vec<(String, String, String)> = planned
            .iter()
            .map(|(rel, _, before, after)| (rel.clone(), before.clone(), after.clone()))
            .collect();
        crate::on_files(&self.files, move |files| {
            let changes: Vec<Change<'_>> = commit
                .iter()
                .map(|(rel, before, after)| Change::Write {
                    path: rel,
                    data: after.as_bytes(),
                    expect: Expect::Content(before.as_bytes()),
                    parents: toolshed_ops::Parents::MustExist,
                })
                .collect();
            files.commit(&changes)
        })
        .await
        .map_err(|e| match e {
            ToolError::Conflict(m) => ToolError::Conflict(format!("{m}\nNo file was changed.")),
            other => ToolError::failed(format!("{other}\nNo file was changed.")),
        })?;
        let mut diffs = String::new();
        let mut files = Vec::new();
        let mut total = 0;
        for ((rel, abs, before, after), (_, text_edits)) in planned.iter().zip(&edits) {
            toolshed_kit::ledger::record(self.read_log.as_ref(), &ctx.owner, rel, after.as_bytes());
            let _ = server.show(abs, after).await;
            diffs.push_str(&toolshed_kit::diff::unified(rel, before, after, 1));
            total += text_edits.len();
            files.push(json!({"path": rel, "edits": text_edits.len()}));
        }
        let mut text = format!(
            "renamed to `{}`: {total} edits in {} files\n{diffs}",
            args.new_name,
            planned.len()
        );
        if let Some(note) = note {
            text = format!("{note}\n{text}");
        }
        Ok(ToolOutput::text_and_structured(
            text,
            json!({"new_name": args.new_name, "files": files, "edits": total}),
        ))
    }
}

fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Definition => "definition",
        Kind::References => "references",
        Kind::Implementation => "implementations",
        Kind::Hover => "hover",
    }
}

/// `text` with `edits` (server positions) applied; overlapping edits are refused, and so
/// is an edit whose range does not hold `expected` (when given): the server computed it
/// from another version of the file.
fn apply(
    text: &str,
    edits: &[lsp_types::TextEdit],
    encoding: Encoding,
    expected: Option<&str>,
) -> Result<String, String> {
    let mut spans: Vec<(usize, usize, &str)> = Vec::with_capacity(edits.len());
    for e in edits {
        let start = text::byte_offset(text, e.range.start.line, e.range.start.character, encoding)
            .ok_or_else(|| {
                format!(
                    "an edit starts past the end (line {})",
                    e.range.start.line + 1
                )
            })?;
        let end = text::byte_offset(text, e.range.end.line, e.range.end.character, encoding)
            .ok_or_else(|| format!("an edit ends past the end (line {})", e.range.end.line + 1))?;
        if end < start {
            return Err("an edit ends before it starts".into());
        }
        if let Some(expected) = expected
            && text[start..end] != *expected
        {
            return Err(format!(
                "line {} holds `{}` where the server expected `{expected}`: it saw another version of the file; run the rename again",
                e.range.start.line + 1,
                &text[start..end]
            ));
        }
        spans.push((start, end, &e.new_text));
    }
    spans.sort_by_key(|s| (s.0, s.1));
    if spans.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err("the server's edits overlap".into());
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new) in spans {
        out.push_str(&text[at..start]);
        out.push_str(new);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// Language servers by name, as `[lsp.NAME]` entries override and extend the defaults.
pub fn languages_with(overrides: &HashMap<String, LanguageOverride>) -> Vec<Language> {
    let mut languages = default_languages();
    let mut names: Vec<&String> = overrides.keys().collect();
    names.sort();
    for name in names {
        let o = &overrides[name];
        let at = languages.iter().position(|l| &l.name == name);
        let mut language = match at {
            Some(i) => languages[i].clone(),
            None => Language::new(name, &[], &[], &[], "the server its `command` names"),
        };
        if let Some(c) = &o.command {
            language.command.clone_from(c);
        }
        if let Some(e) = &o.extensions {
            language.extensions = e
                .iter()
                .map(|x| x.trim_start_matches('.').to_string())
                .collect();
        }
        if let Some(m) = &o.markers {
            language.markers.clone_from(m);
        }
        if let Some(s) = &o.settings {
            language.settings.insert("settings".into(), s.clone());
        }
        if let Some(s) = &o.initialization_options {
            language
                .settings
                .insert("initialization_options".into(), s.clone());
        }
        match at {
            Some(i) => languages[i] = language,
            None => languages.push(language),
        }
    }
    languages.retain(|l| !l.command.is_empty());
    languages
}

/// One `[lsp.NAME]` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LanguageOverride {
    /// The server's command line.
    pub command: Option<Vec<String>>,
    /// The extensions it serves.
    pub extensions: Option<Vec<String>>,
    /// Files marking a project root.
    pub markers: Option<Vec<String>>,
    /// Answered to `workspace/configuration`.
    pub settings: Option<Value>,
    /// Sent with `initialize`.
    pub initialization_options: Option<Value>,
}

#[cfg(test)]
mod tests;
