//! Paths near one that does not exist, for the `not_found` message: a model that misspells a
//! name or guesses the wrong directory learns where the file is instead of searching.

use toolshed_ops::search::GlobRequest;

use super::Env;

/// The most paths suggested.
const MAX_NEAR: usize = 3;

/// Existing paths close to `path`: names in the same directory within a small edit (or
/// differing in case), then files of the same name elsewhere in the workspace.
pub(super) fn near_paths(env: &Env, path: &str) -> Vec<String> {
    let path = path.trim().trim_start_matches("./").trim_end_matches('/');
    let (dir, name) = match path.rsplit_once('/') {
        Some((dir, name)) => (dir, name),
        None => ("", path),
    };
    if name.is_empty() || name == "." || name == ".." {
        return Vec::new();
    }
    let mut near: Vec<String> = Vec::new();
    if let Ok(listing) = env.files.read_dir(if dir.is_empty() { "." } else { dir }) {
        let names = listing.entries.iter().map(|e| e.name.as_str());
        for close in toolshed_core::suggest::closest(name, names, MAX_NEAR) {
            near.push(if dir.is_empty() {
                close
            } else {
                format!("{dir}/{close}")
            });
        }
    }
    let plain = !name.contains(['*', '?', '[', ']', '{', '}', '!', '\\']);
    if near.len() < MAX_NEAR && plain {
        let request = GlobRequest {
            cancel: env.cancel.clone(),
            patterns: vec![format!("**/{name}")],
            max_results: MAX_NEAR * 2,
            ..Default::default()
        };
        if let Ok(found) = env.search.glob(&request) {
            for other in found.paths {
                if near.len() < MAX_NEAR && other != path && !near.contains(&other) {
                    near.push(other);
                }
            }
        }
    }
    near
}

/// `message` with the near paths appended, if there are any.
pub(super) fn with_near(message: String, near: &[String]) -> String {
    if near.is_empty() {
        return message;
    }
    let list: Vec<String> = near.iter().map(|p| format!("`{p}`")).collect();
    format!("{message}; did you mean {}?", list.join(", "))
}
