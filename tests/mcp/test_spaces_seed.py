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
