//! Manifests written for the systems toolshed replaces, read as toolshed manifests.
//!
//! Before a manifest is checked, [`normalize`] rewrites the fields of the other formats
//! into toolshed's own and says, for each field it touched, what it did and why:
//!
//! - **Agent Spaces** (`info.json`, `web-plugin.json`): `name_<lang>`, `description_<lang>`
//!   and `tags_<lang>` become the name, description and tags plus `translations`; `entries`
//!   names the entry file; `type`, `hasView` and `hasWorkflow` are ignored.
//! - **Fenix** (`plugin.yml`): `plugin_id` is the id, an integer `version` N is `N.0.0`,
//!   `tool_catalog` is the tool list (its `parameters` are the input schema) and `plane`
//!   names are mapped onto toolshed's planes.
//! - **Cyrene**: `author` is kept for display and `dependencies` (plugin ids, with
//!   optional version requirements) are checked when the plugin is enabled.
//! - **package.json**: a `toolshed` key holds the manifest; the package's `name`,
//!   `version`, `description`, `main`, `keywords` and `author` fill what it leaves out.
//!
//! A manifest in one of these formats may carry fields toolshed has no use for: they are
//! ignored, each with a note, where a native manifest's unknown field is an error (so a
//! typo in `plugin.toml` is never silently dropped).

use std::collections::BTreeMap;
use std::path::Path;

mod agent_spaces;
mod fenix;

use agent_spaces::config_fields;
#[cfg(test)]
use agent_spaces::names_a_credential;
use fenix::{fenix_fields, version_text};

use serde::Serialize;
use serde_json::{Map, Value};

/// Top-level fields of toolshed's own manifest.
const NATIVE: [&str; 24] = [
    "id",
    "version",
    "name",
    "description",
    "translations",
    "kind",
    "entry",
    "tags",
    "groups",
    "icon",
    "plane",
    "tools",
    "config",
    "env",
    "requirements",
    "capabilities",
    "mcp",
    "author",
    "dependencies",
    "dialect",
    "client",
    "homepage",
    // Read from the other formats below; never left in a normalised manifest.
    "main",
    "type",
];

/// Fields only the other formats use: one of them makes a manifest foreign.
const FOREIGN_MARKERS: [&str; 8] = [
    "permissions",
    "host_permissions",
    "plugin_id",
    "tool_catalog",
    "entries",
    "hasView",
    "hasWorkflow",
    "hasSettings",
];

/// Fields of an npm `package.json` that say nothing about the plugin.
const NPM_FIELDS: [&str; 15] = [
    "scripts",
    "devDependencies",
    "peerDependencies",
    "optionalDependencies",
    "license",
    "repository",
    "bugs",
    "files",
    "engines",
    "private",
    "type",
    "module",
    "exports",
    "contributors",
    "packageManager",
];

/// What happened to one field of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldNote {
    /// The field as written in the file.
    pub field: String,
    /// `mapped` (its value now lives in `to`), `defaulted` (`to` was filled in because
    /// the file left it out) or `ignored`.
    pub action: &'static str,
    /// The toolshed field it became, for `mapped` and `defaulted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Why.
    pub why: String,
}

/// Which format a manifest was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// toolshed's own fields only.
    Toolshed,
    /// Agent Spaces, Fenix or Cyrene fields, or a `package.json`.
    Foreign,
}

/// The result of [`normalize`].
#[derive(Debug, Clone)]
pub(crate) struct Normalized {
    /// The manifest as toolshed's fields.
    pub value: Value,
    /// Every field touched, in the order met.
    pub notes: Vec<FieldNote>,
    /// The format it was read as.
    pub dialect: Dialect,
}

/// Whether a `package.json` holds a plugin manifest: a `toolshed` key or another
/// format's marker fields. Other packages are not plugins.
pub(crate) fn package_is_plugin(value: &Value) -> bool {
    value.get("toolshed").is_some_and(Value::is_object) || has_foreign_fields(value)
}

fn is_foreign(value: &Value, file_name: &str) -> bool {
    matches!(file_name, "info.json" | "web-plugin.json" | "package.json")
        || has_foreign_fields(value)
}

