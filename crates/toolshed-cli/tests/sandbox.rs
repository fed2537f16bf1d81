//! The command sandbox, through the real binary over MCP (stdio): an escape battery run by
//! each way a command starts — `exec_command` with pipes and with a terminal, `shell` and
//! `process_exec` — in the default `workspace-write` mode. Each attempt prints `ESCAPED
//! <name>` if it worked and `refused <name>` if not; every one must be refused.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The attempts whose verdict is what reached the host ([`assert_all_refused`] looks).
const HOST_JUDGED: [&str; 3] = ["write-beside-workspace", "write-dotdot", "symlink-out"];

/// A host variable a command must never see, not even through `/proc/<host>/environ`.
const HOST_SECRET: &str = "host-secret-canary-1234";

/// An isolated setup: the workspace outside `/tmp` (so that writing beside it meets
/// Landlock, not the private `/tmp`), a data dir (the state database appears there when the
/// server starts), a fixture home with an SSH key, and a directory beside the workspace for
/// canaries.
struct Setup {
    root: tempfile::TempDir,
}

impl Setup {
    fn new(config: &str) -> Self {
        Self::new_in(Path::new(env!("CARGO_TARGET_TMPDIR")), config)
    }

    /// A setup whose workspace, data dir and home are under `parent`.
    fn new_in(parent: &Path, config: &str) -> Self {
        let root = tempfile::tempdir_in(parent).unwrap();
        for dir in ["ws/.toolshed", "data", "home/.ssh", "outside"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        let at = |rel: &str| root.path().join(rel);
        std::fs::write(at("ws/toolshed.toml"), config).unwrap();
        std::fs::write(at("ws/.toolshed/state"), "workspace-state").unwrap();
        std::fs::write(at("data/token"), "the-token").unwrap();
        std::fs::write(at("home/.ssh/id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::write(at("outside/target.txt"), "untouched").unwrap();
        Self { root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    fn mcp(&self) -> Mcp {
        self.mcp_with(&[])
    }

    /// `toolshed mcp` on this setup with `env` added to its environment.
    fn mcp_with(&self, env: &[(&str, &str)]) -> Mcp {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolshed"));
        for (key, _) in std::env::vars() {
            if key.starts_with("TOOLSHED_") {
                cmd.env_remove(key);
            }
        }
        cmd.envs(env.iter().copied())
            .env("HOME", self.path("home"))
            .env("HOST_CANARY_API_KEY", HOST_SECRET)
            .env_remove("XDG_CONFIG_HOME")
            .args(["mcp", "--workspace"])
            .arg(self.path("ws"))
            .arg("--data-dir")
            .arg(self.path("data"));
        Mcp::start(cmd)
    }
}

/// A `toolshed mcp` child spoken to in JSON-RPC lines.
pub(crate) struct Mcp {
    pub(crate) child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Mcp {
    /// Starts `cmd` (a `toolshed … mcp` command) and initializes the session.
    pub(crate) fn start(mut cmd: Command) -> Mcp {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut mcp = Mcp {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            next: 1,
        };
        mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "battery", "version": "0"}}),
        );
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Writes `bytes` and a newline as they are, valid JSON or not.
    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message the server writes.
    pub(crate) fn next_message(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "the server ended"
        );
        serde_json::from_str(&line).unwrap()
    }

    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server ended"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Calls a tool; its result (`content`, `structuredContent`, `isError`).
    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(reply.get("error").is_none(), "{tool}: {reply}");
        reply["result"].clone()
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a tool result.
pub(crate) fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// How a command is started.
#[derive(Debug, Clone, Copy)]
enum Runner {
    Pipes,
    Terminal,
    Shell,
    Background,
}

/// Runs `script` (sh) the way `runner` starts commands; its output.
fn run(mcp: &mut Mcp, runner: Runner, script: &str) -> String {
    match runner {
        Runner::Pipes | Runner::Terminal => {
            let tty = matches!(runner, Runner::Terminal);
            let result = mcp.call(
                "exec_command",
                json!({"cmd": script, "tty": tty, "yield_ms": 30000}),
            );
            let sandbox = &result["structuredContent"]["sandbox"];
            assert_eq!(sandbox["mode"], "workspace-write", "{result}");
            assert!(
                sandbox["enforced"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|l| l == "seccomp"),
                "{result}"
            );
            text(&result)
        }
        Runner::Shell => text(&mcp.call("shell", json!({"command": script}))),
        Runner::Background => {
            let started = mcp.call("process_exec", json!({"cmd": script}));
            assert_eq!(
                started["structuredContent"]["sandbox"]["mode"], "workspace-write",
                "{started}"
            );
            let id = started["structuredContent"]["id"]
                .as_str()
                .unwrap()
                .to_string();
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let read = mcp.call("process_read_output", json!({"id": id}));
                let done = read["structuredContent"]["running"] == false;
                if done || Instant::now() > deadline {
                    return text(&read);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// One attempt: a shell command that succeeds only if the sandbox let it through.
/// Attempts to write outside are judged on the host instead (by what reached it): inside,
/// a write under a private mount may succeed without anything leaving the sandbox (a
/// workspace under `/tmp` has its parent in the private `/tmp`).
fn attempt(name: &str, command: &str) -> String {
    if HOST_JUDGED.contains(&name) {
        return format!("( {command} ) >/dev/null 2>&1; echo \"refused {name}\"\n");
    }
    format!(
        "if ( {command} ) >/dev/null 2>&1; then echo \"ESCAPED {name}\"; else echo \"refused {name}\"; fi\n"
    )
}

/// The battery: every attempt by name, for a setup whose canaries are at the given paths.
fn battery(setup: &Setup, unix_socket: &Path) -> (String, Vec<&'static str>) {
    let p = |rel: &str| setup.path(rel).display().to_string();
    let host_tmp = format!("/tmp/toolshed-battery-{}", std::process::id());
    let attempts: Vec<(&'static str, String)> = vec![
        ("kill-host", "kill -TERM $PPID".into()),
        ("host-environ", format!("cat /proc/$PPID/environ /proc/1/environ 2>/dev/null | grep -q {HOST_SECRET}")),
        ("host-environ-any", format!("grep -qs {HOST_SECRET} /proc/*/environ")),
        ("privileges", "grep -q 'NoNewPrivs:[[:space:]]*0' /proc/self/status || ! grep -q 'CapEff:[[:space:]]*0000000000000000' /proc/self/status".into()),
        ("unix-socket-outside", format!("curl -s -m 2 --unix-socket {} http://x/", unix_socket.display())),
        ("write-beside-workspace", format!("echo x > {}", p("outside/new.txt"))),
        ("write-dotdot", "echo x > ../escaped.txt".into()),
        ("write-host-tmp", format!("echo x > {host_tmp} && test -e {host_tmp}.never")),
        ("read-state-db", format!("cat {}", p("data/toolshed.db"))),
        ("read-token", format!("cat {}", p("data/token"))),
        ("read-workspace-state", "cat .toolshed/state".into()),
        ("read-ssh-key", "cat ~/.ssh/id_rsa".into()),
        ("symlink-out", format!("ln -sf {} link.txt && echo x >> link.txt", p("outside/target.txt"))),
        ("mount", "mount -t tmpfs none /mnt".into()),
        ("unshare", "unshare -r true".into()),
        ("ptrace", "strace -o /dev/null true".into()),
        ("setuid-elevation", "test \"$(setpriv --reuid=65534 id -u 2>/dev/null)\" = 65534".into()),
    ];
    let mut script = String::from("cd \"$(pwd)\"\n");
    for (name, command) in &attempts {
        script.push_str(&attempt(name, command));
    }
    script.push_str("echo BATTERY-DONE\n");
    (script, attempts.iter().map(|(n, _)| *n).collect())
}

/// A listening UNIX socket outside the workspace, served until dropped.
struct Canary {
    path: PathBuf,
    _listener: std::os::unix::net::UnixListener,
}

fn canary(setup: &Setup) -> Canary {
    let path = setup.path("outside/canary.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    Canary {
        path,
        _listener: listener,
    }
}

fn assert_all_refused(runner: Runner, output: &str, names: &[&str], setup: &Setup) {
    assert!(
        output.contains("BATTERY-DONE"),
        "{runner:?}: the battery did not finish:\n{output}"
    );
    let escaped: Vec<&str> = output
        .lines()
        .filter(|l| l.starts_with("ESCAPED"))
        .collect();
    assert!(
        escaped.is_empty(),
        "{runner:?} escaped: {escaped:?}\n{output}"
    );
    for name in names {
        assert!(
            output.contains(&format!("refused {name}")),
            "{runner:?}: no verdict for {name}:\n{output}"
        );
    }
    // Nothing changed outside the workspace.
    assert_eq!(
        std::fs::read_to_string(setup.path("outside/target.txt")).unwrap(),
        "untouched"
    );
    assert!(!setup.path("outside/new.txt").exists());
    assert!(!setup.path("escaped.txt").exists());
}

fn battery_for(runner: Runner) {
    battery_in(runner, &Setup::new(""));
}

fn battery_in(runner: Runner, setup: &Setup) {
    let canary = canary(setup);
    let (script, names) = battery(setup, &canary.path);
    let mut mcp = setup.mcp();
    let output = run(&mut mcp, runner, &script);
    assert_all_refused(runner, &output, &names, setup);
    // The host kept serving, and a write inside the workspace works.
    let after = run(&mut mcp, runner, "echo fine > inside.txt && cat inside.txt");
    assert!(after.contains("fine"), "{runner:?}: {after}");
    assert_eq!(
        std::fs::read_to_string(setup.path("ws/inside.txt")).unwrap(),
        "fine\n"
    );
}

#[test]
fn the_escape_battery_is_refused_for_exec_command_with_pipes() {
    battery_for(Runner::Pipes);
}

#[test]
fn the_escape_battery_judges_by_what_reached_the_host_in_a_workspace_under_tmp() {
    // Failed before: `echo x > ../escaped.txt` succeeded into the private /tmp and was
    // reported as an escape, although nothing reached the host.
    battery_in(Runner::Pipes, &Setup::new_in(&std::env::temp_dir(), ""));
}

#[test]
fn the_escape_battery_is_refused_for_exec_command_in_a_terminal() {
    battery_for(Runner::Terminal);
}

#[test]
fn the_escape_battery_is_refused_for_the_persistent_shell() {
    battery_for(Runner::Shell);
}

#[test]
fn the_escape_battery_is_refused_for_background_processes() {
    battery_for(Runner::Background);
}

#[test]
fn with_the_network_off_a_loopback_canary_on_the_host_is_unreachable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let setup = Setup::new("[sandbox]\nnetwork = \"off\"\n");
    let mut mcp = setup.mcp();
    let script = format!(
        "{}{}echo BATTERY-DONE\n",
        attempt(
            "host-loopback",
            &format!("curl -s -m 2 http://127.0.0.1:{port}/")
        ),
        attempt(
            "abstract-socket",
            "curl -s -m 2 --abstract-unix-socket toolshed-canary http://x/"
        ),
    );
    let output = run(&mut mcp, Runner::Pipes, &script);
    assert!(
        output.contains("refused host-loopback") && !output.contains("ESCAPED"),
        "{output}"
    );
    // Its own loopback works.
    let own = run(
        &mut mcp,
        Runner::Pipes,
        "python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); \
         socket.create_connection(s.getsockname()); print('own loopback ok')\"",
    );
    assert!(own.contains("own loopback ok"), "{own}");
}

/// `toolshed sandbox check` on the setup.
fn sandbox_check(setup: &Setup) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .args(["sandbox", "check", "--workspace"])
        .arg(setup.path("ws"))
        .arg("--data-dir")
        .arg(setup.path("data"))
        .env("HOME", setup.path("home"))
        .output()
        .unwrap()
}

#[test]
fn a_sandbox_the_kernel_cannot_enforce_refuses_commands_instead_of_running_them() {
    // ABI 99 does not exist: the sandbox cannot be built as asked.
    let setup = Setup::new("[sandbox]\nmin_landlock_abi = 99\n");
    let mut mcp = setup.mcp();
    let result = mcp.call("exec_command", json!({"cmd": "touch ran.txt"}));
    assert_eq!(result["isError"], true, "{result}");
    let said = text(&result);
    assert!(
        said.contains("cannot be enforced") && said.contains("Landlock ABI"),
        "{said}"
    );
    assert!(
        said.contains("full-access"),
        "says what to choose instead: {said}"
    );
    assert!(
        !setup.path("ws/ran.txt").exists(),
        "the command ran unconfined"
    );
    let check = sandbox_check(&setup);
    assert_eq!(check.status.code(), Some(1), "{check:?}");
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("FAIL"),
        "{check:?}"
    );
}

#[test]
fn a_workspace_file_cannot_turn_the_sandbox_off() {
    for widening in [
        "[sandbox]\nmode = \"full-access\"\n",
        "[sandbox]\nnetwork = \"on\"\n",
        "[sandbox]\nwritable = [\"/\"]\n",
        "[sandbox]\ndeny = []\n",
    ] {
        let setup = Setup::new(widening);
        let out = sandbox_check(&setup);
        assert_eq!(out.status.code(), Some(0), "{widening}: {out:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("is ignored") && said.contains("may only narrow what tools do"),
            "{widening}: {said}"
        );
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            shown.contains("workspace-write") && shown.contains("filtered"),
            "{widening}: {shown}"
        );
    }
    // Narrowing is fine.
    let setup = Setup::new("[sandbox]\nmode = \"read-only\"\nnetwork = \"off\"\n");
    assert_eq!(sandbox_check(&setup).status.code(), Some(0));
}

#[test]
fn a_fork_bomb_and_a_memory_hog_are_stopped_and_the_host_keeps_serving() {
    let setup = Setup::new("[sandbox]\nmax_processes = 64\nmax_memory_mb = 128\n");
    let mut mcp = setup.mcp();
    let hog = mcp.call(
        "exec_command",
        json!({"cmd": "python3 -c 'b = bytearray(1 << 30); print(len(b))'", "timeout_ms": 30000}),
    );
    assert_eq!(hog["isError"], true, "{hog}");
    assert_eq!(hog["structuredContent"]["limit"], "memory", "{hog}");
    assert!(text(&hog).contains("memory limit"), "{hog}");
    let enforced = &hog["structuredContent"]["sandbox"]["enforced"];
    assert!(
        enforced
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().starts_with("limits-")),
        "{enforced}"
    );

    // Whether the shell itself still gets to fork depends on the machine's load (bash retries
    // with a back-off); the timeout ends it either way, and the result names the limit.
    let bomb = mcp.call(
        "exec_command",
        json!({"cmd": "bomb() { bomb | bomb & }; bomb; sleep 1",
               "timeout_ms": 4000, "yield_ms": 60000}),
    );
    assert_eq!(bomb["structuredContent"]["running"], false, "{bomb}");
    assert_eq!(bomb["structuredContent"]["limit"], "processes", "{bomb}");

    let after = mcp.call("exec_command", json!({"cmd": "echo next"}));
    assert!(text(&after).contains("next"), "{after}");
}

/// A loopback HTTP server on the host answering `canary-body` to anything, until the test
/// process ends.
fn loopback_canary() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = stream.write_all(
                b"HTTP/1.0 200 OK\r\ncontent-length: 11\r\nconnection: close\r\n\r\ncanary-body",
            );
        }
    });
    port
}

