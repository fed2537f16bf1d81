//! Commits on the real file system: compare-and-swap across writers, all-or-nothing
//! multi-file commits across SIGKILL, and the sweep of what dead writers left.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolshed_ops::{Change, Expect, FileOps, LocalOps, OpsError, Parents};

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    (dir, root)
}

fn scratch_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(".toolshed/tmp"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n != ".gitignore" && n != ".sweep.lock")
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Two writers (separate `LocalOps`, as two processes would have) each read the file, then
/// change their own line and commit over what they read: every reported success is in the
/// file, and every failure is a `Changed` conflict.
#[test]
fn read_then_commit_never_loses_an_update() {
    let (_dir, root) = setup();
    let lines = 60;
    let initial: String = (0..lines).map(|i| format!("line {i}\n")).collect();
    std::fs::write(root.join("shared.txt"), &initial).unwrap();
    let mut conflicts = 0;
    for round in 0..30 {
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let root = root.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let ops = LocalOps::new(&root).unwrap();
                    let before = ops.read("shared.txt", u64::MAX).unwrap().bytes;
                    let text = String::from_utf8(before.clone()).unwrap();
                    let target = format!("line {}\n", round * 2 + w);
                    let after = text.replacen(&target, &format!("edited r{round} w{w}\n"), 1);
                    barrier.wait();
                    let result = ops.commit(&[Change::Write {
                        path: "shared.txt",
                        data: after.as_bytes(),
                        expect: Expect::Content(&before),
                        parents: Parents::MustExist,
                    }]);
                    (w, round, result)
                })
            })
            .collect();
        for writer in writers {
            let (w, round, result) = writer.join().unwrap();
            let now = std::fs::read_to_string(root.join("shared.txt")).unwrap();
            match result {
                Ok(()) => assert!(
                    now.contains(&format!("edited r{round} w{w}\n")),
                    "round {round}: writer {w} succeeded but its edit is lost:\n{now}"
                ),
                Err(OpsError::Changed { .. }) => conflicts += 1,
                Err(e) => panic!("round {round}: {e}"),
            }
        }
    }
    // Both read before either writes, so in every round exactly one commit must fail:
    // without the compare under the lock both "succeed" and one edit is lost.
    assert_eq!(conflicts, 30);
}

/// A commit checks every expectation before changing anything.
#[test]
fn a_failed_expectation_changes_nothing() {
    let (_dir, root) = setup();
    std::fs::write(root.join("a.txt"), "a").unwrap();
    std::fs::write(root.join("b.txt"), "b").unwrap();
    let ops = LocalOps::new(&root).unwrap();
    let err = ops
        .commit(&[
            Change::Write {
                path: "a.txt",
                data: b"A",
                expect: Expect::Content(b"a"),
                parents: Parents::MustExist,
            },
            Change::Write {
                path: "new/c.txt",
                data: b"C",
                expect: Expect::Missing,
                parents: Parents::Create,
            },
            Change::Remove {
                path: "b.txt",
                expect: Expect::Content(b"not b"),
            },
        ])
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("`b.txt` has changed since you read it"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a");
    assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "b");
    assert!(!root.join("new/c.txt").exists());
    assert_eq!(scratch_names(&root), Vec::<String>::new());
}

const CHILD_ENV: &str = "TOOLSHED_TEST_COMMIT_ROOT";

/// Run as a child process by `sigkill_during_commits_never_leaves_half_a_commit`: flips
/// the workspace between two states, three files each, forever.
#[test]
fn committer_child() {
    let Some(root) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let ops = LocalOps::new(Path::new(&root)).unwrap();
    let big = vec![b'x'; 512 * 1024];
    loop {
        // State A: a.txt = "A", b.txt = "A", c.txt present.  State B: a = b = "B", c gone,
        // d/moved.txt holds what c held.
        ops.commit(&[
            Change::Write {
                path: "a.txt",
                data: b"B",
                expect: Expect::Content(b"A"),
                parents: Parents::MustExist,
            },
            Change::Write {
                path: "b.txt",
                data: b"B",
                expect: Expect::Content(b"A"),
                parents: Parents::MustExist,
            },
            Change::Move {
                from: "c.txt",
                to: "d/moved.txt",
                data: &big,
                expect: Expect::Anything,
            },
        ])
        .unwrap();
        ops.commit(&[
            Change::Write {
                path: "a.txt",
                data: b"A",
                expect: Expect::Content(b"B"),
                parents: Parents::MustExist,
            },
            Change::Write {
                path: "b.txt",
                data: b"A",
                expect: Expect::Content(b"B"),
                parents: Parents::MustExist,
            },
            Change::Move {
                from: "d/moved.txt",
                to: "c.txt",
                data: &big,
                expect: Expect::Anything,
            },
        ])
        .unwrap();
    }
}