fn has_foreign_fields(value: &Value) -> bool {
    let Some(obj) = value.as_object() else {
        return false;
    };
    obj.keys()
        .any(|k| FOREIGN_MARKERS.contains(&k.as_str()) || lang_suffix(k).is_some())
        || obj.get("version").is_some_and(Value::is_u64)
        // Shapes toolshed's own fields never take: Cyrene's list of dependencies, an
        // author as `{name, email}`.
        || obj.get("dependencies").is_some_and(Value::is_array)
        || obj.get("author").is_some_and(Value::is_object)
}

/// `name_zh` → (`name`, `zh`), for the fields translated by suffix.
fn lang_suffix(key: &str) -> Option<(&'static str, String)> {
    ["name", "description", "tags"]
        .into_iter()
        .find_map(|base| {
            let lang = key.strip_prefix(base)?.strip_prefix('_')?;
            let ok = (2..=8).contains(&lang.len())
                && lang.chars().all(|c| c.is_ascii_alphabetic() || c == '-');
            ok.then(|| (base, lang.to_ascii_lowercase().replace('_', "-")))
        })
}

struct Notes(Vec<FieldNote>);

impl Notes {
    fn mapped(&mut self, field: &str, to: &str, why: impl Into<String>) {
        self.push(field, "mapped", Some(to), why);
    }
    fn defaulted(&mut self, to: &str, why: impl Into<String>) {
        self.push(to, "defaulted", Some(to), why);
    }
    fn ignored(&mut self, field: &str, why: impl Into<String>) {
        self.push(field, "ignored", None, why);
    }
    fn push(
        &mut self,
        field: &str,
        action: &'static str,
        to: Option<&str>,
        why: impl Into<String>,
    ) {
        self.0.push(FieldNote {
            field: field.to_string(),
            action,
            to: to.map(str::to_string),
            why: why.into(),
        });
    }
}

/// Rewrites a manifest read from `path` (its file name picks the format) into toolshed's
/// fields. `dir` is the plugin directory, looked at only to find an entry file the
/// manifest does not name. A native manifest comes back unchanged.
pub(crate) fn normalize(path: &Path, value: Value) -> Normalized {
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let dir = path.parent();
    let mut notes = Notes(Vec::new());
    let Value::Object(mut obj) = value else {
        return Normalized {
            value,
            notes: Vec::new(),
            dialect: Dialect::Toolshed,
        };
    };
    if file_name == "package.json" {
        obj = from_package(obj, &mut notes);
    } else if !is_foreign(&Value::Object(obj.clone()), file_name) {
        return Normalized {
            value: Value::Object(obj),
            notes: Vec::new(),
            dialect: Dialect::Toolshed,
        };
    }
    let mut out = Map::new();
    if !obj.contains_key("dialect") {
        let dialect = dialect_of(file_name, &obj);
        out.insert("dialect".into(), dialect.into());
        notes.defaulted(
            "dialect",
            format!("written for {dialect}: its plugins' conventions apply"),
        );
    }
    fenix_fields(&mut obj, &mut out, &mut notes);
    translated_fields(&mut obj, &mut out, &mut notes);
    entry_fields(&mut obj, &mut out, &mut notes, dir);
    people_fields(&mut obj, &mut out, &mut notes);
    permission_fields(&mut obj, &mut out, &mut notes);
    config_fields(&mut obj, &mut notes);
    icon_fields(&mut obj, &mut out, &mut notes, dir);
    if !out.contains_key("id") && !obj.contains_key("id") {
        let name = obj
            .get("name")
            .or_else(|| out.get("name"))
            .and_then(Value::as_str);
        if let Some(id) = name.map(id_from_name).filter(|id| !id.is_empty()) {
            notes.defaulted("id", format!("made from the name: `{id}`"));
            out.insert("id".into(), Value::String(id));
        }
    }
    if out.get("dialect").and_then(Value::as_str) == Some("agent-spaces")
        && !out.contains_key("capabilities")
        && !obj.contains_key("capabilities")
    {
        // Agent Spaces plugins reach the network without declaring it: asked for here, so
        // that a person can grant the hosts (each one, as for any plugin).
        out.insert("capabilities".into(), serde_json::json!({"network": ["*"]}));
        notes.defaulted(
            "capabilities.network",
            "Agent Spaces plugins use the network without declaring it; nothing is reached until a person grants a host",
        );
    }
    for (key, value) in obj {
        if NATIVE.contains(&key.as_str()) {
            out.entry(key).or_insert(value);
        } else {
            let why = match key.as_str() {
                "hasView" => "toolshed shows no plugin views; the plugin's tools work without one",
                "hasWorkflow" => {
                    "toolshed runs no plugin workflows; an agent composes the tools itself"
                }
                "hasSettings" => "settings come from the manifest's `config` fields",
                "runtimeTargets" => {
                    "the windows Agent Spaces runs its client part in; a headless host serves no client part"
                }
                _ => "not a field toolshed knows",
            };
            notes.ignored(&key, why);
        }
    }
    if !out.contains_key("kind") {
        let js = out
            .get("entry")
            .and_then(Value::as_str)
            .is_some_and(|e| [".js", ".mjs", ".cjs"].iter().any(|x| e.ends_with(x)));
        if js {
            out.insert("kind".into(), "js".into());
            notes.defaulted("kind", "the entry is a JavaScript file, so the plugin runs in toolshed's JavaScript sandbox");
        } else if out
            .get("client")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty())
        {
            out.insert("kind".into(), "js".into());
            notes.defaulted(
                "kind",
                "only parts for another host's window: the plugin is listed and keeps running here with no tools",
            );
        }
    }
    Normalized {
        value: Value::Object(out),
        notes: notes.0,
        dialect: Dialect::Foreign,
    }
}

