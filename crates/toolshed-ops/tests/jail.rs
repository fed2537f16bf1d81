//! Hostile fixtures on the real file system: escapes that need timing or real processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use toolshed_ops::{FileOps, Follow, LocalOps, OpsError, Parents};

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    (dir, root)
}

#[test]
fn a_sibling_sharing_the_roots_name_prefix_is_outside() {
    let (dir, root) = setup();
    let sibling = dir.path().join("ws-sibling");
    std::fs::create_dir_all(&sibling).unwrap();
    std::fs::write(sibling.join("secret.txt"), "secret").unwrap();
    let ops = LocalOps::new(&root).unwrap();
    let abs = sibling.join("secret.txt");
    let err = ops.read(abs.to_str().unwrap(), 100).unwrap_err();
    assert!(matches!(err, OpsError::Escape { .. }), "{err:?}");
    let err = ops.read("../ws-sibling/secret.txt", 100).unwrap_err();
    assert!(matches!(err, OpsError::Escape { .. }), "{err:?}");
    let err = ops
        .write(
            dir.path().join("ws-sibling/new").to_str().unwrap(),
            b"x",
            Parents::MustExist,
        )
        .unwrap_err();
    assert!(matches!(err, OpsError::Escape { .. }), "{err:?}");
    assert!(!sibling.join("new").exists());
}

#[test]
fn a_link_into_the_reserved_dir_is_refused() {
    let (_dir, root) = setup();
    std::fs::create_dir_all(root.join(".toolshed")).unwrap();
    std::fs::write(root.join(".toolshed/state"), "s").unwrap();
    std::os::unix::fs::symlink(".toolshed", root.join("innocent")).unwrap();
    let ops = LocalOps::new(&root).unwrap();
    assert!(matches!(
        ops.read("innocent/state", 10),
        Err(OpsError::Reserved { .. })
    ));
    assert!(matches!(
        ops.write("innocent/new", b"x", Parents::MustExist),
        Err(OpsError::Reserved { .. })
    ));
    assert!(matches!(
        ops.read_dir("innocent"),
        Err(OpsError::Reserved { .. })
    ));
    // A stat through the link, or of it followed, is judged where the link leads; of
    // the link itself, it describes the link.
    for (path, follow) in [
        ("innocent/state", Follow::Yes),
        ("innocent/state", Follow::No),
        ("innocent", Follow::Yes),
    ] {
        let got = ops.stat(path, follow);
        assert!(
            matches!(got, Err(OpsError::Reserved { .. })),
            "{path} {follow:?}: {got:?}"
        );
    }
    assert!(
        ops.stat("innocent", Follow::No)
            .unwrap()
            .link_target
            .is_some()
    );
    assert!(!root.join(".toolshed/new").exists());
}

