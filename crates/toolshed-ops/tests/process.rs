//! The local process backend with real processes: exit and output, yield windows, the
//! drain limit, tree kills with `setsid` grandchildren, bounded output, terminals, stdin,
//! the environment and bad input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolshed_ops::process::{
    Drain, ExitStatus, OutputLimits, Stdin, Stop, StopReason, Stream, Tty,
};
use toolshed_ops::{
    LocalOps, LocalProcessOps, MemoryOps, OpsError, ProcessConfig, ProcessOps, SpawnRequest,
    TreeKillMethod,
};

const LONG: Duration = Duration::from_secs(30);

fn backend(dir: &Path, config: ProcessConfig) -> LocalProcessOps {
    LocalProcessOps::new(Arc::new(LocalOps::new(dir).unwrap()), config).unwrap()
}

fn local(dir: &Path) -> LocalProcessOps {
    backend(dir, ProcessConfig::default())
}

fn sh(script: &str) -> SpawnRequest {
    SpawnRequest::new("sh").arg("-c").arg(script)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .map(|(_, r)| r.trim_start().chars().next());
            !matches!(state, Some(Some('Z' | 'X')))
        }
        Err(_) => false,
    }
}

/// Polls until `pid` is gone, up to a generous deadline.
fn gone_soon(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Reads a pid the script wrote to `file` in the workspace, waiting for it to appear.
fn pid_in(dir: &Path, file: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(dir.join(file))
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "{file} never appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until the combined output contains `needle`; the output so far.
async fn output_with(p: &toolshed_ops::Process, needle: &str) -> String {
    let deadline = Instant::now() + LONG;
    let mut seen = String::new();
    let mut since = 0;
    while Instant::now() < deadline {
        let chunk = p
            .read_wait(Stream::Combined, since, 1 << 20, Duration::from_millis(200))
            .await;
        since = chunk.next;
        seen.push_str(&text(&chunk.bytes));
        if seen.contains(needle) {
            return seen;
        }
        if p.exit().is_some() && chunk.bytes.is_empty() {
            break;
        }
    }
    panic!("never saw {needle:?}; output: {seen:?}");
}

#[tokio::test]
async fn a_finished_command_reports_its_code_and_both_streams() {
    let dir = tempfile::tempdir().unwrap();
    let ops = local(dir.path());
    let p = ops.spawn(&sh("echo out; echo err >&2; exit 3")).unwrap();
    let exit = p.wait(LONG).await.unwrap();
    assert_eq!(exit.status, ExitStatus::Code(3));
    assert_eq!(exit.drain, Drain::Complete);
    assert_eq!(exit.stopped, None);
    assert_eq!(p.snapshot(Stream::Stdout).head, b"out\n");
    assert_eq!(p.snapshot(Stream::Stderr).head, b"err\n");
    let combined = text(&p.snapshot(Stream::Combined).head);
    assert!(
        combined.contains("out\n") && combined.contains("err\n"),
        "{combined}"
    );
    // A huge wait on a finished process answers at once and does not overflow.
    assert!(p.wait(Duration::MAX).await.is_some());
}

#[tokio::test]
async fn output_bytes_are_passed_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(&sh(r"printf 'a\377\376\033[31mb'"))
        .unwrap();
    p.wait(LONG).await.unwrap();
    assert_eq!(p.snapshot(Stream::Stdout).head, b"a\xff\xfe\x1b[31mb");
}

#[tokio::test]
async fn a_yield_window_returns_early_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(&sh("echo started; sleep 30"))
        .unwrap();
    assert_eq!(p.wait(Duration::from_millis(300)).await, None);
    let seen = output_with(&p, "started").await;
    assert_eq!(seen, "started\n");
    let exit = p.terminate(Stop::graceful()).await.unwrap();
    assert_eq!(exit.stopped, Some(StopReason::Requested(Stop::graceful())));
    assert_eq!(exit.status, ExitStatus::Signal(15));
}

#[tokio::test]
async fn a_command_that_backgrounds_sleep_returns_within_the_drain_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(&sh("sleep 30 & echo $! > sleep.pid; echo done"))
        .unwrap();
    let start = Instant::now();
    let exit = p.wait(LONG).await.unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(exit.status, ExitStatus::Code(0));
    assert!(
        matches!(exit.drain, Drain::Abandoned { .. }),
        "{:?}",
        exit.drain
    );
    assert_eq!(p.snapshot(Stream::Stdout).head, b"done\n");
    // The background sleep is part of the tree: dropping the handle stops it.
    let sleep = pid_in(dir.path(), "sleep.pid");
    assert!(alive(sleep));
    drop(p);
    assert!(gone_soon(sleep), "the background sleep survived the drop");
}

