//! The operations contract against `toolshed worker`, the real binary: the file and search
//! suites case by case, and processes (output, exit, input, tree kills, output caps, waits,
//! streamed stdio). Over a real OpenSSH server when scripts/test started one
//! (`TOOLSHED_TEST_SSH`, its worker then runs as that server's non-root user), else over
//! the worker's stdio directly, as a container's exec carries it.
//! (tests/mcp/test_remote.py drives an MCP session through SSH too.)

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use toolshed_ops::contract::Fixture;
use toolshed_ops::process::{OutputLimits, Stdin, Stop, StopReason, Stream, Tty};
use toolshed_ops::remote::url::{RemoteOptions, RemoteUrl};
use toolshed_ops::remote::{RemoteOps, Target};
use toolshed_ops::sandbox::SandboxMode;
use toolshed_ops::{FileOps, OpsError, ProcessOps, SpawnRequest};

/// The SSH server scripts/test started: `user@127.0.0.1:port`, the client key, the
/// known_hosts line of its host key, and the owner (`uid:gid`) of files its user must
/// change.
struct Ssh {
    at: String,
    key: PathBuf,
    known_hosts: PathBuf,
    owner: Option<(u32, u32)>,
}

fn ssh() -> Option<Ssh> {
    let at = std::env::var("TOOLSHED_TEST_SSH")
        .ok()
        .filter(|s| !s.is_empty());
    if at.is_none() && std::env::var_os("TOOLSHED_REQUIRE_SSH").is_some() {
        panic!(
            "TOOLSHED_REQUIRE_SSH is set but TOOLSHED_TEST_SSH is not: scripts/test starts the SSH server"
        );
    }
    let owner = std::env::var("TOOLSHED_TEST_SSH_OWNER").ok().and_then(|o| {
        let (uid, gid) = o.split_once(':')?;
        Some((uid.parse().ok()?, gid.parse().ok()?))
    });
    Some(Ssh {
        at: at?,
        key: std::env::var("TOOLSHED_TEST_SSH_KEY").unwrap().into(),
        known_hosts: std::env::var("TOOLSHED_TEST_SSH_KNOWN_HOSTS")
            .unwrap()
            .into(),
        owner,
    })
}

/// Gives `path` (not following a link) to the SSH server's user, when it is another.
fn own(path: &Path) {
    if let Some((uid, gid)) = ssh().and_then(|s| s.owner) {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid)).unwrap();
    }
}

/// Gives `path` and its parents up to `root` to the SSH server's user.
fn own_up_to(root: &Path, path: &Path) {
    let mut at = Some(path);
    while let Some(p) = at {
        own(p);
        if p == root {
            break;
        }
        at = p.parent().filter(|p| p.starts_with(root));
    }
}

/// Builds hostile fixtures in the worker's workspace directory (the worker runs here).
struct Disk(PathBuf);

impl Fixture for Disk {
    fn symlink(&self, path: &str, target: &str) {
        std::os::unix::fs::symlink(target, self.0.join(path)).unwrap();
        own(&self.0.join(path));
    }
    fn hard_link(&self, path: &str, other: &str) {
        std::fs::hard_link(self.0.join(path), self.0.join(other)).unwrap();
    }
    fn fifo(&self, path: &str) {
        let status = std::process::Command::new("mkfifo")
            .arg(self.0.join(path))
            .status()
            .unwrap();
        assert!(status.success());
        own(&self.0.join(path));
    }
    fn reserved_file(&self, name: &str, data: &[u8]) {
        std::fs::create_dir_all(self.0.join(".toolshed")).unwrap();
        std::fs::write(self.0.join(".toolshed").join(name), data).unwrap();
        own_up_to(&self.0, &self.0.join(".toolshed").join(name));
    }
    fn raw_file(&self, path: &[u8], data: &[u8]) {
        use std::os::unix::ffi::OsStrExt;
        let path = self.0.join(std::ffi::OsStr::from_bytes(path));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, data).unwrap();
        own_up_to(&self.0, &path);
    }
}

/// What a case keeps alive: the temporary directory and the fixture maker.
struct Keep(tempfile::TempDir, Disk);

