//! The contract every [`FileOps`] implementation must meet, as a reusable test suite.
//!
//! Each case is a function of its own ([`FILE_CASES`], [`SEARCH_CASES`]), and the macros
//! [`file_contract!`](crate::file_contract) and [`search_contract!`](crate::search_contract)
//! expand to one `#[test]` per case, so a failure names the case. The crate's tests run them
//! against [`LocalOps`](crate::LocalOps) on a temporary directory and against
//! [`MemoryOps`](crate::MemoryOps), so tool tests written on the in-memory double mean the
//! same on the real file system; a backend outside this crate runs the same macros. A
//! failed check panics with what was expected. [`run`] and [`run_search`] run every case
//! in one go.

use crate::error::OpsError;
use crate::file::{FileKind, FileOps, Follow, Overwrite, Parents, Written};

/// What the suite needs beyond [`FileOps`] to build hostile fixtures.
pub trait Fixture {
    /// Creates a symbolic link at `path` (relative to the root) pointing to `target`.
    fn symlink(&self, path: &str, target: &str);
    /// Gives the file at `path` a second hard link at `other`.
    fn hard_link(&self, path: &str, other: &str);
    /// Creates a FIFO at `path`.
    fn fifo(&self, path: &str);
    /// Creates the file `name` inside the reserved `.toolshed/` directory.
    fn reserved_file(&self, name: &str, data: &[u8]);
    /// Creates a file whose path, as the file system has it, is `path` (bytes that need not
    /// be UTF-8), with its parent directories.
    fn raw_file(&self, path: &[u8], data: &[u8]);
}

pub use crate::search::contract::{SEARCH_CASES, SearchCase, run_search, run_search_case};

/// One case of the file contract: the backend and the fixture maker of a fresh workspace.
pub type FileCase = fn(&dyn FileOps, &dyn Fixture);

/// Every case of the file contract, by name.
pub const FILE_CASES: &[(&str, FileCase)] = &[
    ("files", files),
    ("directories", directories),
    ("renames", renames),
    ("escapes", escapes),
    ("refusals", refusals),
    ("reserved", reserved),
    ("malformed", malformed),
    ("names", names),
];

/// Runs the file-contract case `name` (see [`FILE_CASES`]) on `ops`, which must be a fresh
/// workspace. Used by [`file_contract!`](crate::file_contract).
pub fn run_file_case(name: &str, ops: &dyn FileOps, fx: &dyn Fixture) {
    match FILE_CASES.iter().find(|(n, _)| *n == name) {
        Some((_, case)) => case(ops, fx),
        None => panic!("no file contract case `{name}`"),
    }
}

/// One `#[test]` per case of the file contract, in a module `$module`. `$setup` gives a
/// fresh `(ops, keep)` for each case (`keep` holds what must outlive the case, such as a
/// temporary directory); `$fixture` maps `(&ops, &keep)` to the `&dyn Fixture` that makes
/// hostile files there; `$check`, when given, is called with `&keep` after the case.
///
/// ```ignore
/// fn memory() -> (MemoryOps, ()) { (MemoryOps::new(), ()) }
/// fn same<'a>(ops: &'a MemoryOps, _: &'a ()) -> &'a dyn Fixture { ops }
/// toolshed_ops::file_contract!(memory_ops, memory, same);
/// ```
#[macro_export]
macro_rules! file_contract {
    ($module:ident, $setup:expr, $fixture:expr) => {
        $crate::file_contract!($module, $setup, $fixture, |_keep| {});
    };
    ($module:ident, $setup:expr, $fixture:expr, $check:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $crate::file_contract!(@cases $setup, $fixture, $check;
                files directories renames escapes refusals reserved malformed names);
        }
    };
    (@cases $setup:expr, $fixture:expr, $check:expr; $($case:ident)*) => {
        $(
            #[test]
            fn $case() {
                let (ops, keep) = ($setup)();
                let fixture = ($fixture)(&ops, &keep);
                $crate::contract::run_file_case(stringify!($case), &ops, fixture);
                ($check)(&keep);
            }
        )*

            /// The cases above are every case of [`FILE_CASES`], so that a case added there
            /// and not to this macro's list fails here rather than never running.
            #[test]
            fn every_file_case_runs() {
                let run: &[&str] = &[$(stringify!($case)),*];
                let listed: Vec<&str> = $crate::contract::FILE_CASES.iter().map(|(n, _)| *n).collect();
                assert_eq!(run, listed.as_slice(), "the file contract's macro and FILE_CASES list different cases");
            }
    };
}

