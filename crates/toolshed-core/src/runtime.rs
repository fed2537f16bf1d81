//! Which JavaScript runtime runs a plugin: QuickJS, unless the plugin needs Node.js — a
//! Node built-in module (`crypto`, `fs`, `path`, …) loaded by one of its scripts, or
//! packages its `package.json` depends on. Decided from the plugin's files, the same way
//! wherever it is asked (the loader, `plugins list`, `GET /plugins`).

use std::path::Path;

use serde_json::Value;

/// The most files looked at when choosing the runtime, and their largest size.
const MAX_SCANNED_FILES: usize = 512;
const MAX_SCANNED_BYTES: u64 = 1 << 20;

/// Node's built-in modules (without the `node:` prefix every one of them also has).
const BUILTINS: &[&str] = &[
    "assert",
    "async_hooks",
    "buffer",
    "child_process",
    "cluster",
    "console",
    "constants",
    "crypto",
    "dgram",
    "diagnostics_channel",
    "dns",
    "domain",
    "events",
    "fs",
    "http",
    "http2",
    "https",
    "inspector",
    "module",
    "net",
    "os",
    "path",
    "perf_hooks",
    "process",
    "punycode",
    "querystring",
    "readline",
    "repl",
    "stream",
    "string_decoder",
    "sys",
    "timers",
    "tls",
    "trace_events",
    "tty",
    "url",
    "util",
    "v8",
    "vm",
    "wasi",
    "worker_threads",
    "zlib",
];

/// Why the plugin in `dir` needs Node.js (shown as the runtime's reason), or `None` when
/// QuickJS runs it: a built-in module it loads, or the packages its `package.json`
/// depends on.
pub fn needs_node(dir: &Path) -> Option<String> {
    if let Some(deps) = package_dependencies(dir)
        && !deps.is_empty()
    {
        return Some(format!(
            "its package.json depends on {}",
            deps.iter()
                .map(|d| format!("`{d}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut files = Vec::new();
    scripts(dir, dir, 0, &mut files);
    for file in files {
        let Ok(text) = std::fs::read_to_string(dir.join(&file)) else {
            continue;
        };
        for name in module_names(&text) {
            let bare = name.strip_prefix("node:").unwrap_or(name);
            let root = bare.split('/').next().unwrap_or(bare);
            if name.starts_with("node:") || BUILTINS.contains(&root) {
                return Some(format!("{file} uses Node's `{root}` module"));
            }
        }
    }
    None
}

/// The names in the `dependencies` of `dir/package.json`, when it has one.
pub fn package_dependencies(dir: &Path) -> Option<Vec<String>> {
    let path = dir.join("package.json");
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SCANNED_BYTES {
        return None;
    }
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
    Some(
        value
            .get("dependencies")
            .and_then(Value::as_object)
            .map(|d| d.keys().cloned().collect())
            .unwrap_or_default(),
    )
}

/// The plugin's scripts (plugin-relative), `node_modules` and hidden directories left out.
fn scripts(root: &Path, dir: &Path, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if out.len() >= MAX_SCANNED_FILES {
            return;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            if depth < 8 && name != "node_modules" && !name.starts_with('.') {
                scripts(root, &path, depth + 1, out);
            }
        } else if kind.is_file()
            && [".js", ".cjs", ".mjs"].iter().any(|e| name.ends_with(e))
            && entry.metadata().is_ok_and(|m| m.len() <= MAX_SCANNED_BYTES)
            && let Ok(relative) = path.strip_prefix(root)
        {
            out.push(relative.to_string_lossy().into_owned());
        }
    }
}

/// The module names a script loads: `require('x')`, `import … from 'x'`, `import 'x'`,
/// `import('x')`.
fn module_names(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for pattern in ["require(", "from ", "import(", "import "] {
        let mut rest = text;
        while let Some(at) = rest.find(pattern) {
            rest = &rest[at + pattern.len()..];
            let after = rest.trim_start();
            let Some(quote) = after
                .chars()
                .next()
                .filter(|c| matches!(c, '\'' | '"' | '`'))
            else {
                continue;
            };
            if let Some(end) = after[1..].find(quote) {
                out.push(&after[1..1 + end]);
            }
        }
    }
    out
}

/// What runs a JavaScript plugin, for listings: `quickjs`, or `node (why)`.
pub fn describe(dir: &Path) -> String {
    match needs_node(dir) {
        Some(why) => format!("node ({why})"),
        None => "quickjs".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_and_dependencies_choose_node() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.js"), "exports.activate = () => {};").unwrap();
        assert_eq!(needs_node(dir.path()), None);
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        std::fs::write(
            dir.path().join("lib/sign.js"),
            "const { createHmac } = require(\"crypto\");",
        )
        .unwrap();
        let why = needs_node(dir.path()).unwrap();
        assert!(
            why.contains("`crypto`") && why.contains("lib/sign.js"),
            "{why}"
        );
        std::fs::write(dir.path().join("lib/sign.js"), "import x from 'node:zlib';").unwrap();
        assert!(needs_node(dir.path()).unwrap().contains("`zlib`"));
        // A package's own files are not the plugin's.
        std::fs::remove_file(dir.path().join("lib/sign.js")).unwrap();
        std::fs::create_dir_all(dir.path().join("node_modules/x")).unwrap();
        std::fs::write(dir.path().join("node_modules/x/i.js"), "require('fs')").unwrap();
        assert_eq!(needs_node(dir.path()), None);
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"name": "p", "dependencies": {"left-pad": "^1.3.0"}}"#,
        )
        .unwrap();
        assert!(needs_node(dir.path()).unwrap().contains("`left-pad`"));
    }

    #[test]
    fn module_names_are_found_in_every_form() {
        let names = module_names(
            "const a = require('a');\nimport b from \"b\";\nimport 'c';\nconst d = await import(`d`);",
        );
        for n in ["a", "b", "c", "d"] {
            assert!(names.contains(&n), "{n}: {names:?}");
        }
    }
}