#[tokio::test]
async fn terminate_kills_a_setsid_grandchild_whose_parent_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let ops = local(dir.path());
    assert_eq!(
        ops.tree_kill_method(),
        TreeKillMethod::Cgroup,
        "{:?}",
        ops.fallback_reason()
    );
    // The grandchild starts its own session and the shell exits: nothing links it to the
    // child any more but the cgroup.
    let p = ops
        .spawn(&sh(
            "setsid sh -c 'echo $$ > gc.pid; exec sleep 60' </dev/null >/dev/null 2>&1 & echo ok",
        ))
        .unwrap();
    let exit = p.wait(LONG).await.unwrap();
    assert_eq!(exit.status, ExitStatus::Code(0));
    let grandchild = pid_in(dir.path(), "gc.pid");
    assert!(alive(grandchild));
    let stopped = p.terminate(Stop::graceful()).await;
    assert!(stopped.is_some());
    assert!(
        !alive(grandchild),
        "the setsid grandchild survived terminate"
    );
}

#[tokio::test]
async fn a_timeout_leaves_no_survivor_in_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(&sh(
            "setsid sh -c 'trap \"\" TERM; echo $$ > gc.pid; sleep 60' & \
             sh -c 'echo $$ > child.pid; sleep 60' & wait",
        ))
        .unwrap();
    let (grandchild, child) = (
        pid_in(dir.path(), "gc.pid"),
        pid_in(dir.path(), "child.pid"),
    );
    // The tool's timeout: the wait ends, then the tree is stopped.
    assert_eq!(p.wait(Duration::from_millis(200)).await, None);
    let exit = p
        .terminate(Stop::Graceful {
            grace: Duration::from_millis(300),
        })
        .await
        .unwrap();
    assert!(matches!(exit.stopped, Some(StopReason::Requested(_))));
    // The grandchild ignores SIGTERM: only the SIGKILL after the grace period ends it.
    assert!(
        !alive(grandchild),
        "the TERM-ignoring setsid grandchild survived"
    );
    assert!(!alive(child));
}

#[tokio::test]
async fn the_process_tree_fallback_also_finds_setsid_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let ops = backend(
        dir.path(),
        ProcessConfig {
            tree_kill: Some(TreeKillMethod::ProcessTree),
            ..ProcessConfig::default()
        },
    );
    assert_eq!(ops.tree_kill_method(), TreeKillMethod::ProcessTree);
    let p = ops
        .spawn(&sh("setsid sh -c 'echo $$ > gc.pid; sleep 60' & wait"))
        .unwrap();
    let grandchild = pid_in(dir.path(), "gc.pid");
    let exit = p.terminate(Stop::Forced).await.unwrap();
    assert_eq!(exit.status, ExitStatus::Signal(9));
    assert!(gone_soon(grandchild), "the setsid grandchild survived");
}

#[tokio::test]
async fn dropping_the_handle_kills_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(&sh("setsid sleep 60 & echo $! > gc.pid; sleep 60"))
        .unwrap();
    let grandchild = pid_in(dir.path(), "gc.pid");
    let child = p.pid();
    drop(p);
    assert!(gone_soon(grandchild), "the grandchild survived the drop");
    assert!(gone_soon(child), "the child survived the drop");
}