/// A `package.json`: the `toolshed` key is the manifest; package fields fill its gaps.
fn from_package(mut package: Map<String, Value>, notes: &mut Notes) -> Map<String, Value> {
    let mut obj = match package.remove("toolshed") {
        Some(Value::Object(inner)) => inner,
        _ => Map::new(),
    };
    let fill = |obj: &mut Map<String, Value>, notes: &mut Notes, from: &str, to: &str, v: Value| {
        if obj.contains_key(to) {
            notes.ignored(from, format!("the `toolshed` key sets `{to}`"));
        } else {
            obj.insert(to.to_string(), v);
            notes.mapped(from, to, "taken from the package");
        }
    };
    for (key, value) in package {
        match key.as_str() {
            "name" => {
                let id = npm_name_to_id(value.as_str().unwrap_or_default());
                fill(&mut obj, notes, "name", "id", Value::String(id));
                if !obj.contains_key("name") {
                    obj.insert("name".into(), value);
                }
            }
            "version" | "description" | "author" => fill(&mut obj, notes, &key, &key, value),
            "main" => fill(&mut obj, notes, "main", "entry", value),
            "keywords" => fill(&mut obj, notes, "keywords", "tags", value),
            "dependencies" => notes.ignored(
                "dependencies",
                "npm packages; toolshed plugins name the plugins they need in `toolshed.dependencies`",
            ),
            k if NPM_FIELDS.contains(&k) => notes.ignored(k, "an npm package field"),
            _ => {
                // The other formats' fields may sit at the top of package.json.
                obj.entry(key).or_insert(value);
            }
        }
    }
    obj
}

/// `@acme/notes-plugin` → `acme.notes-plugin`.
/// An id made from a display name: lower case, runs of other characters than `a-z`,
/// `0-9`, `.`, `_` and `-` as one `-` (`Weather Tools` → `weather-tools`).
fn id_from_name(name: &str) -> String {
    let mut id = String::new();
    for c in name.trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-') {
            id.push(c);
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    id.trim_matches('-').chars().take(64).collect()
}

fn npm_name_to_id(name: &str) -> String {
    name.trim_start_matches('@')
        .replace('/', ".")
        .to_ascii_lowercase()
}

