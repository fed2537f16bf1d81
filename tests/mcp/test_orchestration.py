"""The agent tools besides `agent_run`, through the real doors: todo lists kept across a
SIGKILL, plan mode refusing writes until a person approves the plan, schedules that run as
jobs and survive restarts (and follow their `missed` policy), and workflows of several steps
with a loop and a condition over MCP and REST."""

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

from mcp import Client

from test_stdio import toolshed


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def rest(url, token, method, path, body=None):
    api = url.rsplit("/mcp", 1)[0] + "/api/v1"
    req = urllib.request.Request(
        api + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def execute(url, token, tool, arguments):
    return rest(url, token, "POST", f"/tools/{tool}/execute", {"arguments": arguments})


def soon(seconds):
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).isoformat(timespec="seconds")


def wait_for(check, what, timeout=60):
    deadline = time.time() + timeout
    while not check():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def sigkill(serve):
    proc = serve.procs[-1]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def test_a_todo_list_survives_a_sigkill_and_its_limits_lose_nothing(serve):
    url, token = serve()
    todos = [
        {"id": "1", "text": "read the failing test", "status": "done"},
        {"id": "2", "text": "fix the parser", "status": "in_progress", "notes": "off by one"},
        {"id": "3", "text": "run the suite", "status": "pending"},
    ]
    status, body = execute(url, token, "todo_write", {"todos": todos})
    assert status == 200, body
    assert body["structured"]["counts"] == {"pending": 1, "in_progress": 1, "done": 1}
    # 10,000 items are refused with the limit named, and the list kept as it was.
    many = [{"id": str(i), "text": "step", "status": "pending"} for i in range(10_000)]
    status, body = execute(url, token, "todo_write", {"todos": many})
    assert status == 400 and "max_todo_items" in json.dumps(body), body
    # Two items with one id: refused, nothing written.
    status, body = execute(url, token, "todo_write", {"todos": todos + [todos[0]]})
    assert status == 400 and "used twice" in json.dumps(body), body
    sigkill(serve)
    url, token = serve()
    status, body = execute(url, token, "todo_read", {})
    assert status == 200, body
    assert body["structured"]["todos"] == todos
    assert "[~] 2: fix the parser (off by one)" in body["content"][0]["text"]
    # Lists are per owner: another owner's is empty.
    status, body = rest(url, token, "POST", "/tools/todo_read/execute", {"arguments": {"list": "other"}})
    assert body["structured"]["todos"] == []


def test_a_goal_gathers_its_criteria_and_its_todo_list(server):
    async def main():
        async with Client(server(), mode="legacy") as client:
            missing = await client.call_tool("goal_set", {"name": "ship"})
            await client.call_tool("goal_set", {"name": "ship", "objective": "Release 1.0",
                                                "criteria": ["tests pass", "notes written"]})
            await client.call_tool("todo_write", {"list": "ship", "todos": [
                {"id": "a", "text": "tests", "status": "done"}, {"id": "b", "text": "notes", "status": "pending"}]})
            return missing, await client.call_tool("goal_status", {"name": "ship"})

    missing, status = run(main())
    assert missing.is_error and "objective" in missing.content[0].text
    [goal] = status.structured_content["goals"]
    assert goal["objective"] == "Release 1.0" and goal["criteria"] == ["tests pass", "notes written"]
    assert goal["todos"] == {"pending": 1, "in_progress": 0, "done": 1}


def approve_when_asked(toolshed_bin, workspace, home, approved):
    def loop():
        deadline = time.time() + 60
        while time.time() < deadline:
            listed = toolshed(toolshed_bin, workspace, home, "approvals", "list")
            for word in listed.stdout.split():
                if word.startswith("ap-"):
                    out = toolshed(toolshed_bin, workspace, home, "approvals", "approve", word)
                    approved.append((word, out.returncode))
                    return
            time.sleep(0.2)
    threading.Thread(target=loop, daemon=True).start()


def test_plan_mode_refuses_writes_until_the_person_approves_the_plan(server, workspace, home, toolshed_bin):
    approved = []

    async def main():
        async with Client(server("--profile", "plan"), mode="legacy") as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            read = await client.call_tool("workspace_read", {"path": "hello.txt"})
            refused = await client.call_tool("workspace_write", {"path": "plan.txt", "content": "x"})
            approve_when_asked(toolshed_bin, workspace, home, approved)
            submitted = await client.call_tool("plan_submit", {"plan": "1. write plan.txt", "mode": "workspace-write"})
            written = await client.call_tool("workspace_write", {"path": "plan.txt", "content": "x"})
            return listed, read, refused, submitted, written

    listed, read, refused, submitted, written = run(main())
    assert "workspace_write" in listed
    assert not read.is_error
    assert refused.is_error and "plan mode" in refused.content[0].text
    assert "plan_submit" in refused.content[0].text, refused.content[0].text
    assert approved and approved[0][1] == 0
    assert not submitted.is_error, submitted.content
    assert not written.is_error, written.content
    assert (workspace / "plan.txt").read_text() == "x"
    out = toolshed(toolshed_bin, workspace, home, "audit", "--json", "--tool", "plan_submit")
    [row] = json.loads(out.stdout)["audit"]
    assert row["outcome"] == "ok" and approved[0][0] in json.dumps(row), row


