//! Rules the source tree keeps (issue 55): no source file over 800 lines of code (its
//! inline tests not counted). The files over it today are listed with the size they have,
//! which they may not pass: each is to be split by concept and taken off the list, and a
//! new file over the limit fails at once.

use std::path::{Path, PathBuf};

/// The most lines of code one source file may have.
const LIMIT: usize = 800;

/// Files over [`LIMIT`] when the rule came (session 28), with their size then: they may
/// shrink, not grow. Split one below the limit, and take it off.
const OVER: &[(&str, usize)] = &[
    ("crates/toolshed-tools/src/lsp/mod.rs", 1617),
    ("crates/toolshed-host/src/config.rs", 1463),
    ("crates/toolshed-mcp/src/server/mod.rs", 1327),
    ("crates/toolshed-host/src/store/mod.rs", 1191),
    ("crates/toolshed-server/src/api.rs", 1174),
    ("crates/toolshed-host/src/memory/mod.rs", 1130),
    ("crates/toolshed-gateway/src/client.rs", 1016),
    ("crates/toolshed-server/src/guard.rs", 952),
    ("crates/toolshed-host/src/store/postgres.rs", 850),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The `.rs` files under every crate's `src/`.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Lines of code: the lines before the file's inline test module.
fn code_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .iter()
        .position(|l| l.starts_with("#[cfg(test)]"))
        .unwrap_or(lines.len())
}

#[test]
fn no_source_file_grows_past_800_lines() {
    let root = root();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    assert!(
        files.len() > 100,
        "found only {} source files under {}",
        files.len(),
        root.display()
    );
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for file in files {
        let name = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let lines = code_lines(&std::fs::read_to_string(&file).unwrap());
        match OVER.iter().find(|(known, _)| *known == name) {
            Some((_, ceiling)) => {
                seen.push(name.clone());
                if lines > *ceiling {
                    problems.push(format!("{name}: {lines} lines, grown past its {ceiling} (over {LIMIT} already: split it, don't add to it)"));
                } else if lines <= LIMIT {
                    problems.push(format!("{name}: {lines} lines, under {LIMIT} now: take it off the OVER list in tests/house.rs"));
                }
            }
            None if lines > LIMIT => {
                problems.push(format!(
                    "{name}: {lines} lines, over {LIMIT}: split it by concept"
                ));
            }
            None => {}
        }
    }
    for (known, _) in OVER {
        if !seen.iter().any(|s| s == known) {
            problems.push(format!("{known}: on the OVER list but gone: take it off"));
        }
    }
    assert!(
        problems.is_empty(),
        "source files over the size rule:\n  {}",
        problems.join("\n  ")
    );
}
