//! Reading plugin manifests from disk and checking them.
//!
//! A manifest may be TOML, YAML or JSON; the first of [`MANIFEST_NAMES`] present in a plugin
//! directory is read. Every problem becomes a [`ManifestError`] naming the file, the field
//! (as a path such as `tools[0].input_schema`) and what is wrong, so a person can fix it
//! without reading toolshed's source.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use crate::manifest_compat::{Dialect, FieldNote};
use crate::manifest_compat::{Normalized, normalize};
use toolshed_core::{
    ConfigFieldType, McpServer, PluginKind, PluginManifest, ToolSpec, is_valid_plugin_id,
};

/// Manifest file names, in the order they are tried. `info.json`, `web-plugin.json` and
/// `package.json` are other systems' names ([`crate::manifest_compat`]); a `package.json`
/// counts only when it holds a plugin manifest.
pub const MANIFEST_NAMES: [&str; 8] = [
    "plugin.toml",
    "plugin.yaml",
    "plugin.yml",
    "plugin.json",
    "manifest.json",
    "info.json",
    "web-plugin.json",
    "package.json",
];

/// The largest manifest read.
pub const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// A manifest that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("{}: {}: {}", .path.display(), .field, .problem)]
pub struct ManifestError {
    /// The manifest file (or the directory, when no manifest was found).
    pub path: PathBuf,
    /// The offending field, as a path; `(file)` for problems with the file itself.
    pub field: String,
    /// What is wrong and how to fix it.
    pub problem: String,
    /// The plugin id, when it could be read.
    pub plugin_id: Option<String>,
}

impl ManifestError {
    fn new(path: &Path, field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            path: path.to_path_buf(),
            field: field.into(),
            problem: problem.into(),
            plugin_id: None,
        }
    }
}

/// The manifest file of a plugin directory, if it has one.
pub fn find_manifest(dir: &Path) -> Option<PathBuf> {
    MANIFEST_NAMES
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file() && (!p.ends_with("package.json") || package_holds_plugin(p)))
}

/// Whether the `package.json` at `path` holds a plugin manifest (any other package is not
/// a plugin); one that cannot be read counts, so the problem is reported.
fn package_holds_plugin(path: &Path) -> bool {
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= MAX_MANIFEST_BYTES);
    let Some(text) = small.then(|| std::fs::read_to_string(path).ok()).flatten() else {
        return true;
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value) => crate::manifest_compat::package_is_plugin(&value),
        Err(_) => true,
    }
}

/// Reads, parses and checks the manifest at `path`.
pub fn load_manifest(path: &Path) -> Result<PluginManifest, ManifestError> {
    inspect_manifest(path).map(|i| i.manifest)
}

/// A manifest as read, with what was done to fields of other systems' formats.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// The manifest, as toolshed uses it.
    pub manifest: PluginManifest,
    /// Each field of another format that was mapped, defaulted or ignored, with why.
    pub notes: Vec<FieldNote>,
    /// The format the file was read as.
    pub dialect: Dialect,
}

/// [`load_manifest`], keeping the notes on the fields it mapped or ignored.
pub fn inspect_manifest(path: &Path) -> Result<Inspection, ManifestError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| ManifestError::new(path, "(file)", format!("cannot read: {e}")))?;
    if meta.len() > MAX_MANIFEST_BYTES {
        return Err(ManifestError::new(
            path,
            "(file)",
            format!(
                "is {} bytes; manifests are limited to {MAX_MANIFEST_BYTES} bytes",
                meta.len()
            ),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        ManifestError::new(path, "(file)", format!("cannot read as UTF-8 text: {e}"))
    })?;
    parse_inspected(path, &text)
}

/// Parses and checks manifest text; `path` decides the format and is named in errors.
pub fn parse_manifest(path: &Path, text: &str) -> Result<PluginManifest, ManifestError> {
    parse_inspected(path, text).map(|i| i.manifest)
}

