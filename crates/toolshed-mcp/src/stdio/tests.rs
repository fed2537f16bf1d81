//! The stdio door's tests: reading lines, calls answered beside the session loop, broken requests.

use super::*;

/// rmcp drops `receive`'s future whenever another event comes first; a line read in
/// part must not be lost with it (the request would never be answered).
#[tokio::test]
async fn a_receive_dropped_half_way_through_a_line_loses_nothing() {
    use rmcp::transport::Transport;
    use tokio::io::AsyncWriteExt;
    let (mut client, server) = tokio::io::duplex(64);
    let mut transport = LineTransport::new(server, tokio::io::sink());
    let line = br#"{"jsonrpc":"2.0","id":41,"method":"ping"}"#;
    client.write_all(&line[..20]).await.unwrap();
    {
        let receive = Transport::<RoleServer>::receive(&mut transport);
        let dropped = tokio::time::timeout(std::time::Duration::from_millis(50), receive).await;
        assert!(dropped.is_err(), "half a line is not a message");
    }
    client.write_all(&line[20..]).await.unwrap();
    client.write_all(b"\n").await.unwrap();
    let message = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        Transport::<RoleServer>::receive(&mut transport),
    )
    .await
    .expect("the whole line is read once the rest arrives")
    .unwrap();
    let value = serde_json::to_value(&message).unwrap();
    assert_eq!(value["id"], 41, "{value}");
}

/// Once `initialize` has been answered, a `tools/call` never reaches rmcp's loop: the
/// transport runs it and writes its reply; so does the cancellation of such a call,
/// which then gets no reply. Everything else still goes to the loop.
#[tokio::test]
async fn tools_calls_are_answered_beside_the_session_loop() {
    use rmcp::transport::Transport;
    let (opened, opening) = crate::host_opening();
    let server = Arc::new(McpServer::opening(opening));
    // A session, so that the server knows its peer.
    let (client, server_end) = tokio::io::duplex(1 << 16);
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut client_lines = BufReader::new(client_read).lines();
    let session = tokio::spawn(server.clone().serve(server_end));
    client_write
        .write_all(concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
            "\n"
        ).as_bytes())
        .await
        .unwrap();
    let line = client_lines.next_line().await.unwrap().unwrap();
    assert!(line.contains("serverInfo"), "{line}");
    let _running = session.await.unwrap().unwrap();
    assert!(server.session_peer().is_some());

    // The transport under test, with its own pipe.
    let (mut input, transport_in) = tokio::io::duplex(1 << 16);
    let (transport_out, output) = tokio::io::duplex(1 << 16);
    let mut output = BufReader::new(output).lines();
    let direct = Arc::new(Direct::new(server.clone()));
    let mut transport = LineTransport::new(transport_in, transport_out).with_direct(direct.clone());
    let mut receive = async |lines: &[&str]| {
        for line in lines {
            input
                .write_all(format!("{line}\n").as_bytes())
                .await
                .unwrap();
        }
        let message = tokio::time::timeout(
            Duration::from_secs(10),
            Transport::<RoleServer>::receive(&mut transport),
        )
        .await
        .expect("a message within 10 s")
        .unwrap();
        serde_json::to_value(&message).unwrap()
    };
    let call = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"calculator","arguments":{{"expression":"1+1"}}}}}}"#
        )
    };
    let ping = |id: u64| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
    let cancel = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
        )
    };

    // The host is still opening: call 7 waits for it. The loop sees only the ping.
    let seen = receive(&[&call(7), &ping(8)]).await;
    assert_eq!(seen["id"], 8, "{seen}");
    assert_eq!(direct.calls().running, 1);
    // Its cancellation is taken too; one of a request the loop ran is passed on.
    let seen = receive(&[&cancel(7), &cancel(99)]).await;
    assert_eq!(seen["params"]["requestId"], 99, "{seen}");
    assert!(direct.calls().replying.is_empty());

    // A client that reuses an id while the first call runs gets both replies.
    let seen = receive(&[&call(21), &call(21), &ping(22)]).await;
    assert_eq!(seen["id"], 22, "{seen}");
    assert_eq!(direct.calls().running, 3);

    // The host fails to open: calls 11 and both 21 are answered with the error, call 7
    // not at all.
    opened.send(Err("no host in this test".into()));
    let seen = receive(&[&call(11), &ping(12)]).await;
    assert_eq!(seen["id"], 12, "{seen}");
    direct.end(Duration::from_secs(10)).await;
    assert_eq!(direct.calls().running, 0);
    assert!(direct.calls().replying.is_empty());
    drop(transport);
    let mut written = Vec::new();
    while let Some(line) = output.next_line().await.unwrap() {
        written.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let mut ids: Vec<u64> = written.iter().filter_map(|r| r["id"].as_u64()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [11, 21, 21], "{written:?}");
    assert!(
        written.iter().all(|r| r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no host in this test"))),
        "{written:?}"
    );
}

/// The short way for `tools/call` makes exactly the message rmcp's parser makes, and
/// leaves whatever it does not know to that parser.
#[test]
fn a_tools_call_is_read_as_rmcp_reads_it() {
    let same = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"1+1"}}}"#,
        r#"{"method":"tools/call","id":"a-b","jsonrpc":"2.0","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"n":1.5e300,"big":18446744073709551615,"neg":-3,"s":"\t\u00e9"},"_meta":{"progressToken":"p1","toolshed/owner":"ada"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7},"unknown":true}}"#,
    ];
    for line in same {
        let short = tools_call(line.as_bytes()).expect(line);
        let general: ClientJsonRpcMessage = serde_json::from_str(line).unwrap();
        assert_eq!(
            serde_json::to_value(&short).unwrap(),
            serde_json::to_value(&general).unwrap(),
            "{line}"
        );
        let meta = |m: ClientJsonRpcMessage| match m {
            JsonRpcMessage::Request(mut r) => r.request.get_meta_mut().clone(),
            _ => panic!("not a request: {line}"),
        };
        assert_eq!(meta(short), meta(general), "{line}");
    }
    let elsewhere = [
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"tools/call"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x"},"extra":1}"#,
        r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
        r#"["2.0",8,"tools/call",{"name":"x"}]"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[null,"x",{"a":1},null,null]}"#,
    ];
    for line in elsewhere {
        assert!(tools_call(line.as_bytes()).is_none(), "{line}");
    }
}

