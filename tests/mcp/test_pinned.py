"""Workspaces pinned per token and per profile, over a real OpenSSH server on loopback
(the one test_remote.py starts): a token made with `--pin ssh://…` works on that machine
through every door — REST and MCP over HTTP of a `toolshed serve` serving a local
workspace, `toolshed mcp` on stdio, `toolshed call` — and a profile with
`workspace = "ssh://…"` opens it for the doors started with it.
"""

import asyncio
import json
import subprocess
import threading
import time
from datetime import datetime, timedelta, timezone
import urllib.error
import urllib.request

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from test_remote import Local, sshd  # noqa: F401 (the fixture)


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def execute(base, token, tool, arguments):
    request = urllib.request.Request(
        f"{base}/api/v1/tools/{tool}/execute",
        data=json.dumps({"arguments": arguments}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def local(toolshed_bin, home, sshd):  # noqa: F811
    here = Local(toolshed_bin, home, sshd)
    here.trust()
    here.workspace = home / "local-ws"
    here.workspace.mkdir()
    (here.workspace / "where.txt").write_text("this machine\n")
    sshd.put("where.txt", "the build server\n")
    return here


def token(local, owner, *flags):
    made = local.cli("--workspace", str(local.workspace), "token", "create", "--owner", owner, *flags)
    return made.stdout.strip()


@pytest.fixture
def served(local):
    """`toolshed serve` on the local workspace; (base URL, admin token)."""
    admin = local.cli("token").stdout.strip()
    proc = subprocess.Popen(
        [local.bin, "--config", str(local.config), "--workspace", str(local.workspace), "serve", "--port", "0"],
        env=local.env, cwd=str(local.home), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("listening on "):
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            break
    else:
        pytest.fail(f"toolshed serve exited before listening: {''.join(seen)}")
    yield line.split(" ", 2)[2].strip().removesuffix("/mcp"), admin
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_one_server_serves_a_pinned_token_on_its_machine_and_the_rest_here(local, sshd, served):
    base, admin = served
    pinned = token(local, "builder", "--pin", sshd.url())
    plain = token(local, "writer")
    listed = json.loads(local.cli("--workspace", str(local.workspace), "token", "list", "--json").stdout)
    assert f"workspace:{sshd.url()}" in next(t for t in listed if t["owner"] == "builder")["scopes"]

    for who, expected in [(admin, "this machine"), (plain, "this machine"), (pinned, "the build server")]:
        status, result = execute(base, who, "workspace_read", {"path": "where.txt"})
        assert status == 200 and not result["is_error"], result
        assert expected in result["content"][0]["text"], result

    # MCP over HTTP: the pinned token's session works on the remote machine, commands too.
    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {pinned}"})
        async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy") as client:
            read = await client.call_tool("workspace_read", {"path": "where.txt"})
            assert not read.is_error and "the build server" in read.content[0].text, read.content
            ran = await client.call_tool("exec_command", {"cmd": "pwd; whoami"})
            assert not ran.is_error, ran.content
            assert ran.content[0].text.splitlines()[:2] == [str(sshd.workspace), sshd.user], ran.content

    run(main())

    # A schedule it makes runs on its machine, never here: the served workspace's own
    # schedule loop leaves it to the host of the pinned one.
    due = (datetime.now(timezone.utc) + timedelta(seconds=2)).isoformat(timespec="seconds")
    status, made = execute(base, pinned, "schedule_create", {
        "name": "stamp", "at": due, "tool": "workspace_write",
        "arguments": {"path": "scheduled.txt", "content": "ran there\n"}})
    assert status == 200 and not made["is_error"], made
    deadline = time.monotonic() + 60
    while not (sshd.workspace / "scheduled.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (sshd.workspace / "scheduled.txt").read_text() == "ran there\n"
    assert not (local.workspace / "scheduled.txt").exists()

    # Revoked, it is refused there too.
    local.cli("--workspace", str(local.workspace), "token", "revoke", pinned)
    status, result = execute(base, pinned, "workspace_read", {"path": "where.txt"})
    assert status == 401, result


def test_the_local_doors_open_the_workspace_a_token_or_profile_is_pinned_to(local, sshd, toolshed_bin):
    pinned = token(local, "builder", "--pin", sshd.url())
    env = {**local.env, "TOOLSHED_TOKEN": pinned}

    # `toolshed mcp` on stdio with the token and no --workspace: the remote workspace.
    params = StdioServerParameters(
        command=toolshed_bin, args=["--config", str(local.config), "mcp"], env=env, cwd=str(local.workspace)
    )

    async def main():
        async with Client(params, mode="legacy") as client:
            read = await client.call_tool("workspace_read", {"path": "where.txt"})
            assert not read.is_error and "the build server" in read.content[0].text, read.content

    run(main())

    # Another workspace named explicitly is refused, naming both.
    refused = subprocess.run(
        [toolshed_bin, "--config", str(local.config), "--workspace", str(local.workspace), "call",
         "workspace_read", "--args", '{"path": "where.txt"}'],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert refused.returncode == 2, refused.stderr
    assert sshd.url() in refused.stderr and str(local.workspace) in refused.stderr, refused.stderr

    # A profile that names the workspace: `toolshed call --profile` works there.
    text = local.config.read_text()
    local.config.write_text(text + f'\n[profiles.build]\nworkspace = "{sshd.url()}"\n')
    called = local.cli("call", "workspace_read", "--profile", "build", "--args", '{"path": "where.txt"}')
    assert "the build server" in called.stdout, called.stdout + called.stderr
