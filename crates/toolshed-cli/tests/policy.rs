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
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("[policy] in a workspace's toolshed.toml"),
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
