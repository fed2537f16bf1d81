"""What Agent Spaces' users find in toolshed (issue 60's Agent Spaces lines), over REST."""

from test_approvals import request
from test_lifecycle_events import Stream

CONTEXT = {"workspaceId": "ws-7", "executorId": "exec-2", "taskId": "task-19", "meta": {"step": 3, "by": "flow"}}


def test_a_plugins_tool_runs_by_plugin_with_the_callers_ids_echoed_in_its_events(serve):
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]
    stream = Stream(base, token)
    endpoint = f"{base}/api/v1/plugins/system.calculator/tools/execute"

    status, body = request(endpoint, token, "POST", {"toolName": "calculator", "args": {"expression": "2+3"}, **CONTEXT})
    assert status == 200, body
    assert body["plugin_id"] == "system.calculator" and not body["is_error"]
    assert "5" in body["content"][0]["text"]
    done = stream.wait_for(lambda e: e.get("type") == "tool.executed")
    assert done["data"]["context"] == CONTEXT
    assert done["data"]["call_id"] == body["call_id"] and done["data"]["tool"] == "calculator"

    # As a job: the job carries them while it runs, and every event of it.
    status, started = request(endpoint, token, "POST", {"toolName": "calculator", "args": {"expression": "6*7"}, "async": True, **CONTEXT})
    assert status == 202, started
    assert started["job"]["context"] == CONTEXT, started
    job = started["job"]["id"]
    for kind in ("job.started", "job.finished"):
        event = stream.wait_for(lambda e, kind=kind: e.get("type") == kind and e.get("job_id") == job)
        assert event["data"]["context"] == CONTEXT, event

    # The seed's other spellings of the tool and its arguments.
    status, body = request(endpoint, token, "POST", {"tool": "calculator", "params": {"expression": "1+1"}})
    assert status == 200 and "2" in body["content"][0]["text"], body


def test_an_agent_token_runs_a_plugins_tool_with_tools_call_and_not_without(serve, token_for, toolshed_bin, home):
    import subprocess

    url, _admin = serve()
    base = url.rsplit("/mcp", 1)[0]
    endpoint = f"{base}/api/v1/plugins/system.calculator/tools/execute"
    agent = token_for("alice")
    status, body = request(endpoint, agent, "POST", {"toolName": "calculator", "args": {"expression": "3*3"}, "taskId": "t"})
    assert status == 200 and body["content"][0]["text"] == "9", body
    lister = subprocess.run(
        [toolshed_bin, "token", "create", "--owner", "bob", "--scope", "tools:list"],
        env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()
    status, body = request(endpoint, lister, "POST", {"toolName": "calculator", "args": {"expression": "3*3"}})
    assert status == 403 and "tools:call" in body["error"]["message"], body


def test_a_tool_of_another_plugin_or_a_bad_body_is_refused_saying_what_to_do(serve):
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]
    status, body = request(f"{base}/api/v1/plugins/system.workspace/tools/execute", token, "POST", {"toolName": "calculator"})
    assert status == 404
    assert "/api/v1/plugins/system.calculator/tools/execute" in body["error"]["message"], body
    status, body = request(f"{base}/api/v1/plugins/system.workspace/tools/execute", token, "POST", {"toolName": "workspace_nothing"})
    assert status == 404 and "workspace_read" in body["error"]["message"], body
    status, body = request(f"{base}/api/v1/plugins/no.such/tools/execute", token, "POST", {"toolName": "calculator"})
    assert status == 404 and "no plugin `no.such`" in body["error"]["message"], body
    status, body = request(f"{base}/api/v1/plugins/system.calculator/tools/execute", token, "POST", {"toolName": "calculator", "spaceId": "x"})
    assert status == 400 and "spaceId" in body["error"]["message"], body
    status, body = request(f"{base}/api/v1/plugins/system.calculator/tools/execute", token, "POST",
                           {"toolName": "calculator", "meta": {"blob": "x" * 20000}})
    assert status == 400 and "meta" in body["error"]["message"], body


def test_session_and_prompt_hooks_fire_where_toolshed_sees_them(serve, home, workspace):
    """Agent Spaces' SessionStart / SessionEnd and UserPromptSubmit-style hooks, fired and
    forgotten: an MCP session starting and ending, a person getting a prompt."""
    import asyncio
    import json
    import time

    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    config = home / "hooks.toml"
    config.write_text(
        '[[hooks.session_start]]\ncommand = "cat > hook-start.json"\n'
        '[[hooks.session_end]]\ncommand = "cat > hook-end.json"\n'
        '[[hooks.user_prompt_submit]]\ncommand = "cat > hook-prompt.json"\n'
    )
    url, token = serve({"TOOLSHED_CONFIG": str(config)})

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        client = Client(streamable_http_client(url, http_client=http, terminate_on_close=True), mode="legacy")
        async with http, client:
            await client.get_prompt("status")
            await client.call_tool("calculator", {"expression": "1+1"})

    asyncio.run(asyncio.wait_for(main(), 60))

    def read(name):
        path = workspace / name
        for _ in range(200):
            if path.exists() and path.read_text().strip():
                return json.loads(path.read_text())
            time.sleep(0.05)
        raise AssertionError(f"{name} was never written")

    start = read("hook-start.json")
    assert start["hook_event_name"] == "SessionStart" and start["transport"] == "http", start
    assert start["source"] == "startup" and start["client"]["name"], start
    prompt = read("hook-prompt.json")
    assert prompt["hook_event_name"] == "UserPromptSubmit" and prompt["prompt"] == "status", prompt
    assert prompt["session_id"] == start["session_id"]
    end = read("hook-end.json")
    assert end["hook_event_name"] == "SessionEnd" and end["session_id"] == start["session_id"], end


