//! The contract every [`SearchOps`] implementation must meet: one fixture tree, exact
//! expected results. See [`crate::contract`].

use crate::contract::Fixture;
use crate::error::OpsError;
use crate::file::{FileKind, FileOps, Parents};
use crate::search::{
    CaseMode, FindKind, FindRequest, GlobRequest, GrepRequest, GrepResult, SearchOps,
};

use crate::contract::{fails, ok};

/// The text of the long line in `long/line.txt`.
fn long_line() -> String {
    format!("{}needle{}", "x".repeat(1000), "y".repeat(1000))
}

fn setup(files: &dyn FileOps, fx: &dyn Fixture) {
    let long = format!("{}\n", long_line());
    let tree: [(&str, &[u8]); 16] = [
        (".gitignore", b"target/\n*.log\n!keep.log\n!.github\n"),
        (".github/workflow.yml", b"needle workflow\n"),
        (".hidden/secret.txt", b"needle hidden\n"),
        ("README.md", b"# Readme\nneedle in readme\n"),
        ("keep.log", b"needle kept log\n"),
        ("debug.log", b"needle ignored log\n"),
        ("target/out.txt", b"needle in target\n"),
        (
            "src/main.rs",
            b"fn main() {\n    println!(\"Needle\");\n}\n",
        ),
        (
            "src/lib.rs",
            b"pub mod domain;\n// needle one\n// NEEDLE two\n",
        ),
        ("src/.tsw-9-9.tmp", b"needle temp\n"),
        (
            "src/domain/rules.rs",
            b"a\nb\nneedle c\nd\ne\nf\nneedle g\nh\n",
        ),
        ("src/domain/.gitignore", b"generated.rs\n"),
        ("src/domain/generated.rs", b"needle generated\n"),
        ("docs/guide.md", b"needle (literal) [x]\n"),
        ("bin/data.bin", b"needle\0binary\n"),
        ("long/line.txt", long.as_bytes()),
    ];
    for (path, data) in tree {
        ok(
            files.write(path, data, Parents::Create),
            "write the fixture",
        );
    }
    // A name that is not UTF-8 is found, listed and searched in its escaped spelling.
    fx.raw_file(b"names/caf\xe9 \xff.txt", b"needle raw\n");
    ok(files.mkdir("links", Parents::Create), "mkdir links");
    fx.reserved_file("state.db", b"needle reserved\n");
    // Links are never followed nor listed, whether they lead out or stay inside.
    fx.symlink("links/outside", "../../outside.txt");
    fx.symlink("links/outdir", "../..");
    fx.symlink("links/inside.rs", "../src/main.rs");
    fx.symlink("links/dir", "../src");
    fx.fifo("links/pipe");
    // A FIFO where an ignore file is looked for must not hang the walk.
    fx.fifo("docs/.ignore");
}

/// Runs every search check. Expects an empty workspace (`.toolshed/` aside); on disk, a
/// file `../outside.txt` beside the workspace makes the link checks meaningful.
pub fn run_search(ops: &dyn SearchOps, files: &dyn FileOps, fx: &dyn Fixture) {
    setup(files, fx);
    for (_, case) in SEARCH_CASES {
        case(ops);
    }
}

/// One case of the search contract, run on a workspace the fixture was written into.
pub type SearchCase = fn(&dyn SearchOps);

/// Every case of the search contract, by name.
pub const SEARCH_CASES: &[(&str, SearchCase)] = &[
    ("globs", globs),
    ("finds", finds),
    ("greps", greps),
    ("grep_limits", grep_limits),
    ("errors", errors),
    ("names", names),
];

/// Writes the search fixture into a fresh workspace, then runs the search-contract case
/// `name` (see [`SEARCH_CASES`]). Used by [`search_contract!`](crate::search_contract).
pub fn run_search_case(name: &str, ops: &dyn SearchOps, files: &dyn FileOps, fx: &dyn Fixture) {
    setup(files, fx);
    match SEARCH_CASES.iter().find(|(n, _)| *n == name) {
        Some((_, case)) => case(ops),
        None => panic!("no search contract case `{name}`"),
    }
}

