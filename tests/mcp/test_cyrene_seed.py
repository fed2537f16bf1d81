"""What Cyrene's users find in toolshed (issue 60's Cyrene lines): the plugin states
`installed`, `loaded` (running) and `paused`, through the CLI, REST and MCP."""

import asyncio
import json
import subprocess
import time
from pathlib import Path

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


DIGEST = Path(__file__).resolve().parents[1] / "fixtures" / "seed-plugins" / "cyrene-digest"


def test_a_complex_tool_runs_as_a_job_or_a_task_by_default_and_shows_its_grade(serve, toolshed_bin, home, workspace):
    done = cli(toolshed_bin, home, workspace, "plugins", "install", str(DIGEST))
    assert done.returncode == 0, done.stderr
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]

    # Shown with each tool.
    status, simple = request(f"{base}/api/v1/tools/cyrene_digest_count", token)
    assert status == 200 and simple["complexity"] == "simple", simple
    status, complex_ = request(f"{base}/api/v1/tools/cyrene_digest_digest", token)
    assert complex_["complexity"] == "complex", complex_
    shown = cli(toolshed_bin, home, workspace, "tools", "show", "cyrene_digest_digest", "--json")
    assert json.loads(shown.stdout)["complexity"] == "complex", shown.stdout

    # Over REST: a complex tool's call is a job unless the caller says otherwise.
    execute = f"{base}/api/v1/tools/cyrene_digest_digest/execute"
    status, started = request(execute, token, "POST", {"arguments": {"text": "abc"}})
    assert status == 202 and started["job"]["state"] == "running", started
    status, now = request(execute, token, "POST", {"arguments": {"text": "abcd"}, "async": False})
    assert status == 200 and "digested 4 characters" in now["content"][0]["text"], now
    status, counted = request(f"{base}/api/v1/tools/cyrene_digest_count/execute", token, "POST", {"arguments": {"text": "a b c"}})
    assert status == 200 and counted["content"][0]["text"] == "3 words", counted
    for _ in range(100):
        status, job = request(f"{base}/api/v1/jobs/{started['job']['id']}", token)
        if job["state"] != "running":
            break
        time.sleep(0.1)
    assert job["state"] == "succeeded" and "digested 3 characters" in json.dumps(job["result"]), job

    # Over MCP, a client of the Tasks extension gets a task at once for the complex tool,
    # and a plain answer for the simple one.
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from tasks_client import Created, Tasks, settled, text

    async def over_tasks():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode="auto", extensions=[Tasks()]) as client:
            plain = await client.session.call_tool("cyrene_digest_count", {"text": "one two"}, allow_claimed=True)
            assert not isinstance(plain, Created) and plain.content[0].text == "2 words", plain
            created = await client.session.call_tool("cyrene_digest_digest", {"text": "xy"}, allow_claimed=True)
            assert isinstance(created, Created), created
            done = await settled(client, created.task_id)
            assert done["status"] == "completed" and "digested 2 characters" in text(done["result"]), done

    asyncio.run(asyncio.wait_for(over_tasks(), 60))


NOTES = Path(__file__).resolve().parents[1] / "fixtures" / "seed-plugins" / "cyrene-notes"


def test_the_plugin_folders_give_tools_default_config_and_resources(server, toolshed_bin, home, workspace, tmp_path):
    """Cyrene's folder convention: tools/ (definitions as files), config/ (defaults) and
    resources/ (offered as MCP resources), read beside the manifest."""
    import shutil

    done = cli(toolshed_bin, home, workspace, "plugins", "install", str(NOTES))
    assert done.returncode == 0, done.stderr
    listed = json.loads(cli(toolshed_bin, home, workspace, "tools", "list", "--json").stdout)
    by_name = {t["name"]: t for t in listed}
    assert by_name["note_count"]["input_schema"]["required"] == ["text"], by_name["note_count"]
    shown = cli(toolshed_bin, home, workspace, "plugins", "config", "cyrene-notes")
    assert shown.returncode == 0, shown.stderr
    assert "Hello" in shown.stdout and "punctuation" in shown.stdout, shown.stdout

    async def over_mcp():
        async with Client(server(), mode="legacy") as client:
            greeted = await client.call_tool("note_greet", {"name": "Ada"})
            assert greeted.content[0].text == "Hello, Ada!", greeted.content
            resources = {str(r.uri): r for r in (await client.list_resources()).resources}
            guide = "toolshed://plugins/cyrene-notes/guide.md"
            sample = "toolshed://plugins/cyrene-notes/data/sample.csv"
            assert guide in resources and sample in resources, sorted(resources)
            assert resources[sample].mime_type == "text/csv"
            read = await client.read_resource(guide)
            assert "Greet with note_greet" in read.contents[0].text
            try:
                await client.read_resource("toolshed://plugins/cyrene-notes/../plugin.json")
            except MCPError as e:
                return str(e)
            raise AssertionError("a path out of resources/ was read")

    refused = asyncio.run(asyncio.wait_for(over_mcp(), 30))
    assert "plugin.json" in refused, refused

    # A bad definition stops the plugin with the file named, as a bad manifest does.
    broken = tmp_path / "broken"
    shutil.copytree(NOTES, broken)
    (broken / "tools" / "bad.json").write_text('{"description": "no name"}')
    done = cli(toolshed_bin, home, workspace, "plugins", "install", str(broken), "--force")
    assert done.returncode != 0 and "tools/bad.json" in done.stderr, done.stderr