/// What state the workspace is in: `A`, `B`, or a description of the mix.
fn state(root: &Path) -> String {
    let read = |p: &str| std::fs::read_to_string(root.join(p)).ok();
    let (a, b) = (read("a.txt"), read("b.txt"));
    let (c, moved) = (
        root.join("c.txt").exists(),
        root.join("d/moved.txt").exists(),
    );
    match (a.as_deref(), b.as_deref(), c, moved) {
        (Some("A"), Some("A"), true, false) => "A".into(),
        (Some("B"), Some("B"), false, true) => "B".into(),
        other => format!("{other:?}"),
    }
}

#[test]
fn sigkill_during_commits_never_leaves_half_a_commit() {
    let (_dir, root) = setup();
    std::fs::write(root.join("a.txt"), "A").unwrap();
    std::fs::write(root.join("b.txt"), "A").unwrap();
    std::fs::write(root.join("c.txt"), "c").unwrap();
    std::fs::create_dir_all(root.join("d")).unwrap();
    let mut recovered = 0;
    for round in 0..12 {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "commit::committer_child", "--test-threads", "1"])
            .env(CHILD_ENV, &root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        // Let it run some commits, then kill it at a moment that varies by round.
        std::thread::sleep(Duration::from_millis(30 + 7 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(start.elapsed() < Duration::from_secs(20));
        let journaled = scratch_names(&root)
            .iter()
            .any(|n| n.starts_with("journal-") && !n.ends_with(".part"));
        // Opening the workspace finishes (or discards) what the killed writer left.
        LocalOps::new(&root).unwrap();
        let now = state(&root);
        assert!(
            now == "A" || now == "B",
            "round {round}: half a commit is visible after recovery: {now}"
        );
        assert_eq!(
            scratch_names(&root),
            Vec::<String>::new(),
            "round {round}: stray files"
        );
        recovered += usize::from(journaled);
        // The next run starts from state A.
        if now == "B" {
            std::fs::write(root.join("a.txt"), "A").unwrap();
            std::fs::write(root.join("b.txt"), "A").unwrap();
            std::fs::rename(root.join("d/moved.txt"), root.join("c.txt")).unwrap();
        }
    }
    eprintln!("{recovered} of 12 kills left a journal that recovery finished");
}

/// The sweep deletes what dead writers left and leaves what live ones hold; a journal
/// whose writer died is rolled forward.
#[test]
fn opening_a_workspace_sweeps_dead_temporaries_and_replays_journals() {
    let (_dir, root) = setup();
    let ops = LocalOps::new(&root).unwrap();
    ops.write("x.txt", b"old", Parents::MustExist).unwrap();
    ops.write("gone.txt", b"bye", Parents::MustExist).unwrap();
    let scratch = root.join(".toolshed/tmp");
    std::fs::write(scratch.join("w-1-2-3.tmp"), "dead").unwrap();
    let live = std::fs::File::create(scratch.join("w-4-5-6.tmp")).unwrap();
    rustix_flock(&live);
    std::fs::write(scratch.join("w-7-8-9.tmp"), "new").unwrap();
    std::fs::write(
        scratch.join("journal-1-2-3"),
        b"put\0scratch\0w-7-8-9.tmp\0x.txt\0del\0gone.txt\0end\0",
    )
    .unwrap();
    std::fs::write(scratch.join("journal-4-5-6.part"), b"put\0").unwrap();
    LocalOps::new(&root).unwrap();
    assert_eq!(scratch_names(&root), vec!["w-4-5-6.tmp"]);
    assert_eq!(std::fs::read_to_string(root.join("x.txt")).unwrap(), "new");
    assert!(!root.join("gone.txt").exists());
    drop(live);
    LocalOps::new(&root).unwrap();
    assert_eq!(scratch_names(&root), Vec::<String>::new());
}

fn rustix_flock(file: &std::fs::File) {
    rustix::fs::flock(file, rustix::fs::FlockOperation::LockExclusive).unwrap();
}
