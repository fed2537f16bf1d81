//! The call pipeline end to end: resolve, review, validate, run with deadline and
//! cancellation, record.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::{Behaviour, SECOND, open, plugin, strict_spec, tool};
use toolshed_core::{ErrorKind, OwnerId, ToolError, ToolSpec};
use toolshed_host::{CallRequest, Event};

/// A host with one tool, `echo_strict`, echoing arguments that pass `strict_spec`.
async fn echo_host() -> support::TestHost {
    let echo = plugin(
        "t.echo",
        vec![tool(strict_spec("echo_strict"), Behaviour::Echo)],
    );
    open(vec![echo], "").await
}

fn req(tool: &str, args: serde_json::Value) -> CallRequest {
    CallRequest::new(tool, args, OwnerId::new("tester"), "test")
}

#[tokio::test]
async fn unknown_tool_suggests_close_names() {
    let t = echo_host().await;
    let err = t
        .host
        .call(req("echo_strct", json!({})))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(
        err.to_string().contains("did you mean `echo_strict`"),
        "{err}"
    );
}

#[tokio::test]
async fn an_oversized_bad_argument_is_quoted_short_with_its_size() {
    let t = echo_host().await;
    let huge = "x".repeat(1 << 20);
    let err = t
        .host
        .call(req("echo_strict", json!({"n": huge, "s": "x"})))
        .await
        .result
        .unwrap_err();
    let text = err.to_string();
    assert!(text.len() < 1000, "{} bytes of error", text.len());
    assert!(text.contains("(a string of 1048576 bytes)"), "{text}");
    // A short value is quoted whole, as before.
    let err = t
        .host
        .call(req("echo_strict", json!({"n": "seven", "s": "x"})))
        .await
        .result
        .unwrap_err();
    assert!(
        err.to_string().contains(r#""seven" is not of type"#),
        "{err}"
    );
}

#[tokio::test]
async fn invalid_arguments_list_every_violation_with_pointers() {
    let t = echo_host().await;
    let err = t
        .host
        .call(req("echo_strict", json!({"n": -1, "extra": true})))
        .await
        .result
        .unwrap_err();
    let ToolError::InvalidArguments { violations, .. } = &err else {
        panic!("{err:?}")
    };
    let pointers: Vec<&str> = violations.iter().map(|v| v.pointer.as_str()).collect();
    assert_eq!(violations.len(), 3, "{violations:?}");
    assert!(pointers.contains(&"/n"), "{pointers:?}");
    assert!(
        violations.iter().any(|v| v.message.contains("\"s\"")),
        "{violations:?}"
    );
    assert!(
        violations.iter().any(|v| v.message.contains("extra")),
        "{violations:?}"
    );

    let ok = t
        .host
        .call(req("echo_strict", json!({"n": 1, "s": "x"})))
        .await
        .result
        .unwrap();
    assert_eq!(ok.structured, Some(json!({"n": 1, "s": "x"})));
}

#[tokio::test]
async fn review_rules_and_profiles_deny_with_the_rule() {
    let plugins = vec![plugin(
        "t.many",
        vec![
            tool(ToolSpec::new("alpha_one", "a"), Behaviour::Echo),
            tool(ToolSpec::new("alpha_two", "a"), Behaviour::Echo),
            tool(ToolSpec::new("beta", "b"), Behaviour::Echo),
        ],
    )];
    let config = "[review]\ndeny = [\"alpha_two\"]\n[profiles.narrow]\nallow = [\"alpha_*\"]\n";
    let t = open(plugins, config).await;
    assert!(
        t.host
            .call(req("alpha_one", json!({})))
            .await
            .result
            .is_ok()
    );
    let err = t
        .host
        .call(req("alpha_two", json!({})))
        .await
        .result
        .unwrap_err();
    let ToolError::Denied { rule, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(rule, "review.deny rule `alpha_two`");

    let mut r = req("beta", json!({}));
    r.profile = Some("narrow".into());
    let err = t.host.call(r).await.result.unwrap_err();
    assert!(
        matches!(&err, ToolError::Denied { rule, .. } if rule.starts_with("profiles.narrow.allow")),
        "{err:?}"
    );

    let mut r = req("beta", json!({}));
    r.profile = Some("nope".into());
    let err = t.host.call(r).await.result.unwrap_err();
    assert!(err.to_string().contains("narrow"), "{err}");
    assert!(
        t.host
            .dispatcher()
            .visible_tool("beta", None, None)
            .is_some()
    );
    assert!(
        t.host
            .dispatcher()
            .visible_tool("beta", Some("narrow"), None)
            .is_none()
    );
}

#[tokio::test]
async fn a_door_selection_narrows_what_the_caller_sees_and_may_call() {
    use toolshed_host::CompiledRules;
    use toolshed_host::config::ReviewRules;
    let plugins = vec![plugin(
        "t.many",
        vec![
            tool(ToolSpec::new("alpha_one", "a"), Behaviour::Echo),
            tool(ToolSpec::new("beta", "b"), Behaviour::Echo),
        ],
    )];
    let t = open(plugins, "").await;
    let rules = ReviewRules {
        allow: vec!["alpha_*".into()],
        ..ReviewRules::default()
    };
    let selection = Arc::new(CompiledRules::compile("--tools", &rules).unwrap());
    let dispatcher = t.host.dispatcher();
    assert!(
        dispatcher
            .visible_tool("alpha_one", None, Some(&selection))
            .is_some()
    );
    assert!(
        dispatcher
            .visible_tool("beta", None, Some(&selection))
            .is_none()
    );

    let mut r = req("beta", json!({}));
    r.selection = Some(selection.clone());
    let err = t.host.call(r).await.result.unwrap_err();
    assert!(
        matches!(&err, ToolError::Denied { rule, .. } if rule.starts_with("--tools.allow")),
        "{err:?}"
    );
    let mut r = req("alpha_one", json!({}));
    r.selection = Some(selection);
    assert!(t.host.call(r).await.result.is_ok());
}

/// A plugin whose `wait` tool waits until cancelled and then tells `observed`.
fn wait_plugin(observed: Arc<tokio::sync::Notify>) -> Vec<Arc<dyn toolshed_core::Plugin>> {
    vec![plugin(
        "t.wait",
        vec![tool(
            ToolSpec::new("wait", "w"),
            Behaviour::WaitForCancel(observed),
        )],
    )]
}

#[tokio::test]
async fn timeout_cancels_the_tool_and_says_so() {
    let observed = Arc::new(tokio::sync::Notify::new());
    let t = open(wait_plugin(observed.clone()), "").await;
    let mut r = req("wait", json!({}));
    r.timeout = Some(Duration::from_millis(50));
    let err = t.host.call(r).await.result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.to_string().contains("50 ms"), "{err}");
    // The tool saw its token fire (it would wait forever otherwise).
    tokio::time::timeout(5 * SECOND, observed.notified())
        .await
        .expect("tool observed cancellation");
}

#[tokio::test]
async fn a_change_that_completes_after_the_deadline_is_reported_done_not_timed_out() {
    let late = |name: &str, read_only: bool| {
        let mut spec = ToolSpec::new(name, "w");
        spec.annotations.read_only = read_only;
        tool(spec, Behaviour::FinishAfter(Duration::from_millis(150)))
    };
    let t = open(
        vec![plugin(
            "t.late",
            vec![late("commit", false), late("look", true)],
        )],
        "",
    )
    .await;
    let mut r = req("commit", json!({}));
    r.timeout = Some(Duration::from_millis(30));
    let out = t.host.call(r).await.result.unwrap();
    let text = out.text_joined();
    assert!(text.starts_with("committed"), "{text}");
    assert!(
        text.contains("completed after its deadline") && text.contains("of the 30 ms allowed"),
        "{text}"
    );
    // A read-only tool's late answer may be partial: that call timed out.
    let mut r = req("look", json!({}));
    r.timeout = Some(Duration::from_millis(30));
    assert_eq!(
        t.host.call(r).await.result.unwrap_err().kind(),
        ErrorKind::Timeout
    );
    // The audit log tells the same story.
    let rows = t.host.store().recent_audit(2).unwrap();
    assert_eq!(
        (rows[0].tool.as_str(), rows[0].outcome.as_str()),
        ("look", "error")
    );
    assert_eq!(rows[0].error_kind.as_deref(), Some("timeout"));
    assert_eq!(
        (rows[1].tool.as_str(), rows[1].outcome.as_str()),
        ("commit", "ok")
    );
}

#[tokio::test]
async fn default_timeout_comes_from_config_and_zero_is_refused() {
    let observed = Arc::new(tokio::sync::Notify::new());
    let t = open(wait_plugin(observed), "[limits]\ndefault_timeout_ms = 30\n").await;
    let err = t
        .host
        .call(req("wait", json!({})))
        .await
        .result
        .unwrap_err();
    assert_eq!(err, ToolError::Timeout(Duration::from_millis(30)));
    let mut r = req("wait", json!({}));
    r.timeout = Some(Duration::ZERO);
    assert_eq!(
        t.host.call(r).await.result.unwrap_err().kind(),
        ErrorKind::InvalidArguments
    );
}

#[tokio::test]
async fn caller_cancellation_stops_the_tool() {
    let observed = Arc::new(tokio::sync::Notify::new());
    let t = open(wait_plugin(observed.clone()), "").await;
    let mut events = t.host.events().subscribe();
    let r = req("wait", json!({}));
    let cancel = r.cancel.clone();
    let host = &t.host;
    let (result, ()) = tokio::join!(host.call(r), async {
        // Cancel once the call is running, not before.
        loop {
            if let Ok(Event::CallStarted { .. }) = events.recv().await {
                break;
            }
        }
        cancel.cancel();
    });
    assert_eq!(result.result.unwrap_err(), ToolError::Cancelled);
    tokio::time::timeout(5 * SECOND, observed.notified())
        .await
        .expect("tool observed cancellation");
}

#[tokio::test]
async fn a_panicking_tool_is_an_internal_error_and_the_host_lives_on() {
    let t = open(
        vec![plugin(
            "t.p",
            vec![
                tool(ToolSpec::new("boom", "b"), Behaviour::Panic),
                tool(ToolSpec::new("fine", "f"), Behaviour::Echo),
            ],
        )],
        "",
    )
    .await;
    let err = t
        .host
        .call(req("boom", json!({})))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Internal);
    assert!(t.host.call(req("fine", json!({}))).await.result.is_ok());
}

