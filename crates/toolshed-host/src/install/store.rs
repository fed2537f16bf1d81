//! Plugin stores in Agent Spaces' index format: `[[plugins.stores]] url = "…/plugins/"`
//! serves `index.json` (and `index_<lang>.json` in each language), a list of
//! `{id, name, version, description, author, tags, type, path, iconUrl, md5, updatedAt}`.
//!
//! A plugin is installed from `<store>/<path>`: its archive `<store>/<path>.zip` when the
//! store has one, else its files fetched one by one (the manifest, then the files a plugin
//! of that format is made of and those its manifest names). Either way the files are
//! checked against the index's `md5` (Agent Spaces' folder digest: the MD5 of the sorted
//! MD5s of every file, `node_modules` and `.git` left out) before anything is put in
//! place; a mismatch installs nothing. Every request goes through the SSRF-guarded client:
//! `https` to public hosts, or the hosts listed in `[plugins] download_hosts`.

use std::path::{Component, Path};

use serde_json::Value;
use toolshed_core::{HttpRequest, NetPolicy};

use super::download::{MAX_REDIRECTS, NetClient, redact};

/// The largest index read.
const MAX_INDEX_BYTES: usize = 4 * 1024 * 1024;
/// The largest single file fetched (an archive too).
const MAX_FILE_BYTES: usize = 64 * 1024 * 1024;
/// The most files fetched for one plugin.
const MAX_FILES: usize = 64;

/// Why a plugin store could not be read, or a plugin not fetched from it. URLs are shown
/// with any credentials taken out.
#[derive(Debug, thiserror::Error)]
pub enum PluginStoreError {
    /// The URL is not one the client can reach.
    #[error("{url}: {source}")]
    Address {
        /// The URL, redacted.
        url: String,
        /// Why.
        source: toolshed_core::ToolError,
    },
    /// Plain `http` to a host `[plugins] download_hosts` does not list.
    #[error(
        "{0} is not https; plain http is used only for hosts listed in [plugins] download_hosts"
    )]
    NotHttps(String),
    /// The request failed.
    #[error("{url}: {source}")]
    Request {
        /// The URL, redacted.
        url: String,
        /// Why.
        source: toolshed_core::ToolError,
    },
    /// The answer is larger than read.
    #[error("{url} is larger than {mib} MiB")]
    TooLarge {
        /// The URL, redacted.
        url: String,
        /// The limit, in MiB.
        mib: usize,
    },
    /// An HTTP status other than success or not found.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The URL, redacted.
        url: String,
        /// The status.
        status: u16,
    },
    /// The index is not JSON.
    #[error("{url} is not a plugin index (JSON): {source}")]
    NotAnIndex {
        /// The URL, redacted.
        url: String,
        /// Why.
        source: serde_json::Error,
    },
    /// Neither `index.json` nor `index_<language>.json`.
    #[error("{0} serves no index.json")]
    NoIndex(String),
    /// The plugin has no archive and no manifest.
    #[error(
        "{0} has neither {0}.zip nor a manifest (info.json, web-plugin.json, plugin.json, package.json)"
    )]
    NoPlugin(String),
    /// The manifest names more files than fetched for one plugin.
    #[error("the plugin names more than {MAX_FILES} files")]
    TooManyFiles,
    /// No directory could be made for the files.
    #[error("cannot make a directory for the files: {0}")]
    Scratch(std::io::Error),
    /// What was fetched could not be written.
    #[error("cannot write {what}: {source}")]
    Write {
        /// What: `the archive`, a file's name.
        what: String,
        /// Why.
        source: std::io::Error,
    },
}

/// One plugin a store offers.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct StoreEntry {
    /// Its id.
    pub id: String,
    /// Its name, in the index's language.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What it does.
    pub description: String,
    /// Who wrote it.
    pub author: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// Agent Spaces' category (`server`, `client`, `both`).
    pub kind: Option<String>,
    /// Where its files are, under the store (`<store>/<path>`).
    pub source: String,
    /// Its icon's URL, when the index gives one.
    pub icon: Option<String>,
    /// The digest its files must have.
    pub md5: Option<String>,
    /// When it last changed.
    pub updated: Option<String>,
    /// Its users' rating, 0 to 5, when the index gives one (`rating`: a number, or an
    /// object with `average` and `count`).
    pub rating: Option<f64>,
    /// How many ratings that is, when the index says.
    pub ratings: Option<u64>,
    /// How many times it was downloaded, when the index says (`downloads`).
    pub downloads: Option<u64>,
    /// The store it is from.
    pub store: String,
}

