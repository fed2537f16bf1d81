//! The persistent `shell`.

use serde_json::json;

use super::{H, gone, structured};

#[tokio::test]
async fn the_shell_keeps_cwd_env_and_functions_and_resets_after_a_timeout() {
    let h = H::new();
    std::fs::create_dir(h.dir.path().join("sub")).unwrap();
    let first = h
        .call("shell", json!({"command": "cd sub && export GREETING=hi && greet() { echo \"$GREETING $1\"; }"}))
        .await
        .unwrap();
    assert!(!first.is_error, "{}", first.text_joined());
    assert_eq!(structured(&first)["new_shell"], true);
    let second = h
        .call("shell", json!({"command": "pwd; greet there"}))
        .await
        .unwrap();
    let text = structured(&second)["output"].as_str().unwrap().to_string();
    assert!(
        text.trim_start().lines().next().unwrap().ends_with("/sub"),
        "{text}"
    );
    assert!(text.contains("hi there"), "{text}");
    assert_eq!(structured(&second)["new_shell"], false);

    let failed = h
        .call("shell", json!({"command": "ls /no/such/place"}))
        .await
        .unwrap();
    assert!(failed.is_error);
    assert_eq!(structured(&failed)["exit_code"], 2);
    assert!(
        structured(&failed)["output"]
            .as_str()
            .unwrap()
            .contains("No such file")
    );

    let other = h
        .call_as(
            "bob",
            "shell",
            json!({"command": "pwd; echo ${GREETING:-unset}"}),
        )
        .await
        .unwrap();
    assert!(
        structured(&other)["output"]
            .as_str()
            .unwrap()
            .contains("unset"),
        "owners have their own shells"
    );

    let slow = h
        .call(
            "shell",
            json!({"command": "setsid sleep 39.5 & sleep 30", "timeout_ms": 300}),
        )
        .await
        .unwrap();
    assert!(slow.is_error);
    assert!(
        slow.text_joined().contains("timed out"),
        "{}",
        slow.text_joined()
    );
    assert!(gone("sleep 39.5").await);
    let fresh = h
        .call("shell", json!({"command": "pwd; echo ${GREETING:-unset}"}))
        .await
        .unwrap();
    let text = structured(&fresh)["output"].as_str().unwrap();
    assert!(!text.contains("/sub") && text.contains("unset"), "{text}");
    assert_eq!(structured(&fresh)["new_shell"], true);
}

#[tokio::test]
async fn the_shell_does_not_hand_its_input_to_commands() {
    let h = H::new();
    let out = h
        .call("shell", json!({"command": "cat; echo after"}))
        .await
        .unwrap();
    assert_eq!(structured(&out)["output"], "after\n");
    let next = h
        .call("shell", json!({"command": "echo still here"}))
        .await
        .unwrap();
    assert_eq!(structured(&next)["output"], "still here\n");
}

#[tokio::test]
async fn the_shell_survives_syntax_errors_unclosed_quotes_heredocs_and_set_e() {
    let h = H::new();
    h.call("shell", json!({"command": "export KEEP=yes"}))
        .await
        .unwrap();
    for bad in [
        "echo )",
        "echo 'unclosed",
        "cat <<EOF\nhello",
        "set -e; false; echo after",
    ] {
        let out = h
            .call("shell", json!({"command": bad, "timeout_ms": 10000}))
            .await
            .unwrap();
        // Syntax errors fail the command; an unterminated heredoc is only a warning to bash,
        // and `set -e` does not act inside the `if` the command runs in.
        let syntax = bad.starts_with("echo");
        assert_eq!(out.is_error, syntax, "{bad}: {}", out.text_joined());
        assert!(
            !out.text_joined().contains("timed out"),
            "{bad}: {}",
            out.text_joined()
        );
        assert!(
            !out.text_joined().contains("shell exited"),
            "{bad}: {}",
            out.text_joined()
        );
    }
    let heredoc = h
        .call("shell", json!({"command": "cat <<EOF\nhello\nEOF"}))
        .await
        .unwrap();
    assert_eq!(structured(&heredoc)["output"], "hello\n");
    let still = h
        .call("shell", json!({"command": "false; echo $KEEP"}))
        .await
        .unwrap();
    assert_eq!(
        structured(&still)["output"],
        "yes\n",
        "the same shell lives on"
    );
    assert_eq!(structured(&still)["new_shell"], false);
}