fn parse_inspected(path: &Path, text: &str) -> Result<Inspection, ManifestError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let syntax = |message: String| ManifestError::new(path, "(syntax)", message);
    let value: Value = match ext {
        "toml" => {
            let table: toml::Table = text
                .parse()
                .map_err(|e: toml::de::Error| syntax(e.to_string().trim().replace('\n', " ")))?;
            serde_json::to_value(table).map_err(|e| syntax(e.to_string()))?
        }
        "yaml" | "yml" => serde_yaml_ng::from_str(text).map_err(|e| syntax(e.to_string()))?,
        _ => serde_json::from_str(text).map_err(|e| syntax(e.to_string()))?,
    };
    let Normalized {
        value,
        notes,
        dialect,
    } = normalize(path, value);
    let plugin_id = value.get("id").and_then(Value::as_str).map(str::to_string);
    let with_id = |mut e: ManifestError| {
        e.plugin_id = plugin_id.clone();
        e
    };
    let manifest: PluginManifest = serde_path_to_error::deserialize(value).map_err(|e| {
        let field = match e.path().to_string() {
            p if p == "." => "(top level)".to_string(),
            p => p,
        };
        with_id(ManifestError::new(path, field, e.into_inner().to_string()))
    })?;
    let mut manifest = manifest;
    // The folders beside the manifest (`tools/`, `config/`), for a manifest in a plugin's
    // directory.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::plugin_folders::apply(&mut manifest, dir)
            .map_err(|p| with_id(ManifestError::new(path, p.file, p.problem)))?;
    }
    check_manifest(&manifest)
        .map_err(|(field, problem)| with_id(ManifestError::new(path, field, problem)))?;
    node_requirement(&mut manifest, path.parent());
    Ok(Inspection {
        manifest,
        notes,
        dialect,
    })
}

/// A JavaScript plugin that needs Node.js (`toolshed_core::runtime`) requires `node`: on
/// a host without it the plugin is held, saying what to install, as for any requirement.
fn node_requirement(manifest: &mut PluginManifest, dir: Option<&Path>) {
    if manifest.kind != toolshed_core::PluginKind::Js
        || manifest
            .requirements
            .iter()
            .any(|r| r.binary == "node" || r.binary == "nodejs")
    {
        return;
    }
    if let Some(why) = dir.and_then(toolshed_core::runtime::needs_node) {
        manifest.requirements.push(toolshed_core::Requirement {
            binary: "node".into(),
            description: Some(format!(
                "Node.js runs this plugin ({why}): install it (apt-get install nodejs)"
            )),
            optional: false,
        });
    }
}

/// The rules serde cannot express, including that every tool's input schema compiles.
/// Returns the field and the problem.
pub fn check_manifest(m: &PluginManifest) -> Result<(), (String, String)> {
    check_manifest_rules(m, true)
}

/// [`check_manifest`] without compiling the tools' schemas: for built-in plugins, whose
/// schemas the registry compiles once when it indexes them (and reports if one is broken).
/// Compiling a schema meta-validates it, which is most of the cost of checking a manifest.
pub fn check_manifest_shallow(m: &PluginManifest) -> Result<(), (String, String)> {
    check_manifest_rules(m, false)
}

