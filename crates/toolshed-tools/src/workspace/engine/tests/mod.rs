//! Behaviour tests of the text engine, with exact expected strings.

mod diff;
mod edit;
mod patch_apply;
mod patch_codex;
mod patch_unified;
mod robustness;

use std::collections::HashMap;

/// A read function over an in-memory set of files.
pub(super) fn files(entries: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = entries
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
    move |path: &str| map.get(path).cloned()
}

use super::matching::MatchLevel;
use super::patch::{self, FileChange, PatchError};

/// Parses and applies `text` against `entries`.
pub(super) fn run(text: &str, entries: &[(&str, &str)]) -> Result<Vec<FileChange>, PatchError> {
    let parsed = patch::parse(text)?;
    patch::apply(&parsed, &files(entries))
}

/// The expected change for an update without a move.
pub(super) fn update(path: &str, new_content: &str, level: MatchLevel) -> FileChange {
    FileChange::Update {
        path: path.to_string(),
        new_content: new_content.to_string(),
        move_to: None,
        level,
    }
}