#[tokio::test]
async fn yes_is_capped_and_killed_with_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 256 * 1024 * 1024;
    let rss_before = rss_kib();
    let p = local(dir.path())
        .spawn(&SpawnRequest::new("yes").limits(OutputLimits {
            head_bytes: 4096,
            tail_bytes: 16 * 1024,
            kill_after_bytes: Some(limit),
        }))
        .unwrap();
    let exit = p.wait(Duration::from_secs(120)).await.unwrap();
    assert_eq!(exit.stopped, Some(StopReason::OutputLimit));
    assert_eq!(exit.status, ExitStatus::Signal(9));
    let s = p.snapshot(Stream::Stdout);
    assert!(s.total > limit, "{}", s.total);
    assert_eq!(s.head.len(), 4096);
    assert_eq!(s.tail.len(), 16 * 1024);
    assert_eq!(s.dropped, s.total - 4096 - 16 * 1024);
    assert!(s.tail.starts_with(b"y\n") || s.tail.starts_with(b"\ny"));
    // A quarter of a GiB went through; the test process grew by far less.
    let grown = rss_kib().saturating_sub(rss_before);
    assert!(grown < 64 * 1024, "RSS grew by {grown} KiB");
    // Reading from the start after the head reports the gap.
    let chunk = p.read(Stream::Stdout, 4096, 100);
    assert_eq!(chunk.skipped, s.dropped);
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn a_terminal_session_runs_python_and_takes_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(&SpawnRequest::new("python3").arg("-q").tty(Tty::DEFAULT))
        .unwrap();
    p.write(b"6 * 7\n").unwrap();
    output_with(&p, "42").await;
    // The interrupt goes once the statement runs (it says so): on a loaded machine a
    // fixed pause could send it while python is still reading the line, and the REPL
    // then only drops the line.
    p.write(b"import time; print('sleep' + 'ing'); time.sleep(30)\n")
        .unwrap();
    output_with(&p, "sleeping").await;
    p.write(b"\x03").unwrap();
    output_with(&p, "KeyboardInterrupt").await;
    p.write(b"exit()\n").unwrap();
    let exit = p.wait(LONG).await.unwrap();
    assert_eq!(exit.status, ExitStatus::Code(0));
    assert_eq!(exit.stopped, None);
}

#[tokio::test]
async fn a_terminal_has_its_size_and_term() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(
            &sh("stty size; echo $TERM; test -t 0 && echo tty").tty(Tty::Yes {
                rows: 30,
                cols: 100,
            }),
        )
        .unwrap();
    p.wait(LONG).await.unwrap();
    let out = text(&p.snapshot(Stream::Combined).head);
    assert!(out.contains("30 100"), "{out:?}");
    assert!(out.contains("xterm-256color"), "{out:?}");
    assert!(out.contains("tty"), "{out:?}");
}

#[tokio::test]
async fn piped_stdin_is_written_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(&SpawnRequest::new("cat").stdin(Stdin::Piped))
        .unwrap();
    p.write(b"hello\n").unwrap();
    output_with(&p, "hello").await;
    p.write(b"again\n").unwrap();
    p.close_stdin();
    let exit = p.wait(LONG).await.unwrap();
    assert_eq!(exit.status, ExitStatus::Code(0));
    assert_eq!(p.snapshot(Stream::Stdout).head, b"hello\nagain\n");
    assert!(matches!(p.write(b"x"), Err(OpsError::StdinClosed { .. })));
}

#[tokio::test]
async fn streamed_stdio_is_handed_over_and_stderr_is_still_kept() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(
            &SpawnRequest::new("sh")
                .args(["-c", "echo starting >&2; cat"])
                .stdin(Stdin::Stream),
        )
        .unwrap();
    let stdio = p.take_stdio().expect("the pipes");
    assert!(p.take_stdio().is_none(), "handed over once");
    // Non-blocking as handed over; blocking is simpler for this test.
    let blocking = |fd: &std::os::fd::OwnedFd| {
        rustix::fs::fcntl_setfl(fd, rustix::fs::OFlags::empty()).unwrap();
    };
    blocking(&stdio.stdout);
    blocking(&stdio.stdin);
    let mut input = std::fs::File::from(stdio.stdin);
    let mut output = std::fs::File::from(stdio.stdout);
    input.write_all(b"a line\n").unwrap();
    let mut buf = [0u8; 7];
    output.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"a line\n");
    // The backend neither reads stdout nor accepts writes: the pipes are the caller's.
    assert!(p.write(b"x").is_err());
    drop(input);
    let exit = p.wait(LONG).await.unwrap();
    assert_eq!(exit.status, ExitStatus::Code(0));
    assert_eq!(p.snapshot(Stream::Stdout).total, 0);
    assert_eq!(p.snapshot(Stream::Stderr).head, b"starting\n");
}

#[tokio::test]
async fn stdin_is_closed_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path()).spawn(&SpawnRequest::new("cat")).unwrap();
    let err = p.write(b"x").unwrap_err();
    assert!(err.to_string().contains("tty"), "{err}");
    let exit = p.wait(LONG).await.unwrap();
    assert_eq!(exit.status, ExitStatus::Code(0));
    assert_eq!(p.snapshot(Stream::Stdout).total, 0);
}