pub(crate) fn ok<T>(result: Result<T, OpsError>, what: &str) -> T {
    match result {
        Ok(v) => v,
        Err(e) => panic!("{what}: expected success, got: {e}"),
    }
}

pub(crate) fn fails<T: std::fmt::Debug>(
    result: Result<T, OpsError>,
    what: &str,
    check: impl Fn(&OpsError) -> bool,
) {
    match result {
        Ok(v) => panic!("{what}: expected an error, got {v:?}"),
        Err(e) => assert!(check(&e), "{what}: unexpected error: {e:?}"),
    }
}

fn is_escape(e: &OpsError) -> bool {
    matches!(e, OpsError::Escape { .. })
}

/// Runs every check. Uses paths under `contract/` and expects the root to be otherwise
/// empty of them.
pub fn run(ops: &dyn FileOps, fx: &dyn Fixture) {
    for (_, case) in FILE_CASES {
        case(ops, fx);
    }
}

fn files(ops: &dyn FileOps, _fx: &dyn Fixture) {
    assert_eq!(
        ok(
            ops.write("contract/f/a.txt", b"hello\n", Parents::Create),
            "create"
        ),
        Written::Created
    );
    assert_eq!(
        ok(
            ops.write("contract/f/a.txt", b"bye\n", Parents::MustExist),
            "replace"
        ),
        Written::Replaced
    );
    let c = ok(ops.read("contract/f/a.txt", 1 << 20), "read");
    assert_eq!(
        (c.bytes.as_slice(), c.size, c.truncated()),
        (&b"bye\n"[..], 4, false)
    );
    let c = ok(ops.read("contract/f/a.txt", 2), "read capped");
    assert_eq!(
        (c.bytes.as_slice(), c.size, c.truncated()),
        (&b"by"[..], 4, true)
    );
    ok(ops.append("contract/f/a.txt", b"more\n"), "append");
    ok(ops.append("contract/f/new.log", b"1\n"), "append creates");
    assert_eq!(
        ok(ops.read("contract/f/a.txt", 100), "read").bytes,
        b"bye\nmore\n"
    );
    let m = ok(ops.stat("contract/f/a.txt", Follow::Yes), "stat");
    assert_eq!((m.kind, m.size, m.links), (FileKind::File, 9, 1));
    ok(
        ops.write("contract/f/empty", b"", Parents::MustExist),
        "empty file",
    );
    assert_eq!(ok(ops.read("contract/f/empty", 10), "read empty").size, 0);
    fails(
        ops.write("contract/missing/a.txt", b"x", Parents::MustExist),
        "write without parents",
        |e| matches!(e, OpsError::NotFound { .. }),
    );
    fails(ops.read("contract/f/nope", 10), "read missing", |e| {
        matches!(e, OpsError::NotFound { .. })
    });
    fails(ops.read("contract/f", 10), "read a directory", |e| {
        matches!(e, OpsError::IsADirectory { .. })
    });
    fails(
        ops.write("contract/f", b"x", Parents::MustExist),
        "write a directory",
        |e| matches!(e, OpsError::IsADirectory { .. }),
    );
    fails(
        ops.read("contract/f/a.txt/x", 10),
        "file as directory",
        |e| {
            matches!(
                e,
                OpsError::NotADirectory { .. } | OpsError::NotFound { .. }
            )
        },
    );
    assert_eq!(
        ok(ops.realpath("contract/./f/../f/a.txt"), "realpath"),
        "contract/f/a.txt"
    );
    let read = ok(
        ops.read("contract/./f/../f/a.txt", 10),
        "read by a long way",
    );
    assert!(
        read.real_path
            .as_deref()
            .is_none_or(|real| real == "contract/f/a.txt"),
        "{:?}",
        read.real_path
    );
    assert_eq!(ok(ops.realpath("."), "realpath root"), ".");
}