impl StoreEntry {
    /// Best first: the higher rating, then more downloads, then the id. An entry without
    /// a rating comes after every rated one.
    pub fn ranking(&self, other: &Self) -> std::cmp::Ordering {
        let rating = |e: &Self| e.rating.unwrap_or(-1.0);
        rating(other)
            .total_cmp(&rating(self))
            .then_with(|| {
                other
                    .downloads
                    .unwrap_or(0)
                    .cmp(&self.downloads.unwrap_or(0))
            })
            .then_with(|| self.id.cmp(&other.id))
    }
}

/// The rating and its count from an index entry; a value outside 0 to 5 is left out.
fn rating_of(value: &Value) -> (Option<f64>, Option<u64>) {
    let (average, count) = match value.get("rating") {
        Some(Value::Object(o)) => (
            o.get("average").and_then(Value::as_f64),
            o.get("count").and_then(Value::as_u64),
        ),
        Some(other) => (
            other.as_f64(),
            value.get("ratingCount").and_then(Value::as_u64),
        ),
        None => (None, None),
    };
    let average = average.filter(|r| r.is_finite() && (0.0..=5.0).contains(r));
    (average, average.and(count))
}

/// The policy a store request goes under: the listed hosts, else public `https` only.
fn policy(url: &str, extra_hosts: &[String]) -> Result<NetPolicy, PluginStoreError> {
    let to = toolshed_ops::net::destination(url).map_err(|source| PluginStoreError::Address {
        url: redact(url),
        source,
    })?;
    let listed = extra_hosts.iter().any(|h| {
        toolshed_ops::net::HostPattern::parse(h).is_ok_and(|p| p.matches(&to.host, to.port))
    });
    if listed {
        Ok(NetPolicy::Only(extra_hosts.to_vec()))
    } else if to.tls {
        Ok(NetPolicy::Public)
    } else {
        Err(PluginStoreError::NotHttps(redact(url)))
    }
}

/// GETs `url`: its body, `None` on 404, an error otherwise.
async fn get(
    client: &NetClient,
    url: &str,
    extra_hosts: &[String],
    max: usize,
) -> Result<Option<Vec<u8>>, PluginStoreError> {
    let policy = policy(url, extra_hosts)?;
    let request = HttpRequest {
        method: "GET".into(),
        url: url.to_string(),
        headers: Vec::new(),
        body: None,
        timeout: super::download::DOWNLOAD_TIMEOUT,
        max_response_bytes: max,
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let followed = client
        .send_following_with_progress(
            request,
            &policy,
            &cancel,
            MAX_REDIRECTS,
            std::sync::Arc::new(|_| {}),
        )
        .await
        .map_err(|source| PluginStoreError::Request {
            url: redact(url),
            source,
        })?;
    let response = followed.response;
    match response.status {
        404 | 410 => Ok(None),
        200..=299 if response.truncated => Err(PluginStoreError::TooLarge {
            url: redact(url),
            mib: max / (1024 * 1024),
        }),
        200..=299 => Ok(Some(response.body)),
        status => Err(PluginStoreError::Status {
            url: redact(url),
            status,
        }),
    }
}

/// `base` with one trailing `/`.
fn base_of(store: &str) -> String {
    format!("{}/", store.trim_end_matches('/'))
}

/// The plugins `store` offers, with names and descriptions in `language` when it serves
/// `index_<language>.json`.
pub async fn index(
    client: &NetClient,
    store: &str,
    language: &str,
    extra_hosts: &[String],
) -> Result<Vec<StoreEntry>, PluginStoreError> {
    let (base, files) = if store.ends_with(".json") {
        let base = store.rsplit_once('/').map_or(store, |(b, _)| b);
        (base_of(base), vec![store.to_string()])
    } else {
        let base = base_of(store);
        (
            base.clone(),
            vec![
                format!("{base}index_{language}.json"),
                format!("{base}index.json"),
            ],
        )
    };
    for url in &files {
        let Some(body) = get(client, url, extra_hosts, MAX_INDEX_BYTES).await? else {
            continue;
        };
        let value: Value =
            serde_json::from_slice(&body).map_err(|source| PluginStoreError::NotAnIndex {
                url: redact(url),
                source,
            })?;
        let list = match &value {
            Value::Array(list) => list.clone(),
            Value::Object(o) => o
                .get("plugins")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        return Ok(list.iter().filter_map(|e| entry(e, &base, store)).collect());
    }
    Err(PluginStoreError::NoIndex(redact(&base)))
}

fn entry(value: &Value, base: &str, store: &str) -> Option<StoreEntry> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let id = text("id")?;
    let path = text("path").unwrap_or_else(|| id.clone());
    if !safe_relative(&path) || path.contains('%') || path.contains('\\') {
        return None;
    }
    // As the URL parser reads it, still under the store.
    let joined = url::Url::parse(base)
        .ok()?
        .join(path.trim_matches('/'))
        .ok()?;
    if !joined.as_str().starts_with(base) {
        return None;
    }
    let (rating, ratings) = rating_of(value);
    let author = match value.get("author") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Object(o)) => o.get("name").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    Some(StoreEntry {
        name: text("name").unwrap_or_else(|| id.clone()),
        version: text("version").unwrap_or_else(|| "0.0.0".into()),
        description: text("description").unwrap_or_default(),
        author,
        tags: value
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        kind: text("type"),
        source: format!("{base}{}", path.trim_matches('/')),
        icon: text("iconUrl").map(|i| {
            if i.contains("://") {
                i
            } else {
                format!("{base}{}", i.trim_start_matches('/'))
            }
        }),
        md5: text("md5").map(|m| m.to_ascii_lowercase()),
        updated: text("updatedAt"),
        rating,
        ratings,
        downloads: value.get("downloads").and_then(Value::as_u64),
        store: store.to_string(),
        id,
    })
}