#[tokio::test]
async fn reads_since_an_offset_follow_a_long_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(&sh("seq 1 100000").limits(OutputLimits {
            head_bytes: 100,
            tail_bytes: 1000,
            kill_after_bytes: None,
        }))
        .unwrap();
    p.wait(LONG).await.unwrap();
    let total = p.output_len(Stream::Stdout);
    let first = p.read(Stream::Stdout, 0, 1 << 20);
    assert_eq!(first.bytes.len(), 100);
    assert!(text(&first.bytes).starts_with("1\n2\n3\n"));
    let rest = p.read(Stream::Stdout, first.next, 1 << 20);
    assert_eq!(rest.skipped, total - 1100);
    assert!(text(&rest.bytes).ends_with("99999\n100000\n"));
    assert_eq!(rest.next, total);
}

#[tokio::test]
async fn the_environment_is_clean_and_agent_friendly() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        ("PATH", std::env::var("PATH").unwrap().as_str()),
        ("HOME", "/root"),
        ("GITHUB_TOKEN", "ghp_secret"),
        ("DB_PASSWORD", "hunter2"),
        ("ALLOWED_API_KEY", "fine"),
        ("TERM", "xterm"),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .to_vec();
    let ops = backend(
        dir.path(),
        ProcessConfig {
            base_env: Some(base),
            env_allow: vec!["ALLOWED_API_KEY".into()],
            ..ProcessConfig::default()
        },
    );
    let p = ops
        .spawn(&SpawnRequest::new("env").env("MINE", "1"))
        .unwrap();
    p.wait(LONG).await.unwrap();
    let env = text(&p.snapshot(Stream::Stdout).head);
    for present in [
        "NO_COLOR=1",
        "TERM=dumb",
        "PAGER=cat",
        "GIT_TERMINAL_PROMPT=0",
        "DEBIAN_FRONTEND=noninteractive",
        "ALLOWED_API_KEY=fine",
        "MINE=1",
        "HOME=/root",
    ] {
        assert!(
            env.lines().any(|l| l == present),
            "{present} missing: {env}"
        );
    }
    assert!(
        !env.contains("ghp_secret") && !env.contains("hunter2"),
        "{env}"
    );
}

#[tokio::test]
async fn the_working_directory_goes_through_the_jail() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub/dir")).unwrap();
    std::fs::create_dir_all(dir.path().join(".toolshed")).unwrap();
    std::os::unix::fs::symlink("/tmp", dir.path().join("out")).unwrap();
    let ops = local(dir.path());
    let p = ops
        .spawn(&SpawnRequest::new("pwd").workdir("sub/dir"))
        .unwrap();
    p.wait(LONG).await.unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        text(&p.snapshot(Stream::Stdout).head).trim_end(),
        root.join("sub/dir").display().to_string()
    );
    let refused = |workdir: &str| {
        ops.spawn(&SpawnRequest::new("pwd").workdir(workdir))
            .unwrap_err()
    };
    assert!(matches!(refused(".."), OpsError::Escape { .. }));
    assert!(matches!(refused("/etc"), OpsError::Escape { .. }));
    assert!(matches!(refused("out"), OpsError::Escape { .. }));
    assert!(matches!(refused(".toolshed"), OpsError::Reserved { .. }));
    let missing = refused("nope");
    assert!(matches!(missing, OpsError::NotFound { .. }));
    assert!(missing.to_string().contains("nope"));
}