/// One `#[test]` per case of the search contract, as [`file_contract!`](crate::file_contract)
/// does for files: `$setup` gives a fresh `(ops, keep)` where `ops` is both the
/// [`SearchOps`] and the [`FileOps`] of one workspace, and `$fixture` its `&dyn Fixture`.
#[macro_export]
macro_rules! search_contract {
    ($module:ident, $setup:expr, $fixture:expr) => {
        $crate::search_contract!($module, $setup, $fixture, |_keep| {});
    };
    ($module:ident, $setup:expr, $fixture:expr, $check:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $crate::search_contract!(@cases $setup, $fixture, $check; globs finds greps grep_limits errors names);
        }
    };
    (@cases $setup:expr, $fixture:expr, $check:expr; $($case:ident)*) => {
        $(
            #[test]
            fn $case() {
                let (ops, keep) = ($setup)();
                let fixture = ($fixture)(&ops, &keep);
                $crate::contract::run_search_case(stringify!($case), &ops, &ops, fixture);
                ($check)(&keep);
            }
        )*

            /// The cases above are every case of [`SEARCH_CASES`], so that a case added there
            /// and not to this macro's list fails here rather than never running.
            #[test]
            fn every_search_case_runs() {
                let run: &[&str] = &[$(stringify!($case)),*];
                let listed: Vec<&str> = $crate::contract::SEARCH_CASES.iter().map(|(n, _)| *n).collect();
                assert_eq!(run, listed.as_slice(), "the search contract's macro and SEARCH_CASES list different cases");
            }
    };
}

fn glob(base: &str, patterns: &[&str]) -> GlobRequest {
    GlobRequest {
        patterns: patterns.iter().map(|p| p.to_string()).collect(),
        base: base.into(),
        ..GlobRequest::default()
    }
}

fn paths(ops: &dyn SearchOps, request: &GlobRequest) -> Vec<String> {
    ok(ops.glob(request), "glob").paths
}

fn globs(ops: &dyn SearchOps) {
    let visible = [
        ".github/workflow.yml",
        "README.md",
        "bin/data.bin",
        "docs/guide.md",
        "keep.log",
        "long/line.txt",
        "names/caf\\xe9 \\xff.txt",
        "src/domain/rules.rs",
        "src/lib.rs",
        "src/main.rs",
    ];
    assert_eq!(paths(ops, &glob(".", &[])), visible, "every visible file");
    assert_eq!(paths(ops, &glob(".", &["**"])), visible, "`**`");
    let rust = ["src/domain/rules.rs", "src/lib.rs", "src/main.rs"];
    assert_eq!(paths(ops, &glob(".", &["**/*.rs"])), rust);
    assert_eq!(
        paths(ops, &glob(".", &["*.rs"])),
        rust,
        "a name at any depth"
    );
    let mut all = glob(".", &["**/*.rs"]);
    all.respect_gitignore = false;
    assert_eq!(
        paths(ops, &all),
        [
            "src/domain/generated.rs",
            "src/domain/rules.rs",
            "src/lib.rs",
            "src/main.rs"
        ]
    );
    assert_eq!(paths(ops, &glob(".", &["*.log"])), ["keep.log"]);
    let mut logs = glob(".", &["*.log"]);
    logs.respect_gitignore = false;
    assert_eq!(paths(ops, &logs), ["debug.log", "keep.log"]);
    assert_eq!(
        paths(ops, &glob(".", &["**", "!src/**", "!*.md"])),
        [
            ".github/workflow.yml",
            "bin/data.bin",
            "keep.log",
            "long/line.txt",
            "names/caf\\xe9 \\xff.txt",
        ],
        "exclusions"
    );
    let mut hidden = glob(".", &[]);
    hidden.include_hidden = true;
    assert_eq!(
        paths(ops, &hidden),
        [
            ".github/workflow.yml",
            ".gitignore",
            ".hidden/secret.txt",
            "README.md",
            "bin/data.bin",
            "docs/guide.md",
            "keep.log",
            "long/line.txt",
            "names/caf\\xe9 \\xff.txt",
            "src/domain/.gitignore",
            "src/domain/rules.rs",
            "src/lib.rs",
            "src/main.rs",
        ],
        "hidden files, never .toolshed/, temporary files, links or FIFOs"
    );
    hidden.respect_gitignore = false;
    let everything = paths(ops, &hidden);
    assert!(
        everything.iter().all(|p| !p.starts_with(".toolshed")
            && !p.starts_with("links/outside")
            && !p.starts_with("links/outdir")
            && !p.contains(".tsw-")),
        "{everything:?}"
    );
    assert_eq!(everything.len(), 16, "{everything:?}");
    assert_eq!(
        paths(ops, &glob("src", &["*.rs"])),
        rust,
        "relative to base"
    );
    assert_eq!(
        paths(ops, &glob("src", &["/*.rs"])),
        ["src/lib.rs", "src/main.rs"],
        "anchored to base"
    );
    assert_eq!(
        paths(ops, &glob("./src/domain/", &[])),
        ["src/domain/rules.rs"],
        "ignore files above the base apply, and the base's own"
    );
    assert_eq!(
        paths(ops, &glob("target", &[])),
        ["target/out.txt"],
        "an ignored base is searched when asked for"
    );
    assert_eq!(
        paths(ops, &glob("links/dir", &["*.rs"])),
        rust,
        "a base behind a link inside the workspace is resolved"
    );
    let mut two = glob(".", &["**"]);
    two.max_results = 2;
    let cut = ok(ops.glob(&two), "glob capped");
    assert_eq!(
        (cut.paths.as_slice(), cut.truncated),
        (
            &[".github/workflow.yml".to_string(), "README.md".to_string()][..],
            true
        )
    );
    let mut three = glob(".", &["**/*.rs"]);
    three.max_results = 3;
    assert!(!ok(ops.glob(&three), "glob exact").truncated);
}

