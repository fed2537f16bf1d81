//! Agent tokens through the local doors: `toolshed call` and `toolshed mcp` on stdio.

use serde_json::json;

use crate::sandbox::{Mcp, text};
use crate::support::{Env, code, stderr, stdout};

fn create(env: &Env, owner: &str, scopes: &[&str]) -> String {
    let mut args = vec!["token", "create", "--owner", owner];
    for scope in scopes {
        args.extend(["--scope", scope]);
    }
    let o = env.run(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

#[test]
fn tokens_are_listed_without_their_secret_and_revoked_by_id() {
    let env = Env::new();
    let alice = create(&env, "alice", &[]);
    let bob = create(&env, "bob", &["tools:list", "audit:read"]);
    assert!(alice.starts_with("tsk_") && alice != bob);
    let o = env.run(&["token", "list", "--json"]);
    let listed = stdout(&o);
    for token in [&alice, &bob] {
        let secret = token.rsplit('_').next().unwrap();
        assert!(!listed.contains(secret), "a secret is listed");
    }
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let bob_id = &bob[4..16];
    assert_eq!(code(&env.run(&["token", "revoke", bob_id])), 0);
    assert_eq!(code(&env.run(&["token", "revoke", bob_id])), 2);
    let o = env.run(&["token", "create", "--owner", "x", "--scope", "root"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("is not a scope"), "{}", stderr(&o));
    // The admin token is still printed by `toolshed token`.
    let o = env.run(&["token"]);
    assert_eq!(stdout(&o).trim().len(), 64);
}

#[test]
fn the_cli_runs_as_the_tokens_owner_and_may_only_narrow_it() {
    let env = Env::new();
    let bob = create(&env, "bob", &[]);
    let lister = create(&env, "carol", &["tools:list"]);
    let call = |token: &str, owner: Option<&str>| {
        let mut args = vec![
            "--token",
            token,
            "call",
            "calculator",
            "--args",
            r#"{"expression":"1+1"}"#,
        ];
        if let Some(owner) = owner {
            args.extend(["--owner", owner]);
        }
        env.run(&args)
    };
    assert_eq!(code(&call(&bob, None)), 0);
    assert_eq!(code(&call(&bob, Some("bob/task-1"))), 0);
    let o = call(&bob, Some("alice"));
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("may not act as `alice`"),
        "{}",
        stderr(&o)
    );
    let o = call(&lister, None);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("tools:call"), "{}", stderr(&o));
    assert_eq!(code(&env.run(&["token", "revoke", &bob])), 0);
    let o = call(&bob, None);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("not a live agent token"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn mcp_on_stdio_with_a_token_refuses_to_act_as_another_owner() {
    let env = Env::new();
    let bob = create(&env, "bob", &[]);
    let mut cmd = env.cmd(&["mcp"]);
    cmd.env("TOOLSHED_TOKEN", &bob);
    let mut mcp = Mcp::start(cmd);
    let own = mcp.call("exec_command", json!({"cmd": "echo mine"}));
    assert!(text(&own).contains("mine"), "{own}");
    let reply = mcp.request(
        "tools/call",
        json!({"name": "command_run_list", "arguments": {},
               "_meta": {"toolshed/owner": "alice"}}),
    );
    let said = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("may not act as `alice`"), "{reply}");
    let reply = mcp.request(
        "tools/call",
        json!({"name": "command_run_list", "arguments": {},
               "_meta": {"toolshed/owner": "bob/task-2"}}),
    );
    assert!(reply.get("error").is_none(), "{reply}");
    // Revoked while the door is open: the next request is refused.
    assert_eq!(code(&env.run(&["token", "revoke", &bob])), 0);
    let reply = mcp.request(
        "tools/call",
        json!({"name": "calculator", "arguments": {"expression": "1+1"}}),
    );
    let said = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("revoked"), "{reply}");
    drop(mcp);
    // And it cannot open the door again.
    let mut cmd = env.cmd(&["mcp"]);
    cmd.env("TOOLSHED_TOKEN", &bob);
    let o = cmd.output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_token_or_profile_pinned_to_a_workspace_opens_it_and_refuses_another() {
    let env = Env::new();
    let there = tempfile::tempdir().unwrap();
    std::fs::write(there.path().join("where.txt"), "over there\n").unwrap();
    env.write("where.txt", "right here\n");
    let there_path = there.path().to_str().unwrap();

    // Bad pins are refused when the token is made, naming the value.
    for (bad, says) in [
        ("relative/dir", "absolute directory"),
        ("/no/such/dir/anywhere", "is not a directory"),
        ("ssh://", "workspace `ssh://`"),
    ] {
        let o = env.run(&["token", "create", "--owner", "ci", "--pin", bad]);
        assert_eq!(code(&o), 2, "{bad}");
        assert!(stderr(&o).contains(says), "{bad}: {}", stderr(&o));
    }
    let o = env.run(&[
        "token",
        "create",
        "--owner",
        "ci",
        "--pin",
        there_path,
        "--scope",
        "workspace:/tmp",
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("one workspace"), "{}", stderr(&o));

    let pinned = {
        let o = env.run(&["token", "create", "--owner", "ci", "--pin", there_path]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o).trim().to_string()
    };
    let read = |cmd: &mut std::process::Command, extra: &[&str]| {
        cmd.args([
            "call",
            "workspace_read",
            "--args",
            r#"{"path":"where.txt"}"#,
        ])
        .args(extra)
        .current_dir(env.workspace.path())
        .output()
        .unwrap()
    };
    // No --workspace: the pinned one, wherever it is started.
    let mut cmd = env.bare();
    cmd.args(["--data-dir", env.data.path().to_str().unwrap()])
        .env("TOOLSHED_TOKEN", &pinned);
    let o = read(&mut cmd, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("over there"), "{}", stdout(&o));
    // Another named: refused, naming both.
    let mut cmd = env.cmd(&[]);
    cmd.env("TOOLSHED_TOKEN", &pinned);
    let o = read(&mut cmd, &[]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let here = env.workspace.path().canonicalize().unwrap();
    assert!(
        stderr(&o).contains(there_path) && stderr(&o).contains(here.to_str().unwrap()),
        "{}",
        stderr(&o)
    );

    // A profile of the user's config pins its doors the same way.
    env.write_user_config(&format!(
        "[profiles.yonder]\nworkspace = \"{there_path}\"\n"
    ));
    let mut cmd = env.bare();
    cmd.args(["--data-dir", env.data.path().to_str().unwrap()]);
    let o = read(&mut cmd, &["--profile", "yonder"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("over there"), "{}", stdout(&o));
}
