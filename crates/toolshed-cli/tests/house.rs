//! Rules the source tree keeps (issue 55):
//!
//! - No source file over 800 lines, inline tests counted (a file's tests may move to a
//!   `tests.rs` beside it); one over it fails at once, named.
//! - Every crate takes the workspace's lints, and the crate table of docs/architecture.md
//!   names every crate, each after the crates it depends on.
//! - No circle of imports among a crate's top-level modules larger than five.
//! - Errors keep their kind: the `Result<_, String>` in library code are counted per crate
//!   and may only fall ([`STRING_ERRORS`]).
//! - The doors reach the host through its services, not `Host::registry()`/`store()`.

use std::path::{Path, PathBuf};

/// The most lines one source file may have.
const LIMIT: usize = 800;

/// Files over [`LIMIT`], with their size when the rule came (whole files counted since
/// session 29): they may shrink, not grow. Split one below the limit, and take it off.
/// Empty since session 30, when the last five were split by concept: keep it so.
const OVER: &[(&str, usize)] = &[];

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

/// The lines before a file's inline test module: its code, whose imports are the architecture.
fn code_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    // `#[cfg(test)] mod tests { ... }` written inline: not `#[cfg(test)] mod tests;`, whose
    // code is in a file of its own, with code of this file after it.
    (0..lines.len())
        .find(|&i| {
            lines[i].starts_with("#[cfg(test)]")
                && lines[i + 1..]
                    .iter()
                    .find(|l| !l.starts_with("#["))
                    .is_some_and(|l| l.starts_with("mod ") && l.trim_end().ends_with('{'))
        })
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
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
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

/// The top-level module a source file of a crate belongs to: `store/db.rs` and
/// `store/mod.rs` are both `store`; `lib.rs` is the crate root (`None`).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs");
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The names a piece of code reaches through `crate::`, including inside a
/// `use crate::{a, b::c}` group: `a`, `b`.
fn crate_paths(code: &str, into: &mut std::collections::BTreeSet<String>) {
    paths_after(code, "crate::", into);
}

/// The first names after each `prefix` (`crate::`, `super::super::`) in `code`, including
/// inside a group; a prefix that is the tail of a longer path is not one.
fn paths_after(code: &str, prefix: &str, into: &mut std::collections::BTreeSet<String>) {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
            continue; // `toolshed_core::…`, `$crate::…`, `super::` of `super::super::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut start = 0usize;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        into.insert(ident(group[start..i].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        into.insert(ident(group[start..i].trim()));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            into.insert(ident(rest));
        }
    }
}

/// The files of modules declared only for tests (`#[cfg(test)] mod contract;`, also
/// under `all(test, ...)`), with everything below them: test code's imports are not the
/// crate's architecture.
fn test_modules(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut gated = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        let mut previous = "";
        for line in text.lines() {
            let line = line.trim();
            if previous.starts_with("#[cfg(")
                && previous.contains("test")
                && let Some(name) = line
                    .strip_prefix("mod ")
                    .or_else(|| line.strip_prefix("pub(crate) mod "))
                    .and_then(|rest| rest.strip_suffix(';'))
            {
                gated.push(dir.join(format!("{name}.rs")));
                gated.push(dir.join(name));
            }
            previous = line;
        }
    }
    files
        .iter()
        .filter(|f| gated.iter().any(|g| f.starts_with(g)))
        .cloned()
        .collect()
}