#[tokio::test]
async fn every_call_leaves_an_audit_row_and_events() {
    let t = open(
        vec![plugin(
            "t.a",
            vec![
                tool(strict_spec("strict"), Behaviour::Echo),
                tool(ToolSpec::new("fails", "f"), Behaviour::ReportFailure),
                tool(ToolSpec::new("progress", "p"), Behaviour::Progress),
            ],
        )],
        "",
    )
    .await;
    let mut events = t.host.events().subscribe();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let mut r = req("progress", json!({}));
    r.progress = Some(toolshed_core::ProgressSink::new(move |p| {
        sink_seen
            .lock()
            .unwrap()
            .push(p.message.unwrap_or_default())
    }));
    let ok = t.host.call(r).await;
    assert_eq!(*seen.lock().unwrap(), vec!["step 0", "step 1", "step 2"]);
    t.host.call(req("strict", json!({"n": 1, "s": "x"}))).await;
    t.host.call(req("strict", json!({}))).await;
    t.host.call(req("fails", json!({}))).await;
    t.host.call(req("missing", json!({}))).await;

    let rows = t.host.store().recent_audit(10).unwrap();
    let summary: Vec<(String, String, Option<String>)> = rows
        .iter()
        .rev()
        .map(|r| (r.tool.clone(), r.outcome.clone(), r.error_kind.clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("progress".into(), "ok".into(), None),
            ("strict".into(), "ok".into(), None),
            (
                "strict".into(),
                "error".into(),
                Some("invalid_arguments".into())
            ),
            ("fails".into(), "tool_error".into(), None),
            ("missing".into(), "error".into(), Some("not_found".into())),
        ]
    );
    assert!(
        rows.iter()
            .all(|r| r.owner == "tester" && r.door == "test" && r.args_sha256.len() == 64)
    );
    assert_eq!(rows.last().unwrap().call_id, ok.call_id.0);
    // The audit file is a real SQLite file in the data dir.
    let conn = rusqlite::Connection::open(t.data.path().join("toolshed.db")).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 5);

    let mut kinds = Vec::new();
    while let Ok(e) = events.try_recv() {
        kinds.push(match e {
            Event::CallStarted { .. } => "started",
            Event::CallProgress { .. } => "progress",
            Event::CallFinished { .. } => "finished",
            Event::CallFailed { .. } => "failed",
            Event::PluginStateChanged { .. } => "plugin",
            Event::ApprovalRequested { .. } | Event::ApprovalResolved { .. } => "approval",
        });
    }
    assert_eq!(
        kinds,
        vec![
            "started", "progress", "progress", "progress", "finished", "started", "finished",
            "failed", "started", "finished", "failed"
        ]
    );
}