/// Which system a foreign manifest was written for, from its file name and fields.
fn dialect_of(file_name: &str, obj: &Map<String, Value>) -> &'static str {
    match file_name {
        "info.json" | "web-plugin.json" => "agent-spaces",
        "package.json" => "npm",
        "plugin.yml" | "plugin.yaml" => "fenix",
        _ if obj.contains_key("plugin_id") || obj.contains_key("tool_catalog") => "fenix",
        _ if obj.keys().any(|k| lang_suffix(k).is_some()) || obj.contains_key("hasView") => {
            "agent-spaces"
        }
        _ => "cyrene",
    }
}

/// `name_zh`, `description_en`, `tags_zh`…: the English (else the first) value is the
/// plain field when the file does not set it; every other language is a translation.
fn translated_fields(
    obj: &mut Map<String, Value>,
    out: &mut Map<String, Value>,
    notes: &mut Notes,
) {
    let keys: Vec<String> = obj
        .keys()
        .filter(|k| lang_suffix(k).is_some())
        .cloned()
        .collect();
    if keys.is_empty() {
        return;
    }
    // base → lang → (key, value)
    let mut by_base: BTreeMap<&'static str, BTreeMap<String, (String, Value)>> = BTreeMap::new();
    for key in keys {
        let (Some((base, lang)), Some(value)) = (lang_suffix(&key), obj.remove(&key)) else {
            continue;
        };
        by_base.entry(base).or_default().insert(lang, (key, value));
    }
    let mut translations: Map<String, Value> = match obj.remove("translations") {
        Some(Value::Object(t)) => t,
        _ => Map::new(),
    };
    for (base, langs) in by_base {
        let plain_set = obj.contains_key(base);
        // The language that fills the plain field, when the file leaves it out.
        let primary = (!plain_set).then(|| {
            if langs.contains_key("en") {
                "en".to_string()
            } else {
                langs.keys().next().cloned().unwrap_or_default()
            }
        });
        for (lang, (key, value)) in langs {
            if primary.as_deref() == Some(lang.as_str()) {
                out.insert(base.into(), value.clone());
                notes.mapped(
                    &key,
                    base,
                    format!("the plugin's {base} (language `{lang}`)"),
                );
            }
            if primary.as_deref() == Some(lang.as_str()) && lang == "en" {
                continue;
            }
            let entry = translations
                .entry(lang.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(t) = entry.as_object_mut() {
                t.insert(base.into(), value);
            }
            notes.mapped(
                &key,
                &format!("translations.{lang}.{base}"),
                format!("shown for `?locale={lang}` and TOOLSHED_LANG={lang}"),
            );
        }
    }
    out.insert("translations".into(), Value::Object(translations));
}

/// The `entries` of an Agent Spaces manifest that are for its own window, not a server.
const CLIENT_PARTS: [&str; 5] = ["client", "view", "web", "renderer", "ui"];

/// `iconPath`, `iconUrl` and `icon`, else an `icon.svg`/`.png`/`.jpg` beside the manifest:
/// the plugin's icon. `homepage` is kept too.
fn icon_fields(
    obj: &mut Map<String, Value>,
    out: &mut Map<String, Value>,
    notes: &mut Notes,
    dir: Option<&Path>,
) {
    for field in ["iconPath", "iconUrl"] {
        let Some(value) = obj.remove(field) else {
            continue;
        };
        if obj.contains_key("icon") || out.contains_key("icon") {
            notes.ignored(field, "the manifest names its icon already");
        } else if let Value::String(place) = value {
            out.insert("icon".into(), Value::String(place));
            notes.mapped(field, "icon", "the plugin's icon");
        }
    }
    if !obj.contains_key("icon") && !out.contains_key("icon") {
        let found = ["icon.svg", "icon.png", "icon.jpg", "icon.jpeg", "icon.webp"]
            .into_iter()
            .find(|f| dir.is_some_and(|d| d.join(f).is_file()));
        if let Some(file) = found {
            out.insert("icon".into(), Value::String(file.into()));
            notes.defaulted("icon", format!("`{file}` is beside the manifest"));
        }
    }
    if let Some(page) = obj.remove("homepage") {
        out.insert("homepage".into(), page);
        notes.mapped("homepage", "homepage", "shown beside the plugin");
    }
}

/// `entries`, `main` and Agent Spaces' `type`: which file runs.
fn entry_fields(
    obj: &mut Map<String, Value>,
    out: &mut Map<String, Value>,
    notes: &mut Notes,
    dir: Option<&Path>,
) {
    let is_js = |s: &str| [".js", ".mjs", ".cjs"].iter().any(|x| s.ends_with(x));
    if let Some(entries) = obj.remove("entries") {
        let candidates: Vec<(String, String)> = match &entries {
            Value::String(s) => vec![("entries".into(), s.clone())],
            Value::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some((format!("entries[{i}]"), v.as_str()?.to_string())))
                .collect(),
            Value::Object(map) => {
                let preferred = ["main", "backend", "index", "entry", "plugin", "server"];
                let mut parts = Vec::new();
                for (k, v) in map {
                    let place = v
                        .as_str()
                        .or_else(|| v.get("url").and_then(Value::as_str))
                        .or_else(|| v.get("path").and_then(Value::as_str));
                    if CLIENT_PARTS.contains(&k.as_str())
                        && let Some(place) = place
                    {
                        parts.push(Value::String(format!("{k} ({place})")));
                        notes.mapped(
                            &format!("entries.{k}"),
                            "client",
                            "a part for Agent Spaces' own window: listed as not served by a headless host, never run",
                        );
                    }
                }
                if !parts.is_empty() {
                    out.insert("client".into(), Value::Array(parts));
                }
                let mut list: Vec<(String, String)> = map
                    .iter()
                    .filter(|(k, _)| !CLIENT_PARTS.contains(&k.as_str()))
                    .filter_map(|(k, v)| Some((format!("entries.{k}"), v.as_str()?.to_string())))
                    .collect();
                list.sort_by_key(|(k, _)| {
                    preferred
                        .iter()
                        .position(|p| k == &format!("entries.{p}"))
                        .unwrap_or(preferred.len())
                });
                list
            }
            _ => Vec::new(),
        };
        let chosen = candidates.iter().find(|(_, f)| is_js(f)).cloned();
        for (field, file) in &candidates {
            match &chosen {
                Some((c, _)) if c == field && !obj.contains_key("entry") => {
                    out.insert("entry".into(), Value::String(file.clone()));
                    notes.mapped(field, "entry", "the script toolshed runs");
                }
                _ => notes.ignored(field, format!("`{file}` is not the plugin's script (a view or an asset); toolshed runs one entry")),
            }
        }
        if candidates.is_empty() {
            notes.ignored("entries", "names no file");
        }
    }
    if let Some(main) = obj.remove("main") {
        if obj.contains_key("entry") || out.contains_key("entry") {
            notes.ignored("main", "`entry` is also set and wins");
        } else {
            out.insert("entry".into(), main);
            notes.mapped("main", "entry", "the script toolshed runs");
        }
    }
    if let Some(kind) = obj.remove("type") {
        match kind.as_str() {
            Some(k @ ("js" | "mcp" | "builtin")) if !obj.contains_key("kind") => {
                out.insert("kind".into(), Value::String(k.into()));
                notes.mapped("type", "kind", "names how the plugin runs");
            }
            _ => notes.ignored(
                "type",
                format!(
                    "Agent Spaces' plugin category (`{}`); toolshed runs a plugin by its kind, here from its entry",
                    version_text(&kind)
                ),
            ),
        }
    }
    if !obj.contains_key("entry") && !out.contains_key("entry") {
        let found = ["main.js", "index.js", "main.mjs", "index.mjs"]
            .into_iter()
            .find(|f| dir.is_some_and(|d| d.join(f).is_file()));
        if let Some(file) = found {
            out.insert("entry".into(), Value::String(file.into()));
            notes.defaulted(
                "entry",
                format!("the manifest names no script; `{file}` is in the plugin directory"),
            );
        }
    }
}

