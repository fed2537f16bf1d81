//! The plugin folder convention (Cyrene's): besides its manifest, a plugin's directory may
//! hold
//!
//! - `tools/`: one tool definition a file (`*.json`, `*.toml`, `*.yaml`), in the shape of
//!   a manifest's `[[tools]]` entry (`inputSchema` and `parameters` are read as
//!   `input_schema`): added to the manifest's tools, as if listed there (a JavaScript
//!   plugin serves each by exporting a function of the tool's name);
//! - `config/`: `default.json` (or `.toml`, `.yaml`), an object of config values: each
//!   key the manifest declares gets that default, each it does not becomes a field of the
//!   value's type;
//! - `resources/`: files offered as MCP resources, `toolshed://plugins/<id>/<path>`, while
//!   the plugin runs ([`FolderLibrary`]).
//!
//! Each is read when the manifest is, and a bad file stops the plugin with the file and
//! the problem named, as a bad manifest does.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolshed_core::{
    ConfigField, ConfigFieldType, Library, PluginError, PluginManifest, ResourceUpdated, ToolSpec,
};

/// The most files read from `tools/` or offered from `resources/`.
pub const MAX_FILES: usize = 200;

/// The largest file of `tools/` or `config/` read.
pub const MAX_DEFINITION_BYTES: u64 = 256 * 1024;

/// The largest resource file served.
pub const MAX_RESOURCE_BYTES: u64 = 1 << 20;

/// A file of the folders that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct FolderProblem {
    /// The file, as the plugin names it (`tools/bad.json`).
    pub file: String,
    /// Why.
    pub problem: String,
}

impl FolderProblem {
    fn new(file: &str, problem: impl Into<String>) -> Self {
        Self {
            file: file.to_string(),
            problem: problem.into(),
        }
    }
}