fn directories(ops: &dyn FileOps, _fx: &dyn Fixture) {
    ok(ops.mkdir("contract/d/x/y", Parents::Create), "mkdir -p");
    ok(
        ops.mkdir("contract/d/x/y", Parents::Create),
        "mkdir existing",
    );
    fails(
        ops.mkdir("contract/d/q/r", Parents::MustExist),
        "mkdir without parents",
        |e| matches!(e, OpsError::NotFound { .. }),
    );
    ok(
        ops.write("contract/d/x/b.txt", b"b", Parents::MustExist),
        "file in dir",
    );
    ok(
        ops.write("contract/d/x/a.txt", b"a", Parents::MustExist),
        "file in dir",
    );
    let names: Vec<String> = ok(ops.read_dir("contract/d/x"), "list")
        .entries
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        vec!["a.txt", "b.txt", "y"],
        "listing is sorted and complete"
    );
    fails(ops.read_dir("contract/d/x/a.txt"), "list a file", |e| {
        matches!(e, OpsError::NotADirectory { .. })
    });
    fails(ops.remove("contract/d/x", false), "remove non-empty", |e| {
        matches!(e, OpsError::NotEmpty { .. })
    });
    ok(ops.remove("contract/d/x/a.txt", false), "remove file");
    ok(ops.remove("contract/d/x", true), "remove tree");
    fails(ops.stat("contract/d/x", Follow::Yes), "gone", |e| {
        matches!(e, OpsError::NotFound { .. })
    });
    fails(ops.remove("contract/d/x", true), "remove missing", |e| {
        matches!(e, OpsError::NotFound { .. })
    });
    fails(ops.remove(".", true), "remove the root", |e| {
        matches!(e, OpsError::InvalidPath { .. })
    });
}

fn renames(ops: &dyn FileOps, _fx: &dyn Fixture) {
    ok(
        ops.write("contract/r/a.txt", b"a", Parents::Create),
        "setup",
    );
    ok(
        ops.write("contract/r/b.txt", b"b", Parents::Create),
        "setup",
    );
    fails(
        ops.rename("contract/r/a.txt", "contract/r/b.txt", Overwrite::No),
        "no overwrite",
        |e| matches!(e, OpsError::AlreadyExists { .. }),
    );
    ok(
        ops.rename("contract/r/a.txt", "contract/r/b.txt", Overwrite::Yes),
        "overwrite",
    );
    assert_eq!(ok(ops.read("contract/r/b.txt", 10), "moved").bytes, b"a");
    ok(ops.mkdir("contract/r/sub/deep", Parents::Create), "setup");
    ok(
        ops.write("contract/r/sub/deep/f", b"f", Parents::MustExist),
        "setup",
    );
    ok(
        ops.rename("contract/r/sub", "contract/r/moved", Overwrite::No),
        "move dir",
    );
    assert_eq!(
        ok(ops.read("contract/r/moved/deep/f", 10), "moved tree").bytes,
        b"f"
    );
    fails(
        ops.rename(
            "contract/r/moved",
            "contract/r/moved/deep/inside",
            Overwrite::No,
        ),
        "into itself",
        |_| true,
    );
    fails(
        ops.rename("contract/r/none", "contract/r/x", Overwrite::No),
        "move missing",
        |e| matches!(e, OpsError::NotFound { .. }),
    );
}

