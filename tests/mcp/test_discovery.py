"""Discovery mode (`--catalog discover`): `tools/list` holds the configured core plus
`tool_search` and `tool_call`; every other tool the caller may use is found and run
through them — over stdio, over HTTP in both protocol eras, and searched over REST."""

import asyncio
import json
import os
import subprocess
import urllib.parse
import urllib.request

import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


def text(result):
    return " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def found(client, query):
    result = await client.call_tool("tool_search", {"query": query})
    assert not result.is_error, text(result)
    return [r["name"] for r in result.structured_content["results"]]


def test_tools_are_found_and_called_through_the_two_discovery_tools(server, workspace, toolshed_bin, home):
    (workspace / "toolshed.toml").write_text('[mcp]\ncore = ["workspace_read"]\n')

    async def main():
        async with Client(server("--catalog", "discover"), mode="legacy") as client:
            tools = (await client.list_tools()).tools
            assert sorted(t.name for t in tools) == ["tool_call", "tool_search", "workspace_read"]
            listed = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
            assert len(json.dumps(listed, separators=(",", ":")).encode()) <= 4096

            assert (await found(client, "replace text in a file"))[0] == "workspace_edit"
            assert "exec_command" in await found(client, "run tests")

            # A tool outside the listed core runs through the whole pipeline.
            result = await client.call_tool("tool_call", {"name": "calculator", "arguments": {"expression": "6*7"}})
            assert not result.is_error and "42" in text(result), result
            # Its arguments are checked against its own schema, as for a direct call.
            result = await client.call_tool("tool_call", {"name": "calculator", "arguments": {"expr": "1"}})
            assert result.is_error and "expression" in text(result), text(result)
            result = await client.call_tool("tool_call", {"arguments": {}})
            assert result.is_error and "needs `name`" in text(result), text(result)
            result = await client.call_tool("tool_search", {"query": "zzqx vvkw"})
            assert "No tool matches" in text(result), text(result)

    run(main())
    env = {**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    audit = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "audit", "--tool", "calculator", "--json"],
        env=env, capture_output=True, text=True, check=True,
    )
    rows = json.loads(audit.stdout)["audit"]
    assert len(rows) == 2 and {r["outcome"] for r in rows} == {"ok", "error"}, rows