/// How the tests reach a worker for `root`: over SSH when a server was started, else by
/// running it directly.
fn target(root: &Path, data: &Path, mode: &str) -> Target {
    if let Some(ssh) = ssh() {
        let ssh_dir = data.join("ssh");
        std::fs::create_dir_all(&ssh_dir).unwrap();
        std::fs::copy(&ssh.known_hosts, ssh_dir.join("known_hosts")).unwrap();
        let url = RemoteUrl::parse(&format!("ssh://{}{}", ssh.at, root.display())).unwrap();
        return url.target(&RemoteOptions {
            worker: env!("CARGO_BIN_EXE_toolshed").into(),
            sandbox: SandboxMode::parse(mode).unwrap(),
            ssh_dir,
            identity: Some(ssh.key),
            ssh_options: Vec::new(),
            runtime: None,
            timeout: Duration::from_secs(60),
        });
    }
    Target {
        command: vec![
            env!("CARGO_BIN_EXE_toolshed").into(),
            "--data-dir".into(),
            data.display().to_string(),
            "worker".into(),
            "--root".into(),
            root.display().to_string(),
            "--sandbox".into(),
            mode.into(),
        ],
        display: format!("worker:{}", root.display()),
        timeout: Duration::from_secs(30),
        explain: None,
    }
}

/// A temporary directory the SSH server's user can enter.
fn tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A workspace one level down a temporary directory, with a secret in `.toolshed/`, served
/// by a worker of its own.
fn worker() -> (RemoteOps, Keep) {
    let dir = tempdir();
    let root = dir.path().join("a/ws");
    std::fs::create_dir_all(root.join(".toolshed")).unwrap();
    std::fs::write(root.join(".toolshed/toolshed.db"), "secret").unwrap();
    own_up_to(dir.path(), &root.join(".toolshed/toolshed.db"));
    own(&root);
    let data = dir.path().join("data");
    let ops = RemoteOps::connect(target(&root, &data, "full-access")).unwrap();
    (ops, Keep(dir, Disk(root)))
}

fn on_disk<'a>(_ops: &'a RemoteOps, keep: &'a Keep) -> &'a dyn Fixture {
    &keep.1
}

/// Nothing was written outside the workspace.
fn nothing_outside(keep: &Keep) {
    let outside: Vec<_> = std::fs::read_dir(keep.0.path().join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, vec!["ws"]);
}

toolshed_ops::file_contract!(files, worker, on_disk, nothing_outside);
toolshed_ops::search_contract!(search, worker, on_disk);

fn sh(script: &str) -> SpawnRequest {
    SpawnRequest::new("sh").arg("-c").arg(script)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, r)| r.trim_start().chars().next()),
            Some('Z' | 'X')
        )
    })
}

#[test]
fn a_process_reports_its_output_and_exit() {
    let (ops, keep) = worker();
    std::fs::create_dir_all(keep.1.0.join("sub")).unwrap();
    runtime().block_on(async {
        let p = ops
            .spawn(&sh("echo out; echo err >&2; pwd; exit 7").workdir("sub"))
            .unwrap();
        let exit = p.wait(Duration::from_secs(30)).await.unwrap();
        assert_eq!(exit.status, toolshed_ops::process::ExitStatus::Code(7));
        let out = String::from_utf8(p.snapshot(Stream::Stdout).head).unwrap();
        assert_eq!(out, format!("out\n{}\n", keep.1.0.join("sub").display()));
        assert_eq!(p.snapshot(Stream::Stderr).head, b"err\n");
        let combined = p.snapshot(Stream::Combined).head;
        assert_eq!(combined.len(), out.len() + 4);
    });
}

#[test]
fn input_reaches_a_piped_process_and_a_terminal() {
    let (ops, _keep) = worker();
    runtime().block_on(async {
        let p = ops.spawn(&sh("cat").stdin(Stdin::Piped)).unwrap();
        p.write(b"line one\n").unwrap();
        p.write(b"line two\n").unwrap();
        p.close_stdin();
        let exit = p.wait(Duration::from_secs(30)).await.unwrap();
        assert!(exit.status.success());
        assert_eq!(p.snapshot(Stream::Stdout).head, b"line one\nline two\n");

        let t = ops
            .spawn(&sh("read x; echo got:$x; tty >/dev/null && echo tty").tty(Tty::DEFAULT))
            .unwrap();
        t.write(b"hello\n").unwrap();
        t.wait(Duration::from_secs(30)).await.unwrap();
        let shown = String::from_utf8_lossy(&t.snapshot(Stream::Stdout).head).into_owned();
        assert!(
            shown.contains("got:hello") && shown.contains("tty"),
            "{shown}"
        );
    });
}