/// A plugin-relative path without `..`, not absolute.
fn safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\0')
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// What was fetched for a plugin.
pub enum Fetched {
    /// Its archive, written to this file.
    Archive(tempfile::TempPath),
    /// Its files, in this directory.
    Files(tempfile::TempDir),
}

/// Fetches `entry`'s files: its `.zip` when the store has one, else file by file into a
/// new directory under `scratch`.
pub async fn fetch(
    client: &NetClient,
    entry: &StoreEntry,
    extra_hosts: &[String],
    scratch: &Path,
    progress: &(dyn Fn(String) + Send + Sync),
) -> Result<Fetched, PluginStoreError> {
    let source = entry.source.trim_end_matches('/');
    let zip = format!("{source}.zip");
    progress(format!("fetching {} from {}", entry.id, redact(source)));
    if let Some(bytes) = get(client, &zip, extra_hosts, MAX_FILE_BYTES).await? {
        let mut file = tempfile::Builder::new()
            .prefix(super::STAGING_PREFIX)
            .suffix(".zip")
            .tempfile_in(scratch)
            .map_err(|source| write_error("the archive", source))?;
        std::io::Write::write_all(&mut file, &bytes)
            .map_err(|source| write_error("the archive", source))?;
        return Ok(Fetched::Archive(file.into_temp_path()));
    }
    let dir = tempfile::Builder::new()
        .prefix(super::STAGING_PREFIX)
        .tempdir_in(scratch)
        .map_err(PluginStoreError::Scratch)?;
    let mut manifest: Option<(String, Value)> = None;
    for name in [
        "info.json",
        "web-plugin.json",
        "plugin.json",
        "manifest.json",
        "package.json",
    ] {
        if let Some(body) = get(
            client,
            &format!("{source}/{name}"),
            extra_hosts,
            MAX_INDEX_BYTES,
        )
        .await?
            && let Ok(value) = serde_json::from_slice::<Value>(&body)
            && (value.get("id").is_some() || value.get("name").is_some())
        {
            write(dir.path(), name, &body)?;
            manifest = Some((name.to_string(), value));
            break;
        }
    }
    let Some((manifest_name, manifest)) = manifest else {
        return Err(PluginStoreError::NoPlugin(redact(source)));
    };
    let mut files: Vec<String> = [
        "package.json",
        "package-lock.json",
        "main.js",
        "workflow.js",
        "tools.js",
        "actions.js",
        "lang.json",
        "shared.js",
        "icon.svg",
        "icon.png",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for key in ["iconPath", "icon", "main"] {
        if let Some(file) = manifest.get(key).and_then(Value::as_str) {
            files.push(file.to_string());
        }
    }
    if let Some(Value::Object(entries)) = manifest.get("entries") {
        for value in entries.values() {
            match value {
                Value::String(file) => files.push(file.clone()),
                Value::Array(list) => {
                    files.extend(list.iter().filter_map(Value::as_str).map(str::to_string))
                }
                _ => {}
            }
        }
    }
    if let Some(Value::Array(list)) = manifest.get("files") {
        files.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
    }
    files.retain(|f| f != &manifest_name && safe_relative(f) && !f.contains("://"));
    files.sort();
    files.dedup();
    if files.len() > MAX_FILES {
        return Err(PluginStoreError::TooManyFiles);
    }
    let mut fetched = 1;
    for file in &files {
        if let Some(body) = get(
            client,
            &format!("{source}/{file}"),
            extra_hosts,
            MAX_FILE_BYTES,
        )
        .await?
        {
            write(dir.path(), file, &body)?;
            fetched += 1;
        }
    }
    progress(format!("fetched {fetched} file(s)"));
    Ok(Fetched::Files(dir))
}

fn write(dir: &Path, file: &str, body: &[u8]) -> Result<(), PluginStoreError> {
    let path = dir.join(file);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| write_error(file, source))?;
    }
    std::fs::write(&path, body).map_err(|source| write_error(file, source))
}