def test_plan_enter_switches_a_session_and_a_denied_plan_keeps_it_planning(server, workspace, home, toolshed_bin):
    def deny():
        deadline = time.time() + 60
        while time.time() < deadline:
            for word in toolshed(toolshed_bin, workspace, home, "approvals", "list").stdout.split():
                if word.startswith("ap-"):
                    toolshed(toolshed_bin, workspace, home, "approvals", "deny", word)
                    return
            time.sleep(0.2)

    async def main():
        async with Client(server(), mode="legacy") as client:
            before = await client.call_tool("workspace_write", {"path": "a.txt", "content": "1"})
            await client.call_tool("plan_enter", {})
            during = await client.call_tool("workspace_write", {"path": "b.txt", "content": "2"})
            threading.Thread(target=deny, daemon=True).start()
            denied = await client.call_tool("plan_submit", {"plan": "write b.txt"})
            after = await client.call_tool("workspace_write", {"path": "b.txt", "content": "2"})
            return before, during, denied, after

    before, during, denied, after = run(main())
    assert not before.is_error
    assert during.is_error and "plan mode" in during.content[0].text
    assert denied.is_error
    assert after.is_error and not (workspace / "b.txt").exists()


def test_a_schedule_runs_as_a_job_and_survives_a_sigkill(serve, workspace):
    url, token = serve()
    status, body = execute(url, token, "schedule_create", {
        "name": "every-second", "cron": "* * * * * *", "tool": "calculator", "arguments": {"expression": "1"}})
    assert status == 400 and "6 fields" in json.dumps(body), body
    status, body = execute(url, token, "schedule_create", {
        "name": "nope", "at": soon(60), "tool": "workspace_write", "arguments": {"path": 3}})
    assert status == 400 and "would be refused now" in json.dumps(body), body
    status, body = execute(url, token, "schedule_create", {
        "name": "note", "at": soon(4), "tool": "workspace_write",
        "arguments": {"path": "scheduled.txt", "content": "ran\n"}})
    assert status == 200, body
    schedule = body["structured"]["id"]
    # Killed before it is due; the next server runs it.
    sigkill(serve)
    url, token = serve()
    wait_for(lambda: (workspace / "scheduled.txt").exists(), "the scheduled write")
    assert (workspace / "scheduled.txt").read_text() == "ran\n"

    def listed():
        return execute(url, token, "schedule_list", {})[1]["structured"]["schedules"]

    wait_for(lambda: listed()[0]["last_job"], "the schedule's job to be recorded")
    [entry] = listed()
    assert entry["id"] == schedule and entry["runs"] == 1 and entry["next"] is None
    status, job = rest(url, token, "GET", f"/jobs/{entry['last_job']}")
    assert status == 200, job
    wait_for(lambda: rest(url, token, "GET", f"/jobs/{entry['last_job']}")[1]["state"] == "succeeded",
             "the job to succeed")
    status, body = execute(url, token, "schedule_delete", {"id": "note"})
    assert status == 200 and listed() == []


def test_a_schedule_due_while_no_toolshed_ran_follows_its_missed_policy(serve, toolshed_bin, workspace, home):
    for name, missed in (("skipped", "skip"), ("caught-up", "run_once")):
        out = toolshed(toolshed_bin, workspace, home, "call", "schedule_create", "--args", json.dumps({
            "name": name, "at": soon(2), "missed": missed, "tool": "workspace_write",
            "arguments": {"path": f"{name}.txt", "content": name}}))
        assert out.returncode == 0, out.stderr
    time.sleep(3)
    url, token = serve()
    wait_for(lambda: (workspace / "caught-up.txt").exists(), "the run_once schedule")

    def outcomes():
        out = toolshed(toolshed_bin, workspace, home, "call", "schedule_list", "--json")
        return {s["name"]: s for s in json.loads(out.stdout)["structured"]["schedules"]}

    wait_for(lambda: outcomes()["skipped"]["last_outcome"], "the skipped schedule to be recorded")
    skipped = outcomes()["skipped"]
    assert "skipped" in skipped["last_outcome"] and skipped["runs"] == 0, skipped
    assert not (workspace / "skipped.txt").exists()