#[test]
fn stopping_kills_the_whole_tree_and_so_does_dropping() {
    let (ops, keep) = worker();
    let pids = keep.1.0.join("pids");
    runtime().block_on(async {
        // A grandchild in a session of its own, as a daemonizing tool would make.
        let script = format!(
            "setsid sh -c 'echo $$ >> {p}; sleep 300' & echo $$ >> {p}; sleep 300",
            p = pids.display()
        );
        let read_pids = || -> Vec<u32> {
            std::fs::read_to_string(&pids)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect()
        };
        let p = ops.spawn(&sh(&script)).unwrap();
        let start = Instant::now();
        while read_pids().len() < 2 && start.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let tree = read_pids();
        assert_eq!(tree.len(), 2, "{tree:?}");
        assert!(tree.iter().all(|&pid| alive(pid)));
        let exit = p
            .terminate(Stop::Graceful {
                grace: Duration::from_millis(300),
            })
            .await
            .unwrap();
        assert!(
            matches!(exit.stopped, Some(StopReason::Requested(_))),
            "{exit:?}"
        );
        let start = Instant::now();
        while tree.iter().any(|&pid| alive(pid)) && start.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(tree.iter().all(|&pid| !alive(pid)), "{tree:?} survived");

        // Dropping the last handle stops the tree too.
        std::fs::remove_file(&pids).unwrap();
        let p = ops.spawn(&sh(&script)).unwrap();
        let start = Instant::now();
        while read_pids().len() < 2 && start.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let tree = read_pids();
        drop(p);
        let start = Instant::now();
        while tree.iter().any(|&pid| alive(pid)) && start.elapsed() < Duration::from_secs(15) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            tree.iter().all(|&pid| !alive(pid)),
            "{tree:?} survived the drop"
        );
    });
}

#[test]
fn output_is_capped_and_a_flood_is_killed() {
    let (ops, _keep) = worker();
    runtime().block_on(async {
        let limits = OutputLimits {
            head_bytes: 1024,
            tail_bytes: 1024,
            kill_after_bytes: Some(4 << 20),
        };
        let p = ops.spawn(&sh("yes flood").limits(limits)).unwrap();
        let exit = p.wait(Duration::from_secs(60)).await.unwrap();
        assert_eq!(exit.stopped, Some(StopReason::OutputLimit), "{exit:?}");
        let kept = p.snapshot(Stream::Stdout);
        assert_eq!(kept.head.len(), 1024);
        assert!(kept.tail.len() <= 1024);
        assert!(kept.total > 4 << 20, "{}", kept.total);
    });
}

#[test]
fn a_wait_ends_at_its_timeout_and_the_process_runs_on() {
    let (ops, _keep) = worker();
    runtime().block_on(async {
        let p = ops.spawn(&sh("sleep 1; echo late")).unwrap();
        assert!(p.wait(Duration::from_millis(100)).await.is_none());
        let exit = p.wait(Duration::from_secs(30)).await.unwrap();
        assert!(exit.status.success());
        assert_eq!(p.snapshot(Stream::Stdout).head, b"late\n");
    });
}

#[test]
fn bad_input_is_refused_as_it_is_locally() {
    let (ops, _keep) = worker();
    assert!(matches!(
        ops.spawn(&SpawnRequest::new("no-such-program-xyz")),
        Err(OpsError::ProgramNotFound { .. })
    ));
    assert!(matches!(
        ops.spawn(&sh("true").workdir("../..")),
        Err(OpsError::Escape { .. })
    ));
}