fn find(query: &str) -> FindRequest {
    FindRequest {
        query: query.into(),
        ..FindRequest::default()
    }
}

fn found(ops: &dyn SearchOps, request: &FindRequest) -> Vec<String> {
    ok(ops.find(request), "find")
        .matches
        .into_iter()
        .map(|m| m.path)
        .collect()
}

fn finds(ops: &dyn SearchOps) {
    assert_eq!(
        found(ops, &find("mainrs")),
        ["src/main.rs", "src/domain/rules.rs"],
        "the file name match ranks first"
    );
    let result = ok(ops.find(&find("mainrs")), "find");
    assert!(result.matches[0].score > result.matches[1].score);
    assert_eq!(result.matches[0].kind, FileKind::File);
    let mut dirs = find("dom");
    dirs.kind = FindKind::Dirs;
    let result = ok(ops.find(&dirs), "find dirs");
    assert_eq!(result.matches.len(), 1);
    assert_eq!(
        (result.matches[0].path.as_str(), result.matches[0].kind),
        ("src/domain", FileKind::Dir)
    );
    let mut both = find("guide");
    both.kind = FindKind::Both;
    assert_eq!(found(ops, &both), ["docs/guide.md"]);
    let mut in_src = find("RULES");
    in_src.base = "src".into();
    assert_eq!(found(ops, &in_src), ["src/domain/rules.rs"]);
    let mut one = find("mainrs");
    one.max_results = 1;
    let cut = ok(ops.find(&one), "find capped");
    assert_eq!(cut.matches.len(), 1);
    assert!(cut.truncated && cut.matches[0].path == "src/main.rs");
    assert!(found(ops, &find("secret")).is_empty(), "hidden");
    let mut hidden = find("secret");
    hidden.include_hidden = true;
    assert_eq!(found(ops, &hidden), [".hidden/secret.txt"]);
    assert!(found(ops, &find("generated")).is_empty(), "ignored");
    let mut ignored = find("generated");
    ignored.respect_gitignore = false;
    assert_eq!(found(ops, &ignored), ["src/domain/generated.rs"]);
    let mut reserved = find("state");
    reserved.include_hidden = true;
    reserved.respect_gitignore = false;
    reserved.kind = FindKind::Both;
    assert!(
        found(ops, &reserved).is_empty(),
        ".toolshed/ is never found"
    );
}

