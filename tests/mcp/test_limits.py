"""Limits per owner as well as in total, through the real HTTP doors: one client's
abandoned MCP sessions, jobs or event streams never take every other client's room, and
the refusal names the owner's own usage and how to free it (issue 53)."""

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request

ACCEPT = "application/json, text/event-stream"


def post(url, token, body, session=None, timeout=30):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": ACCEPT}
    if session:
        headers["mcp-session-id"] = session
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, res.headers.get("mcp-session-id"), res.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, None, e.read().decode()


def message_of(text):
    """The JSON-RPC message of a reply, as JSON or as one SSE `data:` line."""
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    return json.loads(text)


def open_session(url, token):
    status, session, text = post(url, token, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "limits", "version": "0"}}})
    if status == 200:
        post(url, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return status, session, text


def call(url, token, session, tool, arguments):
    status, _, text = post(url, token, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                        "params": {"name": tool, "arguments": arguments}}, session)
    assert status == 200, (status, text)
    return message_of(text)["result"]


def tokens(toolshed_bin, home, *owners):
    return [subprocess.run([toolshed_bin, "token", "create", "--owner", owner], env={"TOOLSHED_HOME": str(home)},
                           capture_output=True, text=True, check=True, timeout=30).stdout.strip() for owner in owners]


def set_exec_limits(toolshed_bin, home, workspace, **values):
    for key, value in values.items():
        subprocess.run([toolshed_bin, "--workspace", str(workspace), "plugins", "config", "system.exec_command", key, str(value)],
                       env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30)


def test_one_clients_abandoned_mcp_sessions_leave_room_for_the_others(serve, toolshed_bin, home, workspace):
    # Failed before: no MCP session limit; the admin token's abandoned sessions, each with
    # a running command, filled the host's command sessions and every other client's
    # exec_command was refused until the 30-minute idle timeout.
    set_exec_limits(toolshed_bin, home, workspace, max_sessions=6)
    alice, bob = tokens(toolshed_bin, home, "alice", "bob")
    url, admin = serve({"TOOLSHED_MCP__MAX_SESSIONS_PER_OWNER": "4", "TOOLSHED_MCP__MAX_SESSIONS": "7"})
    opened, refusal = [], None
    for _ in range(8):
        status, session, text = open_session(url, admin)
        if status != 200:
            refusal = (status, text)
            break
        opened.append(session)
        result = call(url, admin, session, "exec_command", {"cmd": "sleep 600", "yield_ms": 100})
        assert not result.get("isError"), result
    assert len(opened) == 4 and refusal is not None, (len(opened), refusal)
    status, text = refusal
    assert status == 429, refusal
    said = message_of(text)["error"]["message"]
    assert "the admin token has 4 MCP sessions open" in said and "max_sessions_per_owner" in said, said
    assert "DELETE /mcp" in said, said
    # Another client works.
    status, session, _ = open_session(url, bob)
    assert status == 200
    result = call(url, bob, session, "exec_command", {"cmd": "echo bob works"})
    assert "bob works" in result["content"][0]["text"], result
    # alice fills the rest of the server; then the total is what refuses, with her count.
    for _ in range(2):
        assert open_session(url, alice)[0] == 200
    status, _, text = open_session(url, alice)
    assert status == 429, text
    said = message_of(text)["error"]["message"]
    assert "7 MCP sessions are open" in said and "2 of them are `alice`'s" in said, said
    # Ending a session frees its room (and stops what it ran).
    req = urllib.request.Request(url, method="DELETE", headers={"Authorization": f"Bearer {admin}", "mcp-session-id": opened[0]})
    with urllib.request.urlopen(req, timeout=30) as res:
        assert res.status in (200, 202, 204)
    assert open_session(url, alice)[0] == 200