WORKFLOW = {
    "description": "Read each file, count the long ones, and report",
    "inputs": {"files": {"type": "array", "description": "paths to read"},
               "threshold": {"type": "integer", "default": 5}},
    "steps": [
        {"id": "listing", "tool": "workspace_list", "args": {"path": "."}},
        {"id": "each", "for_each": "${inputs.files}", "as": "file", "do": [
            {"id": "read", "tool": "workspace_read", "args": {"path": "${file}"}},
        ]},
        {"id": "joined", "tool": "calculator", "args": {"expression": "2 * 3"}},
        {"id": "check", "if": {"ref": "${steps.each.output}", "op": "not_empty"},
         "then": [{"id": "write", "tool": "workspace_write",
                   "args": {"path": "report.txt", "content": "read ${inputs.files} and got ${steps.joined.output.result}"}}],
         "else": [{"id": "nothing", "tool": "calculator", "args": {"expression": "0"}}]},
        {"id": "done", "output": {"report": "${steps.check.output}", "six": "${steps.joined.output.result}"}},
    ],
}


def test_a_workflow_with_a_loop_and_a_condition_runs_over_mcp_and_rest(server, serve, workspace):
    flows = workspace / ".toolshed" / "workflows"
    flows.mkdir(parents=True)
    (flows / "report.json").write_text(json.dumps(WORKFLOW))
    (workspace / "one.txt").write_text("first file\n")
    (workspace / "two.txt").write_text("second file\n")

    async def main():
        async with Client(server(), mode="legacy") as client:
            listed = await client.call_tool("workflow_list", {})
            ran = await client.call_tool("workflow_run", {"name": "report", "inputs": {"files": ["one.txt", "two.txt"]}})
            return listed, ran

    listed, ran = run(main())
    assert listed.structured_content["workflows"][0]["name"] == "report"
    assert not ran.is_error, ran.content
    steps = [s["id"] for s in ran.structured_content["steps"]]
    assert steps == ["listing", "each", "read", "read", "joined", "check", "write", "done"], steps
    assert (workspace / "report.txt").read_text() == 'read ["one.txt","two.txt"] and got 6'

    (workspace / "report.txt").unlink()
    url, token = serve()
    status, body = execute(url, token, "workflow_run", {"name": "report", "inputs": {"files": ["one.txt"]}})
    assert status == 200, body
    assert (workspace / "report.txt").read_text() == 'read ["one.txt"] and got 6'


def test_a_bad_reference_is_reported_before_anything_runs(server, workspace):
    flows = workspace / ".toolshed" / "workflows"
    flows.mkdir(parents=True)
    bad = json.loads(json.dumps(WORKFLOW))
    bad["steps"][3]["then"][0]["args"]["content"] = "${steps.joind.output}"
    (flows / "broken.yaml").write_text(json.dumps(bad))
    cyclic = {"steps": [{"id": "a", "tool": "calculator", "args": {"expression": "${steps.b.output}"}},
                        {"id": "b", "tool": "calculator", "args": {"expression": "1"}}]}
    (flows / "cyclic.json").write_text(json.dumps(cyclic))

    async def main():
        async with Client(server(), mode="legacy") as client:
            broken = await client.call_tool("workflow_run", {"name": "broken", "inputs": {"files": ["one.txt"]}})
            loop = await client.call_tool("workflow_run", {"name": "cyclic"})
            return broken, loop

    broken, loop = run(main())
    assert broken.is_error
    message = broken.content[0].text
    assert "steps[3].then[0].args.content" in message and "did you mean `joined`" in message, message
    assert not (workspace / "report.txt").exists()
    assert loop.is_error and "steps[0]" in loop.content[0].text, loop.content[0].text


def test_schedules_are_bounded_per_owner(server, home):
    config = home / "few.toml"
    config.write_text("[orchestration]\nmax_schedules_per_owner = 1\n")
    params = server()
    params.env["TOOLSHED_CONFIG"] = str(config)

    async def main():
        async with Client(params, mode="legacy") as client:
            first = await client.call_tool("schedule_create", {
                "name": "a", "cron": "0 9 * * *", "tz": "Europe/Berlin", "tool": "calculator",
                "arguments": {"expression": "1"}})
            second = await client.call_tool("schedule_create", {
                "name": "b", "cron": "@daily", "tool": "calculator", "arguments": {"expression": "1"}})
            zone = await client.call_tool("schedule_create", {
                "name": "c", "cron": "@daily", "tz": "Mars/Olympus", "tool": "calculator"})
            return first, second, zone

    first, second, zone = run(main())
    assert not first.is_error, first.content
    # 09:00 in Berlin in winter is 08:00 UTC.
    assert first.structured_content["next"].endswith("T08:00:00Z"), first.structured_content
    assert second.is_error and "max_schedules_per_owner = 1" in second.content[0].text
    assert zone.is_error and "Mars/Olympus" in zone.content[0].text