def test_a_codex_hook_speaks_codexs_protocol_beside_claude_codes(serve, home, workspace):
    """The same [hooks] config takes Codex's hooks: an argv command, a timeout in seconds,
    `protocol = "codex"` — its payload has `tool_output`, its `systemMessage` is read."""
    import asyncio
    import json

    from mcp import Client

    (workspace / "post.sh").write_text(
        "#!/bin/sh\ncat > codex-post.json\n"
        'printf \'{"systemMessage": "checked by the codex hook"}\'\n'
    )
    (workspace / "pre.sh").write_text(
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'\"2+2\"'*) echo 'no fours' >&2; exit 2;; esac\n"
    )
    config = home / "codex-hooks.toml"
    config.write_text(
        '[[hooks.pre_tool_use]]\nmatcher = "calculator"\ncommand = ["sh", "pre.sh"]\ntimeout = 5\nprotocol = "codex"\n'
        '[[hooks.post_tool_use]]\nmatcher = "calculator"\ncommand = ["sh", "post.sh"]\nprotocol = "codex"\n'
    )
    url, token = serve({"TOOLSHED_CONFIG": str(config)})
    from test_approvals import request

    base = url.rsplit("/mcp", 1)[0]
    status, body = request(f"{base}/api/v1/tools/calculator/execute", token, "POST", {"arguments": {"expression": "3+3"}})
    assert status == 200, body
    texts = [c["text"] for c in body["content"]]
    assert texts[0] == "6" and "checked by the codex hook" in texts, texts
    post = json.loads((workspace / "codex-post.json").read_text())
    assert post["hook_event_name"] == "PostToolUse" and post["tool_output"] == "6", post
    assert "transcript_path" in post and post["tool_response"]["is_error"] is False, post
    status, body = request(f"{base}/api/v1/tools/calculator/execute", token, "POST", {"arguments": {"expression": "2+2"}})
    assert status == 403 and "no fours" in body["error"]["message"], body


def send(url, token, body, content_type, method="POST"):
    import json
    import urllib.request

    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            raw = response.read()
            return response.status, {k.lower(): v for k, v in response.headers.items()}, raw
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def test_an_upload_lands_in_the_workspace_with_a_url_and_a_path_tools_can_use(serve, token_for, workspace, toolshed_bin, home):
    """Agent Spaces' /api/v1/upload: bytes or a form, stored under uploads/ with a fresh
    safe name, answered with a workspace path and a download URL."""
    import hashlib
    import json

    url, admin = serve()
    base = url.rsplit("/mcp", 1)[0]
    alice = token_for("alice")

    data = b"a,b\n1,2\n"
    status, headers, raw = send(f"{base}/api/v1/upload?name=../../report%20(1).csv", alice, data, "application/octet-stream")
    assert status == 201, raw
    stored = json.loads(raw)
    assert stored["path"].startswith("uploads/") and stored["path"].endswith("-report__1_.csv"), stored
    assert stored["size"] == len(data) and stored["sha256"] == hashlib.sha256(data).hexdigest(), stored
    assert stored["owner"] == "alice" and headers["location"] == stored["url"] == stored["httpPath"], (stored, headers)
    assert (workspace / stored["path"]).read_bytes() == data
    # Tools reach it by its path; people by its URL.
    status, read = request(f"{base}/api/v1/tools/workspace_read/execute", alice, "POST", {"arguments": {"path": stored["path"]}})
    assert status == 200 and "1,2" in read["content"][0]["text"], read
    status, headers, raw = send(f"{base}{stored['url']}", alice, None, "application/octet-stream", "GET")
    assert status == 200 and raw == data and headers["x-content-type-options"] == "nosniff", headers

    # A form's file part, as a browser's FormData sends it.
    form = (b"--b0undary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\n"
            b"Content-Type: text/plain\r\n\r\nfrom a form\r\n--b0undary--\r\n")
    status, _, raw = send(f"{base}/api/v1/upload", alice, form, "multipart/form-data; boundary=b0undary")
    assert status == 201, raw
    stored = json.loads(raw)
    assert stored["path"].endswith("-notes.txt") and (workspace / stored["path"]).read_text() == "from a form"

    # A token held to a read-only sandbox writes nothing.
    import subprocess
    reader = subprocess.run([toolshed_bin, "token", "create", "--owner", "alice", "--sandbox", "read-only"],
                            env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True,
                            timeout=30).stdout.strip()
    status, _, raw = send(f"{base}/api/v1/upload?name=x.txt", reader, b"x", "application/octet-stream")
    assert status == 403 and b"read-only" in raw, raw
    assert not any(p.name.endswith("-x.txt") for p in (workspace / "uploads").iterdir())

    # Nothing outside uploads/ is read back.
    (workspace / "secret.txt").write_text("secret")
    for name in ("..%2Fsecret.txt", "..", ".hidden"):
        status, _, raw = send(f"{base}/api/v1/uploads/{name}", alice, None, "application/octet-stream", "GET")
        assert status == 404 and b"secret" not in raw.replace(b"secret.txt", b""), (name, status, raw)