fn grep(pattern: &str) -> GrepRequest {
    GrepRequest {
        pattern: pattern.into(),
        case: CaseMode::Sensitive,
        ..GrepRequest::default()
    }
}

/// Files with their (line number, is context, text) lines.
type Lines = Vec<(String, Vec<(u64, bool, String)>)>;
/// The same, written in a test.
type Spec<'a> = [(&'a str, &'a [(u64, bool, &'a str)])];

fn lines(result: &GrepResult) -> Lines {
    result
        .files
        .iter()
        .map(|f| {
            (
                f.path.clone(),
                f.matches
                    .iter()
                    .map(|l| (l.line_number, l.is_context, l.text.clone()))
                    .collect(),
            )
        })
        .collect()
}

fn hits(ops: &dyn SearchOps, request: &GrepRequest) -> Lines {
    lines(&ok(ops.grep(request), "grep"))
}

fn expect(spec: &Spec<'_>) -> Lines {
    spec.iter()
        .map(|(path, lines)| {
            (
                path.to_string(),
                lines
                    .iter()
                    .map(|(n, ctx, text)| (*n, *ctx, text.to_string()))
                    .collect(),
            )
        })
        .collect()
}

fn greps(ops: &dyn SearchOps) {
    let mut request = grep("needle");
    request.exclude = vec!["long".into()];
    let result = ok(ops.grep(&request), "grep");
    assert_eq!(
        lines(&result),
        expect(&[
            (".github/workflow.yml", &[(1, false, "needle workflow")]),
            ("README.md", &[(2, false, "needle in readme")]),
            ("docs/guide.md", &[(1, false, "needle (literal) [x]")]),
            ("keep.log", &[(1, false, "needle kept log")]),
            ("names/caf\\xe9 \\xff.txt", &[(1, false, "needle raw")]),
            (
                "src/domain/rules.rs",
                &[(3, false, "needle c"), (7, false, "needle g")]
            ),
            ("src/lib.rs", &[(2, false, "// needle one")]),
        ]),
        "hidden, ignored, binary, reserved, temporary and linked files are not searched"
    );
    assert_eq!(
        (
            result.total_matches,
            result.files_searched,
            result.skipped_binary,
            result.truncated
        ),
        (8, 9, 1, false)
    );

    let mut insensitive = grep("needle");
    insensitive.case = CaseMode::Insensitive;
    insensitive.include = vec!["src/*.rs".into()];
    let main = (
        "src/main.rs",
        &[(2, false, "    println!(\"Needle\");")][..],
    );
    let lib = (
        "src/lib.rs",
        &[(2, false, "// needle one"), (3, false, "// NEEDLE two")][..],
    );
    assert_eq!(hits(ops, &insensitive), expect(&[lib, main]));
    let mut smart = grep("needle");
    smart.case = CaseMode::Smart;
    smart.include = vec!["src/*.rs".into()];
    assert_eq!(hits(ops, &smart), expect(&[lib, main]), "smart, lower case");
    smart.pattern = "Needle".into();
    assert_eq!(hits(ops, &smart), expect(&[main]), "smart, upper case");

    let mut fixed = grep("(literal) [x]");
    fixed.fixed_string = true;
    assert_eq!(
        hits(ops, &fixed),
        expect(&[("docs/guide.md", &[(1, false, "needle (literal) [x]")])])
    );
    fixed.fixed_string = false;
    assert!(
        hits(ops, &fixed).is_empty(),
        "as a regex it means something else"
    );
    assert_eq!(
        hits(ops, &grep(r"ne{2}dle \w$")),
        expect(&[(
            "src/domain/rules.rs",
            &[(3, false, "needle c"), (7, false, "needle g")]
        )])
    );

    let mut context = grep("needle");
    context.base = "src/domain".into();
    context.context_before = 1;
    context.context_after = 1;
    assert_eq!(
        hits(ops, &context),
        expect(&[(
            "src/domain/rules.rs",
            &[
                (2, true, "b"),
                (3, false, "needle c"),
                (4, true, "d"),
                (6, true, "f"),
                (7, false, "needle g"),
                (8, true, "h"),
            ]
        )])
    );

    let names = |request: &GrepRequest| -> Vec<String> {
        hits(ops, request).into_iter().map(|(p, _)| p).collect()
    };
    let mut md = grep("needle");
    md.include = vec!["*.md".into()];
    assert_eq!(names(&md), ["README.md", "docs/guide.md"]);
    let mut excluded = grep("needle");
    excluded.exclude = vec!["src".into(), "*.log".into()];
    assert_eq!(
        names(&excluded),
        [
            ".github/workflow.yml",
            "README.md",
            "docs/guide.md",
            "long/line.txt",
            "names/caf\\xe9 \\xff.txt"
        ]
    );
    let mut both = grep("needle");
    both.include = vec!["src/**".into()];
    both.exclude = vec!["**/lib.rs".into()];
    assert_eq!(names(&both), ["src/domain/rules.rs"]);

    let mut hidden = grep("needle hidden");
    assert!(names(&hidden).is_empty());
    hidden.include_hidden = true;
    assert_eq!(names(&hidden), [".hidden/secret.txt"]);
    let mut ignored = grep("ignored log");
    assert!(names(&ignored).is_empty());
    ignored.respect_gitignore = false;
    assert_eq!(names(&ignored), ["debug.log"]);
    for (pattern, respect_gitignore) in [
        ("needle reserved", false),
        ("needle temp", false),
        ("needle outside", false),
        ("needle generated", true),
    ] {
        let mut everything = grep(pattern);
        everything.include_hidden = true;
        everything.respect_gitignore = respect_gitignore;
        assert!(
            names(&everything).is_empty(),
            "`{pattern}` must not be found: {:?}",
            names(&everything)
        );
    }

    let mut multi = grep("a\nb");
    fails(ops.grep(&multi), "newline without multiline", |e| {
        matches!(e, OpsError::InvalidPattern { .. }) && e.to_string().contains("multiline")
    });
    multi.multiline = true;
    assert_eq!(
        hits(ops, &multi),
        expect(&[("src/domain/rules.rs", &[(1, false, "a"), (2, false, "b")])])
    );

    let mut single = grep("needle");
    single.base = "src/lib.rs".into();
    let result = ok(ops.grep(&single), "grep a single file");
    assert_eq!(
        (lines(&result), result.files_searched),
        (expect(&[("src/lib.rs", &[(2, false, "// needle one")])]), 1)
    );

    let mut binary = grep("needle");
    binary.base = "bin".into();
    let result = ok(ops.grep(&binary), "grep binary");
    assert_eq!(
        (
            result.files.len(),
            result.files_searched,
            result.skipped_binary
        ),
        (0, 1, 1)
    );
}