def test_a_schedule_runs_within_the_narrowing_of_the_token_that_made_it(serve, toolshed_bin, workspace, home):
    flows = workspace / ".toolshed" / "workflows"
    flows.mkdir(parents=True)
    (flows / "sneaky.json").write_text(json.dumps({"steps": [
        {"id": "write", "tool": "workspace_write", "args": {"path": "sneaky.txt", "content": "x"}}]}))
    url, _ = serve()
    out = subprocess.run(
        [toolshed_bin, "token", "create", "--owner", "narrow", "--scope",
         "tools:call,tools:list,tool:schedule_*,tool:workflow_*,tool:calculator"],
        env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    token = out.stdout.strip()
    # Directly, the token may not write.
    status, body = execute(url, token, "workflow_run", {"name": "sneaky"})
    assert status == 200 and body["is_error"], body
    # Nor through a schedule that runs later, without the token in the request.
    status, body = execute(url, token, "schedule_create", {
        "name": "later", "at": soon(2), "workflow": "sneaky"})
    assert status == 200, body

    def last():
        return execute(url, token, "schedule_list", {})[1]["structured"]["schedules"][0]

    wait_for(lambda: last()["last_job"], "the schedule to run")
    job = last()["last_job"]
    admin = serve.procs and subprocess.run([toolshed_bin, "token"], env={"TOOLSHED_HOME": str(home)},
                                           capture_output=True, text=True, timeout=30).stdout.strip()
    wait_for(lambda: rest(url, admin, "GET", f"/jobs/{job}")[1]["state"] != "running", "the job to end")
    assert not (workspace / "sneaky.txt").exists()
    status, ended = rest(url, admin, "GET", f"/jobs/{job}")
    assert "not available to this caller" in json.dumps(ended), ended


def test_an_approved_plan_holds_for_its_session_only(server, token_for, workspace, home, toolshed_bin):
    params = server("--profile", "plan")
    params.env["TOOLSHED_TOKEN"] = token_for("carol")
    approved = []

    async def first():
        async with Client(params, mode="legacy") as client:
            approve_when_asked(toolshed_bin, workspace, home, approved)
            await client.call_tool("plan_submit", {"plan": "write one.txt"})
            return await client.call_tool("workspace_write", {"path": "one.txt", "content": "1"})

    async def second():
        async with Client(params, mode="legacy") as client:
            return await client.call_tool("workspace_write", {"path": "two.txt", "content": "2"})

    assert not run(first()).is_error
    again = run(second())
    assert again.is_error and "plan mode" in again.content[0].text, again.content
    assert not (workspace / "two.txt").exists()


def test_a_workflow_cannot_run_itself(server, workspace):
    flows = workspace / ".toolshed" / "workflows"
    flows.mkdir(parents=True)
    (flows / "ping.json").write_text(json.dumps({"steps": [
        {"id": "again", "tool": "workflow_run", "args": {"name": "pong"}}]}))
    (flows / "pong.json").write_text(json.dumps({"steps": [
        {"id": "back", "tool": "workflow_run", "args": {"name": "ping"}}]}))

    async def main():
        async with Client(server(), mode="legacy") as client:
            return await client.call_tool("workflow_run", {"name": "ping"})

    result = run(main(), timeout=30)
    assert result.is_error
    text = json.dumps(result.structured_content) + result.content[0].text
    assert "would run itself" in text and "workflow:ping" in text, text


def test_a_schedule_stops_running_once_its_token_is_revoked(serve, toolshed_bin, home):
    url, admin = serve()
    token = subprocess.run(
        [toolshed_bin, "token", "create", "--owner", "dave"],
        env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, timeout=30).stdout.strip()
    status, body = execute(url, token, "schedule_create", {
        "name": "soon", "at": soon(3), "tool": "calculator", "arguments": {"expression": "1+1"}})
    assert status == 200, body
    token_id = token.split("_")[1]
    revoked = toolshed(toolshed_bin, home, home, "token", "revoke", token_id)
    assert revoked.returncode == 0, revoked.stderr

    def entry():
        status, listed = rest(url, admin, "GET", "/schedules?owner=dave")
        assert status == 200, listed
        return listed["schedules"][0]

    wait_for(lambda: entry()["last_outcome"], "the due time to pass")
    assert "revoked or expired" in entry()["last_outcome"] and entry()["last_job"] is None, entry()
