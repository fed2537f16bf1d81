"""`toolshed serve` over streamable HTTP, driven by the official Python MCP client."""

import asyncio
import subprocess

import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

MODES = ["legacy", "auto"]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


@pytest.fixture
def http_server(serve):
    """A `toolshed serve --port 0` on the test's workspace: (url, token)."""
    return serve()


def connect(url, token, mode):
    """A client sending the bearer token; the caller closes the HTTP client it returns."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return http, Client(streamable_http_client(url, http_client=http), mode=mode)


def test_the_url_is_loopback_with_a_real_port(http_server):
    url, token = http_server
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    assert not url.startswith("http://127.0.0.1:0/")
    assert len(token) == 64


@pytest.mark.parametrize("mode", MODES)
def test_lists_tools_and_calls_the_calculator(http_server, mode):
    url, token = http_server

    async def main():
        http, client = connect(url, token, mode)
        async with http, client:
            names = [t.name for t in (await client.list_tools()).tools]
            # The calculator is on demand (docs/mcp.md): found with tool_search, called by name.
            assert "workspace_read" in names and "tool_search" in names and names == sorted(names)
            assert "calculator" not in names
            # Said once for every tool, as over stdio: where paths lead, what a flag left
            # out means (the schemas leave both out).
            instructions = client.instructions or ""
            assert "relative to it" in instructions and "left out is false" in instructions, instructions
            result = await client.call_tool("calculator", {"expression": "2+3*4"})
            assert not result.is_error, result.content
            assert result.content[0].text == "14"

    run(main())


@pytest.mark.parametrize("mode", MODES)
def test_bad_arguments_are_an_error_result(http_server, mode):
    url, token = http_server

    async def main():
        http, client = connect(url, token, mode)
        async with http, client:
            result = await client.call_tool("calculator", {"expression": 7, "bogus": True})
            assert result.is_error
            assert "at /expression" in result.content[0].text, result.content[0].text

    run(main())


def test_a_wrong_token_cannot_connect(http_server):
    url, _ = http_server

    async def main():
        http, client = connect(url, "f" * 64, "legacy")
        async with http:
            with pytest.raises(Exception):
                async with client:
                    await client.list_tools()

    run(main())


def disable(toolshed_bin, home, workspace, plugin):
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "plugins", "disable", plugin],
        env=env,
        capture_output=True,
        check=True,
        timeout=30,
    )


def test_list_changed_reaches_a_legacy_http_session(http_server, toolshed_bin, home, workspace):
    url, token = http_server

    async def main():
        changed = asyncio.Event()

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        client = Client(streamable_http_client(url, http_client=http), mode="legacy", message_handler=on_message)
        async with http, client:
            assert "skill_list" in [t.name for t in (await client.list_tools()).tools]
            await asyncio.to_thread(disable, toolshed_bin, home, workspace, "system.skills")
            await asyncio.wait_for(changed.wait(), timeout=10)
            assert "skill_list" not in [t.name for t in (await client.list_tools()).tools]

    run(main())


def test_list_changed_reaches_a_2026_http_listener(http_server, toolshed_bin, home, workspace):
    url, token = http_server

    async def main():
        http, client = connect(url, token, "auto")
        async with http, client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(tools_list_changed=True) as sub:
                assert sub.honored.tools_list_changed
                await asyncio.to_thread(disable, toolshed_bin, home, workspace, "system.skills")
                await asyncio.wait_for(sub.__anext__(), timeout=10)
            assert "skill_list" not in [t.name for t in (await client.list_tools()).tools]

    run(main())


def test_stateless_requests_share_an_owner_unless_they_name_one(http_server, workspace):
    """2026-07-28 requests carry no session: the X-Toolshed-Owner header names the owner."""
    url, token = http_server
    edit = {"path": "hello.txt", "old_text": "hello", "new_text": "howdy"}

    def client_as(owner):
        headers = {"Authorization": f"Bearer {token}"}
        if owner:
            headers["X-Toolshed-Owner"] = owner
        http = create_mcp_http_client(headers=headers)
        return http, Client(streamable_http_client(url, http_client=http), mode="auto")

    async def main():
        http_a, a = client_as("agent-a")
        http_b, b = client_as("agent-b")
        async with http_a, a, http_b, b:
            assert not (await a.call_tool("workspace_read", {"path": "hello.txt"})).is_error
            refused = await b.call_tool("workspace_edit", edit)
            assert refused.is_error, "agent-b never read the file"
            done = await a.call_tool("workspace_edit", edit)
            assert not done.is_error, done.content
        # Two clients that name no owner are one owner: a read by one lets the other edit.
        http_c, c = client_as(None)
        http_d, d = client_as(None)
        async with http_c, c, http_d, d:
            assert not (await c.call_tool("workspace_read", {"path": "hello.txt"})).is_error
            again = {"path": "hello.txt", "old_text": "howdy", "new_text": "hi"}
            done = await d.call_tool("workspace_edit", again)
            assert not done.is_error, done.content

    run(main())
    assert (workspace / "hello.txt").read_text() == "hi from the workspace\n"


def raw_session(url, token):
    """Opens a legacy MCP session by hand; returns the headers its requests carry."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }

    def post(body, extra=None):
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        conn.request("POST", parts.path, body=__import__("json").dumps(body), headers={**headers, **(extra or {})})
        resp = conn.getresponse()
        data = resp.read().decode()
        conn.close()
        return resp.status, resp.getheader("content-type", ""), resp.getheader("mcp-session-id"), data

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    status, _, session, _ = post(init)
    assert status == 200 and session
    extra = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
    assert post({"jsonrpc": "2.0", "method": "notifications/initialized"}, extra)[0] == 202
    return lambda body: post(body, extra)