fn grep_limits(ops: &dyn SearchOps) {
    let mut long = grep("needle");
    long.base = "long".into();
    long.max_line_len = 100;
    let result = ok(ops.grep(&long), "grep a long line");
    let line = &result.files[0].matches[0];
    assert_eq!(
        (line.line_number, line.truncated, line.text.clone()),
        (
            1,
            true,
            format!("…{}needle{}…", "x".repeat(25), "y".repeat(69))
        ),
        "cut around the match"
    );
    long.max_line_len = 5000;
    let result = ok(ops.grep(&long), "grep a long line, uncut");
    let line = &result.files[0].matches[0];
    assert_eq!((line.truncated, line.text.clone()), (false, long_line()));

    let capped = |max: usize| {
        let mut request = grep("needle");
        request.max_matches = max;
        ok(ops.grep(&request), "grep capped")
    };
    let result = capped(3);
    assert_eq!(
        lines(&result),
        expect(&[
            (".github/workflow.yml", &[(1, false, "needle workflow")]),
            ("README.md", &[(2, false, "needle in readme")]),
            ("docs/guide.md", &[(1, false, "needle (literal) [x]")]),
        ]),
        "the first matches in path order are kept"
    );
    assert_eq!((result.total_matches, result.truncated), (3, true));
    let result = capped(6);
    assert_eq!(
        (result.total_matches, result.truncated, result.files.len()),
        (6, true, 6)
    );
    assert_eq!(
        result.files[5].matches.len(),
        1,
        "a file is cut inside when the limit falls there"
    );
    let result = capped(9);
    assert_eq!((result.total_matches, result.truncated), (9, false));
    let mut one = grep("needle");
    one.base = "src/domain".into();
    one.max_matches = 1;
    one.context_before = 1;
    one.context_after = 1;
    let result = ok(ops.grep(&one), "grep capped with context");
    assert_eq!(
        lines(&result),
        expect(&[(
            "src/domain/rules.rs",
            &[(2, true, "b"), (3, false, "needle c"), (4, true, "d")]
        )])
    );
    assert!(result.truncated);
}