fn check_manifest_rules(m: &PluginManifest, compile: bool) -> Result<(), (String, String)> {
    let err = |field: &str, problem: String| Err((field.to_string(), problem));
    if !is_valid_plugin_id(&m.id) {
        return err(
            "id",
            format!(
                "`{}` is not a valid plugin id: use 1 to 64 characters of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit (e.g. `acme.notes`)",
                m.id
            ),
        );
    }
    if let Err(e) = semver::Version::parse(&m.version) {
        return err(
            "version",
            format!(
                "`{}` is not a semantic version ({e}); use e.g. `1.0.0`",
                m.version
            ),
        );
    }
    if m.name.trim().is_empty() {
        return err("name", "is empty; give the plugin a display name".into());
    }
    if let Err(problem) = crate::command_env::check_contributed(&m.capabilities.shell_env) {
        return err("capabilities.shell_env", problem.to_string());
    }
    if m.kind != PluginKind::Mcp && m.mcp.is_some() {
        return err(
            "mcp",
            format!(
                "an `[mcp]` table belongs to plugins of kind `mcp`; this one is `{}`",
                m.kind.as_str()
            ),
        );
    }
    match (&m.kind, m.mcp_server()) {
        (PluginKind::Mcp, None) => {
            return err(
                "mcp",
                "a plugin of kind `mcp` needs an `[mcp]` table naming its server: \
                 `command = \"npx\"`, `args = [\"-y\", \"@modelcontextprotocol/server-memory\"]`"
                    .into(),
            );
        }
        (PluginKind::Mcp, Some(server))
            if server.command.trim().is_empty() && server.url.is_none() =>
        {
            return err(
                "mcp.command",
                "is empty; name the program that runs the server over stdio, or give the \
                 `url` of a server reached over HTTP"
                    .into(),
            );
        }
        (PluginKind::Mcp, Some(server))
            if server.url.is_some() && !server.command.trim().is_empty() =>
        {
            return err(
                "mcp.url",
                "a server is either a `command` (stdio) or a `url` (HTTP), not both; remove one"
                    .into(),
            );
        }
        (PluginKind::Mcp, Some(McpServer { url: Some(url), .. }))
            if !(url.starts_with("http://") || url.starts_with("https://")) =>
        {
            return err(
                "mcp.url",
                format!("`{url}` is not an http:// or https:// URL"),
            );
        }
        (PluginKind::Mcp, Some(server)) => {
            if let Some(protocol) = &server.protocol
                && !["auto", "legacy", "2026-07-28"].contains(&protocol.as_str())
            {
                return err(
                    "mcp.protocol",
                    format!(
                        "`{protocol}` is not a protocol choice: use auto, legacy or 2026-07-28"
                    ),
                );
            }
            if let Some(pin) = &server.pin
                && !["strict", "warn", "off"].contains(&pin.as_str())
            {
                return err(
                    "mcp.pin",
                    format!("`{pin}` is not a pin mode: use strict, warn or off"),
                );
            }
            if let Some(prefix) = &server.prefix
                && (prefix.len() > 32
                    || !prefix
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            {
                return err(
                    "mcp.prefix",
                    format!(
                        "`{prefix}` is not a valid prefix: use up to 32 of a-z, 0-9, `_`, `-` (empty: the server's own names)"
                    ),
                );
            }
        }
        _ => {}
    }
    for (dep, requirement) in &m.dependencies {
        let at = format!("dependencies.{dep}");
        if !is_valid_plugin_id(dep) {
            return err(&at, format!("`{dep}` is not a valid plugin id"));
        }
        if dep == &m.id {
            return err(&at, "a plugin cannot depend on itself".into());
        }
        if let Err(e) = semver::VersionReq::parse(requirement) {
            return err(
                &at,
                format!(
                    "`{requirement}` is not a version requirement ({e}); use e.g. `^1.2` or `*`"
                ),
            );
        }
    }
    let mut names = BTreeSet::new();
    for (i, tool) in m.tools.iter().enumerate() {
        check_tool(tool, compile).map_err(|(f, p)| (format!("tools[{i}].{f}"), p))?;
        if !names.insert(tool.name.as_str()) {
            return err(
                &format!("tools[{i}].name"),
                format!("`{}` is listed twice; tool names must be unique", tool.name),
            );
        }
    }
    let mut keys = BTreeSet::new();
    for (i, field) in m.config.iter().enumerate() {
        let at = |f: &str| format!("config[{i}].{f}");
        if field.key.is_empty()
            || !field
                .key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return err(
                &at("key"),
                format!(
                    "`{}` is not a valid key: use letters, digits and `_`",
                    field.key
                ),
            );
        }
        if !keys.insert(field.key.as_str()) {
            return err(&at("key"), format!("`{}` is listed twice", field.key));
        }
        if field.writable && field.secret {
            return err(
                &at("writable"),
                "a secret cannot be writable: plugins never see or change secrets through `ctx.config.set`".into(),
            );
        }
        if field.field_type == ConfigFieldType::Select && field.options.is_empty() {
            return err(
                &at("options"),
                "a `select` field needs a non-empty `options` list".into(),
            );
        }
        if let Some(default) = &field.default
            && !default_fits(field.field_type, default, &field.options)
        {
            return err(
                &at("default"),
                format!("{default} does not fit type `{:?}`", field.field_type).to_lowercase(),
            );
        }
    }
    for (i, var) in m.env.iter().enumerate() {
        let ok = !var.name.is_empty()
            && var
                .name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && !var.name.starts_with(|c: char| c.is_ascii_digit());
        if !ok {
            return err(
                &format!("env[{i}].name"),
                format!(
                    "`{}` is not a valid variable name: use A-Z, 0-9 and `_`",
                    var.name
                ),
            );
        }
    }
    for (i, req) in m.requirements.iter().enumerate() {
        if req.binary.is_empty() || req.binary.contains('/') {
            return err(
                &format!("requirements[{i}].binary"),
                format!(
                    "`{}` must be a program name looked up on PATH, without `/`",
                    req.binary
                ),
            );
        }
    }
    Ok(())
}