fn write_error(what: &str, source: std::io::Error) -> PluginStoreError {
    PluginStoreError::Write {
        what: what.to_string(),
        source,
    }
}

/// Agent Spaces' folder digest: the MD5 of the sorted hex MD5s of every file under `dir`
/// (`node_modules` and `.git` left out).
pub fn folder_md5(dir: &Path) -> std::io::Result<String> {
    use md5::Digest;
    let mut sums = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current)? {
            let entry = entry?;
            let name = entry.file_name();
            if name == "node_modules" || name == ".git" {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                let bytes = std::fs::read(entry.path())?;
                sums.push(hex(&md5::Md5::digest(&bytes)));
            }
        }
    }
    sums.sort();
    Ok(hex(&md5::Md5::digest(sums.concat().as_bytes())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_digest_is_agent_spaces_own() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b.txt"), "b").unwrap();
        std::fs::create_dir_all(dir.path().join("node_modules/x")).unwrap();
        std::fs::write(dir.path().join("node_modules/x/i.js"), "ignored").unwrap();
        // md5("a") = 0cc175b9…, md5("b") = 92eb5ffe…; sorted, joined, hashed again.
        use md5::Digest;
        let joined = "0cc175b9c0f1b6a831c399e26977266192eb5ffee6ae2fec3ad71c777531578f";
        assert_eq!(
            folder_md5(dir.path()).unwrap(),
            hex(&md5::Md5::digest(joined.as_bytes()))
        );
    }

    #[test]
    fn index_entries_keep_their_paths_inside_the_store() {
        let base = "https://store.example/plugins/";
        let e = entry(
            &serde_json::json!({"id": "a.b", "name": "B", "version": "1.2.0", "path": "b",
                "author": {"name": "Ann"}, "tags": ["x"], "iconUrl": "plugins/b/icon.svg", "md5": "AB"}),
            base,
            base,
        )
        .unwrap();
        assert_eq!(e.source, "https://store.example/plugins/b");
        assert_eq!(e.author.as_deref(), Some("Ann"));
        assert_eq!(e.md5.as_deref(), Some("ab"));
        assert_eq!(
            e.icon.as_deref(),
            Some("https://store.example/plugins/plugins/b/icon.svg")
        );
        assert!(
            entry(
                &serde_json::json!({"id": "a.b", "path": "../x"}),
                base,
                base
            )
            .is_none()
        );
        for escaping in ["%2e%2e/x", "..\\x", "a/%2E%2E/%2e%2e/x"] {
            let e = serde_json::json!({"id": "a.b", "path": escaping});
            assert!(entry(&e, base, base).is_none(), "{escaping}");
        }
    }
}
