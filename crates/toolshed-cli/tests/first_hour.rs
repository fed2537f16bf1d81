//! The first hour of a new user: the defects they met, the workspace toolshed picks, the
//! rules a cloned repository cannot loosen, and a catalog that lists what works.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{Env, code, stderr, stdout, with_input};

/// `toolshed` with an isolated home and data dir but no `--workspace`, run in `dir`.
fn without_workspace(env: &Env, dir: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = env.bare();
    cmd.env("TOOLSHED_HOME", env.data.path())
        .current_dir(dir)
        .args(args);
    cmd
}

/// The three lines of an MCP session that calls `tool` once, then end of input.
const SESSION: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"x"}}}"#,
    "\n",
);

fn mcp_session(env: &Env, level: Option<&str>) -> std::process::Output {
    let mut cmd = env.cmd(&["mcp"]);
    if let Some(level) = level {
        cmd.env("TOOLSHED_LOG__LEVEL", level);
    }
    with_input(cmd, SESSION.as_bytes())
}

#[test]
fn a_reader_that_goes_away_early_ends_the_output_quietly() {
    let env = Env::new();
    // The reading end is closed before toolshed writes: every write fails with EPIPE.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = env
        .cmd(&["tools", "list", "--json"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn toolshed_lang_is_not_an_unknown_config_key() {
    let env = Env::new();
    let o = env
        .cmd(&["tools", "list"])
        .env("TOOLSHED_LANG", "zh")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("unknown config key"), "{}", stderr(&o));
}

#[test]
fn logs_into_a_pipe_carry_no_colours_and_normal_client_mistakes_are_not_warnings() {
    let env = Env::new();
    let o = mcp_session(&env, Some("debug"));
    let said = stderr(&o);
    // The host (and with it the log level) opens in the background; the session's end
    // is logged after the last reply, so always after that.
    assert!(
        said.contains("the stdio session ended"),
        "debug logging reached stderr: {said}"
    );
    assert!(!said.contains('\u{1b}'), "ANSI escapes in a pipe: {said:?}");
    // At the default level an unknown tool (the client's mistake, answered) logs nothing.
    let o = mcp_session(&env, None);
    let said = stderr(&o);
    assert!(
        stdout(&o).contains("did you mean `workspace_read`"),
        "{}",
        stdout(&o)
    );
    assert!(!said.contains("WARN") && !said.contains("ERROR"), "{said}");
}

/// A client that writes its requests and closes its end (`… | toolshed mcp`) still gets
/// every reply: the calls still running at the end of input are waited for, not dropped.
#[test]
fn calls_still_running_at_the_end_of_input_are_answered() {
    let env = Env::new();
    let session = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 1; echo late"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"1+1"}}}"#,
        "\n",
    );
    let o = with_input(env.cmd(&["mcp"]), session.as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let replies: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text = |id: u64| {
        let reply = replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no reply to {id}: {replies:?}"));
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(text(2).contains("late"), "{replies:?}");
    assert_eq!(text(3), "2", "{replies:?}");
}

#[test]
fn call_help_shows_each_default_once() {
    let o = Env::new().run(&["call", "--help"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        stdout(&o).matches("[default: cli").count(),
        1,
        "{}",
        stdout(&o)
    );
}

#[test]
fn tools_list_summaries_end_with_a_sentence_not_a_colon() {
    let env = Env::new();
    let o = env.run(&["tools", "list"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    for line in text.lines() {
        assert!(!line.trim_end().ends_with(':'), "{line}");
    }
    let crypto = text.lines().find(|l| l.starts_with("crypto ")).unwrap();
    assert!(
        crypto.ends_with("Hash, HMAC, encode or decode bytes."),
        "{crypto}"
    );
}

#[test]
fn counts_of_one_are_singular() {
    let env = Env::new();
    let o = env.run(&[
        "call",
        "workspace_write",
        "--args",
        r#"{"path":"one.txt","content":"a\n"}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("(2 bytes, 1 line)"), "{}", stdout(&o));
    let o = env.run(&["call", "calculator", "--args", r#"{"expression":1}"#]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("(1 problem)"), "{}", stderr(&o));
}

#[test]
fn arguments_are_taken_as_meant_null_for_not_given_and_common_aliases() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let o = env.run(&[
        "call",
        "workspace_read",
        "--args",
        r#"{"file_path":"a.txt","offset":null,"limit":null}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("alpha"), "{}", stdout(&o));
    let o = env.run(&[
        "call",
        "exec_command",
        "--args",
        r#"{"command":"echo via-alias"}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("via-alias"), "{}", stdout(&o));
    // A unit that differs is never guessed: the error names the argument.
    let o = env.run(&[
        "call",
        "exec_command",
        "--args",
        r#"{"cmd":"true","timeout":5}"#,
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("`timeout` is not an argument (did you mean `timeout_ms`?)"),
        "{}",
        stderr(&o)
    );
    // Other tool sets' names lead to ours.
    let o = env.run(&["call", "Bash", "--args", "{}"]);
    assert!(stderr(&o).contains("`exec_command`"), "{}", stderr(&o));
}

#[test]
fn a_broad_directory_is_never_the_workspace_unless_asked_for() {
    let env = Env::new();
    for (dir, what) in [
        (std::path::PathBuf::from("/"), "the root of the file system"),
        (env.data.path().join("home"), "your home directory"),
    ] {
        std::fs::create_dir_all(&dir).unwrap();
        for args in [&["tools", "list"][..], &["mcp"][..]] {
            let o = without_workspace(&env, &dir, args).output().unwrap();
            assert_eq!(code(&o), 2, "{args:?} in {}: {}", dir.display(), stderr(&o));
            let said = stderr(&o);
            assert!(
                said.contains(what) && said.contains("--workspace"),
                "{said}"
            );
        }
        // Said explicitly, it is served.
        let o = without_workspace(&env, &dir, &["tools", "list"])
            .arg("--workspace")
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    // A project directory is fine without the flag.
    let o = without_workspace(&env, env.workspace.path(), &["tools", "list"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// A loopback HTTP server answering every request with `hello`, until the test ends.
fn loopback_site() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    url
}

fn trust_workspace(env: &Env) {
    let dir = env.data.path().join("home/.config/toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "trusted_workspaces = [{:?}]\n",
            env.workspace.path().display().to_string()
        ),
    )
    .unwrap();
}

#[test]
fn a_workspace_file_cannot_open_loopback_or_pass_variables_until_trusted() {
    let env = Env::new();
    let url = loopback_site();
    env.write(
        "toolshed.toml",
        "[web]\nallow = [\"127.0.0.1\"]\n[exec]\nenv_allow = [\"FIRST_HOUR_SECRET\"]\n",
    );
    let fetch = format!(r#"{{"url":"{url}"}}"#);
    let echo = r#"{"cmd":"echo \"v=$FIRST_HOUR_SECRET\""}"#;
    let run = |args: &[&str]| {
        env.cmd(args)
            .env("FIRST_HOUR_SECRET", "s3cret")
            .output()
            .unwrap()
    };

    let o = run(&["call", "web_fetch", "--args", &fetch]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(!stdout(&o).contains("hello"), "{}", stdout(&o));
    let said = stderr(&o);
    assert!(
        said.contains("`web.allow` in") && said.contains("is ignored"),
        "{said}"
    );
    let o = run(&["call", "exec_command", "--args", echo]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("v=\n"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("s3cret"), "{}", stdout(&o));
    let o = run(&["doctor"]);
    assert!(
        stdout(&o).contains("`exec.env_allow` in") && stdout(&o).contains("is ignored"),
        "{}",
        stdout(&o)
    );

    trust_workspace(&env);
    let o = run(&["call", "web_fetch", "--args", &fetch]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("hello"), "{}", stdout(&o));
    let o = run(&["call", "exec_command", "--args", echo]);
    assert!(stdout(&o).contains("v=s3cret"), "{}", stdout(&o));
    // doctor names each widening setting and the file that set it.
    let o = run(&["doctor"]);
    let report = stdout(&o);
    assert!(
        report.contains("`web.allow` is set by") && report.contains("toolshed.toml"),
        "{report}"
    );
}

#[test]
fn the_catalog_says_which_tools_cannot_work_yet_and_they_answer_unconfigured() {
    let env = Env::new();
    let o = env
        .cmd(&["tools", "list", "--json"])
        .env(
            "TOOLSHED_CURATED_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins"),
        )
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let unavailable: Vec<&str> = tools
        .iter()
        .filter(|t| t["available"] == false)
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in ["firecrawl_scrape", "webhook_send"] {
        assert!(unavailable.contains(&name), "{name}: {unavailable:?}");
    }
    // web_search works keyless (DuckDuckGo) on a fresh install...
    assert!(!unavailable.contains(&"web_search"), "{unavailable:?}");
    // ...and names the keyed providers when the fallback is turned off.
    let o = env
        .cmd(&["tools", "list", "--json"])
        .env("TOOLSHED_WEB__SEARCH__FALLBACK", "off")
        .output()
        .unwrap();
    let tools: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let search = tools.iter().find(|t| t["name"] == "web_search").unwrap();
    assert_eq!(search["available"], false, "{search}");
    assert!(
        search["unavailable_reason"]
            .as_str()
            .unwrap()
            .contains("SEARXNG_URL"),
        "{search}"
    );
    // A JavaScript plugin that was not configured says so; it did not fail.
    let o = env
        .cmd(&["call", "webhook_send", "--args", r#"{"text":"hi"}"#])
        .env(
            "TOOLSHED_CURATED_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins"),
        )
        .output()
        .unwrap();
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("[unconfigured]"), "{}", stderr(&o));
    assert!(stderr(&o).contains("`url`"), "{}", stderr(&o));

    // A reader of one web API without its network grant: unconfigured until granted.
    let curated = |args: &[&str]| {
        env.cmd(args)
            .env(
                "TOOLSHED_CURATED_DIR",
                concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins"),
            )
            .output()
            .unwrap()
    };
    let issue = r#"{"repo":"rust-lang/rust","number":1}"#;
    let o = curated(&["call", "github_get_issue", "--args", issue]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert!(
        err.contains("[unconfigured]") && err.contains("`api.github.com`"),
        "{err}"
    );
    assert!(
        err.contains("toolshed plugins grant toolshed.github"),
        "{err}"
    );
    assert_eq!(code(&curated(&["plugins", "grant", "toolshed.github"])), 0);
    let o = curated(&["tools", "list", "--json"]);
    let tools: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let github = tools
        .iter()
        .find(|t| t["name"] == "github_get_issue")
        .unwrap();
    assert_eq!(github["available"], true, "{github}");
}

#[test]
fn bash_completes_subcommands_from_the_generated_script() {
    let env = Env::new();
    let o = env.bare().args(["completions", "bash"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let script = env.data.path().join("toolshed.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    // What bash does on `toolshed au<TAB>` and `toolshed config <TAB>`.
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(toolshed au); COMP_CWORD=1; _toolshed toolshed au toolshed; \
             echo \"${{COMPREPLY[@]}}\"; COMP_WORDS=(toolshed config ''); COMP_CWORD=2; \
             _toolshed toolshed '' config; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(lines[0].trim(), "audit", "{lines:?}");
    assert!(
        lines[1].contains("init") && lines[1].contains("show"),
        "{lines:?}"
    );
    for shell in ["zsh", "fish"] {
        let o = env.bare().args(["completions", shell]).output().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(stdout(&o).contains("audit"), "{shell}");
    }
    let o = env.bare().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("bash"), "{}", stderr(&o));
}

#[test]
fn config_init_writes_a_starter_that_changes_nothing_and_show_names_each_source() {
    let env = Env::new();
    let o = env.bare().args(["config", "init"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let file = env.data.path().join("home/.config/toolshed/config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("#default_timeout_ms = 60000"), "{text}");
    assert!(text.contains("\n[browser]\n"), "{text}");
    assert!(text.contains("\n#executable = "), "{text}");
    // Never overwritten by accident.
    std::fs::write(
        &file,
        text.replace("#default_timeout_ms = 60000", "default_timeout_ms = 5000"),
    )
    .unwrap();
    let o = env.bare().args(["config", "init"]).output().unwrap();
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    // As written, it loads without a warning.
    let o = env.run(&["tools", "list"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));

    env.write(
        "toolshed.toml",
        "[review]\ndeny = [\"calc*\"]\n[web]\nallow = [\"10.0.0.0/8\"]\n\
         [browser]\nwidth = 1000\nevaluate = true\n[lsp.zig]\ncommand = [\"zls\"]\n",
    );
    let o = env
        .cmd(&["config", "show"])
        .env("TOOLSHED_LOG__LEVEL", "info")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let line = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in {out}"))
            .to_string()
    };
    assert!(line("limits.default_timeout_ms").contains("5000"));
    assert!(
        line("limits.default_timeout_ms").ends_with("# ~/.config/toolshed/config.toml"),
        "{out}"
    );
    assert!(
        line("limits.max_timeout_ms").ends_with("# default"),
        "{out}"
    );
    assert!(line("review.deny").ends_with("toolshed.toml"), "{out}");
    assert!(
        line("log.level").ends_with("# environment (TOOLSHED_LOG__LEVEL)"),
        "{out}"
    );
    assert!(line("web.allow").contains("[]"), "{out}");
    assert!(out.contains("ignored: `web.allow`"), "{out}");
    // The browser's and the language servers' sections are theirs, and read, shown and
    // narrowed like the host's own: a workspace's file may change the viewport, not turn on
    // `browser_evaluate` or choose the servers run.
    assert!(line("browser.width").contains("1000"), "{out}");
    assert!(line("browser.width").ends_with("toolshed.toml"), "{out}");
    let evaluate = line("browser.evaluate");
    assert!(
        evaluate.contains("= false") && evaluate.ends_with("# default"),
        "{out}"
    );
    let servers = line("lsp.max_servers");
    assert!(
        servers.contains("= 8") && servers.ends_with("# default"),
        "{out}"
    );
    assert!(out.contains("ignored: `browser.evaluate`"), "{out}");
    assert!(out.contains("ignored: `lsp`"), "{out}");
    assert!(!out.contains("zls"), "{out}");

    let o = env.run(&["config", "show", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let deny = v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "review.deny")
        .unwrap();
    assert_eq!(deny["value"], serde_json::json!(["calc*"]));
}

#[test]
fn the_audit_log_reads_filtered_and_paged_from_the_command_line() {
    let env = Env::new();
    let o = env.run(&["audit"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("no calls recorded yet"),
        "{}",
        stdout(&o)
    );
    for expression in ["1+1", "2+2", "3+3"] {
        let args = format!(r#"{{"expression":"{expression}"}}"#);
        assert_eq!(code(&env.run(&["call", "calculator", "--args", &args])), 0);
    }
    // A call that fails: an unknown path.
    env.run(&[
        "call",
        "workspace_read",
        "--args",
        r#"{"path":"missing.txt"}"#,
    ]);

    let o = env.run(&["audit"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("TIME"), "{out}");
    assert_eq!(out.matches("calculator").count(), 3, "{out}");
    assert!(out.contains("workspace_read"), "{out}");

    let page = |extra: &[&str]| -> Value {
        let mut args = vec!["audit", "--json"];
        args.extend_from_slice(extra);
        let o = env.run(&args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let first = page(&["--tool", "calc*", "--limit", "2", "--since", "1h"]);
    let rows = first["audit"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r["tool"] == "calculator" && r["outcome"] == "ok")
    );
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let second = page(&["--tool", "calc*", "--limit", "2", "--cursor", &cursor]);
    assert_eq!(second["audit"].as_array().unwrap().len(), 1);
    assert!(second["next_cursor"].is_null());
    assert!(rows[1]["id"].as_i64() > second["audit"][0]["id"].as_i64());
    let failed = page(&["--outcome", "error"]);
    assert_eq!(failed["audit"][0]["tool"], "workspace_read", "{failed}");
    assert_eq!(page(&["--owner", "nobody"])["audit"], serde_json::json!([]));
    let future = page(&["--since", "2999-01-01T00:00:00Z"]);
    assert_eq!(future["audit"], serde_json::json!([]));

    for (flag, value, says) in [
        ("--since", "yesterday", "is not a time"),
        ("--limit", "0", "out of range"),
        ("--outcome", "fine", "is not one of"),
        ("--cursor", "abc", "next_cursor"),
    ] {
        let o = env.run(&["audit", flag, value]);
        assert_eq!(code(&o), 2, "{flag} {value}");
        assert!(stderr(&o).contains(says), "{flag}: {}", stderr(&o));
    }
}

/// Whatever the deadline, a write's answer matches the file: a write that happened is never
/// reported as timed out, and one reported as timed out did not happen.
#[test]
fn a_write_reported_as_timed_out_never_happened() {
    let env = Env::new();
    env.write("f.txt", "start\n");
    let mut before = "start\n".to_string();
    let (mut done, mut timed_out) = (0, 0);
    for i in 0..16 {
        let content = format!("version {i}\n{}", "x".repeat(i * 20_000));
        let args = serde_json::json!({"path": "f.txt", "content": content}).to_string();
        let timeout = ["1", "2", "3", "5"][i % 4];
        // Edits follow a read of the current version.
        assert_eq!(
            code(&env.run(&[
                "call",
                "workspace_read",
                "--args",
                r#"{"path":"f.txt","limit":1}"#
            ])),
            0
        );
        let write = [
            "call",
            "workspace_write",
            "--args",
            "-",
            "--timeout-ms",
            timeout,
        ];
        let o = with_input(env.cmd(&write), args.as_bytes());
        let now = std::fs::read_to_string(env.workspace.path().join("f.txt")).unwrap();
        if now == content {
            assert_eq!(code(&o), 0, "written, yet: {}", stderr(&o));
            done += 1;
        } else {
            assert_eq!(now, before, "neither the old nor the new content");
            assert_eq!(code(&o), 1);
            assert!(stderr(&o).contains("timeout"), "{}", stderr(&o));
            timed_out += 1;
        }
        before = now;
    }
    eprintln!("{done} written, {timed_out} timed out");
}

/// A SIGTERM cancels the calls still running at once (the commands they started are
/// stopped), each still gets its reply, and the server exits soon after.
#[test]
fn a_shutdown_cancels_running_calls_at_once_and_answers_them() {
    let env = Env::new();
    let mut child = env
        .cmd(&["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = std::io::BufRead::lines(stdout);
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .unwrap();
    assert!(lines.next().unwrap().unwrap().contains("serverInfo"));
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"exec_command","arguments":{{"cmd":"echo started; sleep 60","yield_ms":30000}}}}}}"#
    )
    .unwrap();
    stdin.flush().unwrap();
    // Long enough for the command to be running.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let asked = std::time::Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let replies: Vec<Value> = lines
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    let status = child.wait().unwrap();
    let took = asked.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(
        took < std::time::Duration::from_secs(20),
        "the server took {took:?} to stop"
    );
    let reply = replies
        .iter()
        .find(|r| r["id"] == 2)
        .unwrap_or_else(|| panic!("no reply to the running call: {replies:?}"));
    let said = reply.to_string();
    assert!(said.contains("cancel"), "{said}");
    drop(stdin);
}
