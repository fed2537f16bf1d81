//! The plugin's tools, `lsp` and `lsp_rename`, and what their operations share: reading a
//! workspace file, finding its language, project and server, and showing the server the
//! files as they are now. The operations themselves are in the child modules.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use toolshed_core::{
    CallContext, Plugin, PluginError, PluginManifest, Tool, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::{FileOps, ReadLog};

use crate::languages::{Language, Settings};
use crate::pool::Servers;
use crate::requests::{Operation, operation_of, parse_for};
use crate::server::Server;
use crate::text::{self, Encoding};
use crate::uri::{path_of, uri_of};

mod diagnostics;
mod navigation;
mod rename;

#[cfg(test)]
pub(crate) use rename::apply;

/// The largest file shown to a server.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The plugin.
pub(crate) struct LspPlugin {
    pub(crate) manifest: PluginManifest,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) servers: Arc<Servers>,
}

/// The `lsp` tool (questions, by `operation`) or `lsp_rename`.
pub(crate) struct LspTool {
    pub(crate) spec: ToolSpec,
    pub(crate) rename: bool,
    pub(crate) core: Arc<Core>,
}

/// What every tool of the plugin shares.
pub(crate) struct Core {
    pub(crate) servers: Arc<Servers>,
    pub(crate) files: Arc<dyn FileOps>,
    pub(crate) read_log: Arc<dyn ReadLog>,
    /// Why no tool can work here (no server installed at all), if so.
    pub(crate) unavailable: Option<String>,
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
pub(crate) struct File {
    /// Workspace-relative, links resolved.
    pub(crate) rel: String,
    abs: PathBuf,
    pub(crate) text: String,
}

impl Core {
    pub(crate) fn settings(&self) -> &Settings {
        &self.servers.settings
    }

    /// Reads a workspace file (inside the jail).
    pub(crate) async fn file(&self, path: &str) -> Result<File, ToolError> {
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
    pub(crate) fn relative(&self, abs: &Path) -> Option<String> {
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
            .map_err(|e| ToolError::failed(e.to_string()))?;
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
                        server
                            .show(&abs, &text)
                            .await
                            .map_err(|e| ToolError::failed(e.to_string()))?;
                    }
                }
                Err(ToolError::NotFound(_)) => server
                    .close(&abs)
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?,
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
}