fn escapes(ops: &dyn FileOps, fx: &dyn Fixture) {
    ok(ops.mkdir("contract/e", Parents::Create), "setup");
    fails(ops.read("../etc/passwd", 10), "dot-dot", is_escape);
    fails(
        ops.read("contract/../../x", 10),
        "dot-dot deeper",
        is_escape,
    );
    fails(
        ops.write("../x", b"x", Parents::MustExist),
        "write dot-dot",
        is_escape,
    );
    fails(ops.read("/etc/passwd", 10), "absolute outside", is_escape);
    fx.symlink("contract/e/abs", "/etc");
    fails(
        ops.read("contract/e/abs/passwd", 10),
        "absolute link",
        is_escape,
    );
    fx.symlink("contract/e/up", "../../..");
    fails(
        ops.read_dir("contract/e/up"),
        "relative link out",
        is_escape,
    );
    fails(
        ops.read("contract/e/up/etc/passwd", 10),
        "relative link out, file",
        is_escape,
    );
    fails(
        ops.write("contract/e/up/x", b"x", Parents::MustExist),
        "write through link out",
        is_escape,
    );
    fails(
        ops.mkdir("contract/e/up/x", Parents::Create),
        "mkdir through link out",
        is_escape,
    );
    fx.symlink("contract/e/dangling", "../../../nowhere-toolshed-contract");
    fails(
        ops.write("contract/e/dangling", b"x", Parents::MustExist),
        "create through dangling outward link",
        |e| !matches!(e, OpsError::NotFound { .. }),
    );
    fails(
        ops.append("contract/e/dangling", b"x"),
        "append through dangling outward link",
        |_| true,
    );
    fails(
        ops.read("contract/e/up/../x", 10),
        "dot-dot after a link",
        is_escape,
    );
    // Links that stay inside work.
    ok(
        ops.write("contract/e/target.txt", b"t", Parents::MustExist),
        "setup",
    );
    fx.symlink("contract/e/inside", "target.txt");
    let read = ok(ops.read("contract/e/inside", 10), "inside link");
    assert_eq!(read.bytes, b"t");
    // Where a read says it read is where realpath says the path leads.
    assert!(
        read.real_path
            .as_deref()
            .is_none_or(|real| real == "contract/e/target.txt"),
        "{:?}",
        read.real_path
    );
    // A link on the way is resolved (not the path's words), one going out refused.
    assert_eq!(
        ok(ops.realpath("contract/e/inside"), "realpath of a link"),
        "contract/e/target.txt"
    );
    fails(
        ops.realpath("contract/e/up/etc"),
        "realpath through a link out",
        is_escape,
    );
    let m = ok(ops.stat("contract/e/inside", Follow::No), "lstat");
    assert_eq!(
        (m.kind, m.link_target.as_deref()),
        (FileKind::Symlink, Some("target.txt"))
    );
    ok(ops.remove("contract/e/inside", false), "remove a link");
    assert_eq!(
        ok(ops.read("contract/e/target.txt", 10), "target kept").bytes,
        b"t"
    );
}

fn refusals(ops: &dyn FileOps, fx: &dyn Fixture) {
    ok(
        ops.write("contract/s/one.txt", b"1", Parents::Create),
        "setup",
    );
    fx.hard_link("contract/s/one.txt", "contract/s/two.txt");
    fails(
        ops.write("contract/s/one.txt", b"x", Parents::MustExist),
        "hard link",
        |e| matches!(e, OpsError::MultipleLinks { links: 2, .. }),
    );
    fails(
        ops.append("contract/s/two.txt", b"x"),
        "append hard link",
        |e| matches!(e, OpsError::MultipleLinks { .. }),
    );
    fx.fifo("contract/s/pipe");
    fails(ops.read("contract/s/pipe", 10), "read fifo", |e| {
        matches!(e, OpsError::SpecialFile { .. })
    });
    fails(
        ops.write("contract/s/pipe", b"x", Parents::MustExist),
        "write fifo",
        |e| matches!(e, OpsError::SpecialFile { .. }),
    );
    fx.symlink("contract/s/link", "one.txt");
    fails(
        ops.write("contract/s/link", b"x", Parents::MustExist),
        "write through a link",
        |e| matches!(e, OpsError::SpecialFile { .. }),
    );
    assert_eq!(
        ok(ops.read("contract/s/one.txt", 10), "unchanged").bytes,
        b"1"
    );
}