def test_a_single_reply_is_one_json_body_and_progress_still_streams(http_server):
    import json

    url, token = http_server
    post = raw_session(url, token)
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "calculator", "arguments": {"expression": "6*7"}}}
    status, kind, _, data = post(call)
    assert status == 200 and kind.startswith("application/json"), (kind, data)
    reply = json.loads(data)
    assert reply["id"] == 7 and "42" in json.dumps(reply["result"]), reply
    # A call that reports progress keeps its event stream: the notifications come first.
    slow = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "exec_command", "arguments": {"cmd": "echo one; sleep 0.3; echo two", "yield_ms": 5000},
        "_meta": {"progressToken": "p1"}}}
    status, kind, _, data = post(slow)
    assert status == 200 and kind.startswith("text/event-stream"), (kind, data)
    messages = [json.loads(line[5:]) for line in data.splitlines() if line.startswith("data:") and line[5:].strip()]
    assert messages[0]["method"] == "notifications/progress", messages
    assert messages[-1]["id"] == 8 and "two" in json.dumps(messages[-1]["result"]), messages
    # A call slower than the folding window streams too, so its headers come at once.
    quiet = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "exec_command", "arguments": {"cmd": "sleep 1; echo late", "yield_ms": 5000}}}
    status, kind, _, data = post(quiet)
    assert status == 200 and kind.startswith("text/event-stream"), (kind, data)
    assert "late" in data


def test_routing_headers_must_match_the_body_in_the_2026_era(http_server):
    # Mcp-Method and Mcp-Name let a gateway in front route without reading bodies; a
    # request whose headers say something else than its body is refused (issue 54).
    import json
    import urllib.error
    import urllib.request

    url, token = http_server
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "routing", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "calculator", "arguments": {"expression": "6*7"}, "_meta": meta}}).encode()

    def post(method, name):
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                   "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=30) as res:
                return res.status, json.loads(res.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    status, reply = post("tools/call", "calculator")
    assert status == 200 and reply["result"]["structuredContent"]["result"] == 42, reply
    for method, name, said in [("tools/list", "calculator", "Mcp-Method"), ("tools/call", "datetime", "Mcp-Name"),
                               ("tools/call", None, "Mcp-Name")]:
        status, reply = post(method, name)
        assert status == 400 and said in reply["error"]["message"], (method, name, reply)


@pytest.mark.parametrize("mode", MODES)
def test_lists_say_how_long_they_stay_fresh_in_the_2026_era(http_server, mode):
    # ttlMs and cacheScope are required on list results in the 2026-07-28 era (issue 54);
    # a session-era client gets the lists as before.
    url, token = http_server

    async def main():
        http, client = connect(url, token, mode)
        async with http, client:
            for listed in (await client.session.list_tools(), await client.session.list_prompts(),
                           await client.session.list_resources(), await client.session.list_resource_templates()):
                raw = listed.model_dump(by_alias=True, exclude_unset=True)
                if mode == "auto":
                    assert client.protocol_version == "2026-07-28"
                    assert (raw.get("ttlMs"), raw.get("cacheScope")) == (60000, "private"), raw
                else:
                    assert "ttlMs" not in raw and "cacheScope" not in raw, raw

    run(main())