#[test]
fn the_id_is_found_however_broken_the_rest_is() {
    assert_eq!(
        scan_id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
        json!(7)
    );
    assert_eq!(scan_id(br#"{"params":{"id":1},"id":"a-b"}"#), json!("a-b"));
    let deep = format!(
        "{{\"id\": 9, \"params\": {}{}}}",
        "[".repeat(500),
        "]".repeat(500)
    );
    assert_eq!(scan_id(deep.as_bytes()), json!(9));
    let mut bad = br#"{"method":"tools/call","params":{"s":"#.to_vec();
    bad.extend_from_slice(&[b'"', 0xff, 0xfe, b'"']);
    bad.extend_from_slice(br#"},"id":12}"#);
    assert_eq!(scan_id(&bad), json!(12));
    assert_eq!(scan_id(br#"{"x":"\"id\":4"}"#), Value::Null);
    assert_eq!(scan_id(br#"{"id":{"nested":1}}"#), Value::Null);
    assert_eq!(scan_id(b"not json"), Value::Null);
}

#[test]
fn every_unusable_request_gets_an_error_with_its_id() {
    let code = |line: &[u8]| {
        read_message(line, false)
            .err()
            .flatten()
            .map(|r| (r["id"].clone(), r["error"]["code"].clone()))
    };
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    assert_eq!(code(deep.as_bytes()), Some((json!(3), json!(-32700))));
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"\ud800"}}"#),
        Some((json!(4), json!(-32700)))
    );
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#),
        Some((json!(5), json!(-32602)))
    );
    assert_eq!(code(b"[1,2]"), Some((Value::Null, json!(-32600))));
    // Failed before: `{}` was taken for a notification and got no reply.
    assert_eq!(code(b"{}"), Some((Value::Null, json!(-32600))));
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","params":{}}"#),
        Some((Value::Null, json!(-32600)))
    );
    assert_eq!(code(b"{nope"), Some((Value::Null, json!(-32700))));
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        None
    );
    assert_eq!(code(b"   "), None);
    let oversized = read_message(br#"{"jsonrpc":"2.0","id":"big","method":"#, true)
        .unwrap_err()
        .unwrap();
    assert_eq!(
        (oversized["id"].clone(), oversized["error"]["code"].clone()),
        (json!("big"), json!(-32700))
    );
}