struct Guard;

#[async_trait::async_trait]
impl toolshed_host::CallHook for Guard {
    async fn before(
        &self,
        tool: &str,
        _owner: &OwnerId,
        args: &serde_json::Value,
    ) -> toolshed_host::HookDecision {
        use toolshed_host::HookDecision;
        match tool {
            "blocked" => HookDecision::Block("blocked by the guard hook".into()),
            "rewritten" if args["n"] == 1 => {
                HookDecision::Rewrite(json!({"n": 7, "s": "from hook"}))
            }
            "rewritten" if args["n"] == 3 => {
                HookDecision::Rewrite(json!({"n": 3, "s": "forbidden"}))
            }
            "rewritten" => HookDecision::Rewrite(json!({"n": "not a number"})),
            _ => HookDecision::Continue,
        }
    }

    async fn after(
        &self,
        tool: &str,
        _owner: &OwnerId,
        _args: &serde_json::Value,
        result: Result<toolshed_core::ToolOutput, ToolError>,
    ) -> Result<toolshed_core::ToolOutput, ToolError> {
        if tool == "annotated" {
            return result.map(|mut out| {
                out.content.push(toolshed_core::Content::Text {
                    text: "checked by guard".into(),
                });
                out
            });
        }
        result
    }
}

struct ApproveDangerous;

