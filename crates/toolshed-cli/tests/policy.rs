//! Policy rules through the doors: `toolshed policy test`, `toolshed call` and MCP.

use serde_json::{Value, json};

use crate::sandbox::{Mcp, text};
use crate::support::{Env, code, stderr, stdout};

const RULES: &str = r#"
[[policy.rule]]
name = "read-only git"
tools = ["group:exec"]
when = { cmd = "^git (status|diff|log)( |$)" }
decision = "allow"

[[policy.rule]]
name = "ask before commands"
tools = ["group:exec"]
when = { cmd = { not_matches = "^git " } }
decision = "ask"
message = "commands other than git need a person's yes"

[[policy.rule]]
name = "no secrets"
tools = ["workspace_write"]
when = { path = { glob = "secrets/**" } }
decision = "deny"
message = "secrets/ is off limits"

[[policy.rule]]
owners = ["bob*"]
tools = ["calculator"]
decision = "deny"

[policy.default]
high = "deny"

[approvals]
timeout_secs = 0
"#;

/// An environment with the rules in the user's own config file.
fn env_with_rules() -> Env {
    let env = Env::new();
    let dir = env.data.path().join("home/.config/toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), RULES).unwrap();
    env
}

fn decide(env: &Env, tool: &str, args: &str, owner: &str) -> Value {
    let o = env.run(&[
        "policy", "test", tool, "--args", args, "--owner", owner, "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn policy_test_names_the_decision_and_the_rule() {
    let env = env_with_rules();
    for (tool, args, owner, decision, rule) in [
        (
            "exec_command",
            r#"{"cmd":"git status"}"#,
            "cli",
            "allow",
            "read-only git",
        ),
        (
            "exec_command",
            r#"{"cmd":"rm -rf ."}"#,
            "cli",
            "ask",
            "ask before commands",
        ),
        // Neither rule: the default for high danger.
        (
            "exec_command",
            r#"{"cmd":"git push"}"#,
            "cli",
            "deny",
            "policy.default.high",
        ),
        (
            "workspace_write",
            r#"{"path":"secrets/k","content":"x"}"#,
            "cli",
            "deny",
            "no secrets",
        ),
        (
            "workspace_write",
            r#"{"path":"src/k","content":"x"}"#,
            "cli",
            "allow",
            "policy.default.medium",
        ),
        (
            "calculator",
            r#"{"expression":"1+1"}"#,
            "bob/task-1",
            "deny",
            "policy.rule[3]",
        ),
        (
            "calculator",
            r#"{"expression":"1+1"}"#,
            "alice",
            "allow",
            "policy.default.low",
        ),
        (
            "exec_command",
            r#"{"cmd":"git log","sandbox":"full-access"}"#,
            "cli",
            "ask",
            "sandbox escalation",
        ),
    ] {
        let v = decide(&env, tool, args, owner);
        assert_eq!(v["decision"], decision, "{tool} {args}: {v}");
        assert_eq!(v["rule"], rule, "{tool} {args}: {v}");
    }
    let o = env.run(&["policy", "test", "exec_comand"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("did you mean exec_command"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn rules_refuse_and_ask_through_the_cli_and_mcp_and_nothing_runs() {
    let env = env_with_rules();
    // CLI door.
    let o = env.run(&["call", "exec_command", "--args", r#"{"cmd":"touch ran"}"#]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("needs_approval"), "{}", stderr(&o));
    assert!(stderr(&o).contains("ask before commands"), "{}", stderr(&o));
    assert!(stderr(&o).contains("approvals are off"), "{}", stderr(&o));
    let o = env.run(&[
        "call",
        "workspace_write",
        "--args",
        r#"{"path":"secrets/k","content":"x"}"#,
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("secrets/ is off limits"),
        "{}",
        stderr(&o)
    );
    let o = env.run(&["call", "exec_command", "--args", r#"{"cmd":"git status"}"#]);
    assert!(!stderr(&o).contains("policy"), "{}", stderr(&o));

    // MCP door.
    let mut mcp = Mcp::start(env.cmd(&["mcp"]));
    let out = mcp.call("exec_command", json!({"cmd": "touch ran"}));
    assert_eq!(out["isError"], true, "{out}");
    assert!(text(&out).contains("ask before commands"), "{out}");
    let out = mcp.call(
        "workspace_write",
        json!({"path": "secrets/k", "content": "x"}),
    );
    assert_eq!(out["isError"], true, "{out}");
    assert!(text(&out).contains("secrets/ is off limits"), "{out}");
    let out = mcp.call("workspace_write", json!({"path": "ok.txt", "content": "x"}));
    assert_ne!(out["isError"], true, "{out}");
    assert!(!env.workspace.path().join("ran").exists());
    assert!(!env.workspace.path().join("secrets/k").exists());
    assert!(env.workspace.path().join("ok.txt").exists());
}

#[test]
fn a_workspace_file_may_not_bring_policy_rules_and_bad_rules_are_named() {
    let env = Env::new();
    env.write(
        "toolshed.toml",
        "[[policy.rule]]\ntools = [\"*\"]\ndecision = \"allow\"\n",
    );
    let o = env.run(&["tools", "list"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`policy` in ") && stderr(&o).contains("is ignored"),
        "{}",
        stderr(&o)
    );
    // Nor may it let agents approve their own calls.
    let env = Env::new();
    env.write("toolshed.toml", "[approvals]\nself_approval = \"allow\"\n");
    let o = env.run(&["tools", "list"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`approvals.self_approval` in ") && stderr(&o).contains("is ignored"),
        "{}",
        stderr(&o)
    );

    let env = Env::new();
    let dir = env.data.path().join("home/.config/toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[[policy.rule]]\nwhen = { cmd = \"(\" }\ndecision = \"deny\"\n",
    )
    .unwrap();
    let o = env.run(&["tools", "list"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let said = stderr(&o);
    assert!(
        said.contains("policy.rule[0]") && said.contains("regular expression"),
        "{said}"
    );
}

#[test]
fn a_waiting_cli_call_runs_once_approved_from_another_terminal() {
    let env = Env::new();
    let dir = env.data.path().join("home/.config/toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[[policy.rule]]\ntools = [\"group:exec\"]\ndecision = \"ask\"\n",
    )
    .unwrap();
    let mut call = env.cmd(&[
        "call",
        "exec_command",
        "--args",
        r#"{"cmd":"echo ran > ran.txt"}"#,
    ]);
    let child = call
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let id = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no approval request appeared"
        );
        let listed: Value =
            serde_json::from_str(&stdout(&env.run(&["approvals", "list", "--json"]))).unwrap();
        if let Some(id) = listed[0]["id"].as_str() {
            break id.to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        !env.workspace.path().join("ran.txt").exists(),
        "ran before the answer"
    );
    let o = env.run(&["approvals", "approve", &id]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("toolshed approvals approve {id}"))
    );
    assert!(env.workspace.path().join("ran.txt").exists());
    // The answered request is kept, with who answered.
    let listed: Value =
        serde_json::from_str(&stdout(&env.run(&["approvals", "list", "--all", "--json"]))).unwrap();
    assert_eq!(listed[0]["state"], "approved");
    assert!(
        listed[0]["answered_by"]
            .as_str()
            .unwrap()
            .starts_with("cli")
    );
}

#[test]
fn a_broken_or_slow_pre_hook_blocks_the_call_and_a_workspace_may_not_bring_hooks() {
    let env = Env::new();
    env.write(".hooks/broken.sh", "#!/bin/sh\necho oops >&2\nexit 1\n");
    env.write(".hooks/slow.sh", "#!/bin/sh\nsleep 5\n");
    env.write(".hooks/garbage.sh", "#!/bin/sh\necho '{not json'\n");
    let dir = env.data.path().join("home/.config/toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    let ws = env.workspace.path().display().to_string();
    for (script, timeout, said) in [
        ("broken.sh", 10_000, "failed"),
        ("slow.sh", 300, "did not finish within 300 ms"),
        ("garbage.sh", 10_000, "not valid hook JSON"),
    ] {
        std::fs::write(
            dir.join("config.toml"),
            format!(
                "[[hooks.pre_tool_use]]\nmatcher = \"calculator\"\ncommand = \"sh {ws}/.hooks/{script}\"\ntimeout_ms = {timeout}\n"
            ),
        )
        .unwrap();
        let o = env.run(&["call", "calculator", "--args", r#"{"expression":"1+1"}"#]);
        assert_eq!(code(&o), 1, "{script}: {}", stdout(&o));
        assert!(stderr(&o).contains(said), "{script}: {}", stderr(&o));
        // A tool the matcher does not name is not hooked.
        let o = env.run(&["call", "datetime", "--args", r#"{"operation":"now"}"#]);
        assert_eq!(code(&o), 0, "{script}: {}", stderr(&o));
    }
    std::fs::remove_file(dir.join("config.toml")).unwrap();
    env.write(
        "toolshed.toml",
        "[[hooks.pre_tool_use]]\ncommand = \"touch hooked\"\n",
    );
    let o = env.run(&["call", "calculator", "--args", r#"{"expression":"1+1"}"#]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`hooks` in ") && stderr(&o).contains("is ignored"),
        "{}",
        stderr(&o)
    );
    assert!(!env.workspace.path().join("hooked").exists());
}

/// The documented "no secrets" rule written on what a call writes, for every tool.
const WRITES_RULES: &str = r#"
[[policy.rule]]
name = "no secrets"
when = { writes = { glob = "secrets/**" } }
decision = "deny"
message = "secrets/ is off limits"
"#;

#[test]
fn a_rule_on_what_a_call_writes_covers_every_tool_that_writes() {
    // Failed before: the rule named the `path` argument, which workspace_patch does not
    // have, so a patch (and a move's target) wrote secrets/.
    let env = Env::new();
    let dir = env.data.path().join("home/.config/toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), WRITES_RULES).unwrap();
    let ws = env.workspace.path();
    std::fs::create_dir_all(ws.join("secrets")).unwrap();
    std::fs::write(ws.join("secrets/a.txt"), "secret").unwrap();
    std::fs::write(ws.join("free.txt"), "free").unwrap();
    std::os::unix::fs::symlink("secrets", ws.join("alias")).unwrap();
    let absolute = ws.join("secrets/abs.txt").display().to_string();
    let mut mcp = Mcp::start(env.cmd(&["mcp"]));
    mcp.call("workspace_read", json!({"path": "free.txt"}));
    for (tool, args) in [
        (
            "workspace_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: secrets/b.txt\n+x\n*** End Patch\n"}),
        ),
        (
            "workspace_patch",
            json!({"patch": "--- /dev/null\n+++ b/./secrets/c.txt\n@@ -0,0 +1 @@\n+x\n"}),
        ),
        (
            "workspace_move",
            json!({"from": "free.txt", "to": "secrets/free.txt"}),
        ),
        (
            "workspace_move",
            json!({"from": "secrets/a.txt", "to": "out.txt"}),
        ),
        ("workspace_write", json!({"path": absolute, "content": "x"})),
        (
            "workspace_write",
            json!({"path": "alias/d.txt", "content": "x"}),
        ),
        (
            "workspace_write",
            json!({"path": "x/../secrets/e.txt", "content": "x"}),
        ),
        ("workspace_delete", json!({"path": "secrets/a.txt"})),
        ("workspace_mkdir", json!({"path": "secrets/sub"})),
        // The directory itself, and new directories under a link into it.
        (
            "workspace_delete",
            json!({"path": "secrets", "recursive": true}),
        ),
        (
            "workspace_move",
            json!({"from": "secrets", "to": "elsewhere"}),
        ),
        (
            "workspace_write",
            json!({"path": "alias/new/deep.txt", "content": "x", "create_parents": true}),
        ),
        ("workspace_mkdir", json!({"path": "alias/n1/n2"})),
    ] {
        let out = mcp.call(tool, args.clone());
        assert_eq!(out["isError"], true, "{tool} {args}: {out}");
        assert!(
            text(&out).contains("secrets/ is off limits"),
            "{tool}: {out}"
        );
    }
    // Nothing changed under secrets/, and what the rule does not name still works.
    let mut names: Vec<String> = std::fs::read_dir(ws.join("secrets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt"]);
    drop(mcp);
    let mut mcp = Mcp::start(env.cmd(&["mcp"]));
    let out = mcp.call(
        "workspace_patch",
        json!({"patch": "*** Begin Patch\n*** Add File: notes/n.txt\n+x\n*** End Patch\n"}),
    );
    assert_ne!(out["isError"], true, "{out}");
    // A command run under the rule cannot write there either (its sandbox keeps secrets/
    // read-only), nor can the persistent shell; elsewhere it writes.
    let out = mcp.call(
        "exec_command",
        json!({"cmd": "echo x > secrets/x; echo x > secrets/a.txt; mkdir secrets/d; echo rc=$?; mv secrets s2; rm -rf secrets; echo y > fine.txt"}),
    );
    assert!(text(&out).contains("Read-only file system"), "{out}");
    let out = mcp.call(
        "shell",
        json!({"command": "echo x > secrets/y; echo z > fine2.txt"}),
    );
    assert!(text(&out).contains("Read-only file system"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("secrets/a.txt")).unwrap(),
        "secret"
    );
    assert!(ws.join("fine.txt").exists() && ws.join("fine2.txt").exists());
    assert!(
        !ws.join("s2").exists(),
        "the protected directory was moved away"
    );
    // `policy test` answers the same for a patch.
    let o = env.run(&[
        "policy",
        "test",
        "workspace_patch",
        "--args",
        r#"{"patch":"*** Begin Patch\n*** Add File: secrets/z.txt\n+x\n*** End Patch\n"}"#,
    ]);
    assert!(
        stdout(&o).contains("deny") && stdout(&o).contains("no secrets"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
}

#[test]
fn an_owner_limited_to_some_paths_writes_only_there_with_every_tool_and_command() {
    let env = Env::new();
    let dir = env.data.path().join("home/.config/toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[[policy.rule]]\nname = \"only src\"\nwhen = { writes = { not_glob = \"src/**\" } }\n\
         decision = \"deny\"\nmessage = \"this agent writes only src/\"\n",
    )
    .unwrap();
    let ws = env.workspace.path();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    let mut mcp = Mcp::start(env.cmd(&["mcp"]));
    let out = mcp.call(
        "workspace_write",
        json!({"path": "README.md", "content": "x"}),
    );
    assert_eq!(out["isError"], true, "{out}");
    assert!(text(&out).contains("writes only src/"), "{out}");
    let out = mcp.call(
        "workspace_write",
        json!({"path": "src/lib.rs", "content": "x"}),
    );
    assert_ne!(out["isError"], true, "{out}");
    let out = mcp.call(
        "exec_command",
        json!({"cmd": "echo x > README.md; echo y > src/main.rs && echo wrote-src"}),
    );
    let said = text(&out);
    assert!(
        said.contains("Read-only file system") && said.contains("wrote-src"),
        "{said}"
    );
    assert!(!ws.join("README.md").exists());
    assert!(ws.join("src/main.rs").exists());
}

#[test]
fn a_rule_on_what_a_call_reads_hides_those_paths_from_commands_too() {
    // Failed before: a rule refusing reads of private/ held the file tools, and
    // `cat private/p.txt` through exec_command printed the file.
    let env = Env::new();
    let dir = env.data.path().join("home/.config/toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[[policy.rule]]\nname = \"private\"\nwhen = { reads = { glob = \"private/**\" } }\n\
         decision = \"deny\"\nmessage = \"private/ is not for agents\"\n\n\
         [[policy.rule]]\nname = \"key\"\nwhen = { reads = { glob = \"key.pem\" } }\n\
         decision = \"deny\"\n",
    )
    .unwrap();
    let ws = env.workspace.path();
    std::fs::create_dir_all(ws.join("private")).unwrap();
    std::fs::write(ws.join("private/p.txt"), "PRIVATE-CANARY").unwrap();
    std::fs::write(ws.join("key.pem"), "KEY-CANARY").unwrap();
    std::fs::write(ws.join("public.txt"), "public").unwrap();
    let mut mcp = Mcp::start(env.cmd(&["mcp"]));
    let out = mcp.call("workspace_read", json!({"path": "private/p.txt"}));
    assert!(text(&out).contains("not for agents"), "{out}");
    for cmd in [
        "cat private/p.txt",
        "cat key.pem",
        "grep -r CANARY . ; cat ./x/../private/p.txt",
        "cat \"$PWD/private/p.txt\"",
    ] {
        let out = mcp.call("exec_command", json!({ "cmd": cmd }));
        assert!(!text(&out).contains("CANARY"), "{cmd}: {out}");
    }
    let out = mcp.call(
        "shell",
        json!({"command": "cat private/p.txt key.pem; cat public.txt"}),
    );
    let said = text(&out);
    assert!(
        !said.contains("CANARY") && said.contains("public"),
        "{said}"
    );
    // A search of the whole workspace leaves them out (failed before: workspace_grep of
    // `.` printed the private file's line), and a search inside is refused.
    for (tool, args) in [
        ("workspace_grep", json!({"pattern": "CAN.RY", "path": "."})),
        ("workspace_grep", json!({"pattern": "CAN.RY"})),
        ("workspace_glob", json!({"pattern": "**/*"})),
        ("workspace_find", json!({"name": "p.txt"})),
        ("workspace_tree", json!({})),
    ] {
        let out = mcp.call(tool, args.clone());
        let said = out.to_string();
        assert!(
            !said.contains("-CANARY") && !said.contains("p.txt") && !said.contains("key.pem"),
            "{tool} {args}: {said}"
        );
    }
    let out = mcp.call(
        "workspace_grep",
        json!({"pattern": "CAN.RY", "path": "private"}),
    );
    assert!(!out.to_string().contains("PRIVATE-CANARY"), "{out}");
    // The files themselves are untouched.
    assert_eq!(
        std::fs::read_to_string(ws.join("private/p.txt")).unwrap(),
        "PRIVATE-CANARY"
    );
}

#[test]
fn a_rule_on_reads_still_hides_from_searches_in_a_workspace_of_several_roots() {
    // A further root changes nothing of what a read rule hides in the first, and its own
    // files are searched by name.
    let env = Env::new();
    let dir = env.data.path().join("home/.config/toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[[policy.rule]]\nname = \"private\"\nwhen = { reads = { glob = \"private/**\" } }\n\
         decision = \"deny\"\n",
    )
    .unwrap();
    let ws = env.workspace.path();
    std::fs::create_dir_all(ws.join("private")).unwrap();
    std::fs::write(ws.join("private/p.txt"), "PRIVATE-CANARY").unwrap();
    std::fs::write(ws.join("public.txt"), "PUBLIC-CANARY").unwrap();
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("lib.txt"), "LIB-CANARY").unwrap();
    let other_path = other.path().to_str().unwrap();
    let mut mcp = Mcp::start(env.cmd(&["--workspace", other_path, "mcp"]));
    let out = mcp.call("workspace_grep", json!({"pattern": "CAN.RY", "path": "."}));
    let said = out.to_string();
    assert!(
        said.contains("PUBLIC-CANARY") && !said.contains("PRIVATE-CANARY"),
        "{said}"
    );
    let name = other
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let out = mcp.call(
        "workspace_grep",
        json!({"pattern": "CAN.RY", "path": format!("@{name}")}),
    );
    assert!(out.to_string().contains("LIB-CANARY"), "{out}");
}