#[test]
fn filtered_network_goes_out_only_through_the_egress_proxy_under_the_web_rules() {
    let port = loopback_canary();
    let setup = Setup::new("[sandbox]\nnetwork = \"filtered\"\n");
    let mut mcp = setup.mcp();
    let script = format!(
        "echo proxy=$HTTPS_PROXY\n{}{}{}{}echo BATTERY-DONE\n",
        attempt(
            "loopback-through-proxy",
            &format!("curl -sSf -m 5 http://127.0.0.1:{port}/")
        ),
        attempt("private-through-proxy", "curl -sSf -m 5 http://10.255.0.1/"),
        attempt("metadata-tunnel", "curl -sSf -m 5 https://169.254.169.254/"),
        attempt(
            "around-the-proxy",
            &format!("curl -sSf -m 2 --noproxy '*' http://127.0.0.1:{port}/")
        ),
    );
    let result = mcp.call("exec_command", json!({"cmd": script, "yield_ms": 30000}));
    let output = text(&result);
    assert!(
        output.contains("BATTERY-DONE") && !output.contains("ESCAPED"),
        "{output}"
    );
    assert!(output.contains("proxy=http://127.0.0.1:3128"), "{output}");
    let enforced = &result["structuredContent"]["sandbox"]["enforced"];
    assert!(
        enforced
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "egress-filter"),
        "{enforced}"
    );
    // The refusal names the reason, for the model to read.
    let said = text(&mcp.call(
        "exec_command",
        json!({"cmd": format!("curl -sS -m 5 http://127.0.0.1:{port}/")}),
    ));
    assert!(
        said.contains("loopback") && said.contains("[web] allow"),
        "{said}"
    );

    // `[web] allow` (in the user's own config, where widening counts) opens a destination
    // for commands as for the web tools.
    let setup = Setup::new("[sandbox]\nnetwork = \"filtered\"\n");
    std::fs::create_dir_all(setup.path("home/.config/toolshed")).unwrap();
    std::fs::write(
        setup.path("home/.config/toolshed/config.toml"),
        format!("[web]\nallow = [\"127.0.0.1:{port}\"]\n"),
    )
    .unwrap();
    let mut mcp = setup.mcp();
    let allowed = text(&mcp.call(
        "exec_command",
        json!({"cmd": format!("curl -sS -m 5 http://127.0.0.1:{port}/")}),
    ));
    assert!(allowed.contains("canary-body"), "{allowed}");
}