impl toolshed_host::Policy for ApproveDangerous {
    fn check(
        &self,
        subject: &toolshed_host::Subject<'_>,
        _owner: &OwnerId,
        arguments: &serde_json::Value,
    ) -> toolshed_host::PolicyDecision {
        let spec = subject.spec;
        if arguments["s"] == "forbidden" {
            return toolshed_host::PolicyDecision::Deny {
                rule: "no forbidden".into(),
                message: "`s` may not be `forbidden`".into(),
            };
        }
        if spec.danger == toolshed_core::Danger::High {
            toolshed_host::PolicyDecision::NeedsApproval {
                rule: "dangerous".into(),
                reason: format!("`{}` is dangerous", spec.name),
            }
        } else {
            toolshed_host::PolicyDecision::Allow
        }
    }
}

#[tokio::test]
async fn hooks_block_rewrite_and_annotate_and_policy_can_ask_for_approval() {
    let mut hooks = toolshed_host::Hooks::default();
    hooks.push(Arc::new(Guard));
    let mut dangerous = ToolSpec::new("dangerous", "d");
    dangerous.danger = toolshed_core::Danger::High;
    let plugins = vec![plugin(
        "t.h",
        vec![
            tool(ToolSpec::new("blocked", "b"), Behaviour::Echo),
            tool(strict_spec("rewritten"), Behaviour::Echo),
            tool(ToolSpec::new("annotated", "a"), Behaviour::ReportFailure),
            tool(dangerous, Behaviour::Echo),
        ],
    )];
    let t = support::open_with(
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        plugins,
        "[approvals]\ntimeout_secs = 1\n",
        Some(Arc::new(ApproveDangerous)),
        hooks,
    )
    .await;
    let err = t
        .host
        .call(req("blocked", json!({})))
        .await
        .result
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::Denied {
            rule: "hook".into(),
            message: "blocked by the guard hook".into()
        }
    );

    // Hooks see validated arguments and may replace them.
    let out = t
        .host
        .call(req("rewritten", json!({"n": 1, "s": "x"})))
        .await
        .result
        .unwrap();
    assert_eq!(out.structured, Some(json!({"n": 7, "s": "from hook"})));
    // The policy sees the arguments, and judges a rewrite again.
    for args in [json!({"n": 5, "s": "forbidden"}), json!({"n": 3, "s": "x"})] {
        let err = t
            .host
            .call(req("rewritten", args.clone()))
            .await
            .result
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Denied, "{args}");
        assert!(err.to_string().contains("forbidden"), "{err}");
    }
    // A rewrite is validated again.
    let err = t
        .host
        .call(req("rewritten", json!({"n": 2, "s": "x"})))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);

    let out = t
        .host
        .call(req("annotated", json!({})))
        .await
        .result
        .unwrap();
    assert!(out.is_error);
    assert_eq!(out.text_joined(), "it failed\nchecked by guard");

    // Asking: the call waits for an answer — yes, no, or none before the expiry.
    let store = t.host.store().clone();
    for (answer, outcome) in [
        (Some(true), "ok"),
        (Some(false), "declined"),
        (None, "nobody"),
    ] {
        let answering = async {
            let pending = loop {
                let pending = store.approvals(false, 10).unwrap();
                if let Some(p) = pending.into_iter().next() {
                    break p;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            assert_eq!(pending.tool, "dangerous");
            assert_eq!(pending.rule, "dangerous");
            if let Some(yes) = answer {
                store
                    .answer_approval(&pending.id, yes, "tester", false)
                    .unwrap();
            }
        };
        let (call, ()) = tokio::join!(t.host.call(req("dangerous", json!({}))), answering);
        let result = call.result;
        match outcome {
            "ok" => assert!(result.is_ok(), "{result:?}"),
            _ => {
                let err = result.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
                assert!(err.to_string().contains(outcome), "{err}");
                assert!(err.to_string().contains("dangerous"), "{err}");
            }
        }
    }
}

#[tokio::test]
async fn with_approvals_off_asking_is_refused_at_once() {
    let mut dangerous = ToolSpec::new("dangerous", "d");
    dangerous.danger = toolshed_core::Danger::High;
    let t = support::open_with(
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        vec![plugin("t.h", vec![tool(dangerous, Behaviour::Echo)])],
        "[approvals]\ntimeout_secs = 0\n",
        Some(Arc::new(ApproveDangerous)),
        toolshed_host::Hooks::default(),
    )
    .await;
    let err = t
        .host
        .call(req("dangerous", json!({})))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NeedsApproval);
    assert!(err.to_string().contains("approvals are off"), "{err}");
}

