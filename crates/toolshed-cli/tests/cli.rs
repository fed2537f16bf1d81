//! The built `toolshed` binary, driven as a user would drive it.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{Env, code, stderr, stdout, with_input};

#[test]
fn version() {
    let o = Env::new().run(&["--version"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        stdout(&o).trim(),
        format!("toolshed {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn calculator_prints_the_result_and_errors_name_the_position() {
    let env = Env::new();
    let o = env.run(&["call", "calculator", "--args", r#"{"expression":"2+3*4"}"#]);
    assert_eq!(
        (code(&o), stdout(&o).as_str()),
        (0, "14\n"),
        "{}",
        stderr(&o)
    );

    let o = env.run(&["call", "calculator", "--args", r#"{"expression":"2+*3"}"#]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("position 3"), "{}", stderr(&o));
}

#[test]
fn bad_usage_exits_2() {
    let env = Env::new();
    for args in [
        vec!["call", "calculator", "--args", "{not json"],
        vec!["call", "calculator", "--args", "[1,2]"],
        vec!["call"],
        vec!["call", "calculator", "--no-such-flag"],
        vec!["frobnicate"],
    ] {
        let o = env.run(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty());
    }
    let o = env.run(&["call", "calculator", "--args", "{not json"]);
    assert!(
        stderr(&o).contains("--args is not valid JSON"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn args_from_standard_input() {
    let env = Env::new();
    let o = with_input(
        env.cmd(&["call", "calculator", "--args", "-"]),
        br#"{"expression":"(1+2)^2"}"#,
    );
    assert_eq!((code(&o), stdout(&o).trim()), (0, "9"), "{}", stderr(&o));
}

#[test]
fn datetime_converts_across_the_london_dst_change() {
    let env = Env::new();
    let offsets: Vec<String> = ["2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"]
        .iter()
        .map(|instant| {
            let args = serde_json::json!({"operation": "convert", "instant": instant, "to": "Europe/London"});
            let o = env.run(&["call", "datetime", "--json", "--args", &args.to_string()]);
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
            v["structured"]["offset"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(offsets, vec!["+00:00", "+01:00"]);
}

#[test]
fn invalid_arguments_list_every_violation_and_unknown_tools_suggest() {
    let env = Env::new();
    let o = env.run(&[
        "call",
        "calculator",
        "--args",
        r#"{"expr":"1","expression":5}"#,
    ]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert!(err.contains("[invalid_arguments]"), "{err}");
    assert!(err.contains("at /expression:"), "{err}");
    assert!(err.contains("'expr' was unexpected"), "{err}");

    let o = env.run(&["call", "calculater"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("did you mean `calculator`?"),
        "{}",
        stderr(&o)
    );

    let o = env.run(&[
        "call",
        "calculator",
        "--json",
        "--args",
        r#"{"expression":5}"#,
    ]);
    assert_eq!(code(&o), 1);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["kind"], "invalid_arguments");
    assert_eq!(
        v["error"]["details"]["violations"][0]["pointer"],
        "/expression"
    );
}

use toolshed_test_support::files::NOTES_MANIFEST as GOOD_PLUGIN;

#[test]
fn user_plugins_are_listed_and_a_broken_manifest_is_reported_everywhere() {
    let env = Env::new();
    env.write(".toolshed/plugins/notes/plugin.toml", GOOD_PLUGIN);
    env.write(
        ".toolshed/plugins/broken/plugin.json",
        r#"{"id": "acme.broken", "version": "one", "name": "B", "kind": "js"}"#,
    );

    let o = env.run(&["plugins", "list"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let notes_line = out
        .lines()
        .find(|l| l.starts_with("acme.notes "))
        .expect(&out);
    assert!(
        notes_line.contains("user") && notes_line.contains("error"),
        "{notes_line}"
    );
    // Its entry file is missing: it cannot load, and says so.
    assert!(
        out.contains("acme.notes (error): cannot load") && out.contains("main.js"),
        "{out}"
    );
    assert!(
        out.contains("broken/plugin.json: version: `one` is not a semantic version"),
        "{out}"
    );
    assert!(out.contains("system.calculator"), "{out}");

    let o = env.run(&["plugins", "list", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let problem = &v["problems"][0];
    assert!(
        problem["path"]
            .as_str()
            .unwrap()
            .ends_with("broken/plugin.json")
    );
    assert_eq!(problem["field"], "version");
    assert_eq!(problem["plugin_id"], "acme.broken");
    let notes = v["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "acme.notes")
        .unwrap();
    assert_eq!(
        (notes["state"].as_str(), notes["root"].as_str()),
        (Some("error"), Some("user"))
    );

    let o = env.run(&["doctor"]);
    assert_eq!(code(&o), 1, "doctor fails while a manifest is broken");
    let out = stdout(&o);
    assert!(
        out.contains("FAIL  manifests") && out.contains("broken/plugin.json: version:"),
        "{out}"
    );

    // Every other plugin still works.
    let o = env.run(&["call", "calculator", "--args", r#"{"expression":"1+1"}"#]);
    assert_eq!(stdout(&o), "2\n");
}

#[test]
fn doctor_passes_on_a_clean_setup_and_reports_unknown_config_keys() {
    let env = Env::new();
    let o = env.run(&["doctor"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("schema version"), "{}", stdout(&o));

    env.write("toolshed.toml", "[limits]\ndefault_timeout = 5\n");
    let o = env.run(&["doctor", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let warning = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["status"] == "warning")
        .unwrap();
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("`limits.default_timeout`"),
        "{warning}"
    );
    assert!(
        stderr(&o).contains("unknown config key `limits.default_timeout`"),
        "{}",
        stderr(&o)
    );

    env.write("toolshed.toml", "[limits]\ndefault_timeout_ms = \"soon\"\n");
    let o = env.run(&["tools", "list"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("toolshed.toml"), "{}", stderr(&o));
}

#[test]
fn every_call_leaves_an_audit_row_in_the_sqlite_file() {
    let env = Env::new();
    env.run(&["call", "calculator", "--args", r#"{"expression":"1+1"}"#]);
    env.run(&["call", "calculator", "--args", r#"{"expression":"1/0"}"#]);
    env.run(&["call", "nope"]);
    let conn = rusqlite::Connection::open(env.data.path().join("toolshed.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT tool, outcome, door, owner FROM audit ORDER BY id")
        .unwrap();
    let rows: Vec<(String, String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let brief: Vec<(&str, &str)> = rows.iter().map(|r| (r.0.as_str(), r.1.as_str())).collect();
    assert_eq!(
        brief,
        vec![
            ("calculator", "ok"),
            ("calculator", "error"),
            ("nope", "error")
        ]
    );
    assert!(rows.iter().all(|r| r.2 == "cli" && r.3 == "cli"));
}

#[test]
fn tools_list_show_and_group_filter() {
    let env = Env::new();
    let o = env.run(&["tools", "list", "--json"]);
    let tools: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in [
        "calculator",
        "crypto",
        "datetime",
        "json_ops",
        "markdown",
        "random",
        "text",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert!(tools.iter().all(|t| t["input_schema"]["type"] == "object"));

    let o = env.run(&["tools", "list", "--group", "util"]);
    assert!(stdout(&o).starts_with("NAME"), "{}", stdout(&o));
    let o = env.run(&["tools", "list", "--group", "nope"]);
    assert!(
        stdout(&o).contains("No tools in group `nope`"),
        "{}",
        stdout(&o)
    );

    let o = env.run(&["tools", "show", "calculator"]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("plugin: system.calculator"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("\"expression\""), "{}", stdout(&o));
    let o = env.run(&["tools", "show", "calc"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("did you mean calculator"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn shipped_profiles_narrow_the_list_and_size_says_what_a_model_pays() {
    let env = Env::new();
    let names = |args: &[&str]| -> Vec<String> {
        let o = env.run(args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let tools: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let coding = names(&["tools", "list", "--json", "--profile", "coding"]);
    for expected in [
        "workspace_edit",
        "exec_command",
        "write_stdin",
        "shell",
        "web_fetch",
    ] {
        assert!(coding.iter().any(|n| n == expected), "{coding:?}");
    }
    // Background processes (the port proxy's) are not a coding agent's: left out.
    assert!(
        !coding
            .iter()
            .any(|n| n == "calculator" || n == "http_request" || n == "process_exec"),
        "{coding:?}"
    );
    let readonly = names(&["tools", "list", "--json", "--profile", "readonly"]);
    assert!(
        readonly.iter().any(|n| n == "workspace_read"),
        "{readonly:?}"
    );
    for refused in [
        "workspace_write",
        "workspace_edit",
        "exec_command",
        "http_request",
    ] {
        assert!(!readonly.iter().any(|n| n == refused), "{readonly:?}");
    }
    let web = names(&["tools", "list", "--json", "--profile", "web"]);
    assert!(
        web.iter().any(|n| n == "web_fetch") && web.iter().any(|n| n == "http_request"),
        "{web:?}"
    );
    assert!(!web.iter().any(|n| n.starts_with("workspace_")), "{web:?}");
    let all = names(&["tools", "list", "--json", "--profile", "all"]);
    assert_eq!(all, names(&["tools", "list", "--json"]));

    // --size: bytes per tool and the total a client is sent.
    let o = env.run(&["tools", "list", "--profile", "coding", "--size"]);
    let out = stdout(&o);
    assert!(out.lines().next().unwrap().contains("BYTES"), "{out}");
    let total = out.lines().last().unwrap();
    assert!(
        total.starts_with(&format!(
            "tools/list with --profile coding: {} tools, ",
            coding.len()
        )) && total.contains(" bytes (about "),
        "{out}"
    );
    let o = env.run(&["tools", "list", "--json", "--size"]);
    let tools: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        tools
            .iter()
            .all(|t| t["listed_bytes"].as_u64().unwrap() > 100)
    );

    // An unknown profile names the ones there are; a configured one replaces the built-in.
    let o = env.run(&["tools", "list", "--profile", "nope"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("all, coding, plan, readonly, web"),
        "{}",
        stderr(&o)
    );
    env.write(
        "toolshed.toml",
        "[profiles.coding]\nallow = [\"calculator\"]\n",
    );
    assert_eq!(
        names(&["tools", "list", "--json", "--profile", "coding"]),
        ["calculator"]
    );
}

#[test]
fn review_rules_from_the_workspace_config_hide_and_deny_tools() {
    let env = Env::new();
    env.write("toolshed.toml", "[review]\ndeny = [\"random\"]\n");
    let o = env.run(&["tools", "list"]);
    assert!(!stdout(&o).contains("random"), "{}", stdout(&o));
    let o = env.run(&["call", "random"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("[denied] denied by review.deny rule `random`"),
        "{}",
        stderr(&o)
    );
}

/// Every tool of the default catalog (built-in and curated) with its group, danger and
/// annotations: review rules and policy match on these, so a tool cannot land unclassified
/// (a new one fails here until it is added, with its classification checked).
const CATALOG: &[(&str, &str, &str, &str)] = &[
    // name, group, danger, annotations: r(ead only) d(estructive) i(dempotent) o(pen world)
    // Their effects are the calls they make, each checked on its own (as run_code's).
    ("agent_run", "agents", "medium", "-d-o"),
    ("agent_presets_list", "agents", "low", "r-i-"),
    ("ask_user", "ask", "low", "r---"),
    ("calculator", "util", "low", "r-i-"),
    ("command_run_list", "exec", "low", "r-i-"),
    ("command_run_read_output", "exec", "low", "r-i-"),
    ("command_run_terminate", "exec", "high", "-di-"),
    ("command_run_wait", "exec", "low", "r-i-"),
    ("crypto", "util", "low", "r-i-"),
    ("datetime", "util", "low", "r-i-"),
    ("exec_command", "exec", "high", "-d-o"),
    ("firecrawl_scrape", "web", "high", "r-io"),
    ("github_get_file", "github", "low", "r-io"),
    ("github_get_issue", "github", "low", "r-io"),
    ("github_get_pull", "github", "low", "r-io"),
    ("github_list_issues", "github", "low", "r-io"),
    ("github_list_pulls", "github", "low", "r-io"),
    ("http_request", "http", "high", "-d-o"),
    ("json_ops", "util", "low", "r-i-"),
    ("markdown", "util", "low", "r-i-"),
    // Memory writes add or archive, never destroy; a delete is restorable but still one.
    ("memory_append_daily", "memory", "low", "----"),
    ("memory_compact_summary", "memory", "medium", "----"),
    ("memory_delete", "memory", "medium", "-di-"),
    ("memory_get", "memory", "low", "r-i-"),
    ("memory_list", "memory", "low", "r-i-"),
    ("memory_search", "memory", "low", "r-i-"),
    ("memory_store", "memory", "low", "----"),
    ("goal_set", "agents", "low", "----"),
    ("goal_status", "agents", "low", "r-i-"),
    // A plan is put to the person before it runs (docs/agents.md#plan-mode).
    ("plan_enter", "agents", "low", "----"),
    ("plan_submit", "agents", "low", "----"),
    ("process_exec", "exec", "high", "-d-o"),
    ("process_list", "exec", "low", "r-i-"),
    ("process_proxy_info", "exec", "low", "r-i-"),
    ("process_read_output", "exec", "low", "r-i-"),
    ("process_stop", "exec", "high", "-di-"),
    ("random", "util", "low", "r---"),
    // Its effects are the tools it calls, each checked on its own.
    ("run_code", "code", "medium", "-d-o"),
    ("schedule_create", "agents", "medium", "----"),
    ("schedule_delete", "agents", "medium", "-di-"),
    ("schedule_list", "agents", "low", "r-i-"),
    ("shell", "exec", "high", "-d-o"),
    ("text", "util", "low", "r-i-"),
    ("todo_read", "agents", "low", "r-i-"),
    ("todo_write", "agents", "low", "----"),
    ("web_fetch", "web", "high", "r-io"),
    ("workflow_list", "agents", "low", "r-i-"),
    ("workflow_run", "agents", "medium", "-d-o"),
    ("web_search", "web", "high", "r-io"),
    ("text_summarize", "util", "high", "r--o"),
    ("text_translate", "util", "high", "r--o"),
    ("download_file", "download", "high", "--io"),
    ("download_batch", "download", "high", "--io"),
    ("mail_send", "mail", "high", "---o"),
    ("iot_control", "homeassistant", "high", "-d-o"),
    ("iot_query", "homeassistant", "low", "r-io"),
    ("lsp", "lsp", "low", "r-i-"),
    ("lsp_rename", "lsp", "medium", "-d--"),
    ("skill_list", "skills", "low", "r-i-"),
    ("skill_load", "skills", "low", "r-i-"),
    ("skill_run", "skills", "medium", "r---"),
    ("webhook_send", "webhook", "medium", "---o"),
    ("workspace_delete", "workspace", "high", "-di-"),
    ("workspace_edit", "workspace", "medium", "-d--"),
    ("workspace_find", "workspace", "low", "r-i-"),
    ("workspace_glob", "workspace", "low", "r-i-"),
    ("workspace_grep", "workspace", "low", "r-i-"),
    ("workspace_list", "workspace", "low", "r-i-"),
    ("workspace_mkdir", "workspace", "low", "--i-"),
    ("workspace_move", "workspace", "medium", "-d--"),
    ("workspace_patch", "workspace", "medium", "-d--"),
    ("workspace_read", "workspace", "low", "r-i-"),
    ("workspace_stat", "workspace", "low", "r-i-"),
    ("workspace_tree", "workspace", "low", "r-i-"),
    ("workspace_write", "workspace", "medium", "-di-"),
    ("write_stdin", "exec", "high", "-d-o"),
];

#[test]
fn every_tool_of_the_catalog_is_classified() {
    let env = Env::new();
    let curated = concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins");
    let o = env
        .cmd(&["tools", "list", "--json"])
        .env("TOOLSHED_CURATED_DIR", curated)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let listed: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let flag = |t: &Value, key: &str, c: char| {
        if t["annotations"][key] == true {
            c
        } else {
            '-'
        }
    };
    let seen: Vec<(String, String, String, String)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let flags: String = [
                flag(t, "read_only", 'r'),
                flag(t, "destructive", 'd'),
                flag(t, "idempotent", 'i'),
                flag(t, "open_world", 'o'),
            ]
            .iter()
            .collect();
            (
                t["name"].as_str().unwrap().to_string(),
                t["group"].as_str().unwrap().to_string(),
                t["danger"].as_str().unwrap().to_string(),
                flags,
            )
        })
        .collect();
    let expected: Vec<(String, String, String, String)> = CATALOG
        .iter()
        .map(|(n, g, d, f)| (n.to_string(), g.to_string(), d.to_string(), f.to_string()))
        .collect();
    for row in &seen {
        assert!(
            expected.contains(row),
            "{row:?} is not in CATALOG as listed (a new or reclassified tool: add it, with its group, danger and annotations)"
        );
    }
    for row in &expected {
        assert!(seen.contains(row), "{row:?} is no longer in the catalog");
    }
    // The rules review and policy rely on, whatever a tool is called.
    for (name, group, danger, flags) in &seen {
        let starts_processes = ["exec_command", "shell", "process_exec", "write_stdin"];
        if starts_processes.contains(&name.as_str()) {
            assert_eq!(
                group, "exec",
                "{name} drives processes, so it is in group exec"
            );
            assert!(
                flags.ends_with('o'),
                "{name} can reach the network: open_world"
            );
        }
        if ["web", "http", "github", "webhook"].contains(&group.as_str()) {
            assert!(
                flags.ends_with('o'),
                "{name} reaches the network: open_world"
            );
        }
        if flags.starts_with('r') {
            assert!(!flags.contains('d'), "{name} is read-only and destructive");
        }
        if flags.contains('d') {
            assert_ne!(danger, "low", "{name} is destructive, so not low danger");
        }
    }
}

#[test]
fn rules_by_group_and_danger_hide_and_refuse_tools_whatever_their_names() {
    let exec_group = [
        "command_run_list",
        "command_run_read_output",
        "command_run_terminate",
        "command_run_wait",
        "exec_command",
        "process_exec",
        "process_list",
        "process_proxy_info",
        "process_read_output",
        "process_stop",
        "shell",
        "write_stdin",
    ];
    let high = CATALOG
        .iter()
        .filter(|(_, _, danger, _)| *danger == "high")
        .map(|(name, ..)| *name)
        .collect::<Vec<_>>();
    for (rule, hidden, call, args) in [
        (
            "group:exec",
            exec_group.to_vec(),
            "shell",
            r#"{"command":"touch ran"}"#,
        ),
        (
            "danger:high",
            high,
            "exec_command",
            r#"{"cmd":"touch ran"}"#,
        ),
    ] {
        let env = Env::new();
        env.write("toolshed.toml", &format!("[review]\ndeny = [\"{rule}\"]\n"));
        let o = env.run(&["tools", "list", "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let listed: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let names: Vec<&str> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        for name in &hidden {
            assert!(!names.contains(name), "{rule} left {name} visible");
        }
        assert!(names.contains(&"calculator") && names.contains(&"workspace_read"));
        let o = env.run(&["call", call, "--args", args]);
        assert_eq!(code(&o), 1, "{rule}: {}", stdout(&o));
        assert!(
            stderr(&o).contains(&format!("denied by review.deny rule `{rule}`")),
            "{rule}: {}",
            stderr(&o)
        );
        assert!(
            !env.workspace.path().join("ran").exists(),
            "{rule}: {call} ran"
        );
        let o = env.run(&["tools", "show", call]);
        assert_eq!(code(&o), 1, "{rule}: {call} is shown");
    }
}

#[test]
fn disable_and_enable_round_trip() {
    let env = Env::new();
    let o = env.run(&["plugins", "disable", "system.text"]);
    assert_eq!(
        (code(&o), stdout(&o).starts_with("system.text: disabled")),
        (0, true),
        "{}",
        stdout(&o)
    );
    let o = env.run(&[
        "call",
        "text",
        "--args",
        r#"{"operation":"count","text":"a b"}"#,
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("toolshed plugins enable system.text"),
        "{}",
        stderr(&o)
    );
    let o = env.run(&["plugins", "enable", "system.text"]);
    assert_eq!(stdout(&o).trim(), "system.text: running");
    let o = env.run(&[
        "call",
        "text",
        "--args",
        r#"{"operation":"count","text":"a b"}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = env.run(&["plugins", "enable", "system.txt"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("did you mean system.text"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_missing_workspace_is_bad_usage() {
    let env = Env::new();
    let o = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("HOME", env.data.path())
        .args(["--workspace", "/definitely/not/here", "--data-dir"])
        .arg(env.data.path())
        .args(["tools", "list"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("/definitely/not/here"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn workspace_read_and_an_edit_refused_until_the_file_was_read() {
    let env = Env::new();
    env.write("src/main.rs", "fn main() {}\n");
    let o = env.run(&[
        "call",
        "workspace_edit",
        "--args",
        r#"{"path":"src/main.rs","old_text":"fn main() {}","new_text":"fn main() { run() }"}"#,
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("[conflict]")
            && stderr(&o).contains("read it with workspace_read first"),
        "{}",
        stderr(&o)
    );

    let o = env.run(&[
        "call",
        "workspace_read",
        "--args",
        r#"{"path":"src/main.rs"}"#,
    ]);
    assert_eq!(
        (code(&o), stdout(&o).as_str()),
        (0, "     1\tfn main() {}\n"),
        "{}",
        stderr(&o)
    );

    // The read of one run allows the edit of the next (same owner), but not another owner's.
    let o = env.run(&[
        "call",
        "--owner",
        "someone-else",
        "workspace_edit",
        "--args",
        r#"{"path":"src/main.rs","old_text":"fn main() {}","new_text":"fn main() { run() }"}"#,
    ]);
    assert_eq!(code(&o), 1);
    let o = env.run(&[
        "call",
        "workspace_edit",
        "--args",
        r#"{"path":"src/main.rs","old_text":"fn main() {}","new_text":"fn main() { run() }"}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("+fn main() { run() }"),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        std::fs::read_to_string(env.workspace.path().join("src/main.rs")).unwrap(),
        "fn main() { run() }\n"
    );

    // Paths outside the workspace are denied.
    let o = env.run(&[
        "call",
        "workspace_read",
        "--args",
        r#"{"path":"../outside.txt"}"#,
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("[denied]") && stderr(&o).contains("outside the workspace"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn mcp_refuses_an_unknown_profile_or_an_empty_tool_list_before_serving() {
    let env = Env::new();
    let out = env.run(&["mcp", "--profile", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no profile `nope`"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty(), "stdout belongs to the protocol");

    let out = env.run(&["mcp", "--tools", " , "]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--tools names no tools"),
        "{}",
        stderr(&out)
    );

    let out = env.run(&["mcp", "--tools", "a["]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("`a[`"), "{}", stderr(&out));
}

#[test]
fn mcp_with_stdin_closed_exits_cleanly_and_silently() {
    let env = Env::new();
    let out = env.run(&["mcp"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
}

#[test]
fn token_is_generated_once_into_a_private_file_and_printed() {
    let env = Env::new();
    let first = env.run(&["token"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let token = stdout(&first).trim().to_string();
    assert_eq!(token.len(), 64, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    let path = env.data.path().join("token");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let again = env.run(&["token"]);
    assert_eq!(stdout(&again).trim(), token);
}

#[test]
fn serve_prints_its_bound_address_and_refuses_a_missing_token() {
    use std::io::{BufRead, BufReader, Read};
    let env = Env::new();
    let mut child = env
        .cmd(&["serve", "--port", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let address = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "serve exited before listening"
        );
        if let Some(rest) = line.trim().strip_prefix("listening on http://") {
            break rest.strip_suffix("/mcp").unwrap().to_string();
        }
    };
    assert!(address.starts_with("127.0.0.1:"), "{address}");
    assert_ne!(address, "127.0.0.1:0");
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 401"), "{reply}");
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads the child's stderr up to `listening on http://ADDR/mcp` and returns ADDR.
fn listening_address(child: &mut std::process::Child) -> String {
    use std::io::{BufRead, BufReader};
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "serve exited before listening"
        );
        if let Some(rest) = line.trim().strip_prefix("listening on http://") {
            return rest.strip_suffix("/mcp").unwrap().to_string();
        }
    }
}

#[test]
fn serve_takes_its_port_from_the_config() {
    let env = Env::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    env.write("toolshed.toml", &format!("[server]\nport = {port}\n"));
    let mut child = env.cmd(&["serve"]).stderr(Stdio::piped()).spawn().unwrap();
    let address = listening_address(&mut child);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(address, format!("127.0.0.1:{port}"));
}

#[test]
fn serve_refuses_a_remote_address_unless_allowed() {
    let env = Env::new();
    let out = env.run(&["serve", "--bind", "0.0.0.0", "--port", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--allow-remote"), "{}", stderr(&out));
    env.write_user_config("[server]\nbind = \"0.0.0.0\"\n");
    let out = env.run(&["serve", "--port", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    let mut child = env
        .cmd(&["serve", "--port", "0", "--allow-remote"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let address = listening_address(&mut child);
    let _ = child.kill();
    let _ = child.wait();
    assert!(address.starts_with("0.0.0.0:"), "{address}");
}

const PLUGIN_TOML: &str = r#"
id = "acme.hello"
version = "1.2.0"
name = "Hello"
kind = "js"
entry = "main.js"
[[tools]]
name = "hello_greet"
description = "Greet."
[[config]]
key = "region"
type = "string"
default = "eu"
description = "Where to greet."
[[config]]
key = "retries"
type = "number"
[[config]]
key = "verbose"
type = "boolean"
[[config]]
key = "mode"
type = "select"
options = ["fast", "safe"]
[[config]]
key = "headers"
type = "object"
[[config]]
key = "token"
type = "string"
secret = true
"#;

fn tar_gz_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (name, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, *data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in files {
        writer
            .start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(data).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn listed_plugin(env: &Env, id: &str) -> Option<Value> {
    let o = env.run(&["plugins", "list", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .cloned()
}

#[test]
fn plugins_health_asks_a_plugins_own_health_export() {
    let env = Env::new();
    env.write(
        ".toolshed/plugins/acme.moody/plugin.toml",
        "id = \"acme.moody\"\nversion = \"1.0.0\"\nname = \"Moody\"\nkind = \"js\"\n",
    );
    env.write(
        ".toolshed/plugins/acme.moody/main.js",
        "export function activate(c) { c.registerActions([{ name: 'a', description: 'd', run: () => 'ok' }]); }\n\
         export function health() { return { status: 'degraded', message: 'quota 90% used' }; }\n",
    );
    let o = env.run(&["plugins", "health", "acme.moody", "--json"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["plugins"][0],
        json!({"id": "acme.moody", "state": "degraded", "health": "degraded", "message": "quota 90% used"})
    );
    let o = env.run(&["plugins", "health", "system.web"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("system.web") && stdout(&o).contains("ok"),
        "{}",
        stdout(&o)
    );
    let o = env.run(&["plugins", "health", "acme.nope"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("no plugin `acme.nope`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn plugins_verify_names_each_file_changed_added_or_removed_since_the_install() {
    let env = Env::new();
    env.write("src/hello/plugin.toml", PLUGIN_TOML);
    env.write("src/hello/main.js", "export function activate() {}\n");
    env.write("src/hello/lib/util.js", "export const x = 1;\n");
    let dir = env.workspace.path().join("src/hello");
    let o = env.run(&["plugins", "install", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let listed = listed_plugin(&env, "acme.hello").expect("listed");
    let source = std::fs::canonicalize(&dir).unwrap();
    assert_eq!(listed["provenance"]["source"], source.display().to_string());
    assert_eq!(
        listed["provenance"]["tree_sha256"].as_str().unwrap().len(),
        64
    );
    let o = env.run(&["plugins", "verify", "acme.hello"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("every file is as installed"),
        "{}",
        stdout(&o)
    );

    let installed = env.data.path().join("plugins/acme.hello");
    std::fs::write(
        installed.join("main.js"),
        "export function activate() { steal(); }\n",
    )
    .unwrap();
    std::fs::write(installed.join("extra.js"), "x").unwrap();
    std::fs::remove_file(installed.join("lib/util.js")).unwrap();
    let o = env.run(&["plugins", "verify", "acme.hello", "--json"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["clean"], false);
    assert_eq!(
        v["drift"],
        json!({"changed": ["main.js"], "added": ["extra.js"], "removed": ["lib/util.js"]})
    );
    assert!(
        stderr(&o).contains("1 changed, 1 added, 1 removed"),
        "{}",
        stderr(&o)
    );

    // A plugin toolshed did not install has nothing to verify against.
    let o = env.run(&["plugins", "verify", "system.web"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("no record of installing"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn plugins_install_from_a_directory_then_force_and_uninstall() {
    let env = Env::new();
    env.write("src/hello/plugin.toml", PLUGIN_TOML);
    env.write("src/hello/main.js", "export function activate() {}\n");
    let dir = env.workspace.path().join("src/hello");
    let o = env.run(&["plugins", "install", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("acme.hello 1.2.0: installed into "),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("extracted: 2 entries"),
        "{}",
        stderr(&o)
    );
    let installed = env.data.path().join("plugins/acme.hello");
    assert!(installed.join("main.js").is_file());
    let listed = listed_plugin(&env, "acme.hello").expect("listed");
    assert_eq!(listed["root"], "user");

    let o = env.run(&["plugins", "install", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("already installed") && stderr(&o).contains("--force"),
        "{}",
        stderr(&o)
    );
    let o = env.run(&["plugins", "install", "--force", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("replaced"), "{}", stdout(&o));

    let o = env.run(&["plugins", "reload", "acme.hello"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("acme.hello: "), "{}", stdout(&o));
    let o = env.run(&["plugins", "reload", "acme.nope"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("no plugin `acme.nope`"),
        "{}",
        stderr(&o)
    );

    let o = env.run(&["plugins", "config", "acme.hello", "retries", "3"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = env.run(&["plugins", "uninstall", "acme.hello"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("uninstalled"), "{}", stdout(&o));
    assert!(!installed.exists());
    assert!(listed_plugin(&env, "acme.hello").is_none());
    let db = rusqlite::Connection::open(env.data.path().join("toolshed.db")).unwrap();
    let rows: i64 = db
        .query_row(
            "SELECT count(*) FROM config_values WHERE plugin_id = 'acme.hello'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 0);
}

#[test]
fn plugins_install_archives_with_checksums_and_ids() {
    let env = Env::new();
    let files: &[(&str, &[u8])] = &[
        ("hello-1.2.0/plugin.toml", PLUGIN_TOML.as_bytes()),
        ("hello-1.2.0/main.js", b"export function activate() {}\n"),
    ];
    let tgz = tar_gz_of(files);
    let tgz_path = env.workspace.path().join("hello.tgz");
    std::fs::write(&tgz_path, &tgz).unwrap();
    let tgz_arg = tgz_path.to_str().unwrap();

    let o = env.run(&["plugins", "install", tgz_arg, "--id", "acme.other"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("not `acme.other`"), "{}", stderr(&o));
    let o = env.run(&["plugins", "install", tgz_arg, "--sha256", &"ab".repeat(32)]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("checksum mismatch"), "{}", stderr(&o));
    assert!(listed_plugin(&env, "acme.hello").is_none());

    let sha = sha256_hex(&tgz);
    let o = env.run(&[
        "plugins",
        "install",
        tgz_arg,
        "--sha256",
        &sha,
        "--id",
        "acme.hello",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("top-level directory `hello-1.2.0/`"),
        "{}",
        stderr(&o)
    );
    assert!(env.data.path().join("plugins/acme.hello/main.js").is_file());
    let o = env.run(&["plugins", "uninstall", "acme.hello"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let zip_path = env.workspace.path().join("hello.zip");
    std::fs::write(
        &zip_path,
        zip_of(&[("plugin.toml", PLUGIN_TOML.as_bytes())]),
    )
    .unwrap();
    let o = env.run(&["plugins", "install", zip_path.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(listed_plugin(&env, "acme.hello").is_some());
}

#[test]
fn plugins_install_refuses_urls_corrupt_and_hostile_archives() {
    let env = Env::new();
    let sha = "0".repeat(64);
    for (args, says) in [
        (vec!["https://example.invalid/p.tgz"], "needs --sha256"),
        (
            vec!["http://127.0.0.1:9/p.tgz", "--sha256", &sha],
            "only https",
        ),
        (
            vec!["https://127.0.0.1:9/p.tgz?key=s3cret", "--sha256", &sha],
            "loopback",
        ),
    ] {
        let mut all = vec!["plugins", "install"];
        all.extend(args);
        let o = env.run(&all);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
        assert!(!stderr(&o).contains("s3cret"), "{}", stderr(&o));
    }

    // Not an archive at all, with a wrong checksum: the checksum answers, not the parser.
    let junk = env.workspace.path().join("junk.tar.gz");
    std::fs::write(&junk, b"definitely not gzip").unwrap();
    let o = env.run(&[
        "plugins",
        "install",
        junk.to_str().unwrap(),
        "--sha256",
        &"0".repeat(64),
    ]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("checksum mismatch"), "{}", stderr(&o));
    let o = env.run(&["plugins", "install", junk.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("not a readable archive"),
        "{}",
        stderr(&o)
    );

    let slip = env.workspace.path().join("slip.zip");
    std::fs::write(
        &slip,
        zip_of(&[("plugin.toml", PLUGIN_TOML.as_bytes()), ("../evil", b"x")]),
    )
    .unwrap();
    let o = env.run(&["plugins", "install", slip.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("refused entry `../evil`"),
        "{}",
        stderr(&o)
    );
    assert!(!env.data.path().join("evil").exists());
    let left: Vec<_> = std::fs::read_dir(env.data.path().join("plugins"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, [".lock"]);

    // A plugin that comes with toolshed cannot be shadowed by an installed copy.
    let system = listed_plugin_ids(&env)
        .into_iter()
        .next()
        .expect("a built-in plugin");
    env.write(
        "src/shadow/plugin.toml",
        &PLUGIN_TOML.replace("acme.hello", &system),
    );
    let o = env.run(&[
        "plugins",
        "install",
        env.workspace.path().join("src/shadow").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("comes with toolshed"), "{}", stderr(&o));
}

fn listed_plugin_ids(env: &Env) -> Vec<String> {
    let o = env.run(&["plugins", "list", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_staging_dir_left_by_a_killed_install_is_cleaned_and_never_listed() {
    let env = Env::new();
    let staging = env.data.path().join("plugins/.staging-Xk1ll/tree");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::write(staging.join("plugin.toml"), PLUGIN_TOML).unwrap();
    assert!(listed_plugin(&env, "acme.hello").is_none());
    assert!(!env.data.path().join("plugins/.staging-Xk1ll").exists());
}

#[test]
fn plugins_config_lists_gets_and_sets_and_never_prints_secrets() {
    let env = Env::new();
    env.write(".toolshed/plugins/hello/plugin.toml", PLUGIN_TOML);
    let secret = "s3cr3t-token-value";
    let everything = |o: &Output| format!("{}{}", stdout(o), stderr(o));

    let o = env.run(&["plugins", "config", "acme.hello"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let listing = stdout(&o);
    assert!(
        listing.contains("region") && listing.contains("\"eu\" (default)"),
        "{listing}"
    );
    assert!(listing.contains("(secret, unset)"), "{listing}");

    let o = env.run(&["plugins", "config", "acme.hello", "token", secret]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!everything(&o).contains(secret), "{}", everything(&o));
    assert!(stdout(&o).contains("secret, not shown"));

    let o = env.run(&["plugins", "config", "acme.hello"]);
    assert!(stdout(&o).contains("(secret, set)"), "{}", stdout(&o));
    assert!(!everything(&o).contains(secret));
    let o = env.run(&["plugins", "config", "acme.hello", "token"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("secret; set or unset only"),
        "{}",
        stderr(&o)
    );
    assert!(!everything(&o).contains(secret));
    for args in [
        &["plugins", "list", "--json"][..],
        &["plugins", "list"][..],
        &["doctor", "--json"][..],
    ] {
        let o = env.run(args);
        assert!(!everything(&o).contains(secret), "{args:?}");
    }

    // A secret from standard input keeps it out of the process list and shell history.
    let o = with_input(
        env.cmd(&["plugins", "config", "acme.hello", "token", "-"]),
        b"from-stdin\n",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let db = rusqlite::Connection::open(env.data.path().join("toolshed.db")).unwrap();
    let stored: String = db
        .query_row(
            "SELECT value FROM config_values WHERE plugin_id = 'acme.hello' AND key = 'token'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // Stored sealed under the data dir's key, never in clear (crates/toolshed-host/tests/
    // secrets.rs reads it back).
    assert!(
        stored.starts_with("sealed:v1:") && !stored.contains("from-stdin"),
        "{stored}"
    );

    let o = env.run(&["plugins", "config", "acme.hello", "region"]);
    assert_eq!((code(&o), stdout(&o).trim()), (0, "eu"));
    for (key, value, shown) in [
        ("retries", "3", "3"),
        ("verbose", "true", "true"),
        ("mode", "fast", "fast"),
        ("region", "us-east", "us-east"),
        ("headers", r#"{"x":"y"}"#, r#"{"x":"y"}"#),
    ] {
        let o = env.run(&["plugins", "config", "acme.hello", key, value]);
        assert_eq!(code(&o), 0, "{key}: {}", stderr(&o));
        let o = env.run(&["plugins", "config", "acme.hello", key]);
        assert_eq!((code(&o), stdout(&o).trim()), (0, shown), "{key}");
    }
    for (key, value, problem) in [
        ("retries", "many", "`retries` must be a number"),
        ("verbose", "yes", "`verbose` must be a boolean"),
        ("mode", "slow", "`mode` must be one of \"fast\", \"safe\""),
        ("headers", "[1]", "`headers` must be an object"),
    ] {
        let o = env.run(&["plugins", "config", "acme.hello", key, value]);
        assert_eq!(code(&o), 2, "{key}");
        assert!(stderr(&o).contains(problem), "{key}: {}", stderr(&o));
    }
    let o = env.run(&["plugins", "config", "acme.hello", "nope"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("fields: region, retries"),
        "{}",
        stderr(&o)
    );
    let o = env.run(&["plugins", "config", "acme.hello", "retries"]);
    assert_eq!(stdout(&o).trim(), "3");
}

#[test]
fn a_javascript_plugin_round_trips_through_the_cli() {
    let env = Env::new();
    let hello = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/hello-plugin");
    let o = env.run(&["plugins", "install", hello]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let call = |env: &Env| env.run(&["call", "hello_greet", "--args", r#"{"name":"Ada"}"#]);
    let o = call(&env);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("Hello, Ada."), "{}", stdout(&o));
    assert_eq!(
        listed_plugin(&env, "example.hello").unwrap()["tools"],
        json!(["hello_greet"])
    );

    assert_eq!(code(&env.run(&["plugins", "disable", "example.hello"])), 0);
    let o = call(&env);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("disabled"), "{}", stderr(&o));
    assert_eq!(code(&env.run(&["plugins", "enable", "example.hello"])), 0);
    let o = env.run(&["plugins", "reload", "example.hello"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("running"), "{}", stdout(&o));

    // It asks for nothing, so nothing can be granted.
    let o = env.run(&["plugins", "grant", "example.hello", "http:example.com"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("does not ask for network access"),
        "{}",
        stderr(&o)
    );
    let o = env.run(&["plugins", "grant", "example.hello", "--list"]);
    assert!(stdout(&o).contains("asks for: nothing"), "{}", stdout(&o));

    // A broken edit puts it in error with the reason; the rest keeps working.
    let installed = env.data.path().join("plugins/example.hello/main.js");
    std::fs::write(&installed, "export function activate( {").unwrap();
    let o = env.run(&["plugins", "reload", "example.hello"]);
    assert!(stdout(&o).contains("error"), "{}", stdout(&o));
    let o = env.run(&["call", "calculator", "--args", r#"{"expression":"1+1"}"#]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let o = env.run(&["plugins", "uninstall", "example.hello"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(listed_plugin(&env, "example.hello").is_none());
}

/// A server on 127.0.0.1 answering `hello` to every request, counting connections.
fn hello_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::Read;
    use std::sync::atomic::Ordering;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
            );
        }
    });
    (port, count)
}

#[test]
fn http_request_reaches_loopback_only_through_web_allow() {
    let env = Env::new();
    let (port, connections) = hello_server();
    let args = format!(r#"{{"url":"http://127.0.0.1:{port}/"}}"#);

    let o = env.run(&["call", "http_request", "--args", &args]);
    assert_ne!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("does not fetch private addresses"),
        "{}",
        stderr(&o)
    );
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 0);

    env.write_user_config(&format!("[web]\nallow = [\"127.0.0.1:{port}\"]\n"));
    let o = env.run(&["call", "http_request", "--args", &args]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).starts_with("HTTP 200"), "{}", stdout(&o));
    assert!(stdout(&o).contains("hello"), "{}", stdout(&o));
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);

    env.write_user_config("[web]\nallow = [\"10.0.0.1/8\"]\n");
    let o = env.run(&["tools", "list"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("`10.0.0.1/8`"), "{}", stderr(&o));
    assert!(stderr(&o).contains("10.0.0.0/8"), "{}", stderr(&o));
}

/// `toolshed memory export` and `import` through the binary: memories out as Markdown
/// files, a person's edit and a new file back in, a broken file named with exit 1.
#[test]
fn memories_go_out_as_markdown_and_edits_come_back_through_the_cli() {
    let env = Env::new();
    let stored = env.run(&[
        "call",
        "memory_store",
        "--json",
        "--args",
        r#"{"text":"postgres listens on 5433","tags":["ops"]}"#,
    ]);
    assert_eq!(code(&stored), 0, "{}", stderr(&stored));
    let result: Value = serde_json::from_str(&stdout(&stored)).unwrap();
    let id = result["structured"]["id"].as_str().unwrap().to_string();

    let dir = env.workspace.path().join("notes");
    let dir_arg = dir.to_str().unwrap();
    let exported = env.run(&["memory", "export", dir_arg]);
    assert_eq!(code(&exported), 0, "{}", stderr(&exported));
    assert!(
        stdout(&exported).contains("exported 1 memories of `local`"),
        "{}",
        stdout(&exported)
    );
    // In read-only mode an export into the workspace is refused as any tool's write is
    // (failed before: it wrote there); elsewhere it is the person's own file.
    let inside = env.workspace.path().join("ro-notes");
    let refused = env
        .cmd(&["memory", "export", inside.to_str().unwrap()])
        .env("TOOLSHED_SANDBOX__MODE", "read-only")
        .output()
        .unwrap();
    assert_ne!(code(&refused), 0, "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("read-only"),
        "{}",
        stderr(&refused)
    );
    assert!(!inside.exists());
    let outside = env.data.path().join("exported");
    let done = env
        .cmd(&["memory", "export", outside.to_str().unwrap()])
        .env("TOOLSHED_SANDBOX__MODE", "read-only")
        .output()
        .unwrap();
    assert_eq!(code(&done), 0, "{}", stderr(&done));
    assert!(outside.join(format!("{id}.md")).exists());
    let file = dir.join(format!("{id}.md"));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("5433", "5434")).unwrap();
    std::fs::write(dir.join("new.md"), "deploys go out on tuesdays\n").unwrap();

    let imported = env.run(&["memory", "import", dir_arg]);
    assert_eq!(code(&imported), 0, "{}", stderr(&imported));
    assert!(
        stdout(&imported).contains("1 new, 1 updated, 0 unchanged, 0 failed"),
        "{}",
        stdout(&imported)
    );
    let found = env.run(&[
        "call",
        "memory_search",
        "--args",
        r#"{"query":"5434 OR tuesdays"}"#,
    ]);
    let found = stdout(&found);
    assert!(
        found.contains(&id) && found.contains("**tuesdays**"),
        "{found}"
    );

    std::fs::write(dir.join("broken.md"), "---\ntags: [oops\n---\nx\n").unwrap();
    let failed = env.run(&["memory", "import", dir_arg, "--json"]);
    assert_eq!(code(&failed), 1, "{}", stderr(&failed));
    let report: Value = serde_json::from_str(&stdout(&failed)).unwrap();
    assert_eq!(report["unchanged"], 2, "{report}");
    assert!(
        report["failed"][0]["file"]
            .as_str()
            .unwrap()
            .ends_with("broken.md"),
        "{report}"
    );
}

/// The binary defines the C math functions it calls (src/math.rs): a server does not map
/// glibc's libm (about 0.5 MiB of every process), and the functions answer as before.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn math_library_is_not_loaded() {
    use std::io::BufRead;
    let env = Env::new();
    let mut server = env
        .cmd(&["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .unwrap();
    let mut reply = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut reply)
        .unwrap();
    assert!(reply.contains("serverInfo"), "{reply}");
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", server.id())).unwrap();
    drop(stdin);
    assert!(server.wait().unwrap().success());
    assert!(maps.contains("libc.so"), "{maps}");
    assert!(!maps.contains("libm.so"), "{maps}");

    // sin, cos, tan, log, log10 and pow, through the calculator.
    let o = env.run(&[
        "call",
        "calculator",
        "--args",
        r#"{"expression":"sin(1) + cos(1) + tan(1) + ln(2) + log10(1000) + 2^0.5"}"#,
    ]);
    assert_eq!(
        (code(&o), stdout(&o).as_str()),
        (0, "8.04654175826398\n"),
        "{}",
        stderr(&o)
    );
}