/// `permissions` / `host_permissions` (web-extension style, as Agent Spaces writes them):
/// `network` (or `fetch`, `http`) declares any host and URL patterns declare their hosts,
/// all as `capabilities.network` — each host still needs a person's grant.
fn permission_fields(
    obj: &mut Map<String, Value>,
    out: &mut Map<String, Value>,
    notes: &mut Notes,
) {
    let mut hosts: Vec<String> = Vec::new();
    for field in ["permissions", "host_permissions"] {
        let Some(value) = obj.remove(field) else {
            continue;
        };
        let items: Vec<String> = match value {
            Value::Array(items) => items
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Value::String(s) => vec![s],
            _ => Vec::new(),
        };
        for (i, item) in items.iter().enumerate() {
            let at = format!("{field}[{i}]");
            let lower = item.to_ascii_lowercase();
            if ["network", "fetch", "http", "net", "<all_urls>"].contains(&lower.as_str()) {
                hosts.push("*".into());
                notes.mapped(&at, "capabilities.network", "any host may be asked for; a person grants each (`toolshed plugins grant ID http:HOST`)");
            } else if let Some(host) = pattern_host(&lower) {
                notes.mapped(
                    &at,
                    "capabilities.network",
                    format!("the host `{host}`, once a person grants it"),
                );
                hosts.push(host);
            } else {
                notes.ignored(&at, "not a network permission; toolshed grants files, memory and tools through `capabilities`");
            }
        }
    }
    if hosts.is_empty() {
        return;
    }
    let caps = out.entry("capabilities").or_insert_with(|| {
        obj.remove("capabilities")
            .unwrap_or_else(|| Value::Object(Map::new()))
    });
    if let Some(caps) = caps.as_object_mut() {
        let network = caps
            .entry("network")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = network.as_array_mut() {
            for host in hosts {
                if !list.iter().any(|h| h.as_str() == Some(host.as_str())) {
                    list.push(Value::String(host));
                }
            }
        }
    }
}