#[tokio::test]
async fn a_plugins_config_reaches_its_tools_and_follows_stored_changes() {
    let mut manifest = support::manifest("t.cfg");
    manifest.config = vec![toolshed_core::ConfigField {
        key: "level".into(),
        label: None,
        field_type: toolshed_core::ConfigFieldType::Number,
        description: None,
        default: Some(json!(1)),
        options: vec![],
        secret: false,
        required: false,
        writable: false,
    }];
    let tools = vec![tool(ToolSpec::new("show_config", "c"), Behaviour::Config)];
    let t = open(
        vec![Arc::new(toolshed_core::BuiltinPlugin::new(manifest, tools))],
        "",
    )
    .await;
    let config = || async {
        t.host
            .call(req("show_config", json!({})))
            .await
            .result
            .unwrap()
            .structured
            .unwrap()
    };
    assert_eq!(config().await, json!({"level": 1}));
    assert_eq!(config().await, json!({"level": 1}));
    t.host
        .store()
        .set_config_value("t.cfg", "level", &json!(3), false)
        .unwrap();
    assert_eq!(config().await, json!({"level": 3}));
    // Another process (`toolshed plugins config`) stores a value: a running host sees it
    // once it syncs from the store, as its watcher does when another connection commits.
    let other = toolshed_host::StateStore::open(&t.data.path().join("toolshed.db")).unwrap();
    other
        .set_config_value("t.cfg", "level", &json!(5), false)
        .unwrap();
    t.host.registry().sync_from_store().await.unwrap();
    assert_eq!(config().await, json!({"level": 5}));
}

/// A call's arguments reach the tool as they were given: moved, not copied, whatever the
/// pipeline checked on the way (a large request is held once).
#[tokio::test]
async fn arguments_reach_the_tool_without_a_copy() {
    let t = open(
        vec![plugin(
            "t.addr",
            vec![tool(
                ToolSpec::new("where_is_text", "w").input_schema(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string"}}
                })),
                Behaviour::TextAddress,
            )],
        )],
        "",
    )
    .await;
    let text = "x".repeat(64 * 1024);
    let address = text.as_ptr() as usize;
    // Built by hand: `json!` would serialize (copy) the string.
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".into(), serde_json::Value::String(text));
    let out = t
        .host
        .call(req("where_is_text", serde_json::Value::Object(arguments)))
        .await
        .result
        .unwrap();
    assert_eq!(out.structured.unwrap()["address"], json!(address));
}