#[test]
fn read_only_mode_writes_nothing_even_in_a_workspace_under_tmp() {
    // The private /tmp is writable; a workspace brought back inside it must not be.
    let setup = Setup::new_in(&std::env::temp_dir(), "[sandbox]\nmode = \"read-only\"\n");
    let mut mcp = setup.mcp();
    let out = mcp.call(
        "exec_command",
        json!({"cmd": "echo x > written.txt; echo rc=$?; echo t > /tmp/t && echo tmp-ok"}),
    );
    let said = text(&out);
    assert!(said.contains("Read-only file system"), "{said}");
    assert!(said.contains("rc=1") && said.contains("tmp-ok"), "{said}");
    assert_eq!(out["structuredContent"]["sandbox"]["mode"], "read-only");
    assert!(!setup.path("ws/written.txt").exists());
}

#[test]
fn a_call_may_narrow_the_sandbox_and_asking_for_more_needs_approval() {
    let setup = Setup::new_in(&std::env::temp_dir(), "");
    // Nobody to approve here: approvals off, so an escalation is refused at once.
    let mut mcp = setup.mcp_with(&[("TOOLSHED_APPROVALS__TIMEOUT_SECS", "0")]);
    // Narrower: runs, read-only, and says so.
    let out = mcp.call(
        "exec_command",
        json!({"cmd": "echo x > narrowed.txt; echo rc=$?", "sandbox": "read-only"}),
    );
    assert!(text(&out).contains("rc=1"), "{out}");
    assert_eq!(out["structuredContent"]["sandbox"]["mode"], "read-only");
    assert!(!setup.path("ws/narrowed.txt").exists());
    // The host's own mode still writes.
    let out = mcp.call(
        "exec_command",
        json!({"cmd": "echo x > kept.txt; echo rc=$?"}),
    );
    assert!(text(&out).contains("rc=0"), "{out}");
    assert_eq!(
        out["structuredContent"]["sandbox"]["mode"],
        "workspace-write"
    );
    // Wider: an escalation, refused until someone can approve it; nothing ran.
    for tool in ["exec_command", "process_exec"] {
        let out = mcp.call(
            tool,
            json!({"cmd": "echo x > ../outside/escalated.txt", "sandbox": "full-access"}),
        );
        assert_eq!(out["isError"], true, "{out}");
        let said = text(&out);
        assert!(
            said.contains("needs_approval") || said.contains("approval"),
            "{said}"
        );
        assert!(
            said.contains("wider than this host's workspace-write"),
            "{said}"
        );
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!setup.path("outside/escalated.txt").exists());
    // A background process narrowed to read-only.
    let out = mcp.call(
        "process_exec",
        json!({"cmd": "echo x > bg.txt; echo rc=$?; sleep 30", "sandbox": "read-only"}),
    );
    assert_eq!(
        out["structuredContent"]["sandbox"]["mode"], "read-only",
        "{out}"
    );
}

#[test]
fn a_full_access_host_still_confines_a_call_that_asks_for_less() {
    let setup = Setup::new("");
    let mut mcp = setup.mcp_with(&[("TOOLSHED_SANDBOX__MODE", "full-access")]);
    let out = mcp.call("exec_command", json!({"cmd": "cat ../data/token"}));
    assert!(text(&out).contains("the-token"), "{out}");
    assert_eq!(out["structuredContent"]["sandbox"]["mode"], "full-access");
    let out = mcp.call(
        "exec_command",
        json!({"cmd": "cat ../data/token; echo x > w.txt; echo rc=$?", "sandbox": "workspace-write"}),
    );
    let said = text(&out);
    assert!(
        !said.contains("the-token") && said.contains("rc=0"),
        "{said}"
    );
    assert_eq!(
        out["structuredContent"]["sandbox"]["mode"],
        "workspace-write"
    );
    let out = mcp.call(
        "exec_command",
        json!({"cmd": "echo x > r.txt; echo rc=$?", "sandbox": "read-only"}),
    );
    assert!(text(&out).contains("rc=1"), "{out}");
    assert!(setup.path("ws/w.txt").exists() && !setup.path("ws/r.txt").exists());
}

/// The pids of the network keepers whose parent is `parent`.
fn keepers_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Field 4 of stat, after the parenthesised name.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            cmdline.split(|b| *b == 0).any(|w| w == b"sandbox-net") && ppid == Some(parent)
        })
        .collect()
}

