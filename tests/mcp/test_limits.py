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
