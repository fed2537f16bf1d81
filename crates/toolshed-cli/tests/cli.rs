//! The built `toolshed` binary, driven as a user would drive it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

struct Env {
    workspace: tempfile::TempDir,
    data: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Self {
            workspace: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    /// `toolshed` with an isolated home, data dir and workspace, and no inherited
    /// `TOOLSHED_*` variables.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolshed"));
        for (key, _) in std::env::vars() {
            if key.starts_with("TOOLSHED_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("HOME", self.data.path().join("home"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .arg("--workspace")
            .arg(self.workspace.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.workspace.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

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
    let mut child = env
        .cmd(&["call", "calculator", "--args", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"expression":"(1+2)^2"}"#)
        .unwrap();
    let o = child.wait_with_output().unwrap();
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

const GOOD_PLUGIN: &str = r#"
id = "acme.notes"
version = "0.1.0"
name = "Notes"
kind = "js"
entry = "main.js"
[[tools]]
name = "notes_search"
description = "Search notes."
"#;

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
    assert!(
        out.contains("acme.notes (error): plugin kind `js` cannot run"),
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
fn review_rules_from_the_workspace_config_hide_and_deny_tools() {
    let env = Env::new();
    env.write("toolshed.toml", "[review]\ndeny = [\"random\"]\n");
    let o = env.run(&["tools", "list"]);
    assert!(!stdout(&o).contains("random"), "{}", stdout(&o));
    let o = env.run(&["call", "random"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("[denied] denied by review.deny pattern `random`"),
        "{}",
        stderr(&o)
    );
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
    env.write("toolshed.toml", "[server]\nbind = \"0.0.0.0\"\n");
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
