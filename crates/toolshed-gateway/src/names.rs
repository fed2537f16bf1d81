//! Names of mounted tools: `<prefix>__<tool>` (or the tool's own name, for an empty
//! prefix), within toolshed's tool-name rules.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

/// The longest tool name (toolshed's and MCP's rule).
const MAX_NAME: usize = 64;

/// The prefix of a server's tools when its manifest names none: the plugin id after `mcp.`
/// (`mcp.everything` → `everything`), other characters than letters, digits, `_` and `-`
/// replaced by `_`.
fn default_prefix(plugin_id: &str) -> String {
    sanitize(plugin_id.strip_prefix("mcp.").unwrap_or(plugin_id))
}

/// The prefix of a mounted server's tool names: its manifest's `prefix`, else the default
/// made from its plugin id.
pub fn prefix(manifest: &toolshed_core::PluginManifest) -> String {
    manifest
        .mcp_server()
        .and_then(|server| server.prefix)
        .unwrap_or_else(|| default_prefix(&manifest.id))
}

/// `Ok` for a prefix a manifest may name: up to 32 of `A-Z a-z 0-9 _ -`, or none at all
/// (the server's own names).
pub fn check_prefix(prefix: &str) -> Result<(), InvalidPrefix> {
    if prefix.len() > 32
        || !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(InvalidPrefix(prefix.to_string()));
    }
    Ok(())
}

/// A prefix [`check_prefix`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a valid prefix: use up to 32 of a-z, 0-9, `_`, `-` (empty: the server's own \
     names)"
)]
pub struct InvalidPrefix(pub String);

/// The group of a server's tools: `mcp:<prefix>`, or `mcp:<its name>` when it keeps its
/// own names.
pub(crate) fn group(prefix: &str, plugin_id: &str) -> String {
    if prefix.is_empty() {
        format!("mcp:{}", default_prefix(plugin_id))
    } else {
        format!("mcp:{prefix}")
    }
}

/// `text` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
fn sanitize(text: &str) -> String {
    let out: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() { "_".into() } else { out }
}

/// A short, stable digest of `text`.
fn digest(text: &str) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    format!("{:08x}", hasher.finish() as u32)
}

/// The mounted names of a server's tools, in order: `<prefix>__<name>` sanitized, clipped to
/// 64 characters with a digest of the original name when too long or when two names would
/// collide, so that each name stays the same from one start to the next.
pub(crate) fn mounted_names(prefix: &str, tools: &[String]) -> Vec<String> {
    let mut taken = BTreeSet::new();
    tools
        .iter()
        .map(|original| {
            let plain = if prefix.is_empty() {
                sanitize(original)
            } else {
                format!("{prefix}__{}", sanitize(original))
            };
            let name = if plain.len() <= MAX_NAME && !taken.contains(&plain) {
                plain
            } else {
                let suffix = format!("_{}", digest(original));
                let keep = MAX_NAME - suffix.len();
                let mut cut = plain;
                cut.truncate(keep);
                cut + &suffix
            };
            taken.insert(name.clone());
            name
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_sanitized_clipped_and_distinct() {
        assert_eq!(default_prefix("mcp.everything"), "everything");
        assert_eq!(default_prefix("acme.files"), "acme_files");
        let long = "x".repeat(80);
        let names = mounted_names(
            "srv",
            &[
                "echo".into(),
                "get.thing".into(),
                "get_thing".into(),
                long.clone(),
            ],
        );
        assert_eq!(names[0], "srv__echo");
        assert_eq!(names[1], "srv__get_thing");
        assert_ne!(names[2], names[1]);
        assert!(names[2].starts_with("srv__get_thing_") && names[2].len() <= 64);
        assert_eq!(names[3].len(), 64);
        // Stable from one start to the next.
        assert_eq!(
            names,
            mounted_names(
                "srv",
                &["echo".into(), "get.thing".into(), "get_thing".into(), long]
            )
        );
    }
}
