//! The workspace tools on `MemoryOps` (and the real file system where it matters).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use toolshed_core::{Content, ErrorKind};

use super::test_support::Harness;

#[tokio::test]
async fn read_numbers_lines_and_pages_with_offset() {
    let h = Harness::memory();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    h.put("src/a.txt", &text);
    let out = h
        .ok(
            "workspace_read",
            json!({"path": "src/a.txt", "offset": 3, "limit": 2}),
        )
        .await;
    assert_eq!(
        out.text_joined(),
        "     3\tline 3\n     4\tline 4\n[truncated — lines 3-4 of 10 shown; continue with offset=5]\n"
    );
    assert_eq!(out.structured.unwrap()["next_offset"], 5);
    let out = h
        .ok("workspace_read", json!({"path": "src/a.txt", "offset": 9}))
        .await;
    assert_eq!(out.text_joined(), "     9\tline 9\n    10\tline 10\n");
    let err = h
        .err("workspace_read", json!({"path": "src/a.txt", "offset": 11}))
        .await;
    assert!(
        err.to_string().contains("past the end") && err.to_string().contains("10 lines"),
        "{err}"
    );
}

#[tokio::test]
async fn read_cuts_long_lines_and_caps_output() {
    let h = Harness::memory();
    h.put("long.txt", &format!("{}\nshort\n", "x".repeat(5000)));
    let out = h
        .ok("workspace_read", json!({"path": "long.txt"}))
        .await
        .text_joined();
    assert!(out.contains("… [line cut at 2000 characters]"), "{out}");
    assert!(out.contains("     2\tshort"));

    let big: String = (0..20_000).map(|i| format!("{i:0>100}\n")).collect();
    h.put("big.txt", &big);
    let out = h
        .ok(
            "workspace_read",
            json!({"path": "big.txt", "limit": 100000}),
        )
        .await;
    let text = out.text_joined();
    assert!(
        text.len() <= super::read::OUTPUT_CAP + 200,
        "{}",
        text.len()
    );
    let next = out.structured.unwrap()["next_offset"].as_u64().unwrap();
    assert!(
        text.ends_with(&format!("continue with offset={next}]\n")),
        "{}",
        &text[text.len() - 100..]
    );

    // Without a limit, a big file comes back as what a model can take in one turn, and
    // the reply says how to go on.
    let out = h.ok("workspace_read", json!({"path": "big.txt"})).await;
    let text = out.text_joined();
    assert!(
        text.len() <= super::read::DEFAULT_OUTPUT_CAP + 200,
        "{}",
        text.len()
    );
    assert!(text.len() > super::read::DEFAULT_OUTPUT_CAP - 200);
    let next = out.structured.unwrap()["next_offset"].as_u64().unwrap();
    assert!(
        text.ends_with(&format!(
            "continue with offset={next}, or find the lines you need with workspace_grep]\n"
        )),
        "{}",
        &text[text.len() - 120..]
    );
    // A small file still comes back whole.
    let small: String = (0..1500).map(|i| format!("line {i}\n")).collect();
    h.put("small.txt", &small);
    let out = h.ok("workspace_read", json!({"path": "small.txt"})).await;
    assert_eq!(out.structured.unwrap()["truncated"], json!(false));
}