/// The import graph of one crate's top-level modules: which module names which, by
/// `crate::` paths in code (comments and inline tests left out).
fn module_graph(
    krate: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let src = root().join("crates").join(krate).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let tests_only = test_modules(&files);
    files.retain(|f| !tests_only.contains(f));
    let mut graph: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for file in &files {
        if let Some(m) = top_module(&src, file) {
            graph.entry(m).or_default();
        }
    }
    let code_of = |file: &Path| -> String {
        let text = std::fs::read_to_string(file).unwrap();
        text.lines()
            .take(code_lines(&text))
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    // What the crate root imports or re-exports, by the module it comes from:
    // `pub use host::{Host, HostError}` makes `crate::Host` a path into `host`.
    let mut root_names = std::collections::BTreeMap::new();
    for root_file in ["lib.rs", "main.rs"] {
        let path = src.join(root_file);
        if path.is_file() {
            for (name, module) in root_uses(&code_of(&path)) {
                if graph.contains_key(&module) {
                    root_names.insert(name, module);
                }
            }
        }
    }
    for file in &files {
        let Some(from) = top_module(&src, file) else {
            continue;
        };
        let code = code_of(file);
        let mut named = Default::default();
        crate_paths(&code, &mut named);
        // `super::` as many times as the file is deep reaches the crate root too.
        let depth = module_depth(&src, file);
        if depth > 0 {
            paths_after(&code, &"super::".repeat(depth), &mut named);
        }
        for name in named {
            let to = root_names.get(&name).cloned().unwrap_or(name);
            if to != from && graph.contains_key(&to) {
                graph.get_mut(&from).unwrap().insert(to);
            }
        }
    }
    graph
}

/// How deep a file's module is below the crate root: `kit.rs` and `store/mod.rs` are 1,
/// `store/db.rs` 2.
fn module_depth(src: &Path, file: &Path) -> usize {
    let rel = file.strip_prefix(src).unwrap();
    let parts = rel.components().count();
    if rel.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// The names a crate root's `use` declarations bring in, each with the module it comes
/// from: `pub use audit::{AuditPage, AuditRow as Row};` gives `AuditPage` and `Row` from
/// `audit`.
fn root_uses(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        let Some(path) = ["use ", "pub use ", "pub(crate) use "]
            .iter()
            .find_map(|head| line.strip_prefix(head))
        else {
            continue;
        };
        // The whole declaration, over as many lines as it takes.
        let mut statement = path.to_string();
        while !statement.contains(';') {
            match lines.next() {
                Some(more) => statement.push_str(more.trim()),
                None => break,
            }
        }
        let statement = statement.split(';').next().unwrap_or("");
        let path = statement
            .strip_prefix("crate::")
            .or_else(|| statement.strip_prefix("self::"))
            .unwrap_or(statement);
        let module: String = path
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let rest = &path[module.len()..];
        for item in rest.split(['{', '}', ',']) {
            let item = item.trim();
            let leaf = match item.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => item.rsplit("::").next().unwrap_or(""),
            };
            // A glob (`pub use m::*`) names nothing the test can follow.
            if !leaf.is_empty() && leaf != "self" && leaf != "*" {
                found.push((leaf.to_string(), module.clone()));
            }
        }
    }
    found
}