#[test]
fn commands_share_one_private_network_whose_keeper_dies_with_the_host() {
    let setup = Setup::new("");
    let mut mcp = setup.mcp();
    let net = |mcp: &mut Mcp| {
        let out = mcp.call("exec_command", json!({"cmd": "readlink /proc/self/ns/net"}));
        text(&out).lines().next().unwrap_or_default().to_string()
    };
    let (first, second) = (net(&mut mcp), net(&mut mcp));
    assert!(first.starts_with("net:["), "{first}");
    assert_eq!(first, second, "one network for the host's commands");
    let host = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert_ne!(first, host.to_string_lossy(), "not the host's network");
    let keepers = keepers_of(mcp.child.id());
    assert_eq!(keepers.len(), 1, "{keepers:?}");
    // Killed without a chance to clean up, the host takes its keeper with it.
    mcp.child.kill().unwrap();
    mcp.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{}", keepers[0])).exists() {
        assert!(Instant::now() < deadline, "the keeper outlived the host");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_approved_escalation_runs_the_command_with_the_mode_it_asked_for() {
    let setup = Setup::new("");
    let mut mcp = setup.mcp();
    // A person answers from another terminal: `toolshed approvals approve`.
    let approver = {
        let (home, data, ws) = (setup.path("home"), setup.path("data"), setup.path("ws"));
        std::thread::spawn(move || {
            let toolshed = |args: &[&str]| {
                Command::new(env!("CARGO_BIN_EXE_toolshed"))
                    .env("HOME", &home)
                    .env_remove("XDG_CONFIG_HOME")
                    .arg("--workspace")
                    .arg(&ws)
                    .arg("--data-dir")
                    .arg(&data)
                    .args(args)
                    .output()
                    .unwrap()
            };
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                assert!(Instant::now() < deadline, "no approval request appeared");
                let listed = toolshed(&["approvals", "list", "--json"]);
                let listed: Value = serde_json::from_slice(&listed.stdout).unwrap_or(json!([]));
                if let Some(id) = listed[0]["id"].as_str() {
                    assert_eq!(listed[0]["rule"], "sandbox escalation", "{listed}");
                    let out = toolshed(&["approvals", "approve", id]);
                    assert!(out.status.success(), "{out:?}");
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let out = mcp.call(
        "exec_command",
        json!({"cmd": "cat ../data/token; echo", "sandbox": "full-access"}),
    );
    approver.join().unwrap();
    assert_ne!(out["isError"], true, "{out}");
    assert!(text(&out).contains("the-token"), "{out}");
    assert_eq!(out["structuredContent"]["sandbox"]["mode"], "full-access");
}

/// A shared library whose constructor, in any process that loads it, appends to
/// `outside/preloaded` (beside the workspace: refused inside the sandbox) a line and the
/// data dir's token, and to `ws/preloaded-inside` a line (allowed inside): built with `cc`
/// into the workspace, as an agent could build it.
fn preload_library(setup: &Setup) -> PathBuf {
    let source = setup.path("ws/evil.c");
    std::fs::write(
        &source,
        format!(
            r#"#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void preloaded(void) {{
    char token[256];
    ssize_t n = 0;
    int t = open("{token}", O_RDONLY);
    if (t >= 0) {{ n = read(t, token, sizeof token); close(t); }}
    int o = open("{outside}", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (o >= 0) {{ write(o, "ran\n", 4); if (n > 0) write(o, token, n); close(o); }}
    int i = open("{inside}", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (i >= 0) {{ write(i, "ran\n", 4); close(i); }}
}}
"#,
            token = setup.path("data/token").display(),
            outside = setup.path("outside/preloaded").display(),
            inside = setup.path("ws/preloaded-inside").display(),
        ),
    )
    .unwrap();
    let library = setup.path("ws/evil.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .output()
        .unwrap();
    assert!(built.status.success(), "cc: {built:?}");
    library
}

/// The library ran nowhere outside the sandbox (nothing beside the workspace, no token
/// copied), and ran inside it (the command itself got the variable): `how` names the way in.
fn assert_preload_stayed_inside(setup: &Setup, how: &str) {
    assert!(
        !setup.path("outside/preloaded").exists(),
        "{how}: LD_PRELOAD ran outside the sandbox: {:?}",
        std::fs::read_to_string(setup.path("outside/preloaded"))
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !setup.path("ws/preloaded-inside").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        setup.path("ws/preloaded-inside").exists(),
        "{how}: the command itself did not get LD_PRELOAD"
    );
    std::fs::remove_file(setup.path("ws/preloaded-inside")).unwrap();
}

#[test]
fn ld_preload_from_a_call_runs_only_inside_the_sandbox() {
    // Failed before the helper took the command's environment as data: the library loaded
    // into the helper itself, before any namespace, Landlock or seccomp.
    let setup = Setup::new("");
    let library = preload_library(&setup);
    let env = json!({"LD_PRELOAD": library.display().to_string()});
    let mut mcp = setup.mcp();

    let result = mcp.call("exec_command", json!({"cmd": "echo hi", "env": env}));
    assert!(text(&result).contains("hi"), "{result}");
    assert_preload_stayed_inside(&setup, "exec_command");

    let started = mcp.call(
        "process_exec",
        json!({"cmd": "echo hi; sleep 5", "env": env}),
    );
    assert!(started.get("isError") != Some(&json!(true)), "{started}");
    assert_preload_stayed_inside(&setup, "process_exec");

    // Nor do the other variables the loader and the C library act on reach the helper.
    for name in ["LD_AUDIT", "GCONV_PATH", "GLIBC_TUNABLES"] {
        let result = mcp.call(
            "exec_command",
            json!({"cmd": format!("printenv {name}"), "env": {name: "seen"}}),
        );
        assert!(text(&result).contains("seen"), "{name}: {result}");
    }
    assert!(!setup.path("outside/preloaded").exists());
}

#[test]
fn ld_preload_from_the_workspace_env_file_runs_only_inside_the_sandbox() {
    let setup = Setup::new("");
    let library = preload_library(&setup);
    std::fs::write(
        setup.path("ws/.env"),
        format!("LD_PRELOAD={}\n", library.display()),
    )
    .unwrap();
    // A language server is started with the same environment as commands.
    std::fs::create_dir_all(setup.path("home/.config/toolshed")).unwrap();
    std::fs::write(
        setup.path("home/.config/toolshed/config.toml"),
        "[lsp.fake]\ncommand = [\"/bin/sh\", \"-c\", \"exit 0\"]\nextensions = [\"fake\"]\n",
    )
    .unwrap();
    std::fs::write(setup.path("ws/a.fake"), "x\n").unwrap();
    let mut mcp = setup.mcp();

    let result = mcp.call("exec_command", json!({"cmd": "echo hi"}));
    assert!(text(&result).contains("hi"), "{result}");
    assert_preload_stayed_inside(&setup, "exec_command with .env");

    let result = mcp.call("shell", json!({"command": "echo hi"}));
    assert!(text(&result).contains("hi"), "{result}");
    assert_preload_stayed_inside(&setup, "shell with .env");

    // The server exits at once: the call fails, but it was started.
    let _ = mcp.request(
        "tools/call",
        json!({"name": "lsp", "arguments": {"operation": "document_symbols", "path": "a.fake"}}),
    );
    assert_preload_stayed_inside(&setup, "a language server with .env");
}

#[test]
fn ld_preload_in_a_mounted_servers_env_runs_only_inside_the_sandbox() {
    let setup = Setup::new("");
    let library = preload_library(&setup);
    // `mcp add` starts the server once to list its tools; `true` is no MCP server, so it
    // fails, after the sandbox started it.
    let added = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .arg("--workspace")
        .arg(setup.path("ws"))
        .arg("--data-dir")
        .arg(setup.path("data"))
        .args(["mcp", "add", "evil", "-e"])
        .arg(format!("LD_PRELOAD={}", library.display()))
        .args(["--", "/bin/true"])
        .env("HOME", setup.path("home"))
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    assert_ne!(added.status.code(), None, "{added:?}");
    assert_preload_stayed_inside(&setup, "a mounted server's env");
}

/// `toolshed-sandbox sandbox-exec` for `ws` with the network on (nothing to join), running
/// `script` under sh, started by bash with `prelude` first.
fn helper_directly(ws: &Path, prelude: &str, script: &str) -> std::process::Output {
    let helper = env!("CARGO_BIN_EXE_toolshed-sandbox");
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{prelude}; exec \"$0\" sandbox-exec --mode workspace-write --network on \
             --workspace \"$1\" --tmp-bytes 1048576 --min-landlock-abi 0 -- sh -c \"$2\""
        ))
        .arg(helper)
        .arg(ws)
        .arg(script)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir(ws)
        .output()
        .unwrap()
}

#[test]
fn the_helper_refuses_loader_variables_of_its_own_and_closes_stray_descriptors() {
    let setup = Setup::new("");
    let ws = setup.path("ws");
    // A variable the C library acts on, in the helper's own environment: refused, the
    // command not run.
    let refused = helper_directly(&ws, "export GCONV_PATH=/nonexistent", "touch ran");
    assert_eq!(refused.status.code(), Some(125), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("GCONV_PATH"),
        "{refused:?}"
    );
    assert!(!setup.path("ws/ran").exists());
    // A descriptor left open by whoever started the helper does not reach the command.
    let listed = helper_directly(&ws, "exec 7</etc/hostname", "ls /proc/self/fd");
    assert!(listed.status.success(), "{listed:?}");
    let fds: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    assert!(!fds.iter().any(|fd| fd == "7"), "fd 7 inherited: {fds:?}");
    assert!(fds.iter().any(|fd| fd == "2"), "{fds:?}");
}

#[test]
fn a_revealed_folder_inside_a_hidden_workspace_is_shown_only_without_a_link_on_the_way() {
    // A skill's script: the workspace hidden but for what was granted. A granted path that
    // is a link (swapped in by the workspace's own commands) to a folder inside another
    // hidden place (toolshed's data, a secret) shows nothing.
    let setup = Setup::new("");
    let ws = setup.path("ws");
    std::fs::create_dir_all(ws.join("granted")).unwrap();
    std::fs::write(ws.join("granted/a.txt"), "granted").unwrap();
    std::fs::write(ws.join("secret.txt"), "secret").unwrap();
    let kept = setup.path("kept");
    std::fs::create_dir_all(kept.join("sub")).unwrap();
    std::fs::write(kept.join("sub/b.txt"), "kept").unwrap();
    std::os::unix::fs::symlink(kept.join("sub"), ws.join("link")).unwrap();
    let ws_arg = ws.display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_toolshed-sandbox"))
        .args(["sandbox-exec", "--mode", "read-only", "--network", "off"])
        .args(["--workspace", &ws_arg, "--tmp-bytes", "1048576", "--min-landlock-abi", "0"])
        .args(["--deny", &kept.display().to_string(), "--deny", &ws_arg])
        .args(["--reveal", &format!("{ws_arg}/granted")])
        .args(["--reveal", &format!("{ws_arg}/link")])
        .args(["--", "sh", "-c"])
        .arg("cat granted/a.txt; echo; cat secret.txt link/b.txt \"$0/sub/b.txt\" 2>&1 | grep -c -e 'No such' -e 'denied'")
        .arg(kept.display().to_string())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&ws)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("granted\n3"), "{out:?}");
}

/// How a tool that is not read-only is held to `read-only` (the table test below).
enum Holds {
    /// It writes workspace files: called with these arguments, it is refused by the
    /// sandbox and the workspace is left as it was.
    Files(Value),
    /// It runs a command: the command's write fails inside the sandbox (the script must
    /// try to create `cmd-wrote.txt`).
    Command(Value),
    /// It changes no files of its own; the reason.
    NoFiles(&'static str),
}

/// Every tool of the default catalog that does not declare itself read-only, and how
/// `read-only` holds it. A new such tool fails the test until it is added here.
fn writers(url: &str) -> Vec<(&'static str, Holds)> {
    vec![
        (
            "workspace_write",
            Holds::Files(json!({"path": "new.txt", "content": "x"})),
        ),
        (
            "workspace_edit",
            Holds::Files(json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"})),
        ),
        (
            "workspace_patch",
            Holds::Files(
                json!({"patch": "*** Begin Patch\n*** Add File: new.txt\n+x\n*** End Patch\n"}),
            ),
        ),
        ("workspace_mkdir", Holds::Files(json!({"path": "newdir"}))),
        (
            "workspace_move",
            Holds::Files(json!({"from": "a.txt", "to": "moved.txt"})),
        ),
        ("workspace_delete", Holds::Files(json!({"path": "a.txt"}))),
        (
            "download_file",
            Holds::Files(json!({"url": url, "path": "new.txt"})),
        ),
        (
            "download_batch",
            Holds::Files(json!({"items": [{"url": url, "path": "new.txt"}]})),
        ),
        // The rename is applied through the same file operations (FileOps::commit) as
        // workspace_patch; no language server runs in this test, so it fails before.
        (
            "lsp_rename",
            Holds::Files(json!({"path": "a.txt", "line": 1, "column": 1, "new_name": "b"})),
        ),
        (
            "exec_command",
            Holds::Command(json!({"cmd": "echo x > cmd-wrote.txt"})),
        ),
        (
            "shell",
            Holds::Command(json!({"command": "echo x > cmd-wrote.txt"})),
        ),
        (
            "process_exec",
            Holds::Command(json!({"cmd": "echo x > cmd-wrote.txt; sleep 1"})),
        ),
        (
            "write_stdin",
            Holds::NoFiles("writes to a running command, which the sandbox holds"),
        ),
        (
            "command_run_terminate",
            Holds::NoFiles("stops a running command"),
        ),
        ("process_stop", Holds::NoFiles("stops a background process")),
        (
            "http_request",
            Holds::NoFiles("network only; its body is returned, not saved"),
        ),
        (
            "run_code",
            Holds::NoFiles("reaches files only through tools, each held here"),
        ),
        (
            "memory_store",
            Holds::NoFiles("writes the state store, not files"),
        ),
        (
            "memory_append_daily",
            Holds::NoFiles("writes the state store, not files"),
        ),
        (
            "memory_compact_summary",
            Holds::NoFiles("writes the state store, not files"),
        ),
        (
            "memory_delete",
            Holds::NoFiles("writes the state store, not files"),
        ),
        (
            "agent_run",
            Holds::NoFiles("its calls run in the caller's mode, each held on its own"),
        ),
        (
            "workflow_run",
            Holds::NoFiles("its steps run in the caller's mode, each held on its own"),
        ),
        (
            "todo_write",
            Holds::NoFiles("writes the state store, not files"),
        ),
        (
            "goal_set",
            Holds::NoFiles("writes the state store, not files"),
        ),
        (
            "plan_enter",
            Holds::NoFiles("writes the state store, not files"),
        ),
        (
            "plan_submit",
            Holds::NoFiles("writes the state store once a person approves"),
        ),
        (
            "schedule_create",
            Holds::NoFiles("writes the state store; the call runs later, held then"),
        ),
        (
            "schedule_delete",
            Holds::NoFiles("writes the state store, not files"),
        ),
    ]
}

/// A one-request HTTP server on loopback answering `hello`.
fn serve_once() -> (String, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/file.txt", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        listener.set_nonblocking(false).unwrap();
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    (url, handle)
}

/// The workspace's files and their contents, `.toolshed` left out.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".toolshed") {
                continue;
            }
            if path.is_dir() {
                out.push((path.clone(), Vec::new()));
                stack.push(path);
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn read_only_refuses_every_tool_that_writes() {
    // Failed before the file boundary: workspace_write created files in read-only.
    let (url, _server) = serve_once();
    let setup = Setup::new("[sandbox]\nmode = \"read-only\"\n");
    std::fs::create_dir_all(setup.path("home/.config/toolshed")).unwrap();
    // Every tool listed (none left for tool_search), to check each.
    std::fs::write(
        setup.path("home/.config/toolshed/config.toml"),
        "[web]\nallow = [\"127.0.0.1\"]\n[mcp]\non_demand = []\n",
    )
    .unwrap();
    std::fs::write(setup.path("ws/a.txt"), "alpha\n").unwrap();
    let mut mcp = setup.mcp();
    let listed = mcp.request("tools/list", json!({}));
    let table = writers(&url);
    let mut unlisted = Vec::new();
    for tool in listed["result"]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        if tool["annotations"]["readOnlyHint"] != true && !table.iter().any(|(n, _)| *n == name) {
            unlisted.push(name.to_string());
        }
    }
    assert!(
        unlisted.is_empty(),
        "tools that may write and are not in the read-only table: {unlisted:?}"
    );
    // The edit is checked after a read, as an agent would make it.
    mcp.call("workspace_read", json!({"path": "a.txt"}));
    let before = snapshot(&setup.path("ws"));
    for (name, holds) in &table {
        match holds {
            Holds::Files(args) => {
                let reply = mcp.request("tools/call", json!({"name": name, "arguments": args}));
                let result = &reply["result"];
                let said = format!("{}{}", text(result), reply["error"]);
                assert!(
                    result["isError"] == true || reply.get("error").is_some(),
                    "{name} was not refused: {reply}"
                );
                if *name != "lsp_rename" {
                    assert!(said.contains("read-only"), "{name}: {said}");
                }
            }
            Holds::Command(args) => {
                let result = mcp.call(name, args.clone());
                let said = text(&result);
                if *name != "process_exec" {
                    assert!(
                        said.contains("Read-only file system")
                            || said.contains("Permission denied"),
                        "{name}: {said}"
                    );
                }
            }
            Holds::NoFiles(why) => assert!(!why.is_empty(), "{name}: say why"),
        }
        assert_eq!(
            snapshot(&setup.path("ws")),
            before,
            "{name} changed the workspace"
        );
    }
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        snapshot(&setup.path("ws")),
        before,
        "a background command wrote"
    );
}

#[test]
fn a_path_the_sandbox_hides_is_hidden_from_file_tools_too() {
    let setup = Setup::new("");
    std::fs::create_dir_all(setup.path("ws/secrets")).unwrap();
    std::fs::write(setup.path("ws/secrets/k"), "hidden").unwrap();
    std::os::unix::fs::symlink("secrets", setup.path("ws/alias")).unwrap();
    std::fs::create_dir_all(setup.path("home/.config/toolshed")).unwrap();
    std::fs::write(
        setup.path("home/.config/toolshed/config.toml"),
        format!(
            "[sandbox]\ndeny = [\"~/.ssh\", \"{}\"]\n",
            setup.path("ws/secrets").display()
        ),
    )
    .unwrap();
    let mut mcp = setup.mcp();
    for (tool, args) in [
        ("workspace_read", json!({"path": "secrets/k"})),
        ("workspace_read", json!({"path": "alias/k"})),
        (
            "workspace_write",
            json!({"path": "secrets/new", "content": "x"}),
        ),
        (
            "workspace_write",
            json!({"path": "alias/new", "content": "x"}),
        ),
        ("workspace_move", json!({"from": "secrets", "to": "out"})),
        (
            "workspace_write",
            json!({"path": "alias/n1/n2/x", "content": "x", "create_parents": true}),
        ),
        ("workspace_mkdir", json!({"path": "alias/m1/m2"})),
    ] {
        let result = mcp.call(tool, args.clone());
        assert_eq!(result["isError"], true, "{tool} {args}: {result}");
        assert!(text(&result).contains("[sandbox] deny"), "{result}");
    }
    // Nor do the search tools read or list it (failed before: workspace_grep printed it).
    std::fs::write(setup.path("ws/open.txt"), "hidden in plain sight").unwrap();
    for (tool, args) in [
        ("workspace_grep", json!({"pattern": "hidden"})),
        ("workspace_glob", json!({"patterns": ["**"]})),
        ("workspace_find", json!({"query": "k"})),
        ("workspace_tree", json!({})),
    ] {
        let result = mcp.call(tool, args.clone());
        let said = format!("{}{}", text(&result), result["structuredContent"]);
        assert!(!said.contains("secrets/k"), "{tool}: {said}");
    }
    let grep = mcp.call("workspace_grep", json!({"pattern": "hidden"}));
    assert!(text(&grep).contains("open.txt"), "{grep}");
    let inside = mcp.call("workspace_grep", json!({"pattern": ".", "path": "secrets"}));
    assert_eq!(inside["isError"], true, "{inside}");
    let cat = mcp.call("exec_command", json!({"cmd": "cat secrets/k"}));
    assert!(!text(&cat).contains("hidden"), "{cat}");
    assert_eq!(
        std::fs::read_to_string(setup.path("ws/secrets/k")).unwrap(),
        "hidden"
    );
    assert!(!setup.path("ws/secrets/new").exists() && !setup.path("ws/out").exists());
    // The rest of the workspace is as before.
    let listed = mcp.call(
        "workspace_write",
        json!({"path": "fine.txt", "content": "ok"}),
    );
    assert_ne!(listed["isError"], true, "{listed}");
}

#[test]
fn programs_and_environments_under_tmp_stay_visible_and_the_rest_of_tmp_stays_hidden() {
    // A checkout under /tmp with its tools installed in it (a virtualenv, a language
    // server), as many people and CI runners have: failed before, "No such file or
    // directory" inside the private /tmp.
    use std::os::unix::fs::PermissionsExt;
    let setup = Setup::new_in(&std::env::temp_dir(), "");
    let env = setup.path("checkout/.venv");
    std::fs::create_dir_all(env.join("bin")).unwrap();
    std::fs::create_dir_all(env.join("lib")).unwrap();
    std::fs::write(env.join("lib/data.txt"), "venv data").unwrap();
    let tool = env.join("bin/venvtool");
    std::fs::write(
        &tool,
        format!(
            "#!/bin/sh\ncat \"$(dirname \"$0\")/../lib/data.txt\"; echo; echo ran > {}\n",
            setup.path("ws/tool-ran").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(setup.path("checkout/private.txt"), "not for commands").unwrap();
    let stray = std::env::temp_dir().join(format!("toolshed-stray-{}", std::process::id()));
    std::fs::write(&stray, "another program's temp file").unwrap();
    // A language server configured by its path under /tmp.
    std::fs::create_dir_all(setup.path("home/.config/toolshed")).unwrap();
    std::fs::write(
        setup.path("home/.config/toolshed/config.toml"),
        format!(
            "[lsp.fake]\ncommand = [\"{}\"]\nextensions = [\"fake\"]\n",
            tool.display()
        ),
    )
    .unwrap();
    std::fs::write(setup.path("ws/a.fake"), "x\n").unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", env.join("bin").display());
    let mut mcp = setup.mcp_with(&[("PATH", &path)]);
    // On toolshed's PATH: found and run, its environment readable, read-only.
    let result = mcp.call(
        "exec_command",
        json!({"cmd": format!("venvtool; touch {}/x 2>&1 || echo env-read-only", env.display())}),
    );
    let said = text(&result);
    assert!(said.contains("venv data"), "{said}");
    assert!(said.contains("env-read-only"), "{said}");
    assert!(!env.join("x").exists());
    // The rest of /tmp stays private: the checkout's other files, others' temp files.
    let result = mcp.call(
        "exec_command",
        json!({"cmd": format!("cat {} {} 2>&1; true", setup.path("checkout/private.txt").display(), stray.display())}),
    );
    let said = text(&result);
    assert!(
        !said.contains("not for commands") && !said.contains("another program"),
        "{said}"
    );
    std::fs::remove_file(setup.path("ws/tool-ran")).unwrap();
    // Named by path in a command: a virtualenv's interpreter (a link to one outside /tmp,
    // as venvs make them) brings its environment; a script in node_modules brings
    // node_modules (its dependencies beside it). Failed before in a checkout under /tmp.
    std::os::unix::fs::symlink("/bin/cat", env.join("bin/linked")).unwrap();
    let modules = setup.path("checkout/node_modules");
    std::fs::create_dir_all(modules.join("pkg")).unwrap();
    std::fs::create_dir_all(modules.join("dep")).unwrap();
    std::fs::write(modules.join("dep/x.txt"), "dependency").unwrap();
    std::fs::write(
        modules.join("pkg/index.sh"),
        "cat \"$(dirname \"$0\")/../dep/x.txt\"\n",
    )
    .unwrap();
    let result = mcp.call(
        "exec_command",
        json!({"cmd": format!(
            "{} {}/lib/data.txt; echo; sh {}/pkg/index.sh",
            env.join("bin/linked").display(),
            env.display(),
            modules.display()
        )}),
    );
    let said = text(&result);
    assert!(
        said.contains("venv data") && said.contains("dependency"),
        "{said}"
    );
    // A language server installed there starts.
    let _ = mcp.request(
        "tools/call",
        json!({"name": "lsp", "arguments": {"operation": "document_symbols", "path": "a.fake"}}),
    );
    assert!(
        setup.path("ws/tool-ran").exists(),
        "the language server did not start"
    );
    let _ = std::fs::remove_file(&stray);
}

/// `toolshed ARGS…` on the setup (its home, workspace and data dir).
fn toolshed_on(setup: &Setup, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolshed"));
    for (key, _) in std::env::vars() {
        if key.starts_with("TOOLSHED_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("HOME", setup.path("home"))
        .env_remove("XDG_CONFIG_HOME")
        .arg("--workspace")
        .arg(setup.path("ws"))
        .arg("--data-dir")
        .arg(setup.path("data"))
        .args(args);
    cmd
}

/// A caller narrowed to read-only: commands run read-only and say so, no tool writes.
fn assert_read_only_caller(mut mcp: Mcp, setup: &Setup, who: &str) {
    let out = mcp.call("exec_command", json!({"cmd": "touch ran.txt; echo rc=$?"}));
    assert_eq!(
        out["structuredContent"]["sandbox"]["mode"], "read-only",
        "{who}: {out}"
    );
    assert!(
        !setup.path("ws/ran.txt").exists(),
        "{who}: the command wrote"
    );
    let out = mcp.call("workspace_write", json!({"path": "w.txt", "content": "x"}));
    assert_eq!(out["isError"], true, "{who}: {out}");
    assert!(text(&out).contains("read-only"), "{who}: {out}");
    let out = mcp.call("shell", json!({"command": "touch sh.txt; echo done"}));
    assert!(text(&out).contains("done"), "{who}: {out}");
    assert!(!setup.path("ws/w.txt").exists() && !setup.path("ws/sh.txt").exists());
    // Reading still works.
    std::fs::write(setup.path("ws/r.txt"), "readable").unwrap();
    let out = mcp.call("workspace_read", json!({"path": "r.txt"}));
    assert!(text(&out).contains("readable"), "{who}: {out}");
    std::fs::remove_file(setup.path("ws/r.txt")).unwrap();
}

#[test]
fn a_profile_a_token_and_a_policy_rule_each_narrow_the_sandbox_mode() {
    // Failed before: the mode was the host's for every caller.
    let setup = Setup::new("");
    std::fs::create_dir_all(setup.path("home/.config/toolshed")).unwrap();
    std::fs::write(
        setup.path("home/.config/toolshed/config.toml"),
        "[profiles.reviewer]\nsandbox = \"read-only\"\n\n\
         [[policy.rule]]\nname = \"ci reads\"\nowners = [\"ci*\"]\nsandbox = \"read-only\"\n\n\
         [[policy.rule]]\nname = \"snippets read\"\ntools = [\"run_code\"]\nsandbox = \"read-only\"\n\n\
         [[policy.rule]]\nname = \"wide\"\nowners = [\"wide\"]\nsandbox = \"workspace-write\"\n",
    )
    .unwrap();
    // A profile.
    let mcp = Mcp::start(toolshed_on(&setup, &["mcp", "--profile", "reviewer"]));
    assert_read_only_caller(mcp, &setup, "profile");
    let listed = toolshed_on(&setup, &["tools", "list", "--profile", "reviewer"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&listed.stderr);
    assert!(
        said.contains("sandbox: read-only (profile reviewer"),
        "{said}"
    );
    // A token.
    let made = toolshed_on(
        &setup,
        &[
            "token",
            "create",
            "--owner",
            "rev",
            "--sandbox",
            "read-only",
        ],
    )
    .output()
    .unwrap();
    assert!(made.status.success(), "{made:?}");
    let token = String::from_utf8_lossy(&made.stdout).trim().to_string();
    let mcp = Mcp::start(toolshed_on(&setup, &["--token", &token, "mcp"]));
    assert_read_only_caller(mcp, &setup, "token");
    let listed = toolshed_on(&setup, &["--token", &token, "tools", "list"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&listed.stderr);
    assert!(
        said.contains("sandbox: read-only (token scope sandbox:read-only"),
        "{said}"
    );
    let doctor = toolshed_on(&setup, &["doctor"]).output().unwrap();
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        said.contains("profile reviewer: read-only") && said.contains("(rev): read-only"),
        "{said}"
    );
    // A token may not widen.
    let wide = toolshed_on(
        &setup,
        &[
            "token",
            "create",
            "--owner",
            "x",
            "--sandbox",
            "full-access",
        ],
    )
    .output()
    .unwrap();
    assert!(!wide.status.success(), "{wide:?}");
    // A policy rule, for the owners it names.
    let out = toolshed_on(
        &setup,
        &[
            "call",
            "--owner",
            "ci-7",
            "exec_command",
            "--args",
            r#"{"cmd":"touch ci.txt"}"#,
        ],
    )
    .output()
    .unwrap();
    assert!(!setup.path("ws/ci.txt").exists(), "{out:?}");
    let out = toolshed_on(
        &setup,
        &[
            "call",
            "--owner",
            "dev",
            "exec_command",
            "--args",
            r#"{"cmd":"touch dev.txt"}"#,
        ],
    )
    .output()
    .unwrap();
    assert!(setup.path("ws/dev.txt").exists(), "{out:?}");
    // A rule that narrows a call narrows what that call's snippet calls (failed before: the
    // rule named `run_code` only, and the command it called ran workspace-write).
    let out = toolshed_on(
        &setup,
        &[
            "call",
            "--owner",
            "dev",
            "run_code",
            "--args",
            r#"{"code":"const said = []; for (const f of [() => tools.exec_command({cmd: 'touch nested.txt'}), () => tools.workspace_write({path: 'nested2.txt', content: 'x'})]) { try { await f(); said.push('done'); } catch (e) { said.push(String(e)); } } return said.join(' | ');"}"#,
        ],
    )
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!setup.path("ws/nested.txt").exists(), "{out:?}");
    assert!(!setup.path("ws/nested2.txt").exists(), "{out:?}");
    assert!(
        said.contains("cannot touch") && said.contains("sandbox mode is read-only"),
        "{said}"
    );
    // A rule naming the host's own mode (or a wider one) changes nothing.
    let out = toolshed_on(
        &setup,
        &[
            "call",
            "--owner",
            "wide",
            "exec_command",
            "--args",
            r#"{"cmd":"touch wide.txt"}"#,
        ],
    )
    .output()
    .unwrap();
    assert!(setup.path("ws/wide.txt").exists(), "{out:?}");
}

#[test]
fn a_write_kept_in_the_private_tmp_is_reported_not_passed_off_as_done() {
    // Failed before: `echo x > ../escaped.txt` in a workspace under /tmp answered rc=0 and
    // said nothing, though the file went to the command's private /tmp and vanished.
    let setup = Setup::new_in(&std::env::temp_dir(), "");
    let mut mcp = setup.mcp();
    let out = mcp.call(
        "exec_command",
        json!({"cmd": "echo x > ../escaped.txt; mkdir -p /tmp/made && echo y > /tmp/made/f; echo inside > kept.txt"}),
    );
    let diverted = out["structuredContent"]["sandbox"]["diverted"]
        .as_array()
        .unwrap_or_else(|| panic!("no diverted writes reported: {out}"));
    let listed: Vec<&str> = diverted.iter().filter_map(Value::as_str).collect();
    let escaped = setup.path("escaped.txt").display().to_string();
    assert!(listed.iter().any(|l| l.starts_with(&escaped)), "{listed:?}");
    assert!(
        listed.iter().any(|l| l.starts_with("/tmp/made/f")),
        "{listed:?}"
    );
    // The workspace's own files are not among them, and the text says what happened.
    assert!(!listed.iter().any(|l| l.contains("kept.txt")), "{listed:?}");
    assert!(text(&out).contains("discarded"), "{out}");
    assert!(!setup.path("escaped.txt").exists());
    assert!(setup.path("ws/kept.txt").exists());
    // A command that leaves nothing behind reports nothing.
    let out = mcp.call("exec_command", json!({"cmd": "echo quiet"}));
    assert!(
        out["structuredContent"]["sandbox"]
            .get("diverted")
            .is_none(),
        "{out}"
    );
}

/// Signal numbers on Linux.
mod libc_signal {
    pub(super) const SIGINT: u32 = 2;
    pub(super) const SIGQUIT: u32 = 3;
    pub(super) const SIGPIPE: u32 = 13;
}

/// A sandboxed command starts with every signal at its default action, as a shell's child
/// does: the helper is a Rust program, and Rust ignores `SIGPIPE` in its own processes, which
/// the command would inherit (`yes | head -1` then ends `yes` with "Broken pipe" instead of
/// the signal). Each way a command starts is checked.
#[test]
fn a_sandboxed_command_starts_with_the_default_signal_actions() {
    let setup = Setup::new("");
    let mut mcp = setup.mcp();
    let script =
        "grep '^SigIgn' /proc/self/status; yes | head -n 1; echo \"pipe ${PIPESTATUS[0]}\"";
    for runner in [Runner::Pipes, Runner::Terminal, Runner::Background] {
        let out = run(
            &mut mcp,
            runner,
            &format!("bash -c '{}'", script.replace('\'', "'\\''")),
        );
        let ignored = out
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .unwrap_or_else(|| panic!("{runner:?}: no SigIgn line: {out}"));
        // SIGINT (2), SIGQUIT (3) and SIGPIPE (13): what toolshed or its helper may have
        // ignored itself. (What the test runner hands down, the command inherits as any
        // program's child does.)
        let ours = (1 << (libc_signal::SIGINT - 1))
            | (1 << (libc_signal::SIGQUIT - 1))
            | (1 << (libc_signal::SIGPIPE - 1));
        assert_eq!(
            ignored & ours,
            0,
            "{runner:?}: the command inherited ignored signals: {out}"
        );
        // 141 = 128 + SIGPIPE: `yes` ended by the signal, not by a write error.
        assert!(out.contains("pipe 141"), "{runner:?}: {out}");
        assert!(!out.contains("Broken pipe"), "{runner:?}: {out}");
    }
}

/// The spare helpers of the server `parent`: its children started as `sandbox-spare`.
fn spares_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The parent is the fourth field, after the command name in parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(parent) && cmdline.split(|b| *b == 0).any(|w| w == b"sandbox-spare") {
            found.push(pid);
        }
    }
    found
}

/// Waits up to ten seconds for `parent` to have exactly one spare; returns it.
fn one_spare(parent: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let spares = spares_of(parent);
        if let [only] = spares[..] {
            return only;
        }
        assert!(Instant::now() < deadline, "spares of {parent}: {spares:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// After a sandboxed command the server starts the helper for the next one ahead; the next
/// command is handed to it (it runs, and a new spare waits in its place), and a spare
/// never outlives the server.
#[test]
fn the_next_sandboxed_command_is_handed_to_a_spare_helper_that_goes_with_the_server() {
    let setup = Setup::new("");
    let mut mcp = setup.mcp();
    let server = mcp.child.id();
    assert!(spares_of(server).is_empty(), "no spare before any command");
    assert!(run(&mut mcp, Runner::Pipes, "echo first").contains("first"));
    let mut spare = one_spare(server);
    for runner in [Runner::Pipes, Runner::Terminal, Runner::Background] {
        let out = run(&mut mcp, runner, "echo handed-over; touch made-by-spare");
        assert!(out.contains("handed-over"), "{runner:?}: {out}");
        let next = one_spare(server);
        assert_ne!(next, spare, "{runner:?}: the spare was not used");
        spare = next;
    }
    assert!(setup.path("ws/made-by-spare").exists());
    let last = one_spare(server);
    drop(mcp);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{last}")).exists() {
        let state = std::fs::read_to_string(format!("/proc/{last}/stat")).unwrap_or_default();
        // A zombie waiting for its parent's parent to reap it has gone all the same.
        if state
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the spare {last} outlived the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
