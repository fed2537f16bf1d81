//! The Markdown files view of an owner's memories: `toolshed memory export DIR` writes each
//! present memory as `DIR/[NAMESPACE/]ID.md`, front matter first, so that a person can read
//! and edit them; `toolshed memory import DIR` reads them back, updating each memory named
//! by its `id` and storing a file without one (or whose memory is gone) as a new memory,
//! whose id it then writes into the file, so that the next import updates it.
//!
//! The front matter is `key: value` lines between `---` lines; values are JSON (which YAML
//! reads too): `id`, `title`, `tags`, `namespace`, `kind` and the times (`created`,
//! `updated`, `expires`, informative: an import leaves them to the store).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Memories, MemoryError, NewMemory, Result};

/// The most files one import reads.
pub const MAX_IMPORT_FILES: usize = 10_000;

/// What an export wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Exported {
    /// Files written.
    pub files: usize,
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Imported {
    /// Memories stored from files without a (known) id.
    pub created: usize,
    /// Memories whose text, title or tags the files changed.
    pub updated: usize,
    /// Files that matched their memory already.
    pub unchanged: usize,
    /// Files that could not be imported, each with why.
    pub failed: Vec<(PathBuf, String)>,
}

/// `ms` as an RFC 3339 time (UTC).
fn time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| t.to_string())
}

/// A memory as a Markdown file.
fn render(memory: &super::Memory) -> String {
    let mut head = vec![
        format!("id: {}", memory.id),
        format!("title: {}", json!(memory.title)),
        format!("tags: {}", json!(memory.tags)),
        format!("namespace: {}", json!(memory.namespace)),
        format!("kind: {}", memory.kind),
        format!("created: {}", time(memory.created_ms)),
        format!("updated: {}", time(memory.updated_ms)),
    ];
    if let Some(ms) = memory.expires_ms {
        head.push(format!("expires: {}", time(ms)));
    }
    format!("---\n{}\n---\n{}\n", head.join("\n"), memory.text)
}

/// A file's front matter (as JSON values) and body.
fn parse(text: &str) -> std::result::Result<(serde_json::Map<String, Value>, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        // No front matter: the whole file is the text of a new memory.
        return Ok((serde_json::Map::new(), text.to_string()));
    };
    let mut fields = serde_json::Map::new();
    let mut lines = rest.split_inclusive('\n');
    let mut consumed = 0;
    let mut closed = false;
    for line in lines.by_ref() {
        consumed += line.len();
        let line = line.trim_end_matches(['\n', '\r']);
        if line == "---" {
            closed = true;
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!(
                "front matter line `{}` is not `key: value`",
                line.chars().take(60).collect::<String>()
            ));
        };
        let value = value.trim();
        let parsed = if value.starts_with(['"', '[']) {
            serde_json::from_str(value)
                .map_err(|e| format!("the value of `{}` is not valid: {e}", key.trim()))?
        } else {
            Value::String(value.to_string())
        };
        fields.insert(key.trim().to_string(), parsed);
    }
    if !closed {
        return Err("the front matter has no closing `---` line".into());
    }
    Ok((fields, rest[consumed..].to_string()))
}

fn field<'a>(fields: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a str> {
    fields
        .get(key)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
}