/// The strongly connected components of a graph with more than one member (Tarjan).
fn circles(
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        index: std::collections::HashMap<&'g str, (usize, usize)>,
        stack: Vec<&'g str>,
        on_stack: std::collections::HashSet<&'g str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            self.index.insert(v, (self.next, self.next));
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in &self.graph[v] {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let low = self.index[w.as_str()].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.on_stack.contains(w.as_str()) {
                    let low = self.index[w.as_str()].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            let (index, low) = self.index[v];
            if index == low {
                let mut circle = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    circle.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if circle.len() > 1 {
                    circle.sort();
                    self.found.push(circle);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: Default::default(),
        stack: Vec::new(),
        on_stack: Default::default(),
        next: 0,
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found.sort_by_key(|c| std::cmp::Reverse(c.len()));
    walk.found
}

/// The most modules one circle of imports may hold (issue 55: the host was one circle of
/// 22 top-level modules; its floors are in docs/architecture.md).
const MAX_CIRCLE: usize = 5;

/// No crate's top-level modules import each other in a circle of more than [`MAX_CIRCLE`]:
/// a module (with its children) is one node, an edge is a `crate::` path in its code.
/// `cargo test -p toolshed-cli --test integration house -- --nocapture` prints the circles.
#[test]
fn no_circle_of_imports_passes_five_modules() {
    let mut problems = Vec::new();
    let mut crates: Vec<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    crates.sort();
    for krate in crates {
        if !root().join("crates").join(&krate).join("src").is_dir() {
            continue;
        }
        let graph = module_graph(&krate);
        for circle in circles(&graph) {
            println!(
                "{krate}: a circle of {}: {}",
                circle.len(),
                circle.join(", ")
            );
            if circle.len() > MAX_CIRCLE {
                let edges: Vec<String> = circle
                    .iter()
                    .flat_map(|from| {
                        graph[from]
                            .iter()
                            .filter(|to| circle.contains(to))
                            .map(move |to| format!("{from} -> {to}"))
                    })
                    .collect();
                problems.push(format!(
                    "{krate}: {} modules import each other in a circle (at most {MAX_CIRCLE}): {}",
                    circle.len(),
                    edges.join(", ")
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_circle_finder_finds_circles() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            Default::default();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    let found = circles(&graph(&[
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
        ("c", "d"),
        ("d", "e"),
        ("e", "d"),
    ]));
    assert_eq!(found, vec![vec!["a", "b", "c"], vec!["d", "e"]]);
    assert!(circles(&graph(&[("a", "b"), ("b", "c")])).is_empty());
    let mut named = Default::default();
    crate_paths(
        "use crate::{a::X, b, c::{d, e}};\nlet x = crate::f::g(); toolshed_core::h; $crate::i",
        &mut named,
    );
    assert_eq!(
        named.into_iter().collect::<Vec<_>>(),
        vec!["a", "b", "c", "f"]
    );
}

/// `Result<_, String>` in each crate's library code (tests not counted) when the count
/// came (session 29): errors that lose their kind and source at a boundary. The count may
/// fall, not rise: give a new error a `thiserror` enum (docs/architecture.md, "Errors"),
/// and lower the number here when it falls.
const STRING_ERRORS: &[(&str, usize)] = &[
    ("toolshed-browser", 1),
    ("toolshed-cli", 2),
    ("toolshed-gateway", 15),
    ("toolshed-host", 29),
    ("toolshed-js", 48),
    ("toolshed-lsp", 6),
    ("toolshed-mcp", 2),
    ("toolshed-ops", 35),
    ("toolshed-server", 2),
    ("toolshed-tools", 4),
];

/// How many `Result<…, String>` a piece of code writes.
fn string_results(code: &str) -> usize {
    let mut count = 0;
    let mut rest = code;
    while let Some(at) = rest.find("Result<") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "Result<".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `IoResult<`, `CallResult<`
        }
        let (mut depth, mut last) = (0usize, 0usize);
        let mut previous = ' ';
        for (i, c) in rest.char_indices() {
            let arrow = c == '>' && previous == '-';
            previous = c;
            if arrow {
                continue; // `Fn() -> T` inside the type
            }
            match c {
                '<' | '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                '>' if depth == 0 => {
                    if last > 0 && rest[last..i].trim() == "String" {
                        count += 1;
                    }
                    break;
                }
                '>' => depth -= 1,
                ',' if depth == 0 => last = i + 1,
                _ => {}
            }
        }
    }
    count
}

#[test]
fn string_errors_only_fall() {
    let mut crates: Vec<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    crates.sort();
    let mut problems = Vec::new();
    let mut total = 0;
    for krate in crates {
        let src = root().join("crates").join(&krate).join("src");
        if !src.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        sources(&src, &mut files);
        let tests_only = test_modules(&files);
        let count: usize = files
            .iter()
            .filter(|f| !tests_only.contains(f))
            .map(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                let code: Vec<&str> = text
                    .lines()
                    .take(code_lines(&text))
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .collect();
                string_results(&code.join("\n"))
            })
            .sum();
        total += count;
        println!("{krate}: {count} Result<_, String>");
        let ceiling = STRING_ERRORS
            .iter()
            .find(|(k, _)| *k == krate)
            .map_or(0, |(_, n)| *n);
        if count > ceiling {
            problems.push(format!("{krate}: {count} `Result<_, String>`, more than its {ceiling}: give the new error a type"));
        } else if count < ceiling {
            problems.push(format!("{krate}: {count} `Result<_, String>`, fewer than {ceiling}: lower its count in STRING_ERRORS (tests/house.rs)"));
        }
    }
    println!("total: {total}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn string_results_are_counted() {
    assert_eq!(
        string_results("fn a() -> Result<Vec<(u8, String)>, String> {}"),
        1
    );
    assert_eq!(
        string_results(
            "fn a() -> Result<String, Error> {} fn b() -> std::result::Result<(), String>"
        ),
        1
    );
    assert_eq!(
        string_results("fn a() -> CallResult<String> {} fn b() -> io::Result<String>"),
        0
    );
}

/// docs/architecture.md's table of crates names every crate under `crates/`, and no other;
/// a crate whose status is not "built" says what is missing in the same cell.
#[test]
fn the_architecture_map_names_every_crate() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = doc
        .find("\n## Crates\n")
        .expect("docs/architecture.md has a ## Crates section");
    let section = &doc[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut named = std::collections::BTreeSet::new();
    let mut order = Vec::new();
    for row in section.lines().filter(|l| l.starts_with("| `toolshed")) {
        let name = row[3..].split('`').next().unwrap().to_string();
        let dir = name;
        let status = row.trim_end_matches('|').rsplit('|').next().unwrap().trim();
        assert!(
            status.starts_with("built"),
            "docs/architecture.md: the status of {dir} is `{status}`"
        );
        order.push(dir.clone());
        named.insert(dir);
    }
    // "Arrows point one way": each crate's dependencies come before it in the table.
    let mut upward = Vec::new();
    for (at, krate) in order.iter().enumerate() {
        let cargo = std::fs::read_to_string(root().join("crates").join(krate).join("Cargo.toml"))
            .unwrap_or_default();
        let deps = cargo
            .split("\n[dependencies]\n")
            .nth(1)
            .map(|rest| rest.split("\n[").next().unwrap_or_default())
            .unwrap_or_default();
        for line in deps.lines().filter(|l| l.starts_with("toolshed-")) {
            let dep = line.split(['.', ' ', '=']).next().unwrap_or_default();
            match order.iter().position(|c| c == dep) {
                Some(i) if i < at => {}
                _ => upward.push(format!(
                    "{krate} depends on {dep}, which the table lists after it"
                )),
            }
        }
    }
    assert!(
        upward.is_empty(),
        "docs/architecture.md's crate table: {}",
        upward.join("; ")
    );
    let mut present = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let path = entry.unwrap().path();
        if path.join("Cargo.toml").is_file() {
            present.insert(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert_eq!(
        named, present,
        "docs/architecture.md's crate table (left) and crates/ (right) differ"
    );
}

/// Every crate asks for docs on what it exports and for nothing exported by accident, and
/// denies `unsafe` but where allowed with a reason: `[workspace.lints]` (errors under CI's
/// `clippy -D warnings`), which every crate takes.
#[test]
fn every_library_documents_its_public_surface() {
    // The lints are the workspace's, in one place: every crate takes them, none restates
    // or loosens them at its root.
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let lints = manifest
        .split("[workspace.lints.rust]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap_or_default();
    for wanted in [
        "unsafe_code = \"deny\"",
        "missing_docs = \"warn\"",
        "unreachable_pub = \"warn\"",
    ] {
        assert!(
            lints.contains(wanted),
            "[workspace.lints.rust] lacks `{wanted}`"
        );
    }
    let mut problems = Vec::new();
    let mut crates = 0;
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(cargo) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        crates += 1;
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !cargo.contains("[lints]\nworkspace = true") {
            problems.push(format!(
                "{name}: add `[lints]` `workspace = true` to its Cargo.toml"
            ));
        }
        for root_file in ["src/lib.rs", "src/main.rs"] {
            let text = std::fs::read_to_string(dir.join(root_file)).unwrap_or_default();
            for line in text.lines().filter(|l| l.starts_with("#![")) {
                if ["missing_docs", "unreachable_pub", "unsafe_code"]
                    .iter()
                    .any(|lint| line.contains(lint))
                {
                    problems.push(format!(
                        "{name}/{root_file}: `{line}` restates a workspace lint"
                    ));
                }
            }
        }
    }
    assert!(crates > 10, "found only {crates} crates");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The doors (the CLI, MCP, the HTTP server, the gateway) reach the host through its
/// services (`Host::catalog`, `plugins`, `tokens`, `approvals`, `memories`, ...), never
/// through `Host::registry()` or `Host::store()`, the host's insides: a door that needs
/// more asks for a service method.
#[test]
fn the_doors_use_the_hosts_services_not_its_insides() {
    let mut problems = Vec::new();
    for krate in [
        "toolshed-cli",
        "toolshed-mcp",
        "toolshed-server",
        "toolshed-gateway",
    ] {
        let mut files = Vec::new();
        sources(&root().join("crates").join(krate).join("src"), &mut files);
        let tests_only = test_modules(&files);
        for file in files.iter().filter(|f| !tests_only.contains(f)) {
            let text = std::fs::read_to_string(file).unwrap();
            for (n, line) in text.lines().take(code_lines(&text)).enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if insides(code) > 0 {
                    problems.push(format!(
                        "{}:{}: {}",
                        file.strip_prefix(root()).unwrap().display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} uses of the host's insides in the doors; use a service of the host instead:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// How many calls of `.registry()` or `.store()` a line makes.
fn insides(code: &str) -> usize {
    code.matches(".registry()").count() + code.matches(".store()").count()
}

#[test]
fn calls_of_the_hosts_insides_are_counted() {
    assert_eq!(
        insides("host.registry().manifest(id); state.host.store()"),
        2
    );
    assert_eq!(
        insides("host.watch_store(); tracing_subscriber::registry(); self.inner.event_store()"),
        0
    );
}

/// Each library's public modules are the ones its crate doc names (as [`module`]), a list
/// kept by hand: a module made public by accident, or a doc that no longer says what is
/// public, fails here.
#[test]
fn each_crate_doc_names_its_public_modules() {
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(lib) = std::fs::read_to_string(dir.join("src/lib.rs")) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let doc: String = lib
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        for line in lib.lines() {
            let Some(module) = line
                .strip_prefix("pub mod ")
                .and_then(|rest| rest.strip_suffix(';'))
            else {
                continue;
            };
            // [`module`], or `module` module for one behind a feature (no link to break).
            if !doc.contains(&format!("[`{module}`]"))
                && !doc.contains(&format!("`{module}` module"))
            {
                problems.push(format!(
                    "{name}: `pub mod {module}` is not named in the crate doc; say what it is \
                     for there as [`{module}`], or make it private and re-export what is needed"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