fn default_fits(ty: ConfigFieldType, value: &Value, options: &[Value]) -> bool {
    match ty {
        ConfigFieldType::String => value.is_string(),
        ConfigFieldType::Number => value.is_number(),
        ConfigFieldType::Boolean => value.is_boolean(),
        ConfigFieldType::Select => options.contains(value),
        ConfigFieldType::Object => value.is_object(),
    }
}

/// Whether `name` is a usable tool name: 1 to 64 of `A-Za-z0-9_-`, as MCP clients accept.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn check_tool(tool: &ToolSpec, compile: bool) -> Result<(), (String, String)> {
    if !is_valid_tool_name(&tool.name) {
        return Err((
            "name".into(),
            format!(
                "`{}` is not a valid tool name: use 1 to 64 of A-Z, a-z, 0-9, `_`, `-` (e.g. `notes_search`)",
                tool.name
            ),
        ));
    }
    if tool.description.trim().is_empty() {
        return Err((
            "description".into(),
            "is empty; say what the tool does so a model can choose it".into(),
        ));
    }
    if tool.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err((
            "input_schema".into(),
            "must be a JSON Schema with `\"type\": \"object\"`".into(),
        ));
    }
    if compile && let Err(e) = jsonschema::validator_for(&tool.input_schema) {
        return Err((
            "input_schema".into(),
            format!("is not a valid JSON Schema: {e}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD_TOML: &str = r#"
id = "acme.notes"
version = "1.2.0"
name = "Notes"
kind = "js"
entry = "main.js"

[[tools]]
name = "notes_search"
description = "Search notes."
input_schema = { type = "object", properties = { q = { type = "string" } }, required = ["q"] }

[[config]]
key = "mode"
type = "select"
options = ["a", "b"]
default = "a"

[[env]]
name = "NOTES_TOKEN"
required = true
secret = true
"#;

    fn parse(name: &str, text: &str) -> Result<PluginManifest, ManifestError> {
        parse_manifest(Path::new(name), text)
    }

    #[test]
    fn parses_every_format_to_the_same_manifest() {
        let toml = parse("plugin.toml", GOOD_TOML).unwrap();
        let json = serde_json::to_string(&toml).unwrap();
        assert_eq!(parse("plugin.json", &json).unwrap(), toml);
        assert_eq!(parse("manifest.json", &json).unwrap(), toml);
        // JSON is valid YAML.
        assert_eq!(parse("plugin.yaml", &json).unwrap(), toml);
        assert_eq!(toml.tools[0].name, "notes_search");
        assert_eq!(toml.env[0].name, "NOTES_TOKEN");
    }

    fn problem(name: &str, text: &str) -> ManifestError {
        parse(name, text).unwrap_err()
    }

    #[test]
    fn an_mcp_plugin_names_its_server() {
        let base = "id = \"mcp.x\"\nversion = \"1.0.0\"\nname = \"X\"\nkind = \"mcp\"\n";
        let e = problem("plugin.toml", base);
        assert_eq!(e.field, "mcp");
        let e = problem("plugin.toml", &format!("{base}[mcp]\nargs = [\"x\"]\n"));
        assert_eq!(e.field, "mcp.command");
        let e = problem(
            "plugin.toml",
            &format!("{base}[mcp]\ncommand = \"x\"\nprefix = \"a b\"\n"),
        );
        assert_eq!(e.field, "mcp.prefix");
        let e = problem(
            "plugin.toml",
            &format!("{base}[mcp]\ncommand = \"x\"\nurl = \"http://y/\"\n"),
        );
        assert_eq!(e.field, "mcp.url");
        let e = problem("plugin.toml", &format!("{base}[mcp]\nurl = \"ftp://y/\"\n"));
        assert_eq!(e.field, "mcp.url");
        parse(
            "plugin.toml",
            &format!("{base}[mcp]\nurl = \"http://127.0.0.1:9/mcp\"\n[mcp.headers]\nAuthorization = \"Bearer ${{config.token}}\"\n"),
        )
        .unwrap();
        let js = GOOD_TOML.replace(
            "entry = \"main.js\"",
            "entry = \"main.js\"\n[mcp]\ncommand = \"x\"",
        );
        assert_eq!(problem("plugin.toml", &js).field, "mcp");
        // `entry` as a command line does too.
        let m = parse("plugin.toml", &format!("{base}entry = \"npx -y srv\"\n")).unwrap();
        let server = m.mcp_server().unwrap();
        assert_eq!((server.command.as_str(), server.args.len()), ("npx", 2));
    }

    #[test]
    fn broken_manifests_name_field_and_problem() {
        let e = problem(
            "plugin.toml",
            &GOOD_TOML.replace("acme.notes", "Acme Notes"),
        );
        assert_eq!(e.field, "id");
        assert!(e.problem.contains("`Acme Notes`"), "{e}");

        let e = problem("plugin.toml", &GOOD_TOML.replace("1.2.0", "1.2"));
        assert_eq!(e.field, "version");

        let e = problem(
            "plugin.toml",
            &GOOD_TOML.replace("kind = \"js\"", "kind = \"python\""),
        );
        assert_eq!(e.field, "kind");
        assert!(e.problem.contains("python"), "{e}");
        assert_eq!(e.plugin_id.as_deref(), Some("acme.notes"));

        let e = problem(
            "plugin.toml",
            &GOOD_TOML.replace("type = \"object\"", "type = \"array\""),
        );
        assert_eq!(e.field, "tools[0].input_schema");

        let e = problem(
            "plugin.toml",
            &GOOD_TOML.replace("name = \"notes_search\"", "name = \"notes search\""),
        );
        assert_eq!(e.field, "tools[0].name");

        let e = problem(
            "plugin.toml",
            &GOOD_TOML.replace("default = \"a\"", "default = \"c\""),
        );
        assert_eq!(e.field, "config[0].default");

        let e = problem("plugin.toml", &GOOD_TOML.replace("entry =", "entyr ="));
        assert!(e.problem.contains("entyr"), "{e}");

        let e = problem("plugin.toml", "id = ");
        assert_eq!(e.field, "(syntax)");
        let e = problem("plugin.json", "{\"id\": ");
        assert_eq!(e.field, "(syntax)");
        let e = problem("plugin.yaml", "id: [");
        assert_eq!(e.field, "(syntax)");

        let e = problem(
            "plugin.json",
            r#"{"id":"a","version":"1.0.0","name":"A","kind":"js","tools":[{"name":"t"}]}"#,
        );
        assert_eq!(e.field, "tools[0]");
        assert!(e.problem.contains("description"), "{e}");
    }

    #[test]
    fn finds_the_first_manifest_name_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("info.json"), "{}").unwrap();
        std::fs::write(dir.path().join("plugin.yml"), "").unwrap();
        assert_eq!(
            find_manifest(dir.path()).unwrap(),
            dir.path().join("plugin.yml")
        );
    }
}
