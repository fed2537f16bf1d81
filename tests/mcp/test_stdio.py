"""`toolshed mcp` over stdio, driven by the official Python MCP client."""

import asyncio
import json
import os
import subprocess
import time

import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError

MODES = ["legacy", "auto"]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


@pytest.mark.parametrize("mode", MODES)
def test_lists_tools_with_honest_annotations(server, mode):
    async def main():
        async with Client(server("--catalog", "full"), mode=mode) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            names = list(tools)
            assert names == sorted(names), "tools are listed in a stable, sorted order"
            assert "calculator" in tools and "workspace_read" in tools
            calc = tools["calculator"].annotations
            assert calc.read_only_hint is True
            assert calc.open_world_hint is False
            # Only hints that differ from MCP's reading of an absent one are listed; for a
            # read-only tool destructive/idempotent mean nothing and are left out.
            assert calc.destructive_hint is None
            read = tools["workspace_read"].annotations
            assert read.read_only_hint is True
            write = tools["workspace_write"].annotations
            # Absent readOnlyHint/destructiveHint: MCP reads "may change, may destroy".
            assert write.read_only_hint is None and write.destructive_hint is None
            assert write.idempotent_hint is True and write.open_world_hint is False
            for tool in tools.values():
                assert tool.input_schema["type"] == "object", tool.name
                assert tool.description, tool.name

    run(main())


@pytest.mark.parametrize("mode", MODES)
def test_calls_the_calculator(server, mode):
    async def main():
        async with Client(server(), mode=mode) as client:
            result = await client.call_tool("calculator", {"expression": "2+3*4"})
            assert not result.is_error
            assert result.content[0].text == "14"

    run(main())


def test_reads_a_workspace_file(server):
    async def main():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("workspace_read", {"path": "hello.txt"})
            assert not result.is_error, result.content
            assert "hello from the workspace" in result.content[0].text

    run(main())


def test_workspace_edit_inserts_after_a_line(server, workspace):
    """The editor's `insert` command: `insert_line` N puts `new_text` after line N."""
    (workspace / "notes.md").write_text("# Notes\n- first\n")

    async def main():
        async with Client(server(), mode="legacy") as client:
            await client.call_tool("workspace_read", {"path": "notes.md"})
            result = await client.call_tool(
                "workspace_edit", {"path": "notes.md", "insert_line": 1, "new_text": "Written by hand."})
            assert not result.is_error, result.content
            assert result.structured_content["inserted_after"] == 1, result.structured_content
            past = await client.call_tool(
                "workspace_edit", {"path": "notes.md", "insert_line": 9, "new_text": "x"})
            assert past.is_error and "0 to 3" in past.content[0].text, past.content

    run(main())
    assert (workspace / "notes.md").read_text() == "# Notes\nWritten by hand.\n- first\n"


@pytest.mark.parametrize("mode", MODES)
def test_bad_arguments_are_an_error_result_naming_the_violation(server, mode):
    async def main():
        async with Client(server(), mode=mode) as client:
            result = await client.call_tool("calculator", {"expression": 7, "bogus": True})
            assert result.is_error
            text = result.content[0].text
            assert "at /expression" in text, text
            assert "bogus" in text, text

    run(main())


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_tool_is_a_json_rpc_error(server, mode):
    async def main():
        async with Client(server(), mode=mode) as client:
            with pytest.raises(MCPError) as err:
                await client.call_tool("calculatr", {"expression": "1"})
            assert err.value.code == -32602
            assert "calculator" in err.value.message, "the error suggests the close name"

    run(main())


def test_tools_flag_hides_everything_else(server):
    async def main():
        async with Client(server("--tools", "calculator"), mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["calculator"]
            result = await client.call_tool("workspace_read", {"path": "hello.txt"})
            assert result.is_error
            assert "--tools" in result.content[0].text
            assert "hello from the workspace" not in result.content[0].text

    run(main())


def toolshed(toolshed_bin, workspace, home, *args):
    """Runs a one-shot `toolshed` command on the same home and workspace as the server."""
    env = dict(os.environ, TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "no-curated"))
    return subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )


def test_list_changed_reaches_a_legacy_client(server, toolshed_bin, workspace, home):
    """Disabling a plugin from another process reaches a running server, which tells the client."""

    async def main():
        changed = asyncio.Event()

        async def on_message(message):
            if isinstance(message, types.ServerNotification) and isinstance(
                message, types.ToolListChangedNotification
            ):
                changed.set()

        async with Client(server("--catalog", "full"), mode="legacy", message_handler=on_message) as client:
            assert "calculator" in [t.name for t in (await client.list_tools()).tools]
            await asyncio.to_thread(toolshed, toolshed_bin, workspace, home, "plugins", "disable", "system.calculator")
            await asyncio.wait_for(changed.wait(), timeout=10)
            names = [t.name for t in (await client.list_tools()).tools]
            assert "calculator" not in names and "datetime" in names

            changed.clear()
            await asyncio.to_thread(toolshed, toolshed_bin, workspace, home, "plugins", "enable", "system.calculator")
            await asyncio.wait_for(changed.wait(), timeout=10)
            assert "calculator" in [t.name for t in (await client.list_tools()).tools]

    run(main())


def test_list_changed_reaches_a_2026_listener(server, toolshed_bin, workspace, home):
    async def main():
        async with Client(server("--catalog", "full"), mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            # What the client has seen: a change made while the host is still opening is
            # in the first list rather than announced (docs/mcp.md).
            assert "datetime" in [t.name for t in (await client.list_tools()).tools]
            async with client.listen(tools_list_changed=True) as sub:
                assert sub.honored.tools_list_changed
                await asyncio.to_thread(toolshed, toolshed_bin, workspace, home, "plugins", "disable", "system.datetime")
                event = await asyncio.wait_for(sub.__anext__(), timeout=10)
                assert "tools" in type(event).__name__.lower() or "list" in repr(event).lower(), event
            names = [t.name for t in (await client.list_tools()).tools]
            assert "datetime" not in names and "calculator" in names

    run(main())


def test_a_list_change_outside_the_selection_is_not_announced(server, toolshed_bin, workspace, home):
    async def main():
        notes = []

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                notes.append(message)

        async with Client(server("--tools", "calculator"), mode="legacy", message_handler=on_message) as client:
            await asyncio.to_thread(toolshed, toolshed_bin, workspace, home, "plugins", "disable", "system.datetime")
            await asyncio.to_thread(toolshed, toolshed_bin, workspace, home, "plugins", "disable", "system.calculator")
            for _ in range(100):
                if notes:
                    break
                await asyncio.sleep(0.1)
            # Only the second change touched what this client sees.
            assert len(notes) == 1
            assert [t.name for t in (await client.list_tools()).tools] == []

    run(main())


def test_tools_list_pages_with_a_cursor(server, workspace):
    (workspace / "toolshed.toml").write_text("[mcp]\npage_size = 5\n")

    async def main():
        async with Client(server("--catalog", "full"), mode="legacy") as client:
            first = await client.session.list_tools()
            assert len(first.tools) == 5 and first.next_cursor
            seen = [t.name for t in first.tools]
            cursor = first.next_cursor
            while cursor:
                page = await client.session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
                assert len(page.tools) <= 5
                seen += [t.name for t in page.tools]
                cursor = page.next_cursor
            assert seen == sorted(seen) and len(seen) == len(set(seen))
            assert "workspace_write" in seen and "calculator" in seen
            with pytest.raises(MCPError) as err:
                await client.session.list_tools(params=types.PaginatedRequestParams(cursor="bogus"))
            assert "cursor" in str(err.value)

    run(main())


def test_an_owner_handle_in_meta_keeps_read_before_edit_state(server, workspace):
    async def main():
        async with Client(server(), mode="auto") as client:
            edit = {"path": "hello.txt", "old_text": "hello", "new_text": "howdy"}
            read = await client.call_tool("workspace_read", {"path": "hello.txt"}, meta={"toolshed/owner": "agent-a"})
            assert not read.is_error
            # Another owner has not read the file: its edit is refused.
            other = await client.call_tool("workspace_edit", edit, meta={"toolshed/owner": "agent-b"})
            assert other.is_error and "read" in other.content[0].text.lower(), other.content
            mine = await client.call_tool("workspace_edit", edit, meta={"toolshed/owner": "agent-a"})
            assert not mine.is_error, mine.content
            bad = client.call_tool("calculator", {"expression": "1"}, meta={"toolshed/owner": "no spaces"})
            with pytest.raises(MCPError) as err:
                await bad
            assert "owner handle" in str(err.value)

    run(main())
    assert (workspace / "hello.txt").read_text() == "howdy from the workspace\n"


def test_exits_when_its_parent_dies(toolshed_bin, workspace, home, tmp_path):
    """The client died without closing stdin (a grandchild keeps the pipe open)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSHED_")}
    env["TOOLSHED_HOME"] = str(home)
    pid_file = tmp_path / "pid"
    script = f'sleep 60 | "{toolshed_bin}" --workspace "{workspace}" mcp & echo $! > "{pid_file}"; sleep 0.5; kill -9 $$'
    with open(tmp_path / "out", "w") as out:
        subprocess.run(["sh", "-c", script], env=env, stdout=out, stderr=out, timeout=30)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    alive = True
    while alive and time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                alive = not f.read().rpartition(") ")[2].startswith("Z")
        except FileNotFoundError:
            alive = False
        time.sleep(0.1)
    subprocess.run(["pkill", "-f", "^sleep 60$"], check=False)
    assert not alive, "toolshed mcp kept running after its parent died"


def spawn(toolshed_bin, workspace, home):
    # Loud logging, so the test proves logs go to stderr and not into the protocol stream.
    env = dict(os.environ, TOOLSHED_HOME=str(home), TOOLSHED_LOG__LEVEL="debug")
    return subprocess.Popen(
        [toolshed_bin, "--workspace", str(workspace), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def request(id, method, params):
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}) + "\n"


INITIALIZE = request(
    1,
    "initialize",
    {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
)


def test_stdout_carries_only_json_rpc(toolshed_bin, workspace, home):
    proc = spawn(toolshed_bin, workspace, home)
    messages = (
        INITIALIZE
        + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + "\n"
        + request(2, "tools/list", {})
        + request(3, "tools/call", {"name": "calculator", "arguments": {"expression": "1/0"}})
        + request(4, "tools/call", {"name": "nope", "arguments": {}})
    )
    out, err = proc.communicate(messages.encode(), timeout=10)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines, "the server answered"
    ids = []
    for line in lines:
        message = json.loads(line)  # every line parses, or the test fails here
        assert message["jsonrpc"] == "2.0", line
        ids.append(message.get("id"))
    # Requests are served concurrently, so replies may come in any order.
    assert sorted(i for i in ids if i is not None) == [1, 2, 3, 4]
    assert err.strip(), "debug logs were written, to stderr"


def test_exits_promptly_when_stdin_closes(toolshed_bin, workspace, home):
    proc = spawn(toolshed_bin, workspace, home)
    proc.stdin.write(INITIALIZE.encode())
    proc.stdin.flush()
    first = proc.stdout.readline()
    assert json.loads(first)["id"] == 1
    started = time.monotonic()
    proc.stdin.close()
    try:
        code = proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("toolshed mcp still running 5 s after stdin closed")
    assert code == 0, proc.stderr.read().decode()
    assert time.monotonic() - started < 5


def test_a_name_that_is_not_utf8_is_listed_escaped_and_works_everywhere(server, workspace):
    """Linux names are bytes: `caf\\xe9.txt` (Latin-1) is spelled with `\\xe9`, and every
    workspace tool takes that spelling back; a name holding the text `\\x` doubles its
    backslash so the two can never be confused."""
    raw = os.path.join(os.fsencode(workspace), b"d", b"caf\xe9.txt")
    os.makedirs(os.path.dirname(raw))
    with open(raw, "wb") as f:
        f.write(b"one\n")
    (workspace / "d" / "lit\\xe9.txt").write_text("literal\n")
    spelled = "d/caf\\xe9.txt"

    async def text(client, tool, args):
        result = await client.call_tool(tool, args)
        assert not result.is_error, (tool, result.content)
        return result.content[0].text

    async def main():
        async with Client(server(), mode="legacy") as client:
            listing = await text(client, "workspace_list", {"path": "d"})
            assert "caf\\xe9.txt" in listing and "lit\\\\xe9.txt" in listing, listing
            assert "\ufffd" not in listing, listing
            assert "  caf\\xe9.txt\n" in await text(client, "workspace_tree", {"path": "d"})
            for tool, args in [
                ("workspace_glob", {"patterns": ["d/*.txt"]}),
                ("workspace_find", {"query": "caf"}),
                ("workspace_grep", {"pattern": "one"}),
            ]:
                assert spelled in await text(client, tool, args), tool
            assert "one" in await text(client, "workspace_read", {"path": spelled})
            assert "literal" in await text(client, "workspace_read", {"path": "d/lit\\\\xe9.txt"})
            await text(client, "workspace_edit", {"path": spelled, "old_text": "one", "new_text": "two"})
            await text(client, "workspace_stat", {"path": spelled})
            await text(client, "workspace_move", {"from": spelled, "to": "d/\\xff.txt"})
            await text(client, "workspace_write", {"path": "d/new\\xfe", "content": "x"})

    run(main())
    names = sorted(os.listdir(os.path.join(os.fsencode(workspace), b"d")))
    assert names == [b"lit\\xe9.txt", b"new\xfe", b"\xff.txt"], names
    assert open(os.path.join(os.fsencode(workspace), b"d", b"\xff.txt"), "rb").read() == b"two\n"