#[test]
fn a_streamed_childs_pipes_are_relayed_whole() {
    // What a language server or a mounted MCP server is started with.
    let (ops, _keep) = worker();
    runtime().block_on(async {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let p = ops
            .spawn(
                &sh("echo ready; while read line; do echo \"got $line\"; done; echo bye >&2")
                    .stdin(Stdin::Stream),
            )
            .unwrap();
        let (stdout, mut stdin) = p.take_stdio().unwrap().into_pipes().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(20), lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .as_deref(),
            Some("ready")
        );
        for word in ["one", "two"] {
            stdin
                .write_all(format!("{word}\n").as_bytes())
                .await
                .unwrap();
            let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(line.as_deref(), Some(format!("got {word}").as_str()));
        }
        // A large message crosses whole.
        let big = "x".repeat(300_000);
        stdin
            .write_all(format!("{big}\n").as_bytes())
            .await
            .unwrap();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(line.len(), big.len() + 4);
        // The end of input reaches the child; its stdout ends, its stderr is kept.
        drop(stdin);
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(20), lines.next_line())
                .await
                .unwrap()
                .unwrap(),
            None
        );
        let exit = p.wait(Duration::from_secs(20)).await.unwrap();
        assert!(exit.status.success());
        assert_eq!(p.snapshot(Stream::Stderr).head, b"bye\n");
    });
}

#[test]
fn a_sandboxed_worker_confines_commands_to_the_workspace() {
    let dir = tempdir();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    own(&root);
    let ops = RemoteOps::connect(target(&root, &dir.path().join("data"), "read-only")).unwrap();
    let hello = ops.hello().unwrap();
    assert_eq!(hello.mode, "read-only");
    let enforced = ops.check_sandbox().unwrap().unwrap();
    assert!(
        enforced.enforced.iter().any(|l| l.starts_with("landlock")),
        "{enforced:?}"
    );
    runtime().block_on(async {
        let p = ops.spawn(&sh("echo x > made.txt")).unwrap();
        let exit = p.wait(Duration::from_secs(30)).await.unwrap();
        assert!(!exit.status.success());
    });
    assert!(!root.join("made.txt").exists());
    // The file tools meet the same mode on the worker's side.
    assert!(matches!(
        ops.write("made.txt", b"x", toolshed_ops::Parents::Create),
        Err(OpsError::SandboxRefused { .. })
    ));
}

#[test]
fn a_worker_that_cannot_start_is_reported_with_what_it_said() {
    let dir = tempdir();
    let err = RemoteOps::connect(target(
        &dir.path().join("missing"),
        &dir.path().join("data"),
        "full-access",
    ))
    .unwrap_err()
    .to_string();
    assert!(err.contains("is not a directory"), "{err}");
}

#[test]
fn a_lost_worker_is_reached_again() {
    let (ops, keep) = worker();
    std::fs::write(keep.1.0.join("f"), "one").unwrap();
    assert_eq!(ops.read("f", 100).unwrap().bytes, b"one");
    // The worker process, found by its --root argument.
    let pattern = format!("worker --root {} ", keep.1.0.display());
    let pgrep = || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &pattern])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let first = pgrep();
    assert!(!first.is_empty());
    let status = std::process::Command::new("pkill")
        .args(["-KILL", "-f", &pattern])
        .status()
        .unwrap();
    assert!(status.success());
    // Calls fail while it is gone (or find it started again already), then go on with a
    // new worker.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        match ops.read("f", 100) {
            Ok(c) => {
                assert_eq!(c.bytes, b"one");
                let now = pgrep();
                if !now.is_empty() && now != first {
                    return;
                }
            }
            Err(e) => assert!(e.to_string().contains("reach"), "{e}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the worker was not reached again");
}

#[test]
fn after_a_lost_worker_reads_are_retried_and_writes_are_not() {
    let dir = tempdir();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("f"), "one").unwrap();
    // The worker, started through a wrapper that fails once while `fail-once` exists.
    let fail_once = dir.path().join("fail-once");
    let wrapper = dir.path().join("wrapper");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh
if [ -e {f} ]; then rm -f {f}; echo 'the daemon is restarting' >&2; exit 1; fi
exec \"$@\"\n",
            f = fail_once.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut target = target(&root, &dir.path().join("data"), "full-access");
    target.command.insert(0, wrapper.display().to_string());
    let ops = RemoteOps::connect(target).unwrap();
    assert_eq!(ops.read("f", 100).unwrap().bytes, b"one");
    let lose_the_worker = || {
        let pattern = format!("worker --root {} ", root.display());
        // Gone already after a failed reconnect: then the wrapper fails once more.
        let _ = std::process::Command::new("pkill")
            .args(["-KILL", "-f", &pattern])
            .status()
            .unwrap();
        std::fs::write(&fail_once, "").unwrap();
        std::thread::sleep(Duration::from_millis(200));
    };

    // A write is not repeated: it fails with the reason, and nothing is written.
    lose_the_worker();
    let err = ops
        .write("g", b"two", toolshed_ops::Parents::MustExist)
        .unwrap_err()
        .to_string();
    assert!(err.contains("daemon is restarting"), "{err}");
    assert!(!root.join("g").exists());

    // A read after the same failure is asked again, after the backoff, and answers.
    lose_the_worker();
    assert_eq!(ops.read("f", 100).unwrap().bytes, b"one");
    assert!(!fail_once.exists(), "the worker was started again");
}

/// A container runtime stand-in: `RUNTIME exec -i CONTAINER CMD…` runs CMD here (these
/// machines have no container daemon), logging what it was asked. The worker it starts is
/// the real one.
fn fake_runtime(dir: &Path) -> PathBuf {
    let script = dir.join("fake-docker");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" >> {log}\n[ \"$1\" = exec ] && [ \"$2\" = -i ] || {{ echo \"fake-docker: only exec -i\" >&2; exit 2; }}\n\
             [ \"$3\" = box ] || {{ echo \"Error: No such container: $3\" >&2; exit 1; }}\nshift 3\nexec \"$@\"\n",
            log = dir.join("runtime.log").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn a_container_workspace_runs_the_tools_through_the_runtimes_exec() {
    use crate::support::{Env, code, stderr, stdout};
    let env = Env::new();
    let inside = tempfile::tempdir().unwrap();
    std::fs::write(inside.path().join("app.txt"), "in the container\n").unwrap();
    let runtime = fake_runtime(env.data.path());
    env.write_user_config(&format!(
        "[workspace]\nruntime = \"{}\"\nworker = \"{}\"\n\n[sandbox]\nmode = \"full-access\"\n",
        runtime.display(),
        env!("CARGO_BIN_EXE_toolshed")
    ));
    let url = format!("docker://box{}", inside.path().display());
    let data = env.data.path().display().to_string();
    let call = |tool: &str, args: &str| {
        env.bare()
            .args([
                "--data-dir",
                &data,
                "--workspace",
                &url,
                "call",
                tool,
                "--args",
                args,
            ])
            .output()
            .unwrap()
    };
    let read = call("workspace_read", r#"{"path":"app.txt"}"#);
    assert_eq!(code(&read), 0, "{}", stderr(&read));
    assert!(
        stdout(&read).contains("in the container"),
        "{}",
        stdout(&read)
    );
    let ran = call("exec_command", r#"{"cmd":"pwd; echo made > made.txt"}"#);
    assert_eq!(code(&ran), 0, "{}", stderr(&ran));
    assert!(stdout(&ran).contains(&inside.path().display().to_string()));
    assert_eq!(
        std::fs::read_to_string(inside.path().join("made.txt")).unwrap(),
        "made\n"
    );
    // doctor names the workspace by its URL, and the sandbox as it is there.
    let doctor = env
        .bare()
        .args(["--data-dir", &data, "--workspace", &url, "doctor"])
        .output()
        .unwrap();
    let said = stdout(&doctor);
    assert!(said.contains(&format!("workspace     {url} (")), "{said}");
    assert!(said.contains("full-access"), "{said}");
    let log = std::fs::read_to_string(env.data.path().join("runtime.log")).unwrap();
    assert!(
        log.lines()
            .all(|l| l.starts_with("exec -i box ") && l.contains(" worker --root ")),
        "{log}"
    );
    // A container that is not there: what the runtime said, named with the workspace.
    let missing = env
        .bare()
        .args([
            "--data-dir",
            &data,
            "--workspace",
            &format!("docker://nobox{}", inside.path().display()),
            "call",
            "workspace_list",
            "--args",
            "{}",
        ])
        .output()
        .unwrap();
    assert_ne!(code(&missing), 0);
    let said = stderr(&missing);
    assert!(
        said.contains("docker://nobox") && said.contains("No such container"),
        "{said}"
    );
}
