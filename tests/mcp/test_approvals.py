"""Approvals bound to the exact call: an `ask` rule on commands that are not git.

Through the Python MCP client with an elicitation handler the user's answer decides; over
REST the call waits until `POST /api/v1/approvals/ID/approve`, and without an answer it
expires to a denial."""

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mcp import Client, types

RULES = """
[[policy.rule]]
name = "ask before commands"
tools = ["group:exec"]
when = { cmd = { not_matches = "^git " } }
decision = "ask"
message = "commands other than git need a person's yes"

[approvals]
timeout_secs = %d
"""


def write_rules(home: Path, timeout_secs: int) -> Path:
    path = home / "policy.toml"
    path.write_text(RULES % timeout_secs)
    return path


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def test_elicitation_approving_runs_the_command_and_declining_is_a_denial_naming_the_rule(
    server, home, workspace
):
    config = write_rules(home, 60)
    answers = []
    asked = []

    async def on_elicit(context, params: types.ElicitRequestParams):
        asked.append(params.message)
        return types.ElicitResult(action=answers.pop(0))

    params = server("--config", str(config))

    async def main():
        async with Client(params, mode="legacy", elicitation_callback=on_elicit) as client:
            answers.append("accept")
            ran = await client.call_tool("exec_command", {"cmd": "echo approved > approved.txt; echo done"})
            assert not ran.is_error, ran.content
            assert "done" in ran.content[0].text
            answers.append("decline")
            refused = await client.call_tool("exec_command", {"cmd": "echo declined > declined.txt"})
            assert refused.is_error
            text = refused.content[0].text
            assert "ask before commands" in text and "declined" in text, text
            # git commands are not asked about.
            git = await client.call_tool("exec_command", {"cmd": "git --version || true"})
            assert not git.is_error or "git" in git.content[0].text

    run(main())
    assert (workspace / "approved.txt").exists()
    assert not (workspace / "declined.txt").exists()
    assert len(asked) == 2 and "echo approved" in asked[0] and "ask before commands" in asked[0]


