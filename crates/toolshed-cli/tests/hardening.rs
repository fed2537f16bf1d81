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