#[tokio::test]
async fn read_refuses_binaries_returns_images_and_reports_empty_files() {
    let h = Harness::memory();
    h.ops
        .files
        .write(
            "blob.bin",
            b"\x7fELF\x02\x01\x00\x00junk",
            toolshed_ops::Parents::Create,
        )
        .unwrap();
    let err = h.err("workspace_read", json!({"path": "blob.bin"})).await;
    assert!(
        err.to_string()
            .contains("binary file (12 bytes, an ELF executable"),
        "{err}"
    );
    h.ops
        .files
        .write("bad.txt", b"caf\xe9", toolshed_ops::Parents::Create)
        .unwrap();
    assert!(
        h.err("workspace_read", json!({"path": "bad.txt"}))
            .await
            .to_string()
            .contains("binary")
    );

    let png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR";
    h.ops
        .files
        .write("img.png", png, toolshed_ops::Parents::Create)
        .unwrap();
    let out = h.ok("workspace_read", json!({"path": "img.png"})).await;
    assert!(
        matches!(&out.content[1], Content::Image { mime_type, .. } if mime_type == "image/png")
    );

    h.put("empty.txt", "");
    assert_eq!(
        h.ok("workspace_read", json!({"path": "empty.txt"}))
            .await
            .text_joined(),
        "`empty.txt` is empty (0 lines)"
    );
    let err = h.err("workspace_read", json!({"path": "."})).await;
    assert!(err.to_string().contains("is a directory"), "{err}");
    let err = h.err("workspace_read", json!({"path": "nope.txt"})).await;
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

#[tokio::test]
async fn overwrite_needs_a_read_of_the_current_version() {
    let h = Harness::memory();
    h.ok(
        "workspace_write",
        json!({"path": "new.txt", "content": "v1\n"}),
    )
    .await;
    // The writer knows what it wrote: it may overwrite without reading.
    h.ok(
        "workspace_write",
        json!({"path": "new.txt", "content": "v2\n"}),
    )
    .await;

    h.put("theirs.txt", "original\n");
    let err = h
        .err(
            "workspace_write",
            json!({"path": "theirs.txt", "content": "mine\n"}),
        )
        .await;
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(
        err.to_string()
            .contains("read it with workspace_read first"),
        "{err}"
    );
    h.ok("workspace_read", json!({"path": "theirs.txt"})).await;
    // Someone else changes it after the read.
    h.put("theirs.txt", "changed\n");
    let err = h
        .err(
            "workspace_write",
            json!({"path": "theirs.txt", "content": "mine\n"}),
        )
        .await;
    assert!(
        err.to_string().contains("changed since you last read it"),
        "{err}"
    );
    h.ok("workspace_read", json!({"path": "theirs.txt"})).await;
    h.ok(
        "workspace_write",
        json!({"path": "theirs.txt", "content": "mine\n"}),
    )
    .await;
    assert_eq!(h.get("theirs.txt"), "mine\n");

    // Another owner's read does not count.
    let other = h.as_owner("other");
    assert_eq!(
        other
            .err(
                "workspace_write",
                json!({"path": "theirs.txt", "content": "x"})
            )
            .await
            .kind(),
        ErrorKind::Conflict
    );

    // The config switch turns the check off.
    let mut relaxed = h.as_owner("relaxed");
    relaxed
        .config
        .insert(super::READ_BEFORE_EDIT.into(), json!(false));
    relaxed
        .ok(
            "workspace_write",
            json!({"path": "theirs.txt", "content": "forced\n"}),
        )
        .await;
}

#[tokio::test]
async fn write_creates_parents_only_when_asked() {
    let h = Harness::memory();
    let err = h
        .err(
            "workspace_write",
            json!({"path": "a/b/c.txt", "content": "x"}),
        )
        .await;
    assert!(err.to_string().contains("create_parents: true"), "{err}");
    let out = h
        .ok(
            "workspace_write",
            json!({"path": "a/b/c.txt", "content": "x\ny\n", "create_parents": true}),
        )
        .await;
    assert_eq!(out.text_joined(), "Created `a/b/c.txt` (4 bytes, 2 lines)");
}

#[tokio::test]
async fn stat_list_mkdir_move_delete() {
    let h = Harness::memory();
    h.ok("workspace_mkdir", json!({"path": "d/e"})).await;
    h.put("d/big.txt", &"x".repeat(3000));
    h.put("d/small.txt", "x");
    let out = h
        .ok("workspace_list", json!({"path": "d", "sort": "size"}))
        .await;
    let names: Vec<String> = out.structured.unwrap()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["big.txt", "small.txt", "e"]);
    let text = h
        .ok("workspace_list", json!({"path": "d", "max_entries": 1}))
        .await
        .text_joined();
    assert!(
        text.contains("big.txt") && text.contains("[1 of 3 entries shown"),
        "{text}"
    );

    let stat = h
        .ok("workspace_stat", json!({"path": "d/big.txt"}))
        .await
        .structured
        .unwrap();
    assert_eq!(
        (stat["kind"].as_str(), stat["size"].as_u64()),
        (Some("file"), Some(3000))
    );

    let err = h
        .err(
            "workspace_move",
            json!({"from": "d/small.txt", "to": "d/big.txt"}),
        )
        .await;
    assert!(err.to_string().contains("overwrite: true"), "{err}");
    h.ok(
        "workspace_move",
        json!({"from": "d/small.txt", "to": "d/e/moved.txt"}),
    )
    .await;
    assert_eq!(h.get("d/e/moved.txt"), "x");

    let err = h.err("workspace_delete", json!({"path": "d"})).await;
    assert!(err.to_string().contains("recursive: true"), "{err}");
    h.ok("workspace_delete", json!({"path": "d", "recursive": true}))
        .await;
    assert_eq!(
        h.err("workspace_stat", json!({"path": "d"})).await.kind(),
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn escapes_and_the_reserved_dir_are_denied_with_the_jail_rule() {
    let h = Harness::memory();
    for (tool, args) in [
        ("workspace_read", json!({"path": "../x"})),
        (
            "workspace_write",
            json!({"path": "/etc/passwd", "content": "x"}),
        ),
        (
            "workspace_write",
            json!({"path": ".toolshed/x", "content": "x", "create_parents": true}),
        ),
        ("workspace_list", json!({"path": ".toolshed"})),
        (
            "workspace_delete",
            json!({"path": "../../", "recursive": true}),
        ),
    ] {
        let err = h.err(tool, args.clone()).await;
        assert_eq!(err.kind(), ErrorKind::Denied, "{tool} {args}: {err}");
    }
    for bad in ["", "a\u{0}b"] {
        let err = h.err("workspace_read", json!({"path": bad})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments, "{err}");
    }
}

#[tokio::test]
async fn tools_work_the_same_on_the_real_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::over(toolshed_ops::Ops::local(dir.path()).unwrap());
    h.ok(
        "workspace_write",
        json!({"path": "src/main.rs", "content": "fn main() {}\n", "create_parents": true}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    let out = h
        .ok(
            "workspace_read",
            json!({"path": dir.path().join("src/main.rs").to_str().unwrap()}),
        )
        .await;
    assert_eq!(out.text_joined(), "     1\tfn main() {}\n");
    std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
    assert_eq!(
        h.err("workspace_read", json!({"path": "etc/passwd"}))
            .await
            .kind(),
        ErrorKind::Denied
    );
}

#[tokio::test]
async fn a_move_over_an_unread_file_is_refused_like_a_write() {
    let h = Harness::memory();
    h.put("precious.txt", "keep me\n");
    h.ok(
        "workspace_write",
        json!({"path": "tmp.txt", "content": "clobbered\n"}),
    )
    .await;
    let err = h
        .err(
            "workspace_move",
            json!({"from": "tmp.txt", "to": "precious.txt", "overwrite": true}),
        )
        .await;
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(h.get("precious.txt"), "keep me\n");
    h.ok("workspace_read", json!({"path": "precious.txt"}))
        .await;
    h.ok(
        "workspace_move",
        json!({"from": "tmp.txt", "to": "precious.txt", "overwrite": true}),
    )
    .await;
    assert_eq!(h.get("precious.txt"), "clobbered\n");
}

/// Waits (for at most ten seconds) until the call's cancel flag is raised.
fn wait_for_cancel(
    env: &super::Env,
    _args: serde_json::Value,
) -> Result<toolshed_core::ToolOutput, toolshed_core::ToolError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !env.cancel.is_set() {
        if std::time::Instant::now() > deadline {
            return Ok(toolshed_core::ToolOutput::text("the flag was never raised"));
        }
        std::thread::yield_now();
    }
    Ok(toolshed_core::ToolOutput::text("saw the flag"))
}

#[tokio::test]
async fn cancelling_a_call_raises_the_flag_its_blocking_work_polls() {
    use toolshed_core::Tool;
    let h = Harness::memory();
    let tool = super::WorkspaceTool {
        spec: toolshed_core::ToolSpec::new("workspace_wait", "waits for cancellation"),
        ops: h.ops.clone(),
        read_log: std::sync::Arc::new(toolshed_ops::MemoryReadLog::default()),
        handler: wait_for_cancel,
        inline: super::Inline::Never,
    };
    let ctx = toolshed_core::CallContext::for_test(std::time::Duration::from_secs(10));
    let cancel = ctx.cancel.clone();
    let call = tokio::spawn(async move { tool.call(ctx, json!({})).await });
    cancel.cancel();
    let out = call.await.unwrap().unwrap();
    assert_eq!(out.text_joined(), "saw the flag");
}

#[tokio::test]
async fn a_missing_path_names_the_paths_it_was_probably_meant_to_be() {
    let h = Harness::memory();
    h.put("src/main.rs", "fn main() {}\n");
    h.put("src/lib/context.rs", "\n");
    h.put("README.md", "# hi\n");
    let message = |e: toolshed_core::ToolError| match e {
        toolshed_core::ToolError::NotFound(m) => m,
        other => panic!("{other:?}"),
    };
    // A typo in the right directory.
    let m = message(
        h.err("workspace_read", json!({"path": "src/mian.rs"}))
            .await,
    );
    assert!(m.ends_with("did you mean `src/main.rs`?"), "{m}");
    // The right name in the wrong directory.
    let m = message(h.err("workspace_stat", json!({"path": "context.rs"})).await);
    assert!(m.contains("`src/lib/context.rs`"), "{m}");
    // Another case.
    let m = message(h.err("workspace_read", json!({"path": "readme.md"})).await);
    assert!(m.contains("`README.md`"), "{m}");
    // Nothing near: the plain message.
    let m = message(
        h.err("workspace_read", json!({"path": "nothing/like/it.txt"}))
            .await,
    );
    assert!(m.ends_with("does not exist"), "{m}");
}

/// A read log that notes the thread each question and each record comes on.
#[derive(Default)]
struct ThreadLog {
    inner: toolshed_ops::MemoryReadLog,
    asked: std::sync::Mutex<Vec<std::thread::ThreadId>>,
    recorded: std::sync::Mutex<Vec<std::thread::ThreadId>>,
}

impl toolshed_ops::ReadLog for ThreadLog {
    fn seen(&self, owner: &str, real_path: &str) -> Option<toolshed_ops::Digest> {
        self.inner.seen(owner, real_path)
    }

    fn known(&self, owner: &str, real_path: &str, digest: &toolshed_ops::Digest) -> bool {
        self.asked.lock().unwrap().push(std::thread::current().id());
        self.inner.known(owner, real_path, digest)
    }

    fn record(&self, owner: &str, real_path: &str, digest: toolshed_ops::Digest) {
        self.recorded
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        self.inner.record(owner, real_path, digest);
    }
}

/// A harness on memory whose read log is `log`.
fn with_log(log: &std::sync::Arc<ThreadLog>) -> Harness {
    let mut h = Harness::memory();
    let mut services = toolshed_ops::Services::new(h.ops.clone());
    services.read_log = log.clone();
    h.plugin = super::plugin(&services);
    h
}

// `#[tokio::test]` runs its runtime on the test's own thread, so "on this thread" is "on
// the async thread".

#[tokio::test]
async fn a_small_read_runs_on_the_async_thread_and_records_on_the_blocking_pool() {
    let log = std::sync::Arc::new(ThreadLog::default());
    let h = with_log(&log);
    let here = std::thread::current().id();
    h.ops
        .files
        .write("a.txt", b"one\n", toolshed_ops::Parents::MustExist)
        .unwrap();
    h.ok("workspace_read", json!({"path": "a.txt"})).await;
    assert_eq!(
        *log.asked.lock().unwrap(),
        [here],
        "read on the async thread"
    );
    let recorded = log.recorded.lock().unwrap().clone();
    assert_eq!(recorded.len(), 1);
    assert_ne!(
        recorded[0], here,
        "the read log may block: not on the async thread"
    );

    // Read again unchanged: the log knows it, nothing is recorded.
    h.ok("workspace_read", json!({"path": "a.txt"})).await;
    assert_eq!(log.recorded.lock().unwrap().len(), 1);
    // And what was recorded counts for an edit.
    h.ok(
        "workspace_edit",
        json!({"path": "a.txt", "old_text": "one", "new_text": "two"}),
    )
    .await;
}

#[tokio::test]
async fn a_big_file_is_read_on_the_blocking_pool() {
    let log = std::sync::Arc::new(ThreadLog::default());
    let h = with_log(&log);
    let here = std::thread::current().id();
    let big = "line of text\n".repeat(30_000); // 390 KB, over the 256 KiB read inline
    h.ops
        .files
        .write("big.txt", big.as_bytes(), toolshed_ops::Parents::MustExist)
        .unwrap();
    h.ok("workspace_read", json!({"path": "big.txt", "limit": 3}))
        .await;
    assert!(log.asked.lock().unwrap().is_empty(), "not read inline");
    let recorded = log.recorded.lock().unwrap().clone();
    assert_eq!(recorded.len(), 1);
    assert_ne!(recorded[0], here);
}