#[test]
fn a_directory_swapped_for_an_outward_link_during_a_read_loop_never_leaks() {
    let (dir, root) = setup();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("f.txt"), "OUTSIDE").unwrap();
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/f.txt"), "inside").unwrap();
    let ops = LocalOps::new(&root).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let root = root.clone();
        let outside = outside.clone();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // d is a real directory, then a link pointing out, then a directory again.
                std::fs::rename(root.join("d"), root.join("d.real")).unwrap();
                std::os::unix::fs::symlink(&outside, root.join("d")).unwrap();
                std::fs::remove_file(root.join("d")).unwrap();
                std::fs::rename(root.join("d.real"), root.join("d")).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let deadline = Instant::now() + Duration::from_millis(1500);
    let (mut inside, mut refused) = (0u64, 0u64);
    while Instant::now() < deadline {
        match ops.read("d/f.txt", 100) {
            Ok(c) => {
                assert_eq!(c.bytes, b"inside", "read escaped the workspace");
                inside += 1;
            }
            Err(_) => refused += 1,
        }
        if let Ok(listing) = ops.read_dir("d") {
            assert!(listing.entries.iter().all(|e| e.name == "f.txt"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(
        swaps > 10 && inside > 0,
        "the race ran: {swaps} swaps, {inside} reads, {refused} refused"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("f.txt")).unwrap(),
        "OUTSIDE"
    );
}

#[test]
fn concurrent_writers_of_one_file_never_interleave() {
    let (_dir, root) = setup();
    let ops = Arc::new(LocalOps::new(&root).unwrap());
    let size = 256 * 1024;
    let writers: Vec<_> = (b'a'..=b'd')
        .map(|c| {
            let ops = ops.clone();
            std::thread::spawn(move || {
                for _ in 0..20 {
                    ops.write("shared.txt", &vec![c; size], Parents::MustExist)
                        .unwrap();
                }
            })
        })
        .collect();
    for _ in 0..50 {
        if let Ok(c) = ops.read("shared.txt", u64::MAX) {
            assert_eq!(c.bytes.len(), size);
            assert!(
                c.bytes.iter().all(|b| *b == c.bytes[0]),
                "a torn file was visible"
            );
        }
    }
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(names(&root), vec![".toolshed", "shared.txt"]);
    assert_eq!(
        scratch_temps(&root),
        Vec::<String>::new(),
        "no temporary file is left behind"
    );
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// What toolshed's scratch directory holds besides its own `.gitignore` and lock.
fn scratch_temps(root: &Path) -> Vec<String> {
    let scratch = root.join(".toolshed/tmp");
    if !scratch.exists() {
        return Vec::new();
    }
    names(&scratch)
        .into_iter()
        .filter(|n| n != ".gitignore" && n != ".sweep.lock")
        .collect()
}

const CHILD_ENV: &str = "TOOLSHED_TEST_WRITER_ROOT";

/// Run as a child process by `sigkill_during_writes_never_tears_a_file`: writes forever.
#[test]
fn writer_child() {
    let Some(root) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let ops = LocalOps::new(Path::new(&root)).unwrap();
    let size = 4 * 1024 * 1024;
    for i in 0u64.. {
        let byte = b'a' + (i % 26) as u8;
        ops.write("big.bin", &vec![byte; size], Parents::MustExist)
            .unwrap();
    }
}

#[test]
fn sigkill_during_writes_never_tears_a_file() {
    let (_dir, root) = setup();
    let size = 4 * 1024 * 1024;
    std::fs::write(root.join("big.bin"), vec![b'z'; size]).unwrap();
    for round in 0..5 {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "jail::writer_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(CHILD_ENV, &root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the child has replaced the file at least once, then kill it mid-stream.
        let start = std::fs::metadata(root.join("big.bin"))
            .unwrap()
            .modified()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::fs::metadata(root.join("big.bin"))
            .unwrap()
            .modified()
            .unwrap()
            == start
        {
            assert!(Instant::now() < deadline, "the writer never wrote");
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(7 * round as u64));
        child.kill().unwrap();
        child.wait().unwrap();
        let bytes = std::fs::read(root.join("big.bin")).unwrap();
        assert_eq!(
            bytes.len(),
            size,
            "round {round}: the file is torn or empty"
        );
        assert!(
            bytes.iter().all(|b| *b == bytes[0]),
            "round {round}: mixed content"
        );
    }
    // A killed writer's temporary file is in .toolshed/tmp (ignored by git), never beside
    // the file, and the next open of the workspace deletes it.
    assert_eq!(names(&root), vec![".toolshed", "big.bin"]);
    assert_eq!(
        std::fs::read_to_string(root.join(".toolshed/tmp/.gitignore")).unwrap(),
        "*\n"
    );
    let ops = LocalOps::new(&root).unwrap();
    assert_eq!(scratch_temps(&root), Vec::<String>::new());
    ops.write("big.bin", b"done", Parents::MustExist).unwrap();
    assert_eq!(names(&root), vec![".toolshed", "big.bin"]);
}

#[test]
fn a_write_keeps_the_files_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, root) = setup();
    std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let ops = LocalOps::new(&root).unwrap();
    ops.write("run.sh", b"#!/bin/sh\necho hi\n", Parents::MustExist)
        .unwrap();
    let mode = std::fs::metadata(root.join("run.sh"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o750);
    assert_eq!(
        std::fs::read_to_string(root.join("run.sh")).unwrap(),
        "#!/bin/sh\necho hi\n"
    );
}

#[test]
fn a_file_its_owner_made_read_only_is_not_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, root) = setup();
    let path = root.join("protected.txt");
    std::fs::write(&path, "keep me").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let ops = LocalOps::new(&root).unwrap();
    let err = ops
        .write("protected.txt", b"overwritten", Parents::MustExist)
        .unwrap_err();
    assert!(
        matches!(err, OpsError::ReadOnlyFile { mode: 0o444, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("mode 0444"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
    // Made writable again, it is replaced, keeping its mode.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    ops.write("protected.txt", b"changed", Parents::MustExist)
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "changed");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

#[test]
fn a_directory_its_owner_made_read_only_is_not_changed_even_by_root() {
    // As root the kernel lets every one of these through (CAP_DAC_OVERRIDE); they failed
    // before the jail checked the directory's own mode.
    use std::os::unix::fs::PermissionsExt;
    use toolshed_ops::{Change, Expect, Overwrite};
    let (_dir, root) = setup();
    let locked = root.join("locked");
    std::fs::create_dir_all(locked.join("sub")).unwrap();
    std::fs::write(locked.join("kept.txt"), "kept").unwrap();
    std::fs::write(root.join("loose.txt"), "loose").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let ops = LocalOps::new(&root).unwrap();
    let refused = |what: &str, r: Result<(), OpsError>| {
        assert!(
            matches!(r, Err(OpsError::ReadOnlyDirectory { mode: 0o555, .. })),
            "{what}: {r:?}"
        );
    };
    refused(
        "write",
        ops.write("locked/new.txt", b"x", Parents::MustExist)
            .map(|_| ()),
    );
    refused(
        "replace",
        ops.write("locked/kept.txt", b"x", Parents::MustExist)
            .map(|_| ()),
    );
    refused("append", ops.append("locked/new.txt", b"x"));
    refused("mkdir", ops.mkdir("locked/d", Parents::Create));
    refused("remove", ops.remove("locked/kept.txt", false));
    refused("remove dir", ops.remove("locked/sub", true));
    refused(
        "move in",
        ops.rename("loose.txt", "locked/loose.txt", Overwrite::No),
    );
    refused(
        "move out",
        ops.rename("locked/kept.txt", "out.txt", Overwrite::No),
    );
    refused(
        "commit",
        ops.commit(&[Change::Write {
            path: "locked/new.txt",
            data: b"x",
            expect: Expect::Missing,
            parents: Parents::MustExist,
        }]),
    );
    // A directory tree whose inner directory is read-only is not removed either.
    std::fs::create_dir_all(root.join("outer/inner")).unwrap();
    std::fs::write(root.join("outer/inner/f"), "f").unwrap();
    std::fs::set_permissions(
        root.join("outer/inner"),
        std::fs::Permissions::from_mode(0o555),
    )
    .unwrap();
    assert!(ops.remove("outer", true).is_err());
    assert!(root.join("outer/inner/f").exists());
    let mut names: Vec<String> = std::fs::read_dir(&locked)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["kept.txt", "sub"]);
    assert_eq!(
        std::fs::read_to_string(locked.join("kept.txt")).unwrap(),
        "kept"
    );
    // Reads are untouched, and once writable again it changes.
    assert_eq!(ops.read("locked/kept.txt", 100).unwrap().bytes, b"kept");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    ops.write("locked/new.txt", b"x", Parents::MustExist)
        .unwrap();
    std::fs::set_permissions(
        root.join("outer/inner"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
}

#[test]
fn a_move_does_not_replace_a_file_its_owner_made_read_only() {
    use std::os::unix::fs::PermissionsExt;
    use toolshed_ops::Overwrite;
    let (_dir, root) = setup();
    std::fs::write(root.join("new.txt"), "new").unwrap();
    std::fs::write(root.join("protected.txt"), "keep me").unwrap();
    std::fs::set_permissions(
        root.join("protected.txt"),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    let ops = LocalOps::new(&root).unwrap();
    let err = ops
        .rename("new.txt", "protected.txt", Overwrite::Yes)
        .unwrap_err();
    assert!(
        matches!(err, OpsError::ReadOnlyFile { mode: 0o444, .. }),
        "{err:?}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("protected.txt")).unwrap(),
        "keep me"
    );
    assert!(root.join("new.txt").exists());
}

#[test]
fn access_answers_within_the_workspace_as_the_kernel_and_toolshed_would() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, root) = setup();
    std::fs::write(root.join("open.txt"), "x").unwrap();
    std::fs::write(root.join("kept.txt"), "x").unwrap();
    std::fs::set_permissions(
        root.join("kept.txt"),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    std::fs::write(dir.path().join("outside.txt"), "x").unwrap();
    std::os::unix::fs::symlink("../outside.txt", root.join("out")).unwrap();
    let ops = LocalOps::new(&root).unwrap();

    let open = ops.access("open.txt").unwrap();
    assert!(
        open.read && open.write && open.exists && open.reason.is_none(),
        "{open:?}"
    );
    // Read-only by its owner: toolshed does not replace it, whoever runs the server.
    let kept = ops.access("kept.txt").unwrap();
    assert!(kept.read && !kept.write, "{kept:?}");
    assert!(kept.reason.unwrap().contains("write permission"));
    // Missing: whether it can be created, in the nearest directory that exists.
    let missing = ops.access("new/deeper/file.txt").unwrap();
    assert!(
        !missing.exists && !missing.read && missing.write,
        "{missing:?}"
    );
    // Outside, by `..` or through a link: an error, as for any operation.
    for path in ["../outside.txt", "out"] {
        let err = ops.access(path).unwrap_err();
        assert!(matches!(err, OpsError::Escape { .. }), "{path}: {err:?}");
    }
    let err = ops.access(".toolshed/x").unwrap_err();
    assert!(matches!(err, OpsError::Reserved { .. }), "{err:?}");
}