/// The `.md` files under `dir`, sorted, at most [`MAX_IMPORT_FILES`].
fn markdown_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        let entries = std::fs::read_dir(&at).map_err(|e| {
            MemoryError::Invalid(format!("cannot read directory {}: {e}", at.display()))
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            // Links are not followed: an import reads what lies under the directory.
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "md") {
                found.push(path);
                if found.len() > MAX_IMPORT_FILES {
                    return Err(MemoryError::Invalid(format!(
                        "{} holds more than {MAX_IMPORT_FILES} Markdown files: import a smaller directory",
                        dir.display()
                    )));
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

impl Memories {
    /// Writes `owner`'s present memories under `dir` (created if needed), one file each.
    pub fn export_markdown(&self, owner: &str, dir: &Path) -> Result<Exported> {
        self.export_markdown_with(owner, dir, &mut |path, text| {
            if let Some(folder) = path.parent() {
                std::fs::create_dir_all(folder).map_err(|e| e.to_string())?;
            }
            std::fs::write(path, text).map_err(|e| e.to_string())
        })
    }

    /// [`export_markdown`](Self::export_markdown), each file written by `write` (which
    /// makes its directory): through the host's file boundary when `dir` is in the
    /// workspace.
    pub fn export_markdown_with(
        &self,
        owner: &str,
        dir: &Path,
        write: &mut dyn FnMut(&Path, &str) -> std::result::Result<(), String>,
    ) -> Result<Exported> {
        let mut report = Exported::default();
        let mut cursor: Option<String> = None;
        loop {
            let (page, next) = self.list(owner, None, &[], cursor.as_deref(), super::MAX_PAGE)?;
            for memory in &page {
                let folder = if memory.namespace.is_empty() {
                    dir.to_path_buf()
                } else {
                    // A namespace is segments of letters, digits and `-_.` that start with
                    // a letter or digit: never `..`, never absolute.
                    dir.join(&memory.namespace)
                };
                let path = folder.join(format!("{}.md", memory.id));
                write(&path, &render(memory)).map_err(|e| {
                    MemoryError::Invalid(format!("cannot write {}: {e}", path.display()))
                })?;
                report.files += 1;
            }
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(report),
            }
        }
    }

    /// Reads the Markdown files under `dir` into `owner`'s memories (see the module docs).
    pub fn import_markdown(&self, owner: &str, dir: &Path) -> Result<Imported> {
        let mut report = Imported::default();
        for path in markdown_files(dir)? {
            match self.import_file(owner, dir, &path) {
                Ok(Change::Created) => report.created += 1,
                Ok(Change::Updated) => report.updated += 1,
                Ok(Change::Unchanged) => report.unchanged += 1,
                Err(why) => report.failed.push((path, why)),
            }
        }
        Ok(report)
    }

    fn import_file(
        &self,
        owner: &str,
        dir: &Path,
        path: &Path,
    ) -> std::result::Result<Change, String> {
        let limit = self.config.max_bytes + 64 * 1024;
        let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
        if size > limit {
            return Err(format!(
                "the file is {size} bytes; a memory holds at most {} ([memory] max_bytes)",
                self.config.max_bytes
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        let (fields, body) = parse(&text)?;
        let tags: Vec<String> = match fields.get("tags") {
            None => Vec::new(),
            Some(Value::Array(tags)) => tags
                .iter()
                .map(|t| t.as_str().map(str::to_string).ok_or("a tag is not text"))
                .collect::<std::result::Result<_, _>>()?,
            Some(_) => return Err("`tags` is not a list such as [\"ops\", \"db\"]".into()),
        };
        let title = field(&fields, "title").map(str::to_string);
        let body = body.trim_end().to_string();
        let known = field(&fields, "id").and_then(|id| self.get(owner, id).ok());
        let reason = |e: MemoryError| e.to_string();
        if let Some(memory) = known {
            let unchanged = memory.text == body
                && memory.title == title.clone().unwrap_or_default()
                && memory.tags == tags
                && memory.deleted_ms.is_none()
                && memory.archived_in.is_none();
            if unchanged {
                return Ok(Change::Unchanged);
            }
            self.store(
                owner,
                NewMemory {
                    text: body,
                    title,
                    tags,
                    namespace: Some(memory.namespace),
                    id: Some(memory.id),
                    ttl_ms: None,
                },
            )
            .map_err(reason)?;
            return Ok(Change::Updated);
        }
        // New: its namespace is the front matter's, else the folder it lies in.
        let namespace = match field(&fields, "namespace") {
            Some(ns) => ns.to_string(),
            None => path
                .parent()
                .and_then(|p| p.strip_prefix(dir).ok())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let memory = self
            .store(
                owner,
                NewMemory {
                    text: body,
                    title,
                    tags,
                    namespace: Some(namespace),
                    id: None,
                    ttl_ms: None,
                },
            )
            .map_err(reason)?;
        // The file now names its memory: the next import updates it.
        std::fs::write(path, render(&memory)).map_err(|e| {
            format!(
                "stored as {}, but cannot write its id into the file: {e}",
                memory.id
            )
        })?;
        Ok(Change::Created)
    }
}

enum Change {
    Created,
    Updated,
    Unchanged,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_read_back_as_written() {
        let (fields, body) = parse(
            "---\nid: m-1\ntitle: \"a: b\"\ntags: [\"x\", \"y\"]\n# a comment\n---\nline one\n---\nline two\n",
        )
        .unwrap();
        assert_eq!(field(&fields, "id"), Some("m-1"));
        assert_eq!(field(&fields, "title"), Some("a: b"));
        assert_eq!(fields["tags"], json!(["x", "y"]));
        assert_eq!(body, "line one\n---\nline two\n");
        let (fields, body) = parse("just text\n").unwrap();
        assert!(fields.is_empty());
        assert_eq!(body, "just text\n");
        assert!(
            parse("---\nid: m-1\ntitle: never closed\n")
                .unwrap_err()
                .contains("closing")
        );
        assert!(
            parse("---\ntags: [oops\n---\n")
                .unwrap_err()
                .contains("tags")
        );
    }
}
