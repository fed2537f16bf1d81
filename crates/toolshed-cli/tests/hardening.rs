//! Driven hard through the real binary: concurrent servers on one workspace, kills.

use std::process::Command;

use serde_json::json;

use crate::sandbox::{Mcp, text};
use crate::support::Env;

fn mcp(env: &Env) -> Mcp {
    let cmd: Command = env.cmd(&["mcp"]);
    Mcp::start(cmd)
}

/// Two servers on one workspace; in each round both read `shared.txt`, then both edit a
/// different line at the same moment. Every edit reported as done is in the file; the
/// other fails with a conflict naming the change — never both "succeed" with one lost.
#[test]
fn two_servers_editing_one_file_never_lose_an_update() {
    let env = Env::new();
    let lines: String = (0..60).map(|i| format!("line {i}\n")).collect();
    env.write("shared.txt", &lines);
    let mut servers = [mcp(&env), mcp(&env)];
    let mut conflicts = 0;
    for round in 0..15 {
        for server in servers.iter_mut() {
            let read = server.call("workspace_read", json!({"path": "shared.txt"}));
            assert_ne!(read["isError"], true, "{read}");
        }
        let results: Vec<(usize, serde_json::Value)> = std::thread::scope(|scope| {
            let handles: Vec<_> = servers
                .iter_mut()
                .enumerate()
                .map(|(w, server)| {
                    scope.spawn(move || {
                        let old = format!("line {}\n", round * 2 + w);
                        let new = format!("edited r{round} w{w}\n");
                        let result = server.call(
                            "workspace_edit",
                            json!({"path": "shared.txt", "old_text": old, "new_text": new}),
                        );
                        (w, result)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let now = std::fs::read_to_string(env.workspace.path().join("shared.txt")).unwrap();
        for (w, result) in results {
            if result["isError"] == true {
                let message = text(&result);
                assert!(message.contains("changed since you"), "{message}");
                conflicts += 1;
            } else {
                assert!(
                    now.contains(&format!("edited r{round} w{w}\n")),
                    "round {round}: server {w} reported success but its edit is lost:\n{now}"
                );
            }
        }
    }
    eprintln!("{conflicts} of 30 edits were refused as conflicts; none was lost");
}

/// Every request on the stdio door gets an answer, whatever is wrong with it: the client
/// never waits forever. Each reply carries the request's id when the line shows it.
#[test]
fn the_stdio_door_answers_every_malformed_request() {
    let env = Env::new();
    let mut server = mcp(&env);
    let mut huge = br#"{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'1', 17 << 20));
    huge.extend_from_slice(br#""}}}"#);
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":102,"method":"tools/call","params":{{"name":"calculator","arguments":{{"expression":{}1{}}}}}}}"#,
        "[".repeat(130),
        "]".repeat(130)
    );
    let mut not_utf8 =
        br#"{"jsonrpc":"2.0","id":103,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":""#
            .to_vec();
    not_utf8.extend_from_slice(&[0xff, 0xfe]);
    not_utf8.extend_from_slice(br#""}}}"#);
    let surrogate = br#"{"jsonrpc":"2.0","id":104,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"\ud800"}}}"#;
    let no_params = br#"{"jsonrpc":"2.0","id":105,"method":"tools/call"}"#;
    let cases: [(&[u8], serde_json::Value, i64); 6] = [
        (&huge, json!(101), -32700),
        (deep.as_bytes(), json!(102), -32700),
        (&not_utf8, json!(103), -32700),
        (surrogate, json!(104), -32700),
        (no_params, json!(105), -32602),
        (b"{this is not json", serde_json::Value::Null, -32700),
    ];
    for (line, id, code) in cases {
        server.send_raw(line);
        let reply = server.next_message();
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["error"]["code"], code, "{reply}");
    }
    // The session goes on.
    let result = server.call("calculator", json!({"expression": "6*7"}));
    assert_eq!(text(&result), "42");
}

/// The cgroup v2 directory the `toolshed` binary makes its groups in, when it uses cgroups.
fn cgroup_parent(env: &Env) -> Option<std::path::PathBuf> {
    let out = env.run(&[
        "call",
        "exec_command",
        "--args",
        r#"{"cmd":"grep ^0:: /proc/self/cgroup"}"#,
    ]);
    let text = crate::support::stdout(&out);
    let rel = text.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    // `<toolshed's cgroup>/toolshed-<pid>-<start>/c<n>`
    let parent_rel = std::path::Path::new(rel).parent()?.parent()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (root, point) = mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        right.starts_with("cgroup2 ").then_some(())?;
        let fields: Vec<&str> = left.split(' ').collect();
        Some((fields.get(3)?.to_string(), fields.get(4)?.to_string()))
    })?;
    let inside = parent_rel.strip_prefix(&root).ok()?;
    Some(std::path::Path::new(&point).join(inside))
}

fn groups(parent: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(parent)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("toolshed-"))
        .collect();
    names.sort();
    names
}

/// A `sleep` moved into `group`; `None` when the group vanished before it got there.
fn sleeper_in(group: &std::path::Path) -> Option<std::process::Child> {
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    match std::fs::write(group.join("cgroup.procs"), child.id().to_string()) {
        Ok(()) => Some(child),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
        Err(e) => panic!("cannot move a process into {}: {e}", group.display()),
    }
}

/// A fake neighbour's group `name` under `parent` with a command in `c0`, and a live
/// process in its `self` group when `live`. Other tests start toolsheds at the same time,
/// and each sweeps the groups it judges stale: a group whose `self` has no process yet is
/// one, so a group swept while it is being made is made again.
fn neighbour(
    parent: &std::path::Path,
    name: &str,
    live: bool,
) -> (std::path::PathBuf, Vec<std::process::Child>) {
    let group = parent.join(name);
    for _ in 0..50 {
        let mut children = Vec::new();
        let made = std::fs::create_dir_all(group.join("self"))
            .and_then(|()| std::fs::create_dir_all(group.join("c0")))
            .is_ok();
        let placed = made
            && (!live
                || sleeper_in(&group.join("self"))
                    .map(|c| children.push(c))
                    .is_some())
            && sleeper_in(&group.join("c0"))
                .map(|c| children.push(c))
                .is_some();
        if placed {
            return (group, children);
        }
        for mut child in children {
            let _ = child.kill();
            let _ = child.wait();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{name} kept being swept while it was made");
}

fn alive(child: &mut std::process::Child) -> bool {
    child.try_wait().unwrap().is_none()
}

/// A toolshed removes its own cgroup when it exits; the stale-group sweep of the next one
/// judges a neighbour by its group's own `self` group, not by a PID (which names nothing in
/// another PID namespace): a live neighbour's commands survive, a dead one's are cleared.
#[test]
fn cgroups_are_removed_at_exit_and_live_neighbours_survive_the_sweep() {
    let env = Env::new();
    let Some(parent) = cgroup_parent(&env) else {
        eprintln!("skipped: commands do not run in cgroup v2 groups here");
        return;
    };
    // A neighbour whose PID means nothing here but whose own process is alive...
    let (live, mut live_children) = neighbour(&parent, "toolshed-999999-1", true);
    let (mut live_self, mut live_command) = (live_children.remove(0), live_children.remove(0));
    // ...and one that is gone, its command orphaned.
    let (dead, mut dead_children) = neighbour(&parent, "toolshed-999998-1", false);
    let mut orphan = dead_children.remove(0);

    let out = env.run(&[
        "call",
        "exec_command",
        "--args",
        r#"{"cmd":"echo ran; grep ^0:: /proc/self/cgroup"}"#,
    ]);
    let text = crate::support::stdout(&out);
    assert!(text.contains("ran"), "{text}");
    let own = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .and_then(|rel| std::path::Path::new(rel.trim()).parent()?.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap();

    let survived = alive(&mut live_self) && alive(&mut live_command);
    let orphan_left = alive(&mut orphan);
    let live_kept = live.join("c0").is_dir();
    let dead_removed = !dead.exists();
    for child in [&mut live_self, &mut live_command, &mut orphan] {
        let _ = child.kill();
        let _ = child.wait();
    }
    for dir in [live.join("self"), live.join("c0"), live.clone()] {
        let _ = std::fs::remove_dir(dir);
    }
    assert!(survived && live_kept, "a live neighbour's group was swept");
    assert!(
        !orphan_left && dead_removed,
        "a dead neighbour's group was kept"
    );
    assert!(
        own.starts_with("toolshed-") && !parent.join(&own).exists(),
        "the toolshed that ran left its group {own} behind: {:?}",
        groups(&parent)
    );
}

/// The directories named `toolshed-<pid>-…` under the mounted cgroup hierarchies.
fn groups_of(pid: u32) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, prefix: &str, depth: usize, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten().filter(|e| e.path().is_dir()) {
            if entry.file_name().to_string_lossy().starts_with(prefix) {
                out.push(entry.path());
            } else if depth > 0 {
                walk(&entry.path(), prefix, depth - 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        std::path::Path::new("/sys/fs/cgroup"),
        &format!("toolshed-{pid}-"),
        4,
        &mut out,
    );
    out
}

/// Whether `unshare -p -f --mount-proc` works here (root, or user namespaces allowed).
fn can_unshare_pid() -> bool {
    Command::new("unshare")
        .args(["-p", "-f", "--mount-proc", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One toolshed never breaks another: a toolshed started in another PID namespace cannot
/// see the first one's PID, yet leaves its cgroup directories alone (they are locked while
/// their owner lives), so the first one's next command runs; and a toolshed whose
/// directories were removed by hand makes them again instead of failing every command.
#[test]
fn a_toolshed_in_another_pid_namespace_leaves_its_neighbour_working() {
    if !can_unshare_pid() {
        eprintln!("skipped: `unshare -p -f --mount-proc` is not allowed here");
        return;
    }
    let first_env = Env::new();
    let mut first = mcp(&first_env);
    let ran = first.call("exec_command", json!({"cmd": "echo first"}));
    assert!(text(&ran).contains("first"), "{ran}");
    let pid = first.child.id();
    if groups_of(pid).is_empty() {
        eprintln!("skipped: commands do not run in cgroups here");
        return;
    }
    // The first is idle; a second starts in a PID namespace of its own, several times.
    let second_env = Env::new();
    for round in 0..3 {
        let mut cmd = Command::new("unshare");
        cmd.args(["-p", "-f", "--mount-proc"]);
        let inner = second_env.cmd(&[
            "call",
            "exec_command",
            "--args",
            &format!(r#"{{"cmd":"echo second {round}"}}"#),
        ]);
        cmd.arg(inner.get_program()).args(inner.get_args());
        for (key, value) in inner.get_envs() {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        let out = cmd.output().unwrap();
        assert!(
            crate::support::stdout(&out).contains(&format!("second {round}")),
            "{}",
            crate::support::stderr(&out)
        );
    }
    assert!(
        !groups_of(pid).is_empty(),
        "the second toolshed removed the first one's groups"
    );
    let ran = first.call("exec_command", json!({"cmd": "echo first again"}));
    assert_ne!(ran["isError"], true, "{ran}");
    assert!(text(&ran).contains("first again"), "{ran}");

    // Remove the first one's groups by hand (those that can be: a group with a live
    // process in it cannot); its next command makes them again.
    // (The last command's own groups go a moment after its reply: try for a while.)
    let mut removed = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while removed == 0 && std::time::Instant::now() < deadline {
        for base in groups_of(pid) {
            if let Ok(children) = std::fs::read_dir(&base) {
                for child in children.flatten().filter(|c| c.path().is_dir()) {
                    let _ = std::fs::remove_dir(child.path());
                }
            }
            removed += usize::from(std::fs::remove_dir(&base).is_ok());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(removed > 0, "none of {:?} could be removed", groups_of(pid));
    for n in 0..2 {
        let ran = first.call(
            "exec_command",
            json!({"cmd": format!("echo after removal {n}")}),
        );
        assert_ne!(ran["isError"], true, "{ran}");
        assert!(text(&ran).contains(&format!("after removal {n}")), "{ran}");
    }
    assert!(
        !groups_of(pid).is_empty(),
        "the removed groups were not made again"
    );
}