fn errors(ops: &dyn SearchOps) {
    let names_pattern = |pattern: &'static str| {
        move |e: &OpsError| {
            matches!(e, OpsError::InvalidPattern { pattern: p, .. } if p == pattern)
                && e.to_string().contains(pattern)
        }
    };
    fails(
        ops.grep(&grep("fn (")),
        "invalid regex",
        names_pattern("fn ("),
    );
    fails(ops.grep(&grep("")), "empty regex", names_pattern(""));
    let mut bad_include = grep("x");
    bad_include.include = vec!["src/[".into()];
    fails(
        ops.grep(&bad_include),
        "invalid include",
        names_pattern("src/["),
    );
    fails(
        ops.glob(&glob(".", &["src/["])),
        "invalid glob",
        names_pattern("src/["),
    );
    fails(
        ops.glob(&glob(".", &["../*"])),
        "glob climbing out",
        names_pattern("../*"),
    );
    fails(ops.find(&find(" ")), "empty query", names_pattern(" "));
    let escape = |e: &OpsError| matches!(e, OpsError::Escape { .. });
    fails(ops.glob(&glob("..", &[])), "base outside", escape);
    fails(ops.glob(&glob("/etc", &[])), "absolute base", escape);
    fails(
        ops.glob(&glob("links/outdir", &[])),
        "base through a link out",
        escape,
    );
    let mut out = grep("needle");
    out.base = "links/outside".into();
    fails(ops.grep(&out), "grep a link out", escape);
    fails(ops.glob(&glob(".toolshed", &[])), "reserved base", |e| {
        matches!(e, OpsError::Reserved { .. })
    });
    let mut reserved = grep("needle");
    reserved.base = "src/../.toolshed/state.db".into();
    fails(ops.grep(&reserved), "grep reserved", |e| {
        matches!(e, OpsError::Reserved { .. })
    });
    fails(ops.glob(&glob("README.md", &[])), "file base", |e| {
        matches!(e, OpsError::NotADirectory { .. })
    });
    fails(
        ops.find(&{
            let mut r = find("x");
            r.base = "nope".into();
            r
        }),
        "missing base",
        |e| matches!(e, OpsError::NotFound { .. }),
    );
}

/// The name that is not UTF-8 is found, walked and searched through its spelling.
fn names(ops: &dyn SearchOps) {
    let spelled = "names/caf\\xe9 \\xff.txt";
    assert_eq!(found(ops, &find("caf")), [spelled]);
    let mut one = grep("needle");
    one.base = spelled.into();
    assert_eq!(
        lines(&ok(ops.grep(&one), "grep the file itself")),
        expect(&[(spelled, &[(1, false, "needle raw")])])
    );
    let mut inside = grep("raw");
    inside.base = "names".into();
    assert_eq!(
        lines(&ok(ops.grep(&inside), "grep its directory")),
        expect(&[(spelled, &[(1, false, "needle raw")])])
    );
    let mut by_glob = glob("names", &["*\\\\xff.txt"]);
    by_glob.respect_gitignore = true;
    assert_eq!(
        paths(ops, &by_glob),
        [spelled],
        "a glob matches the spelling"
    );
    let tree = ok(
        ops.tree(&crate::search::TreeRequest {
            base: "names".into(),
            max_depth: 2,
            ..crate::search::TreeRequest::default()
        }),
        "tree",
    );
    let listed: Vec<&str> = tree.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(listed, [spelled]);
}