/// `https://api.example.com/*` or `*://127.0.0.1:8080/*` → the host.
fn pattern_host(pattern: &str) -> Option<String> {
    let rest = pattern.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit() || c == '*') => h,
        _ => authority,
    };
    let host = host.trim_start_matches("*.");
    (!host.is_empty() && host != "*").then(|| host.to_string())
}

/// Cyrene's `author` (a string or `{name, email}`) and `dependencies` (ids, or id →
/// version requirement).
fn people_fields(obj: &mut Map<String, Value>, out: &mut Map<String, Value>, notes: &mut Notes) {
    if let Some(author) = obj.remove("author") {
        let text = match &author {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => {
                let name = o
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                match o.get("email").and_then(Value::as_str) {
                    Some(email) if !name.is_empty() => Some(format!("{name} <{email}>")),
                    Some(email) => Some(email.to_string()),
                    None => (!name.is_empty()).then_some(name),
                }
            }
            _ => None,
        };
        match text {
            Some(text) => {
                out.insert("author".into(), Value::String(text));
                if !author.is_string() {
                    notes.mapped("author", "author", "written as `name <email>`");
                }
            }
            None => notes.ignored("author", "neither a string nor {name, email}"),
        }
    }
    if let Some(deps) = obj.remove("dependencies") {
        let map: Option<Map<String, Value>> = match deps {
            Value::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    Value::String(id) => Some((id, Value::String("*".into()))),
                    Value::Object(o) => {
                        let id = o
                            .get("id")
                            .or_else(|| o.get("plugin_id"))?
                            .as_str()?
                            .to_string();
                        let req = o
                            .get("version")
                            .map(version_text)
                            .unwrap_or_else(|| "*".into());
                        Some((id, Value::String(req)))
                    }
                    _ => None,
                })
                .collect(),
            Value::Object(o) => Some(
                o.into_iter()
                    .map(|(id, v)| (id, Value::String(version_text(&v))))
                    .collect(),
            ),
            _ => None,
        };
        match map {
            Some(map) => {
                out.insert("dependencies".into(), Value::Object(map));
                notes.mapped(
                    "dependencies",
                    "dependencies",
                    "other plugins this one needs, checked when it is enabled",
                );
            }
            None => notes.ignored(
                "dependencies",
                "neither a list of plugin ids nor a map of id → version",
            ),
        }
    }
}

#[cfg(test)]
mod tests;
