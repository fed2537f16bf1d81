//! Tests of the client: how requests are written and how a server's messages are routed.

use std::sync::Mutex;

use toolshed_core::Progress;

use super::*;

fn written(message: &impl Serialize) -> Value {
    serde_json::from_slice(&serde_json::to_vec(message).unwrap()).unwrap()
}

#[test]
fn a_retried_call_carries_the_answers_and_the_servers_state() {
    let arguments = json!({});
    let input = (
        json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}}),
        Some("s1".to_string()),
    );
    let call = CallParams {
        name: "greet",
        arguments: &arguments,
        input: Some(&input),
        meta: Meta {
            progress: None,
            modern: true,
            sampling: false,
            log: false,
        },
        trace: None,
    };
    let written = written(&call);
    assert_eq!(
        written["inputResponses"]["user_name"]["content"]["name"],
        "Ada"
    );
    assert_eq!(written["requestState"], "s1");
    assert_eq!(
        written["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        crate::asks::capabilities(false)
    );
}

#[test]
fn requests_are_written_with_toolshed_meta_merged_into_the_callers() {
    let params = json!({"uri": "x", "_meta": {"trace": 1, "progressToken": "theirs",
        "io.modelcontextprotocol/clientInfo": "theirs", "io.modelcontextprotocol/clientOther": 2}});
    let request = Outgoing {
        jsonrpc: "2.0",
        id: Some(7),
        method: "resources/read",
        params: Some(WithMeta {
            params: &params,
            meta: Meta {
                progress: Some(7),
                modern: true,
                sampling: false,
                log: false,
            },
        }),
    };
    let mut expected = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": crate::asks::capabilities(false),
        "io.modelcontextprotocol/clientInfo": {"name": "toolshed", "version": env!("CARGO_PKG_VERSION")},
    });
    expected["trace"] = json!(1);
    expected["io.modelcontextprotocol/clientOther"] = json!(2);
    expected["progressToken"] = json!(7);
    assert_eq!(
        written(&request),
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read",
            "params": {"uri": "x", "_meta": expected}})
    );

    // Nothing to add: the params as they are; a notification has no id.
    let plain = Meta {
        progress: None,
        modern: false,
        sampling: false,
        log: false,
    };
    let note = Outgoing {
        jsonrpc: "2.0",
        id: None,
        method: "notifications/initialized",
        params: None::<Value>,
    };
    assert_eq!(
        written(&note),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
    assert_eq!(
        written(&WithMeta {
            params: &params,
            meta: plain
        }),
        params
    );

    let arguments = json!({"path": "a.txt"});
    let call = CallParams {
        name: "read",
        arguments: &arguments,
        input: None,
        meta: plain,
        trace: None,
    };
    assert_eq!(
        written(&call),
        json!({"name": "read", "arguments": {"path": "a.txt"}})
    );
    let call = CallParams {
        meta: Meta {
            progress: Some(3),
            modern: false,
            sampling: false,
            log: false,
        },
        ..call
    };
    assert_eq!(written(&call)["_meta"], json!({"progressToken": 3}));
    let traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let call = CallParams {
        trace: toolshed_core::trace_context::TraceParent::parse(traced, Some("a=1")),
        ..call
    };
    assert_eq!(
        written(&call)["_meta"],
        json!({"progressToken": 3, "traceparent": traced, "tracestate": "a=1"})
    );
}

#[test]
fn replies_settle_requests_progress_is_routed_and_server_requests_are_answered() {
    let shared = Shared::default();
    let (tx, mut rx) = oneshot::channel();
    shared.lock_pending().insert(7, tx);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    shared.lock_progress().insert(
        7,
        ProgressSink::new(move |p: Progress| log.lock().unwrap().push(p.progress)),
    );
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": 7, "progress": 0.5, "total": 1}});
    assert!(dispatch(progress, &shared, None).is_none());
    assert_eq!(*seen.lock().unwrap(), vec![Some(0.5)]);
    let reply = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}});
    assert!(dispatch(reply, &shared, None).is_none());
    assert!(matches!(rx.try_recv(), Ok(Ok(v)) if v == json!({"content": []})));

    let ping = json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"});
    let now = |message| {
        dispatch(message, &shared, None)
            .and_then(Answer::now)
            .unwrap()
    };
    assert_eq!(now(ping)["result"], json!({}));
    // Asked with no call of toolshed's in flight: nobody to put it to, said at once.
    let sampling = json!({"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage"});
    let refused = now(sampling);
    assert_eq!(refused["error"]["code"], -32603);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no call"),
        "{refused}"
    );
    // A log message that is not an object (a server's mistake) is dropped, not a panic.
    let odd = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": "x"});
    assert!(dispatch(odd, &shared, None).is_none());
    let unknown = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get"});
    assert_eq!(now(unknown)["error"]["code"], -32601);

    let (tx, mut rx) = oneshot::channel();
    shared.lock_pending().insert(8, tx);
    shared.close("the server exited".into());
    assert!(matches!(rx.try_recv(), Ok(Err(RpcError::Closed(why))) if why == "the server exited"));
}
