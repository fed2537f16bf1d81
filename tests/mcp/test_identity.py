"""Agent tokens through the HTTP doors: MCP over streamable HTTP (the official Python
client) and REST. Alice and Bob each hold a token; Bob never reaches Alice's sessions or
processes, whatever he sends, and a revoked token is refused at once."""

import asyncio
import json
import subprocess
import urllib.error
import urllib.request

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


@pytest.fixture
def tokens(toolshed_bin, home):
    """Makes an agent token for an owner with `toolshed token create`."""

    def make(owner, *scopes):
        args = [toolshed_bin, "token", "create", "--owner", owner]
        for scope in scopes:
            args += ["--scope", scope]
        out = subprocess.run(
            args, env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30
        )
        return out.stdout.strip()

    return make


def revoke(toolshed_bin, home, token):
    subprocess.run(
        [toolshed_bin, "token", "revoke", token],
        env={"TOOLSHED_HOME": str(home)},
        capture_output=True,
        check=True,
        timeout=30,
    )


def post(url, token, body, headers=None):
    """POST JSON: (status, parsed body, response headers)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            return response.status, text, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), {k.lower(): v for k, v in e.headers.items()}


def execute(base, token, tool, arguments, headers=None):
    status, text, _ = post(f"{base}/api/v1/tools/{tool}/execute", token, {"arguments": arguments}, headers)
    return status, json.loads(text) if text else None


def test_rest_bob_never_reaches_alices_processes_and_sessions(serve, tokens, toolshed_bin, home):
    url, _admin = serve()
    base = url.removesuffix("/mcp")
    alice, bob = tokens("alice"), tokens("bob")
    status, started = execute(base, alice, "process_exec", {"cmd": "sleep 61", "name": "alices"})
    assert status == 200 and not started["is_error"], started
    pid = started["structured"]["id"]
    status, session = execute(base, alice, "exec_command", {"cmd": "cat", "stdin": True, "yield_ms": 100})
    assert status == 200, session
    sid = session["structured"]["session_id"]

    # Bob, as himself: nothing of Alice's is there.
    _, listed = execute(base, bob, "process_list", {})
    assert listed["structured"]["processes"] == []
    _, listed = execute(base, bob, "command_run_list", {})
    assert listed["structured"]["sessions"] == []
    for tool, args in [
        ("process_read_output", {"id": pid}),
        ("process_stop", {"id": pid}),
        ("write_stdin", {"session_id": sid, "chars": "hi\n"}),
        ("command_run_read_output", {"session_id": sid}),
        ("command_run_terminate", {"session_id": sid}),
    ]:
        status, body = execute(base, bob, tool, args)
        assert status == 404 or body.get("is_error"), (tool, status, body)
    # Bob naming Alice, or a sub-owner of hers: refused before anything runs.
    for owner in ["alice", "alice/task-1"]:
        status, body = execute(base, bob, "process_stop", {"id": pid}, {"X-Toolshed-Owner": owner})
        assert status == 403 and body["error"]["kind"] == "denied", body
    # Bob narrowing to a sub-owner of his own is fine.
    status, body = execute(base, bob, "process_list", {}, {"X-Toolshed-Owner": "bob/task-7"})
    assert status == 200, body
    # Alice's process still runs; she stops it.
    _, listed = execute(base, alice, "process_list", {})
    assert [p["id"] for p in listed["structured"]["processes"]] == [pid]
    status, stopped = execute(base, alice, "process_stop", {"id": pid})
    assert status == 200 and not stopped["is_error"], stopped
    # A token without plugins:admin cannot disable a plugin.
    status, body, _ = post(f"{base}/api/v1/plugins/system.util/disable", alice, {})
    assert status == 403 and "plugins:admin" in body
    # Revoked: refused on the next request.
    revoke(toolshed_bin, home, bob)
    status, _ = execute(base, bob, "process_list", {})
    assert status == 401


def connect(url, token, headers=None):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}", **(headers or {})})
    return http, Client(streamable_http_client(url, http_client=http), mode="legacy")


def test_mcp_http_bob_never_reaches_alices_processes_and_a_revoked_token_ends_his_session(
    serve, tokens, toolshed_bin, home
):
    url, _admin = serve()
    alice, bob = tokens("alice"), tokens("bob")

    async def main():
        http_a, client_a = connect(url, alice)
        http_b, client_b = connect(url, bob, {"X-Toolshed-Owner": "bob"})
        async with http_a, client_a, http_b, client_b:
            started = await client_a.call_tool("process_exec", {"cmd": "sleep 62"})
            assert not started.is_error, started.content
            pid = started.structured_content["id"]
            listed = await client_b.call_tool("process_list", {})
            assert listed.structured_content["processes"] == []
            stop = await client_b.call_tool("process_stop", {"id": pid})
            assert stop.is_error
            # Naming Alice through _meta is refused.
            with pytest.raises(Exception) as refused:
                await client_b.call_tool("process_stop", {"id": pid}, meta={"toolshed/owner": "alice"})
            assert "may not act as `alice`" in str(refused.value)
            mine = await client_a.call_tool("process_list", {})
            assert [p["id"] for p in mine.structured_content["processes"]] == [pid]
            # Revoking Bob's token ends his open session's use at once.
            revoke(toolshed_bin, home, bob)
            with pytest.raises(Exception):
                await client_b.call_tool("process_list", {})
            stopped = await client_a.call_tool("process_stop", {"id": pid})
            assert not stopped.is_error

    run(main())


def test_an_mcp_session_answers_only_the_token_that_opened_it(serve, tokens):
    url, _admin = serve()
    alice, bob = tokens("alice"), tokens("bob")
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    status, _, headers = post(url, alice, init)
    assert status == 200
    session = headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    status, body, _ = post(url, bob, listing, {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"})
    assert status == 403 and "another token" in body
    status, body, _ = post(url, alice, listing, {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"})
    assert status == 200 and "calculator" in body


def test_tool_scopes_limit_what_a_token_sees_and_calls(serve, tokens):
    url, _admin = serve()
    base = url.removesuffix("/mcp")
    calc_only = tokens("carol", "tools:call", "tools:list", "tool:calculator")
    req = urllib.request.Request(f"{base}/api/v1/tools", headers={"Authorization": f"Bearer {calc_only}"})
    with urllib.request.urlopen(req, timeout=30) as response:
        listed = [t["name"] for t in json.loads(response.read())["tools"]]
    assert listed == ["calculator"], listed
    status, body = execute(base, calc_only, "calculator", {"expression": "2*3"})
    assert status == 200 and body["content"][0]["text"] == "6", body
    status, body = execute(base, calc_only, "exec_command", {"cmd": "echo no"})
    assert status == 403 and body["error"]["kind"] == "denied", body

    async def main():
        http, client = connect(url, calc_only)
        async with http, client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["calculator"], names
            refused = await client.call_tool("exec_command", {"cmd": "echo no"})
            assert refused.is_error

    run(main())


def test_a_read_only_token_cannot_type_into_its_owners_writable_session(serve, toolshed_bin, home, workspace):
    # Failed before: sessions were keyed by owner only, so a read-only token of Alice typed
    # into the shell her workspace-write token had started, and wrote files through it.
    (home / ".config" / "toolshed").mkdir(parents=True)
    (home / ".config" / "toolshed" / "config.toml").write_text(
        '[[policy.rule]]\nname = "no wiping"\nwhen = { commands = { matches = "rm -rf" } }\n'
        'decision = "deny"\n'
    )
    url, _admin = serve({"XDG_CONFIG_HOME": str(home / ".config")})
    base = url.removesuffix("/mcp")

    def token(*flags):
        out = subprocess.run(
            [toolshed_bin, "token", "create", "--owner", "alice", *flags],
            env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30,
        )
        return out.stdout.strip()

    writer, reader = token(), token("--sandbox", "read-only")
    status, session = execute(base, writer, "exec_command", {"cmd": "bash", "stdin": True, "yield_ms": 100})
    assert status == 200, session
    sid = session["structured"]["session_id"]
    status, body = execute(base, reader, "write_stdin", {"session_id": sid, "chars": "echo x > typed.txt\n"})
    assert status == 403 and "typing into it is refused" in body["error"]["message"], body
    # Reading its output is fine; the session's own token still types.
    status, body = execute(base, reader, "command_run_read_output", {"session_id": sid})
    assert status == 200 and not body["is_error"], body
    status, body = execute(
        base, writer, "write_stdin", {"session_id": sid, "chars": "echo y > typed.txt\n", "yield_ms": 500}
    )
    assert status == 200 and not body["is_error"], body
    # What is typed is a command line: a rule on `commands` covers it as it covers exec_command.
    status, body = execute(base, writer, "write_stdin", {"session_id": sid, "chars": "rm -rf .\n"})
    assert status == 403 and "no wiping" in json.dumps(body), body
    status, body = execute(base, writer, "exec_command", {"cmd": "rm -rf ."})
    assert status == 403 and "no wiping" in json.dumps(body), body
    assert (workspace / "typed.txt").read_text() == "y\n"
    execute(base, writer, "command_run_terminate", {"session_id": sid, "force": True})
