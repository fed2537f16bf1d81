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

pub(crate) use toolshed_kit::{args, find_program, on_files};

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use toolshed_core::{
    ConfigField, ConfigFieldType, Plugin, PluginKind, PluginManifest, Tool, ToolAnnotations,
    ToolSpec,
};
use toolshed_ops::Services;

mod format;
mod languages;
mod pool;
mod program;
mod requests;
mod rpc;
mod section;
mod server;
mod text;
mod tools;
mod uri;
mod watch;

pub use languages::{Language, LanguageOverride, Settings, default_languages, languages_with};
pub use section::LspConfig;

use pool::Servers;
use requests::{LspArgs, RenameArgs};
use tools::{Core, LspPlugin, LspTool};

/// The plugin's id.
pub const PLUGIN_ID: &str = "system.lsp";
/// The config key that turns read-before-edit off for renames.
const READ_BEFORE_EDIT: &str = "require_read_before_edit";

/// The `system.lsp` plugin.
// The root language servers are told (as a URI); files are opened through the jail.
#[allow(clippy::disallowed_methods)]
pub fn plugin(services: &Services, mut settings: Settings) -> Arc<dyn Plugin> {
    let unavailable = if settings.remote {
        // Found or not there, a start says so.
        None
    } else {
        if let Ok(real) = settings.workspace.canonicalize() {
            settings.workspace = real;
        }
        program::unavailable(&settings.languages, &settings.workspace)
    };
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

#[cfg(test)]
mod tests;