def api(base, token, method, path, body=None):
    headers = {"Authorization": f"Bearer {token}"}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    req = urllib.request.Request(f"{base}/api/v1{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_running_jobs_are_limited_per_owner(serve, toolshed_bin, home):
    alice, bob = tokens(toolshed_bin, home, "alice", "bob")
    url, _ = serve({"TOOLSHED_JOBS__MAX_RUNNING_PER_OWNER": "2"})
    base = url.rsplit("/mcp", 1)[0]
    job = {"arguments": {"cmd": "sleep 30", "yield_ms": 60000, "timeout_ms": 60000}, "async": True}
    started = [api(base, alice, "POST", "/tools/exec_command/execute", job) for _ in range(2)]
    assert [s for s, _ in started] == [202, 202], started
    status, body = api(base, alice, "POST", "/tools/exec_command/execute", job)
    assert status == 429 and body["error"]["kind"] == "too_many_jobs", body
    said = body["error"]["message"]
    assert "`alice` has 2 jobs running" in said and "max_running_per_owner" in said and "cancel" in said, said
    status, body = api(base, bob, "POST", "/tools/exec_command/execute", job)
    assert status == 202, body
    # Cancelling one of alice's makes room for her.
    assert api(base, alice, "POST", f"/jobs/{started[0][1]['job']['id']}/cancel")[0] == 200
    assert api(base, alice, "POST", "/tools/exec_command/execute", job)[0] == 202


def open_stream(base, token):
    host, port = base.split("//")[1].split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(f"GET /api/v1/events HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
              "Accept: text/event-stream\r\n\r\n".encode())
    head = s.recv(4096)
    return s, int(head.split(b" ")[1]), head


def test_event_streams_are_limited_per_owner(serve, toolshed_bin, home):
    alice, bob = tokens(toolshed_bin, home, "alice", "bob")
    url, _ = serve({"TOOLSHED_SERVER__MAX_EVENT_STREAMS_PER_OWNER": "2"})
    base = url.rsplit("/mcp", 1)[0]
    held = [open_stream(base, alice) for _ in range(2)]
    assert [status for _, status, _ in held] == [200, 200], held
    sock, status, head = open_stream(base, alice)
    sock.close()
    assert status == 429 and b"`alice` has 2 event streams open" in head, head
    sock, status, _ = open_stream(base, bob)
    sock.close()
    assert status == 200
    # A stream whose client went away gives its room back.
    held[0][0].close()
    deadline = time.monotonic() + 20
    while True:
        sock, status, head = open_stream(base, alice)
        sock.close()
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert status == 200, head
    for sock, _, _ in held[1:]:
        sock.close()


def test_held_connections_under_a_low_descriptor_limit_leave_health_answering(toolshed_bin, home, workspace):
    # Failed before: with `ulimit -n 256`, 366 held connections took every descriptor and
    # /health timed out (issue 53).
    import resource
    import threading

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    doctor = subprocess.run([toolshed_bin, "--workspace", str(workspace), "doctor"], env=env, preexec_fn=low_limit,
                            capture_output=True, text=True, timeout=60)
    line = next((l for l in doctor.stdout.splitlines() if "descriptors" in l), "")
    assert "at most 128 connections" in line and "raise the hard limit" in line, doctor.stdout
    proc = subprocess.Popen([toolshed_bin, "--workspace", str(workspace), "serve", "--port", "0"], env=env,
                            preexec_fn=low_limit, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    held = []
    try:
        url = None
        for line in proc.stderr:
            if line.startswith("listening on "):
                url = line.split(" ", 2)[2].strip()
                break
        assert url, "the server did not start"
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
        host, port = url.split("//")[1].split("/")[0].split(":")
        for _ in range(400):
            try:
                s = socket.create_connection((host, int(port)), timeout=5)
                s.sendall(f"GET /api/v1/health HTTP/1.1\r\nHost: {host}:{port}\r\n".encode())
                held.append(s)
            except OSError:
                break
        answered = 0
        for _ in range(10):
            try:
                with urllib.request.urlopen(f"http://{host}:{port}/api/v1/health", timeout=5) as res:
                    answered += res.status == 200
            except OSError:
                pass
        assert answered == 10, f"{answered}/10 health checks answered with {len(held)} connections held"
    finally:
        for s in held:
            s.close()
        proc.terminate()
        proc.wait(timeout=20)


def peak_kib(pid):
    """The most resident memory process `pid` has had (VmHWM), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def small_values_document(size):
    """A JSON document of about `size` bytes of small objects: a tree many times its text."""
    item = {"id": 100000, "name": "item-100000", "tags": ["alpha", "beta"], "ok": True}
    count = size // (len(json.dumps(item, separators=(",", ":"))) + 1)
    return {"items": [{**item, "id": i} for i in range(count)]}


def post_chunked(url, token, session, message):
    """POSTs `message` to the MCP URL in chunks (no Content-Length): (status, body text)."""
    import http.client

    data = json.dumps(message).encode()
    host = url.split("//")[1].split("/")[0]
    conn = http.client.HTTPConnection(host, timeout=60)
    try:
        conn.request("POST", "/mcp", body=iter([data[i:i + 65536] for i in range(0, len(data), 65536)]),
                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                              "Accept": ACCEPT, "mcp-session-id": session}, encode_chunked=True)
        response = conn.getresponse()
        return response.status, response.read().decode()
    except (BrokenPipeError, ConnectionResetError) as e:
        return None, str(e)
    finally:
        conn.close()


def test_an_argument_over_its_tools_limit_is_refused_unparsed_on_every_door(serve, toolshed_bin, home, workspace):
    # Failed before: the door parsed a 3.3 MB document of small values into a tree of about
    # 78 MiB, which json_ops then refused for being over its 1 MiB limit (issue 53, item 4).
    document = small_values_document(3_300_000)
    size = len(json.dumps(document, separators=(",", ":")))
    arguments = {"operation": "query", "path": "$.items[0].id", "document": document}
    said = f"`document` is {size} bytes of JSON; `json_ops` takes at most 1048576 bytes (1 MiB) there"
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]
    pid = serve.procs[-1].pid
    small = {"operation": "query", "path": "$.a", "document": {"a": 1}}
    assert api(base, token, "POST", "/tools/json_ops/execute", {"arguments": small})[0] == 200
    status, session, _ = open_session(url, token)
    assert status == 200
    assert not call(url, token, session, "json_ops", small).get("isError")
    before = peak_kib(pid)

    status, body = api(base, token, "POST", "/tools/json_ops/execute", {"arguments": arguments})
    result = call(url, token, session, "json_ops", arguments)
    chunked = post_chunked(url, token, session, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                                 "params": {"name": "json_ops", "arguments": arguments}})
    grown = (peak_kib(pid) - before) / 1024
    assert grown < 16, f"toolshed serve's peak memory grew {grown:.1f} MiB"
    assert status == 400 and body["error"]["kind"] == "invalid_arguments", body
    assert said in json.dumps(body), body
    assert result["isError"] and said in result["content"][0]["text"], result
    assert chunked[0] == 200, chunked
    result = message_of(chunked[1])["result"]
    assert result["isError"] and said in result["content"][0]["text"], result
    # Over the body limit in chunks: 413, as with a declared length.
    too_big = post_chunked(url, token, session, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                                 "params": {"name": "json_ops", "arguments": {"text": "x" * (4 << 20)}}})
    assert too_big[0] == 413, too_big
    # A document within the limit still works, and so does a large one sent pretty-printed
    # whose compact text is within it.
    within = {**arguments, "document": small_values_document(900_000)}
    assert call(url, token, session, "json_ops", within)["structuredContent"]["count"] == 1
    pretty = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "json_ops", "arguments": within}}, indent=2)
    assert len(pretty) > 1024 * 1024
    req = urllib.request.Request(url, data=pretty.encode(), method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": ACCEPT,
        "mcp-session-id": session})
    with urllib.request.urlopen(req, timeout=30) as res:
        assert message_of(res.read().decode())["result"]["structuredContent"]["count"] == 1
    # Over MCP HTTP those arguments were parsed once, into the call (rmcp's own parser
    # buffers a message first, which built the 0.9 MB document's tree of about 19 MiB twice).
    grown = (peak_kib(pid) - before) / 1024
    assert grown < 30, f"toolshed serve's peak memory grew {grown:.1f} MiB"
    # A repeated argument name: the last value counts, as JSON parsers take it (the large
    # one here, which once made the server panic putting it back after the small one; such
    # a request is left to rmcp's own parser, so it comes after the memory check).
    repeated = json.dumps(within["document"])
    text = ('{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "json_ops", "arguments": '
            '{"operation": "query", "path": "$.items[0].id", "document": {"items": [{"id": "small"}]}, '
            f'"document": {repeated}}}}}}}')
    req = urllib.request.Request(url, data=text.encode(), method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": ACCEPT,
        "mcp-session-id": session})
    with urllib.request.urlopen(req, timeout=30) as res:
        found = message_of(res.read().decode())["result"]["structuredContent"]
    assert found["matches"][0]["value"] == 0, found

    # stdio, the same.
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    proc = subprocess.Popen([toolshed_bin, "--workspace", str(workspace), "mcp"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        def ask(id, method, params):
            proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}) + "\n").encode())
            proc.stdin.flush()
            return json.loads(proc.stdout.readline())

        ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        assert not ask(2, "tools/call", {"name": "json_ops", "arguments": small})["result"].get("isError")
        before = peak_kib(proc.pid)
        result = ask(3, "tools/call", {"name": "json_ops", "arguments": arguments})["result"]
        grown = (peak_kib(proc.pid) - before) / 1024
        assert grown < 16, f"toolshed mcp's peak memory grew {grown:.1f} MiB"
        assert result["isError"] and said in result["content"][0]["text"], result
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)