#[tokio::test]
async fn bad_commands_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ops = local(dir.path());
    let err = ops
        .spawn(&SpawnRequest::new("no-such-program-xyz"))
        .unwrap_err();
    assert!(matches!(err, OpsError::ProgramNotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("no-such-program-xyz"), "{err}");
    let err = ops.spawn(&SpawnRequest::new("./missing.sh")).unwrap_err();
    assert!(matches!(err, OpsError::ProgramNotFound { .. }), "{err:?}");
    for request in [
        SpawnRequest::new("ec\0ho"),
        SpawnRequest::new("echo").arg("a\0b"),
        SpawnRequest::new("echo").env("A\0", "b"),
        SpawnRequest::new("echo").env("A=B", "b"),
        SpawnRequest::new("echo").env("A", "b\0"),
        SpawnRequest::new(""),
    ] {
        let err = ops.spawn(&request).unwrap_err();
        assert!(matches!(err, OpsError::InvalidCommand { .. }), "{err:?}");
    }
    let err = ops
        .spawn(&SpawnRequest::new("echo").arg("ok").arg("x\0"))
        .unwrap_err();
    assert!(err.to_string().contains("argument 2"), "{err}");
    // A script whose interpreter is missing: found, but cannot be executed.
    std::fs::write(dir.path().join("bad.sh"), "#!/no/such/interpreter\n").unwrap();
    std::fs::set_permissions(
        dir.path().join("bad.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let err = ops.spawn(&SpawnRequest::new("./bad.sh")).unwrap_err();
    assert!(matches!(err, OpsError::Spawn { .. }), "{err:?}");
    assert!(err.to_string().contains("interpreter"), "{err}");
}

#[tokio::test]
async fn children_get_their_own_session() {
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path()).spawn(&sh("cat /proc/self/stat")).unwrap();
    p.wait(LONG).await.unwrap();
    let stat = text(&p.snapshot(Stream::Stdout).head);
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    // Field 3 of the shell's `cat`: its group and session are the shell's own pid.
    let (pgrp, session) = (fields[2], fields[3]);
    assert_eq!(pgrp, p.pid().to_string());
    assert_eq!(session, p.pid().to_string());
}

#[test]
fn a_confined_command_is_never_run_without_a_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = sh("echo ran > ran.txt");
    request.confined = true;
    let err = local(dir.path()).spawn(&request).unwrap_err().to_string();
    assert!(err.contains("confined"), "{err}");
    assert!(!dir.path().join("ran.txt").exists());
}

#[test]
fn the_memory_backend_refuses_to_spawn() {
    let err = MemoryOps::new()
        .spawn(&SpawnRequest::new("true"))
        .unwrap_err();
    assert!(
        matches!(err, OpsError::ProcessUnavailable { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("true"));
}

#[tokio::test]
async fn kill_all_stops_every_tree_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let ops = local(dir.path());
    let a = ops
        .spawn(&sh("setsid sleep 60 & echo $! > a.pid; sleep 60"))
        .unwrap();
    let b = ops
        .spawn(&sh("sleep 60 & echo $! > b.pid; exit 0"))
        .unwrap();
    let (ga, gb) = (pid_in(dir.path(), "a.pid"), pid_in(dir.path(), "b.pid"));
    ops.kill_all();
    assert!(
        !alive(ga) && !alive(gb) && !alive(a.pid()),
        "a tree survived kill_all"
    );
    assert_eq!(a.exit().unwrap().status, ExitStatus::Signal(9));
    assert!(b.exit().is_some());
}

#[tokio::test]
async fn a_child_takes_interrupts_even_when_toolshed_ignores_them() {
    // Failed before: toolshed started as a shell's background job has SIGINT ignored, and
    // its children inherited that — Ctrl-C to a terminal session did nothing (two REPL
    // tests failed so in a clean-clone CI run started with `&`).
    // SAFETY: sets this test process's SIGINT disposition; other tests neither rely on
    // SIGINT nor change it.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path())
        .spawn(&sh("kill -INT $$; echo survived"))
        .unwrap();
    let exit = p.wait(LONG).await.unwrap();
    let out = text(&p.snapshot(Stream::Combined).head);
    assert!(!out.contains("survived"), "{out:?}");
    assert_eq!(exit.status, ExitStatus::Signal(libc::SIGINT));
}

/// toolshed raises its own descriptor limit to the hard limit; its commands get the limit
/// it started with.
#[tokio::test]
async fn commands_keep_the_descriptor_limit_toolshed_started_with() {
    let raised = toolshed_ops::raise_descriptor_limit();
    assert_eq!(toolshed_ops::descriptor_limit(), raised.now);
    assert!(raised.now >= raised.before);
    let dir = tempfile::tempdir().unwrap();
    let p = local(dir.path()).spawn(&sh("ulimit -Sn")).unwrap();
    p.wait(LONG).await.unwrap();
    let said = text(&p.snapshot(Stream::Stdout).head);
    let expected = if raised.before == u64::MAX {
        "unlimited".to_string()
    } else {
        raised.before.to_string()
    };
    assert_eq!(said.trim(), expected, "raised {raised:?}");
}