def request(url, token, method="GET", body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, json.loads(response.read().decode() or "null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode() or "null")


def call_in_background(base, token, cmd):
    """Runs exec_command over REST on a thread; returns (thread, result holder)."""
    result = {}

    def go():
        result["answer"] = request(
            f"{base}/api/v1/tools/exec_command/execute", token, "POST", {"arguments": {"cmd": cmd}}
        )

    thread = threading.Thread(target=go)
    thread.start()
    return thread, result


def pending(base, token, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        status, body = request(f"{base}/api/v1/approvals", token)
        assert status == 200, body
        if body["approvals"]:
            return body["approvals"]
        time.sleep(0.05)
    raise AssertionError("no approval request appeared")


def test_rest_a_call_waits_for_approve_and_expires_to_denied(serve, home, workspace):
    write_rules(home, 2)
    (workspace / "toolshed.toml").write_text("")
    url, token = serve({"TOOLSHED_CONFIG": str(home / "policy.toml")})
    base = url.removesuffix("/mcp")

    thread, result = call_in_background(base, token, "echo yes > rest-approved.txt; echo ran")
    waiting = pending(base, token)
    assert len(waiting) == 1
    one = waiting[0]
    assert one["tool"] == "exec_command" and one["rule"] == "ask before commands"
    assert "rest-approved" in one["summary"] and one["state"] == "pending"
    time.sleep(0.3)
    assert thread.is_alive(), "the call must wait for the answer"
    status, answered = request(f"{base}/api/v1/approvals/{one['id']}/approve", token, "POST", {})
    assert status == 200 and answered["state"] == "approved", answered
    thread.join(30)
    status, body = result["answer"]
    assert status == 200 and not body["is_error"], body
    assert (workspace / "rest-approved.txt").exists()
    # Answering again is a conflict, the same answer too.
    status, _ = request(f"{base}/api/v1/approvals/{one['id']}/deny", token, "POST")
    assert status == 409
    status, again = request(f"{base}/api/v1/approvals/{one['id']}/approve", token, "POST", {})
    assert status == 409 and "approved" in again["error"]["message"], again

    # Nobody answers: denied after the expiry, naming the rule.
    started = time.time()
    thread, result = call_in_background(base, token, "echo no > rest-expired.txt")
    thread.join(30)
    status, body = result["answer"]
    assert status == 403 and body["error"]["kind"] == "denied", body
    assert "ask before commands" in body["error"]["message"] and "nobody approved" in body["error"]["message"]
    assert time.time() - started >= 1.5
    assert not (workspace / "rest-expired.txt").exists()
    status, listed = request(f"{base}/api/v1/approvals?all=true", token)
    assert [a["state"] for a in listed["approvals"]][:2] == ["expired", "approved"]
    # The audit log says how each approval ended and who answered.
    status, audit = request(f"{base}/api/v1/audit?limit=5", token)
    assert status == 200, audit
    notes = [row.get("approval") for row in audit["audit"] if row["tool"] == "exec_command"]
    assert any(n and "expired unanswered" in n for n in notes), notes
    assert any(n and "approved by the admin token (REST)" in n for n in notes), notes


def test_an_agent_cannot_approve_its_own_call_unless_allowed(serve, home, workspace, toolshed_bin):
    """Failed before [approvals] self_approval: an agent token holding approvals:answer
    approved its own waiting call."""
    import subprocess

    def agent_token(owner):
        return subprocess.run(
            [toolshed_bin, "token", "create", "--owner", owner, "--scope", "tools:call",
             "--scope", "approvals:answer"],
            env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30,
        ).stdout.strip()

    write_rules(home, 30)
    (workspace / "toolshed.toml").write_text("")
    url, admin = serve({"TOOLSHED_CONFIG": str(home / "policy.toml")})
    base = url.removesuffix("/mcp")
    alice, bob = agent_token("alice"), agent_token("bob")

    thread, result = call_in_background(base, alice, "echo self > self-approved.txt")
    (one,) = pending(base, admin)
    assert one["owner"] == "alice"
    for answer in ("approve", "deny"):
        status, body = request(f"{base}/api/v1/approvals/{one['id']}/{answer}", alice, "POST", {})
        assert status == 403, body
        assert "self_approval" in body["error"]["message"], body
    # Still waiting; another owner's token may answer, and is recorded as the one who did.
    status, still = request(f"{base}/api/v1/approvals/{one['id']}", admin)
    assert still["state"] == "pending", still
    status, answered = request(f"{base}/api/v1/approvals/{one['id']}/approve", bob, "POST", {})
    assert status == 200 and answered["state"] == "approved", answered
    assert "bob" in answered["answered_by"], answered
    thread.join(30)
    assert (workspace / "self-approved.txt").exists()


def test_self_approval_allowed_by_config(serve, home, workspace, toolshed_bin):
    import subprocess

    (home / "policy.toml").write_text(RULES % 30 + 'self_approval = "allow"\n')
    (workspace / "toolshed.toml").write_text("")
    url, admin = serve({"TOOLSHED_CONFIG": str(home / "policy.toml")})
    base = url.removesuffix("/mcp")
    alice = subprocess.run(
        [toolshed_bin, "token", "create", "--owner", "alice", "--scope", "tools:call",
         "--scope", "approvals:answer"],
        env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()
    thread, result = call_in_background(base, alice, "echo ok > allowed.txt")
    (one,) = pending(base, admin)
    status, answered = request(f"{base}/api/v1/approvals/{one['id']}/approve", alice, "POST", {})
    assert status == 200 and "alice" in answered["answered_by"], answered
    thread.join(30)
    assert (workspace / "allowed.txt").exists()


def test_the_2026_era_asks_through_an_input_round_trip_over_stdio_and_http(server, serve, home, workspace):
    """The 2026-07-28 era cannot ask mid-call: the call ends `input_required` with an
    elicitation and a signed requestState, and the client's retry with the answer runs it
    (the Python client drives the round trip itself)."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    config = write_rules(home, 60)
    answers = []
    asked = []

    async def on_elicit(context, params: types.ElicitRequestParams):
        asked.append(params.message)
        return types.ElicitResult(action=answers.pop(0))

    async def round_trips(client, tag):
        assert client.protocol_version == "2026-07-28"
        answers.append("accept")
        ran = await client.call_tool("exec_command", {"cmd": f"echo yes > {tag}-approved.txt; echo done"})
        assert not ran.is_error and "done" in ran.content[0].text, ran.content
        answers.append("decline")
        refused = await client.call_tool("exec_command", {"cmd": f"echo no > {tag}-declined.txt"})
        assert refused.is_error and "declined" in refused.content[0].text, refused.content

    async def over_stdio():
        async with Client(server("--config", str(config)), mode="auto", elicitation_callback=on_elicit) as client:
            await round_trips(client, "stdio")

    run(over_stdio())
    (workspace / "toolshed.toml").write_text("")
    url, token = serve({"TOOLSHED_CONFIG": str(config)})

    async def over_http():
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="auto", elicitation_callback=on_elicit) as client:
                await round_trips(client, "http")

    run(over_http())
    for tag in ("stdio", "http"):
        assert (workspace / f"{tag}-approved.txt").exists()
        assert not (workspace / f"{tag}-declined.txt").exists()
    assert len(asked) == 4 and "ask before commands" in asked[0] and "stdio-approved" in asked[0]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_forged_or_replayed_request_state_is_refused(server, serve, home, workspace, transport):
    """The requestState round-trips through the client, so toolshed signs it (bound to the
    owner, tool and arguments) and takes an answer once."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.exceptions import MCPError

    config = write_rules(home, 60)

    async def never(context, params):
        raise AssertionError("this test answers by hand")

    async def main():
        # An elicitation handler makes the client declare elicitation, without which
        # toolshed does not ask through the client.
        if transport == "stdio":
            async with Client(server("--config", str(config)), mode="auto", elicitation_callback=never) as client:
                await forge(client)
        else:
            url, token = serve({"TOOLSHED_CONFIG": str(config)})
            async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
                async with Client(streamable_http_client(url, http_client=http), mode="auto",
                                  elicitation_callback=never) as client:
                    await forge(client)

    async def forge(client):
        session = client.session
        cmd = {"cmd": "echo once > once.txt"}
        first = await session.call_tool("exec_command", cmd, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first
        assert "approval" in first.input_requests and first.request_state
        yes = {"approval": {"action": "accept"}}

        # Altered, or for other arguments: refused before anything is answered.
        state = first.request_state
        forged = state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB")
        for name, args, sent in (("exec_command", cmd, forged), ("exec_command", {"cmd": "echo other > other.txt"}, state)):
            try:
                await session.call_tool(name, args, input_responses=yes, request_state=sent)
                raise AssertionError("a forged requestState was taken")
            except MCPError as e:
                assert "requestState refused" in str(e), e

        ran = await session.call_tool("exec_command", cmd, input_responses=yes, request_state=state)
        assert isinstance(ran, types.CallToolResult) and not ran.is_error, ran
        # The same answer again: a yes is for one run.
        again = await session.call_tool("exec_command", cmd, input_responses=yes, request_state=state)
        assert again.is_error and "used by a call already" in again.content[0].text, again

    run(main())
    assert (workspace / "once.txt").read_text() == "once\n"
    assert not (workspace / "other.txt").exists()