/// A tool's size limit on an argument holds for a value given parsed and for one a door
/// left out unparsed (`CallRequest::oversized`): the same refusal, after review, recorded.
#[tokio::test]
async fn an_argument_over_its_declared_limit_is_refused_however_it_came() {
    let t = open(
        vec![plugin(
            "t.doc",
            vec![tool(
                ToolSpec::new("doc_take", "d")
                    .input_schema(json!({"type": "object", "properties": {"document": {}}}))
                    .max_argument_bytes("document", 100),
                Behaviour::Echo,
            )],
        )],
        "[profiles.none]\nallow = [\"nothing_*\"]\n",
    )
    .await;
    let big = json!({"items": (0..40).collect::<Vec<u32>>()});
    let err = t
        .host
        .call(req("doc_take", json!({"document": big})))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    let said = err.to_string();
    assert!(
        said.contains("`document` is 121 bytes of JSON; `doc_take` takes at most 100 bytes"),
        "{said}"
    );
    // Within the limit: runs.
    let small = json!({"document": {"items": [1, 2]}});
    assert!(t.host.call(req("doc_take", small)).await.result.is_ok());
    // Left out by a door: the same refusal, though the arguments are empty now.
    let mut left_out = req("doc_take", json!({}));
    left_out.oversized = vec![toolshed_core::OversizedArgument {
        name: "document".into(),
        bytes: 121,
        limit: 100,
    }];
    let preflight = t.host.dispatcher().preflight(&left_out).unwrap_err();
    assert_eq!(preflight.to_string(), said);
    let result = t.host.call(left_out).await;
    assert_eq!(result.result.unwrap_err().to_string(), said);
    let rows = t.host.store().recent_audit(1).unwrap();
    assert_eq!(
        (rows[0].tool.as_str(), rows[0].error_kind.as_deref()),
        ("doc_take", Some("invalid_arguments"))
    );
    // Review comes first: a caller who cannot see the tool is told that, not its limits.
    let mut hidden = req("doc_take", json!({}));
    hidden.profile = Some("none".into());
    hidden.oversized = vec![toolshed_core::OversizedArgument {
        name: "document".into(),
        bytes: 121,
        limit: 100,
    }];
    let err = t.host.call(hidden).await.result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
}

/// The 2026-07-28 era's way: the door defers the approval (the request is left pending for
/// the person, the call refused at once), then brings the person's answer; the answer runs
/// only the call it was asked about.
#[tokio::test]
async fn a_deferred_approval_waits_for_the_person_and_its_answer_runs_only_its_own_call() {
    let mut dangerous = strict_spec("dangerous");
    dangerous.danger = toolshed_core::Danger::High;
    let t = support::open_with(
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        vec![plugin("t.h", vec![tool(dangerous, Behaviour::Echo)])],
        "[approvals]\ntimeout_secs = 60\n",
        Some(Arc::new(ApproveDangerous)),
        toolshed_host::Hooks::default(),
    )
    .await;
    let deferred = Arc::new(toolshed_host::DeferredApproval::default());
    let mut first = req("dangerous", json!({"n": 1, "s": "a"}));
    first.defer_approval = Some(deferred.clone());
    let started = std::time::Instant::now();
    let err = t.host.call(first).await.result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NeedsApproval, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it did not wait"
    );
    let asked = deferred.asked().expect("the request it left");
    let store = t.host.store();
    assert_eq!(
        store.approval(&asked.id).unwrap().unwrap().state,
        toolshed_host::approvals::ApprovalState::Pending
    );
    store
        .answer_approval(&asked.id, true, "the person", false)
        .unwrap();

    // The answer runs the call it was asked about, once; a call with other arguments is
    // asked about anew.
    let deferred = Arc::new(toolshed_host::DeferredApproval::default());
    let mut other = req("dangerous", json!({"n": 2, "s": "a"}));
    other.answered_approval = Some(asked.id.clone());
    other.defer_approval = Some(deferred.clone());
    let err = t.host.call(other).await.result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NeedsApproval, "{err}");
    assert_ne!(deferred.asked().unwrap().id, asked.id);
    let mut same = req("dangerous", json!({"n": 1, "s": "a"}));
    same.answered_approval = Some(asked.id.clone());
    assert!(t.host.call(same).await.result.is_ok());
    let mut again = req("dangerous", json!({"n": 1, "s": "a"}));
    again.answered_approval = Some(asked.id.clone());
    let err = t.host.call(again).await.result.unwrap_err();
    assert!(err.to_string().contains("used by a call already"), "{err}");
}
