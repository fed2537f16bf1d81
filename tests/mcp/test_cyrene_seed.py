"""What Cyrene's users find in toolshed (issue 60's Cyrene lines): the plugin states
`installed`, `loaded` (running) and `paused`, through the CLI, REST and MCP."""

import asyncio
import subprocess
import time

from mcp import Client
from mcp.shared.exceptions import MCPError

from test_approvals import request


def cli(toolshed_bin, home, workspace, *args):
    return subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), *args],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
        capture_output=True, text=True, timeout=60,
    )


def wait_state(base, token, plugin, state):
    for _ in range(200):
        status, body = request(f"{base}/api/v1/plugins/{plugin}", token)
        if body.get("state") == state:
            return body
        time.sleep(0.05)
    raise AssertionError(f"{plugin} never became {state}: {body}")


def test_a_paused_plugin_stays_loaded_refuses_its_calls_and_resumes(serve, toolshed_bin, home, workspace, server):
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]
    calc = f"{base}/api/v1/tools/calculator/execute"
    assert request(calc, token, "POST", {"arguments": {"expression": "1+1"}})[0] == 200

    # Paused from the CLI beside the running server: the server follows.
    done = cli(toolshed_bin, home, workspace, "plugins", "pause", "system.calculator")
    assert done.returncode == 0, done.stderr
    assert "system.calculator: paused" in done.stdout
    detail = wait_state(base, token, "system.calculator", "paused")
    assert "toolshed plugins resume system.calculator" in detail["reason"]
    status, body = request(calc, token, "POST", {"arguments": {"expression": "1+1"}})
    assert status == 404 and "paused" in body["error"]["message"], body
    assert "toolshed plugins resume system.calculator" in body["error"]["message"]
    listed = {p["id"]: p["state"] for p in request(f"{base}/api/v1/plugins", token)[1]["plugins"]}
    assert listed["system.calculator"] == "paused"

    # Twice is a conflict that says what to do; a disabled plugin cannot be paused.
    status, body = request(f"{base}/api/v1/plugins/system.calculator/pause", token, "POST")
    assert status == 409 and "resume" in body["error"]["message"], body
    assert request(f"{base}/api/v1/plugins/system.random/disable", token, "POST")[0] == 200
    status, body = request(f"{base}/api/v1/plugins/system.random/pause", token, "POST")
    assert status == 409 and "enable" in body["error"]["message"], body

    # MCP over stdio, a second process on the same state: paused too (kept in the store).
    async def over_mcp():
        async with Client(server(), mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "calculator" not in names
            # A tool the client does not see is a protocol error, naming the pause.
            try:
                await client.call_tool("calculator", {"expression": "2+2"})
            except MCPError as e:
                return str(e)
            raise AssertionError("a paused plugin's tool was called")

    refused = asyncio.run(asyncio.wait_for(over_mcp(), 30))
    assert "paused" in refused, refused

    # Resumed over REST: callable again, and listed.
    status, body = request(f"{base}/api/v1/plugins/system.calculator/resume", token, "POST")
    assert status == 200 and body["state"] == "running", body
    status, body = request(calc, token, "POST", {"arguments": {"expression": "1+1"}})
    assert status == 200 and body["content"][0]["text"] == "2", body
    status, body = request(f"{base}/api/v1/plugins/system.calculator/resume", token, "POST")
    assert status == 409 and "not paused" in body["error"]["message"], body