def test_a_tool_the_profile_denies_is_neither_found_nor_callable(server, workspace):
    async def main():
        async with Client(server("--catalog", "discover", "--profile", "readonly"), mode="legacy") as client:
            assert "exec_command" not in await found(client, "run tests")
            assert "workspace_delete" not in await found(client, "delete a file")
            result = await client.call_tool("tool_call", {"name": "workspace_delete", "arguments": {"path": "hello.txt"}})
            assert result.is_error and "profiles.readonly" in text(result), text(result)
        assert (workspace / "hello.txt").exists()

    run(main())


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_discovery_works_over_http_in_both_eras_and_search_over_rest(toolshed_bin, workspace, home, mode):
    env = {**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    token = subprocess.run([toolshed_bin, "token"], env=env, capture_output=True, text=True, check=True).stdout.strip()
    proc = subprocess.Popen(
        [toolshed_bin, "--workspace", str(workspace), "serve", "--port", "0", "--catalog", "discover"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = None
        for line in proc.stderr:
            if line.startswith("listening on "):
                url = line.split(" ", 2)[2].strip()
                break
        assert url, "toolshed serve did not start"

        async def main():
            async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
                async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                    names = sorted(t.name for t in (await client.list_tools()).tools)
                    assert names == ["tool_call", "tool_search"], names
                    assert (await found(client, "replace text in a file"))[0] == "workspace_edit"
                    result = await client.call_tool("tool_call", {"name": "calculator", "arguments": {"expression": "2+2"}})
                    assert "4" in text(result), result
                    # A stateless request keeps no list: activating says so instead of
                    # claiming what the next request would not have.
                    result = await client.call_tool("tool_search", {"query": "arithmetic", "activate": True})
                    if mode == "auto":
                        assert result.structured_content["activated"] == [] and "no list" in text(result), text(result)
                    else:
                        assert result.structured_content["activated"] == ["calculator"], text(result)

        run(main())
        base = url.removesuffix("/mcp") + "/api/v1"
        query = urllib.parse.urlencode({"q": "run tests", "limit": 5})
        request = urllib.request.Request(f"{base}/tools/search?{query}", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.loads(response.read())
        assert "exec_command" in [r["name"] for r in answer["results"]], answer
        assert all("input_schema" in r for r in answer["results"])
        query = urllib.parse.urlencode({"q": "run tests", "profile": "readonly"})
        request = urllib.request.Request(f"{base}/tools/search?{query}", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert "exec_command" not in [r["name"] for r in json.loads(response.read())["results"]]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_tool_search_can_activate_what_it_finds_and_the_client_is_told(server):
    async def main():
        changed = asyncio.Event()

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with Client(server("--catalog", "discover"), mode="legacy", message_handler=on_message) as client:
            assert "workspace_edit" not in {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("tool_search", {"query": "replace text in a file", "limit": 2, "activate": True})
            assert not result.is_error, text(result)
            activated = result.structured_content["activated"]
            assert activated[0] == "workspace_edit" and len(activated) <= 2, activated
            assert "Added to your tools/list: workspace_edit" in text(result), text(result)
            await asyncio.wait_for(changed.wait(), timeout=10)
            names = {t.name for t in (await client.list_tools()).tools}
            assert set(activated) | {"tool_search", "tool_call"} == names, names
            # Found again: nothing new to add, and no second notification is needed.
            result = await client.call_tool("tool_search", {"query": "replace text in a file", "limit": 1, "activate": True})
            assert result.structured_content["activated"] == [] and "Nothing new" in text(result), text(result)
            result = await client.call_tool("tool_search", {"query": "x", "activate": "yes"})
            assert result.is_error and "activate" in text(result), text(result)

    run(main())


def test_a_profile_can_ask_for_discovery_mode_and_the_flag_overrides_it(server, workspace):
    (workspace / "toolshed.toml").write_text('[profiles.lean]\nallow = ["group:workspace", "calculator"]\ncatalog = "discover"\n')

    async def main():
        async with Client(server("--profile", "lean"), mode="legacy") as client:
            assert sorted(t.name for t in (await client.list_tools()).tools) == ["tool_call", "tool_search"]
            assert "exec_command" not in await found(client, "run tests")
        async with Client(server("--profile", "lean", "--catalog", "full"), mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "workspace_read" in names and "calculator" in names and "tool_search" not in names, names

    run(main())


def test_a_catalog_mode_that_does_not_exist_is_a_config_error(toolshed_bin, workspace, home):
    (workspace / "toolshed.toml").write_text('[profiles.lean]\ncatalog = "tiny"\n')
    env = {**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    done = subprocess.run([toolshed_bin, "--workspace", str(workspace), "tools", "list"], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "profiles.lean.catalog" in done.stderr and "full, standard or discover" in done.stderr, done.stderr


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_default_catalog_lists_everyday_tools_and_finds_the_rest(server, mode):
    """The standard catalog (the default): `[mcp] on_demand` tools are left out of the list,
    named in tool_search's description, and called by name all the same — in both eras."""

    async def main():
        async with Client(server(), mode=mode) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"workspace_edit", "exec_command", "tool_search", "tool_call"} <= set(tools), sorted(tools)
            assert not {"calculator", "datetime", "process_exec", "download_file"} & set(tools), sorted(tools)
            assert "calculator" in tools["tool_search"].description and "process_exec" in tools["tool_search"].description
            assert "calculator" in await found(client, "evaluate an arithmetic expression")
            direct = await client.call_tool("calculator", {"expression": "6 * 7"})
            assert not direct.is_error and "42" in text(direct), text(direct)
            # Activating adds only what the list left out; the search stays listed after.
            found_ = await client.call_tool("tool_search", {"query": "evaluate arithmetic edit file", "activate": True})
            activated = found_.structured_content["activated"]
            assert "calculator" in activated and not set(activated) & set(tools), found_.structured_content
            if mode == "legacy":
                # (A 2026-07-28 client keeps a list for its ttlMs, and re-lists when
                # subscriptions/listen says it changed.)
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"calculator", "tool_search", "workspace_edit"} <= names, sorted(names)
        async with Client(server("--catalog", "full"), mode=mode) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "calculator" in names and "tool_search" not in names, sorted(names)

    run(main())
