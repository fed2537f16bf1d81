"""Review rules that match what a tool is, not what it is called, through every door.

`[review] deny = ["group:exec"]` must hide and refuse every tool that starts or drives a
process (not only those named `exec_*`), and `deny = ["danger:high"]` every high-danger
tool, over MCP on stdio, MCP over HTTP and the REST API of the same server. The CLI door is
covered by `crates/toolshed-cli/tests/cli.rs`.
"""

import asyncio
import json
import urllib.error
import urllib.request

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

# Every command tool: the `exec` group. Names vary on purpose (shell, write_stdin,
# command_run_*, process_*): a name glob such as `exec_*` would miss most of them.
EXEC_GROUP = {
    "command_run_list",
    "command_run_read_output",
    "command_run_terminate",
    "command_run_wait",
    "exec_command",
    "process_exec",
    "process_list",
    "process_proxy_info",
    "process_read_output",
    "process_stop",
    "shell",
    "write_stdin",
}
HIGH_DANGER = {
    "command_run_terminate",
    "download_batch",
    "download_file",
    "exec_command",
    "firecrawl_scrape",
    "http_request",
    "mail_send",
    "process_exec",
    "process_stop",
    "shell",
    "text_summarize",
    "text_translate",
    "web_fetch",
    "web_search",
    "workspace_delete",
    "write_stdin",
}
RULES = {"group:exec": EXEC_GROUP, "danger:high": HIGH_DANGER}
# A call that would run if the tool were visible, for each tool the tests call.
CALLS = {
    "shell": {"command": "echo hi"},
    "exec_command": {"cmd": "echo hi"},
    "process_list": {},
    "workspace_delete": {"path": "hello.txt"},
}


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


def deny(workspace, rule):
    (workspace / "toolshed.toml").write_text(f'[review]\ndeny = ["{rule}"]\n')


def assert_hidden(names, rule):
    hidden = RULES[rule]
    assert not hidden & set(names), f"{rule} left visible: {sorted(hidden & set(names))}"
    assert "memory_get" in names and "workspace_read" in names, names


def to_call(rule):
    return [name for name in CALLS if name in RULES[rule]]


async def check_mcp(client, workspace, rule):
    """The client sees none of the rule's tools, and calling them is refused."""
    names = [t.name for t in (await client.list_tools()).tools]
    assert_hidden(names, rule)
    for name in to_call(rule):
        try:
            result = await client.call_tool(name, CALLS[name])
        except MCPError as err:
            message = err.message
        else:
            assert result.is_error, name
            message = result.content[0].text
        assert f"review.deny rule `{rule}`" in message, message
    assert (workspace / "hello.txt").exists(), "workspace_delete did not run"


@pytest.mark.parametrize("rule", sorted(RULES))
def test_mcp_stdio_hides_and_refuses(server, workspace, rule):
    deny(workspace, rule)

    async def main():
        async with Client(server(), mode="legacy") as client:
            await check_mcp(client, workspace, rule)

    run(main())


@pytest.mark.parametrize("rule", sorted(RULES))
def test_mcp_http_hides_and_refuses(serve, workspace, rule):
    deny(workspace, rule)
    url, token = serve()

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            await check_mcp(client, workspace, rule)

    run(main())


def rest(base, token, method, path, body=None):
    request = urllib.request.Request(
        f"{base}/api/v1{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rest_hides_and_refuses(serve, workspace, rule):
    deny(workspace, rule)
    url, token = serve()
    base = url.removesuffix("/mcp")
    status, listing = rest(base, token, "GET", "/tools")
    assert status == 200, listing
    assert_hidden([t["name"] for t in listing["tools"]], rule)
    for name in sorted(RULES[rule]):
        status, body = rest(base, token, "GET", f"/tools/{name}")
        assert status == 404, (name, body)
    for name in to_call(rule):
        # The pipeline answers, for a call and for a job alike (checked before the job
        # starts): denied, naming the rule.
        for asynchronous in (False, True):
            status, body = rest(
                base, token, "POST", f"/tools/{name}/execute",
                {"arguments": CALLS[name], "async": asynchronous},
            )
            assert status == 403, (name, asynchronous, body)
            assert body["error"]["kind"] == "denied", body
            assert body["error"]["details"]["rule"] == f"review.deny rule `{rule}`", body
    assert (workspace / "hello.txt").exists()
    # What is not denied still runs.
    status, body = rest(base, token, "POST", "/tools/calculator/execute", {"arguments": {"expression": "1+1"}})
    assert status == 200 and body["content"][0]["text"] == "2", body


def test_a_shipped_profile_narrows_what_an_mcp_client_sees_and_calls(server, workspace):
    """`toolshed mcp --profile readonly`: no tool that changes anything is listed or runs."""

    async def main():
        async with Client(server("--profile", "readonly"), mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "workspace_read" in names and "calculator" in names, names
            assert not names & {"workspace_write", "workspace_delete", "exec_command", "shell", "http_request"}, names
            try:
                result = await client.call_tool("workspace_delete", {"path": "hello.txt"})
            except MCPError as err:
                message = err.message
            else:
                assert result.is_error
                message = result.content[0].text
            assert "profiles.readonly" in message, message
        assert (workspace / "hello.txt").exists()
        async with Client(server("--profile", "coding"), mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"workspace_edit", "exec_command", "web_fetch"} <= names and "calculator" not in names, names

    run(main())