fn reserved(ops: &dyn FileOps, fx: &dyn Fixture) {
    let is_reserved = |e: &OpsError| matches!(e, OpsError::Reserved { .. });
    // A link to the root spells the reserved directory another way.
    ok(ops.mkdir("contract/res", Parents::Create), "setup");
    ok(
        ops.write("contract/res/f.txt", b"f", Parents::MustExist),
        "setup",
    );
    fx.symlink("contract/res/root", "../..");
    fails(
        ops.rename(
            "contract/res/f.txt",
            "contract/res/root/.toolshed",
            Overwrite::Yes,
        ),
        "move onto reserved via link",
        is_reserved,
    );
    fails(
        ops.rename(
            "contract/res/root/.toolshed",
            "contract/res/stolen",
            Overwrite::No,
        ),
        "move reserved away via link",
        is_reserved,
    );
    fails(
        ops.write("contract/res/root/.toolshed", b"x", Parents::MustExist),
        "write reserved via link",
        is_reserved,
    );
    fails(
        ops.mkdir("contract/res/root/.toolshed", Parents::MustExist),
        "mkdir reserved via link",
        is_reserved,
    );
    fails(
        ops.remove("contract/res/root/.toolshed", true),
        "remove reserved via link",
        is_reserved,
    );
    fails(
        ops.append("contract/res/root/.toolshed", b"x"),
        "append reserved via link",
        is_reserved,
    );
    fails(
        ops.write(".toolshed/x", b"x", Parents::Create),
        "write reserved",
        is_reserved,
    );
    fails(
        ops.read(".toolshed/toolshed.db", 10),
        "read reserved",
        is_reserved,
    );
    fails(ops.read_dir(".toolshed"), "list reserved", is_reserved);
    fails(
        ops.mkdir(".toolshed", Parents::Create),
        "mkdir reserved",
        is_reserved,
    );
    fails(
        ops.read("contract/../.toolshed/x", 10),
        "reserved via dot-dot",
        is_reserved,
    );
    let names: Vec<String> = ok(ops.read_dir("."), "list root")
        .entries
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(
        !names.contains(&".toolshed".to_string()),
        "root listing hides .toolshed: {names:?}"
    );
}

fn malformed(ops: &dyn FileOps, _fx: &dyn Fixture) {
    let invalid = |e: &OpsError| matches!(e, OpsError::InvalidPath { .. });
    fails(ops.read("", 10), "empty", invalid);
    fails(ops.read("a\0b", 10), "NUL", invalid);
    fails(ops.read(&"x/".repeat(3000), 10), "too long", invalid);
    fails(
        ops.write(&"n".repeat(300), b"x", Parents::MustExist),
        "name too long",
        invalid,
    );
}

/// A name that is not UTF-8 is listed in its escaped spelling (see [`crate::path`]), and
/// that spelling works everywhere a path is taken; the text `\x` in a name is not mistaken
/// for an escape.
fn names(ops: &dyn FileOps, fx: &dyn Fixture) {
    fx.raw_file(b"contract-names/caf\xe9 \xff.txt", b"raw");
    let spelled = "contract-names/caf\\xe9 \\xff.txt";
    let listing = ok(ops.read_dir("contract-names"), "list");
    let listed: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        listed,
        ["caf\\xe9 \\xff.txt"],
        "the listing spells the name"
    );
    let read = ok(ops.read(spelled, 10), "read");
    assert_eq!(read.bytes, b"raw");
    assert!(
        read.real_path.as_deref().is_none_or(|real| real == spelled),
        "{:?}",
        read.real_path
    );
    assert_eq!(ok(ops.stat(spelled, Follow::No), "stat").size, 3);
    assert_eq!(ok(ops.realpath(spelled), "realpath"), spelled);
    assert_eq!(
        ok(ops.write(spelled, b"new", Parents::MustExist), "replace"),
        Written::Replaced
    );
    assert_eq!(ok(ops.read(spelled, 10), "read again").bytes, b"new");
    // Hex digits in either case name the same file.
    assert_eq!(
        ok(
            ops.read("contract-names/caf\\xE9 \\xFF.txt", 10),
            "read upper"
        )
        .bytes,
        b"new"
    );
    // A name holding the text `\x` is its own file, spelled with a doubled backslash.
    ok(
        ops.write("contract-names/\\\\xff", b"literal", Parents::MustExist),
        "write a literal backslash-x name",
    );
    let listing = ok(ops.read_dir("contract-names"), "list again");
    let listed: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(listed, ["\\\\xff", "caf\\xe9 \\xff.txt"]);
    fails(
        ops.read("contract-names/\\xff", 10),
        "the byte 0xff alone names no file here",
        |e| matches!(e, OpsError::NotFound { .. }),
    );
    ok(
        ops.rename(spelled, "contract-names/\\xfe", Overwrite::No),
        "rename",
    );
    ok(
        ops.mkdir("contract-names/d\\x80", Parents::MustExist),
        "mkdir",
    );
    ok(
        ops.write("contract-names/d\\x80/f", b"x", Parents::MustExist),
        "write inside",
    );
    ok(ops.remove("contract-names/d\\x80", true), "remove");
    let listing = ok(ops.read_dir("contract-names"), "list at the end");
    let listed: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(listed, ["\\\\xff", "\\xfe"]);
}
