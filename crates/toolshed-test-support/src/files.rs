//! Plugin files on disk.

use std::path::Path;

/// Writes `text` to `dir/rel`, creating the directories on the way.
pub fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The manifest of a small JavaScript plugin, `acme.notes` 0.1.0, with one tool,
/// `notes_search` (its `main.js` is the test's to write, or not).
pub const NOTES_MANIFEST: &str = r#"
id = "acme.notes"
version = "0.1.0"
name = "Notes"
kind = "js"
entry = "main.js"
[[tools]]
name = "notes_search"
description = "Search notes."
"#;