/// Reads a definition file (`shown` in errors) as JSON, whatever its syntax (by
/// extension); `None` for a file of another kind.
fn read_definition(path: &Path, shown: &str) -> Result<Option<Value>, FolderProblem> {
    let fail = |problem: String| FolderProblem::new(shown, problem);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !matches!(ext, "json" | "toml" | "yaml" | "yml") {
        return Ok(None);
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > MAX_DEFINITION_BYTES {
        return Err(fail(format!(
            "is {} bytes; a definition file may have at most {MAX_DEFINITION_BYTES}",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let value = match ext {
        "toml" => {
            let table: toml::Table = text
                .parse()
                .map_err(|e: toml::de::Error| fail(e.to_string().trim().replace('\n', " ")))?;
            serde_json::to_value(table).map_err(|e| fail(e.to_string()))?
        }
        "yaml" | "yml" => serde_yaml_ng::from_str(&text).map_err(|e| fail(e.to_string()))?,
        _ => serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?,
    };
    Ok(Some(value))
}

/// The files of `dir` (not its subfolders), sorted; none when it is not a folder.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

/// Adds what `tools/` and `config/` of `dir` define to `manifest`.
pub fn apply(manifest: &mut PluginManifest, dir: &Path) -> Result<(), FolderProblem> {
    let tools = dir.join("tools");
    let files = files_in(&tools);
    if files.len() > MAX_FILES {
        return Err(FolderProblem::new(
            "tools/",
            format!(
                "holds {} files; at most {MAX_FILES} tool definitions are read",
                files.len()
            ),
        ));
    }
    for file in files {
        let shown = format!(
            "tools/{}",
            file.file_name().unwrap_or_default().to_string_lossy()
        );
        let Some(mut value) = read_definition(&file, &shown)? else {
            continue;
        };
        if let Some(object) = value.as_object_mut() {
            for alias in ["inputSchema", "parameters"] {
                if let Some(schema) = object.remove(alias) {
                    object.entry("input_schema").or_insert(schema);
                }
            }
            if let Some(schema) = object.remove("outputSchema") {
                object.entry("output_schema").or_insert(schema);
            }
        }
        let spec: ToolSpec = serde_json::from_value(value)
            .map_err(|e| FolderProblem::new(&shown, format!("is not a tool definition: {e}")))?;
        if manifest.tools.iter().any(|t| t.name == spec.name) {
            return Err(FolderProblem::new(
                &shown,
                format!(
                    "defines the tool `{}`, which the manifest lists already; keep one",
                    spec.name
                ),
            ));
        }
        manifest.tools.push(spec);
    }
    let defaults = ["json", "toml", "yaml", "yml"]
        .iter()
        .map(|ext| dir.join("config").join(format!("default.{ext}")))
        .find(|p| p.is_file());
    if let Some(file) = defaults {
        let shown = format!(
            "config/{}",
            file.file_name().unwrap_or_default().to_string_lossy()
        );
        let value = read_definition(&file, &shown)?.unwrap_or_default();
        let Value::Object(values) = value else {
            return Err(FolderProblem::new(
                &shown,
                "is not an object of config values",
            ));
        };
        for (key, value) in values {
            apply_default(manifest, &shown, key, value)?;
        }
    }
    Ok(())
}

/// Gives the field `key` the default `value`, making the field when the manifest does not
/// declare it.
fn apply_default(
    manifest: &mut PluginManifest,
    shown: &str,
    key: String,
    value: Value,
) -> Result<(), FolderProblem> {
    if let Some(field) = manifest.config.iter_mut().find(|f| f.key == key) {
        if field.default.is_none() {
            field.default = Some(value);
        }
        return Ok(());
    }
    let field_type = match &value {
        Value::String(_) => ConfigFieldType::String,
        Value::Number(_) => ConfigFieldType::Number,
        Value::Bool(_) => ConfigFieldType::Boolean,
        Value::Object(_) => ConfigFieldType::Object,
        Value::Array(_) | Value::Null => {
            return Err(FolderProblem::new(
                shown,
                format!(
                    "`{key}` is an array or null; a config value is text, a number, a boolean or an object"
                ),
            ));
        }
    };
    manifest.config.push(ConfigField {
        key,
        label: None,
        field_type,
        description: None,
        default: Some(value),
        options: Vec::new(),
        secret: false,
        required: false,
        writable: false,
    });
    Ok(())
}

/// The URI prefix of plugin `id`'s folder resources.
fn prefix(id: &str) -> String {
    format!("toolshed://plugins/{id}/")
}

/// The type of a resource, by its extension.
fn mime_of(rel: &str) -> &'static str {
    match rel.rsplit_once('.').map(|(_, ext)| ext) {
        Some("md") => "text/markdown",
        Some("json") => "application/json",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("xml") => "application/xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ => "text/plain",
    }
}

/// The resources of a plugin's `resources/` folder.
pub struct FolderLibrary {
    id: String,
    dir: PathBuf,
}

impl FolderLibrary {
    /// The library of plugin `id` whose directory is `plugin_dir`, when it has a
    /// `resources/` folder.
    pub fn of(id: &str, plugin_dir: &Path) -> Option<Self> {
        let dir = plugin_dir.join("resources");
        std::fs::symlink_metadata(&dir)
            .is_ok_and(|m| m.is_dir())
            .then(|| Self {
                id: id.to_string(),
                dir,
            })
    }

    /// The files under the folder, relative to it, sorted (at most [`MAX_FILES`], none
    /// over [`MAX_RESOURCE_BYTES`], no links followed).
    fn files(dir: &Path) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut todo = vec![PathBuf::new()];
        while let Some(rel) = todo.pop() {
            let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let (Ok(kind), Ok(meta)) = (entry.file_type(), entry.metadata()) else {
                    continue;
                };
                let path = rel.join(entry.file_name());
                if kind.is_dir() {
                    todo.push(path);
                } else if kind.is_file() && meta.len() <= MAX_RESOURCE_BYTES {
                    out.push((path.to_string_lossy().into_owned(), meta.len()));
                    if out.len() >= MAX_FILES {
                        out.sort();
                        return out;
                    }
                }
            }
        }
        out.sort();
        out
    }
}

#[async_trait]
impl Library for FolderLibrary {
    async fn resources(&self) -> Result<Vec<Value>, PluginError> {
        let dir = self.dir.clone();
        let prefix = prefix(&self.id);
        let files = tokio::task::spawn_blocking(move || Self::files(&dir))
            .await
            .map_err(|e| PluginError(e.to_string()))?;
        Ok(files
            .into_iter()
            .map(|(rel, size)| {
                json!({"uri": format!("{prefix}{rel}"), "name": rel, "mimeType": mime_of(&rel), "size": size})
            })
            .collect())
    }

    async fn resource_templates(&self) -> Result<Vec<Value>, PluginError> {
        Ok(Vec::new())
    }

    async fn read_resource(&self, uri: &str) -> Result<Value, PluginError> {
        let Some(rel) = uri.strip_prefix(&prefix(&self.id)) else {
            return Err(PluginError(format!(
                "plugin `{}`'s resources folder has no {uri:?}",
                self.id
            )));
        };
        let (dir, rel, uri) = (self.dir.clone(), rel.to_string(), uri.to_string());
        tokio::task::spawn_blocking(move || {
            use std::io::Read as _;
            // Beneath the folder by the kernel: no `..`, no link out of it.
            let file = toolshed_ops::open_beneath(&dir, Path::new(&rel))
                .map_err(|e| PluginError(format!("{uri:?}: {e}")))?;
            let mut bytes = Vec::new();
            file.take(MAX_RESOURCE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| PluginError(format!("{uri:?}: {e}")))?;
            if bytes.len() as u64 > MAX_RESOURCE_BYTES {
                return Err(PluginError(format!(
                    "{uri:?} is over {MAX_RESOURCE_BYTES} bytes, the most a resource serves"
                )));
            }
            let mime = mime_of(&rel);
            Ok(match String::from_utf8(bytes) {
                Ok(text) => json!({"contents": [{"uri": uri, "mimeType": mime, "text": text}]}),
                Err(e) => {
                    use base64::Engine as _;
                    let blob = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
                    json!({"contents": [{"uri": uri, "mimeType": mime, "blob": blob}]})
                }
            })
        })
        .await
        .map_err(|e| PluginError(e.to_string()))?
    }

    async fn prompts(&self) -> Result<Vec<Value>, PluginError> {
        Ok(Vec::new())
    }

    async fn get_prompt(
        &self,
        name: &str,
        _arguments: Map<String, Value>,
    ) -> Result<Value, PluginError> {
        Err(PluginError(format!(
            "a resources folder offers no prompt {name:?}"
        )))
    }

    async fn complete(&self, _params: Value) -> Result<Value, PluginError> {
        Ok(json!({"values": []}))
    }

    async fn skills(&self) -> Result<Vec<Value>, PluginError> {
        Ok(Vec::new())
    }

    async fn watch(
        &self,
        uri: &str,
        _updated: ResourceUpdated,
        _stop: toolshed_core::CancellationToken,
    ) -> Result<(), PluginError> {
        Err(PluginError(format!(
            "a plugin's resources folder tells of no changes to {uri}: read it again"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_and_defaults_come_from_the_folders_and_a_bad_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tools")).unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(
            dir.path().join("tools/echo.json"),
            r#"{"name": "echo_back", "description": "Echoes.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("tools/README.md"), "not a tool").unwrap();
        std::fs::write(
            dir.path().join("config/default.toml"),
            "greeting = \"hi\"\nlimit = 3\n",
        )
        .unwrap();
        let mut m = PluginManifest::new("a.b", "1.0.0", "A", toolshed_core::PluginKind::Js);
        apply(&mut m, dir.path()).unwrap();
        assert_eq!(m.tools.len(), 1);
        assert_eq!(
            m.tools[0].input_schema["properties"]["text"]["type"],
            "string"
        );
        let limit = m.config.iter().find(|f| f.key == "limit").unwrap();
        assert_eq!(
            (limit.field_type, limit.default.clone()),
            (ConfigFieldType::Number, Some(json!(3)))
        );
        std::fs::write(dir.path().join("tools/bad.json"), r#"{"name": 1}"#).unwrap();
        let problem = apply(&mut m, dir.path()).unwrap_err();
        assert_eq!(problem.file, "tools/bad.json", "{problem}");
    }
}
