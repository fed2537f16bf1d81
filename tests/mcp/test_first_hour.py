"""The first hour of a new user, through the real doors: the HTTP session lifecycle, the
unauthenticated health probe, a workspace taken from the client's roots, and an MCP
catalog that lists no tool that can only answer "unconfigured"."""

import asyncio
import json
import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from mcp import Client, StdioServerParameters, types

CURATED = str(Path(__file__).resolve().parents[2] / "plugins")


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


def http(method, url, token=None, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json, text/event-stream")
    for key, value in (headers or {}).items():
        req.add_header(key, value)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def test_deleting_an_mcp_session_and_using_it_afterwards(serve):
    url, token = serve()
    status, body, _ = http("DELETE", url, token, headers={"Mcp-Session-Id": "never-opened"})
    assert status == 404, body
    assert json.loads(body)["error"]["code"] == -32001
    status, _, headers = http("POST", url, token, INIT)
    assert status == 200
    session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    named = {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
    status, body, _ = http("DELETE", url, token, headers=named)
    assert status in (200, 204), body
    status, body, _ = http("DELETE", url, token, headers=named)
    assert status == 404, body
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    status, body, _ = http("POST", url, token, listing, named)
    assert status == 404, body
    reply = json.loads(body)
    assert reply["jsonrpc"] == "2.0" and "not known" in reply["error"]["message"], reply


def test_health_answers_without_a_token_and_says_nothing_more(serve):
    url, token = serve()
    base = url.removesuffix("/mcp")
    status, body, _ = http("GET", f"{base}/health")
    assert status == 200 and json.loads(body) == {"status": "ok"}, body
    status, body, _ = http("GET", f"{base}/api/v1/plugins")
    assert status == 401, body


def test_rest_names_the_plugin_and_why_for_a_disabled_plugins_tool(serve, toolshed_bin, home, workspace):
    url, token = serve()
    base = url.removesuffix("/mcp")
    subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "plugins", "disable", "system.calculator"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
        check=True,
        capture_output=True,
        timeout=30,
    )
    for _ in range(100):
        status, body, _ = http(
            "POST", f"{base}/api/v1/tools/calculator/execute", token, {"arguments": {"expression": "1"}}
        )
        if "disabled" in body:
            break
        asyncio.run(asyncio.sleep(0.1))
    message = json.loads(body)["error"]["message"]
    assert "system.calculator" in message and "disabled" in message, body


def test_without_a_workspace_the_clients_first_root_is_used(toolshed_bin, home, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("from the root\n")
    params = StdioServerParameters(
        command=toolshed_bin,
        args=["mcp"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), "HOME": str(home)},
        cwd="/",
    )

    async def roots(_context):
        return types.ListRootsResult(roots=[types.Root(uri=project.as_uri())])

    async def main():
        async with Client(params, mode="legacy", list_roots_callback=roots) as client:
            result = await client.call_tool("workspace_read", {"path": "notes.txt"})
            assert not result.is_error, result.content
            assert "from the root" in result.content[0].text

    run(main())


def test_without_a_workspace_or_roots_the_root_directory_is_refused(toolshed_bin, home):
    proc = subprocess.run(
        [toolshed_bin, "mcp"],
        input=json.dumps(INIT) + "\n",
        env={"TOOLSHED_HOME": str(home), "HOME": str(home), "PATH": os.environ["PATH"]},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2, proc
    assert "the root of the file system" in proc.stderr and "--workspace" in proc.stderr, proc.stderr


def test_initialize_says_what_the_workspace_is(server, workspace):
    async def main():
        async with Client(server(), mode="legacy") as client:
            text = client.instructions or ""
            assert str(workspace) in text and "workspace_read" in text, text

    run(main())


def test_a_fresh_install_lists_no_tool_that_answers_unconfigured(toolshed_bin, home, workspace):
    params = StdioServerParameters(
        command=toolshed_bin,
        args=["--workspace", str(workspace), "mcp"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": CURATED, "HOME": str(home), "PATH": os.environ["PATH"]},
        cwd=str(workspace),
    )

    async def main():
        async with Client(params, mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            # Needs a URL setting, a Firecrawl key, a network grant.
            for unconfigured in ("webhook_send", "firecrawl_scrape", "github_get_issue"):
                assert unconfigured not in names, names
            # web_search works keyless (DuckDuckGo) on a fresh install.
            assert "workspace_read" in names and "web_fetch" in names and "web_search" in names, names
            # Every listed tool, called with no arguments, fails for its arguments at
            # most — never because it is not configured.
            for name in names:
                if name in ("exec_command", "shell", "process_exec", "write_stdin"):
                    continue
                result = await client.call_tool(name, {})
                text = " ".join(c.text for c in result.content if hasattr(c, "text"))
                assert "unconfigured" not in text and "not configured" not in text, (name, text)
            # Called by name anyway, a hidden tool says who can make it work.
            result = await client.call_tool("webhook_send", {"text": "hi"})
            text = result.content[0].text
            assert result.is_error and "Only the person running toolshed" in text, text

    run(main())


def test_rest_audit_is_filtered_and_paged(serve):
    url, token = serve()
    api = url.removesuffix("/mcp") + "/api/v1"
    for expression in ("1+1", "2+2", "3+3"):
        status, body, _ = http(
            "POST", f"{api}/tools/calculator/execute", token, {"arguments": {"expression": expression}}
        )
        assert status == 200, body
    status, body, _ = http("GET", f"{api}/audit?tool=calc*&since=1h&limit=2", token)
    assert status == 200, body
    first = json.loads(body)
    assert [row["tool"] for row in first["audit"]] == ["calculator", "calculator"], first
    assert all(row["door"] == "rest" and row["outcome"] == "ok" for row in first["audit"])
    status, body, _ = http("GET", f"{api}/audit?tool=calc*&limit=2&cursor={first['next_cursor']}", token)
    second = json.loads(body)
    assert len(second["audit"]) == 1 and second["next_cursor"] is None, second
    assert second["audit"][0]["id"] < first["audit"][-1]["id"]
    status, body, _ = http("GET", f"{api}/audit?since=soon", token)
    assert status == 400 and "is not a time" in json.loads(body)["error"]["message"], body
    status, body, _ = http("GET", f"{api}/audit?colour=red", token)
    assert status == 400, body
    # A filter left blank (a form's empty field) is not given.
    status, body, _ = http("GET", f"{api}/audit?since=&cursor=&tool=&limit=1", token)
    assert status == 200 and len(json.loads(body)["audit"]) == 1, body


def test_a_scraper_token_reads_metrics_and_nothing_else(serve, toolshed_bin, home):
    url, admin = serve()
    api = url.removesuffix("/mcp") + "/api/v1"
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}

    def token(*scopes):
        args = [toolshed_bin, "token", "create", "--owner", "prometheus"]
        for scope in scopes:
            args += ["--scope", scope]
        return subprocess.run(args, env=env, capture_output=True, text=True, check=True, timeout=30).stdout.strip()

    scraper = token("metrics:read")
    status, body, headers = http("GET", f"{api}/metrics", scraper)
    assert status == 200 and "toolshed_uptime_seconds" in body, body
    assert {k.lower(): v for k, v in headers.items()}["content-type"].startswith("text/plain")
    for path in ("/plugins", "/tools", "/audit"):
        status, body, _ = http("GET", f"{api}{path}", scraper)
        assert status == 403 and "scope" in body, (path, body)
    status, body, _ = http("POST", f"{api}/tools/calculator/execute", scraper, {"arguments": {"expression": "1"}})
    assert status == 403, body
    # An agent's token (default scopes) does not read the operator's metrics.
    status, body, _ = http("GET", f"{api}/metrics", token())
    assert status == 403 and "metrics:read" in body, body
    status, _, _ = http("GET", f"{api}/metrics", admin)
    assert status == 200
