"""JavaScript plugins through the MCP door: install the example plugin into a fresh data
dir and call its tool with the Python client; a running server picks up an install and
says so with list_changed; runaway plugins are stopped while the host keeps serving."""

import asyncio
import textwrap
from pathlib import Path

from mcp import Client, types

from test_stdio import toolshed

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "examples" / "hello-plugin"


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def test_the_example_plugin_installs_and_answers_over_mcp(server, toolshed_bin, workspace, home):
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(HELLO))
    assert installed.returncode == 0, installed.stderr
    assert "example.hello 0.1.0" in installed.stdout

    async def main():
        for mode in ("legacy", "auto"):
            async with Client(server(), mode=mode) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert "hello_greet" in tools, sorted(tools)
                greet = tools["hello_greet"]
                assert greet.annotations.read_only_hint is True
                assert greet.input_schema["required"] == ["name"]
                assert greet.input_schema["properties"]["language"]["enum"] == ["en", "zh"]

                result = await client.call_tool("hello_greet", {"name": "Ada"})
                assert not result.is_error, result.content
                assert result.structured_content == {"greeting": "Hello, Ada.", "language": "en"}
                assert "Hello, Ada." in result.content[0].text

                result = await client.call_tool("hello_greet", {"name": "Ada", "language": "zh", "times": 2})
                assert result.structured_content["greeting"] == "你好, Ada. 你好, Ada."

                # The schema is enforced before the plugin's code runs...
                result = await client.call_tool("hello_greet", {"language": "fr"})
                assert result.is_error
                assert "name" in result.content[0].text and "/language" in result.content[0].text
                # ...and an error the plugin throws comes back as an error result.
                result = await client.call_tool("hello_greet", {"name": "Ada", "times": 9})
                assert result.is_error
                assert "times must be 1, 2 or 3, not 9" in result.content[0].text

    run(main())


def test_an_install_reaches_a_running_server_as_list_changed(server, toolshed_bin, workspace, home):
    async def main():
        changed = asyncio.Event()

        async def on_message(message):
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with Client(server(), mode="legacy", message_handler=on_message) as client:
            assert "hello_greet" not in [t.name for t in (await client.list_tools()).tools]
            done = await asyncio.to_thread(toolshed, toolshed_bin, workspace, home, "plugins", "install", str(HELLO))
            assert done.returncode == 0, done.stderr
            await asyncio.wait_for(changed.wait(), timeout=15)
            assert "hello_greet" in [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("hello_greet", {"name": "Grace"})
            assert result.structured_content["greeting"] == "Hello, Grace."

            changed.clear()
            done = await asyncio.to_thread(toolshed, toolshed_bin, workspace, home, "plugins", "uninstall", "example.hello")
            assert done.returncode == 0, done.stderr
            await asyncio.wait_for(changed.wait(), timeout=15)
            assert "hello_greet" not in [t.name for t in (await client.list_tools()).tools]

    run(main())


RUNAWAY = """
id = "test.runaway"
version = "1.0.0"
name = "Runaway"
kind = "js"
[capabilities]
network = ["api.example.com"]
"""

RUNAWAY_JS = """
export function activate(context) {
  context.registerActions([
    { name: "spin", description: "Loops forever.", async run() { while (true) {} } },
    { name: "hog", description: "Allocates without end.",
      async run() { const a = []; while (true) a.push("x".repeat(1 << 20) + a.length); } },
    { name: "fetch", description: "Calls a host it was not granted.",
      async run(inputs, ctx) {
        if (ctx.http === undefined) throw new Error("no http capability at all");
        return (await ctx.http.get("http://127.0.0.1:9/")).status;
      } },
    { name: "ok", description: "Answers.", async run() { return "still here"; } },
  ]);
}
"""


def test_runaway_plugins_are_stopped_and_the_host_keeps_serving(server, toolshed_bin, workspace, home, tmp_path):
    source = tmp_path / "runaway"
    source.mkdir()
    (source / "plugin.toml").write_text(textwrap.dedent(RUNAWAY))
    (source / "main.js").write_text(RUNAWAY_JS)
    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(source)).returncode == 0
    granted = toolshed(toolshed_bin, workspace, home, "plugins", "grant", "test.runaway")
    assert granted.returncode == 0, granted.stderr
    assert "http:api.example.com" in granted.stdout

    async def main():
        async with Client(server(), mode="legacy") as client:
            spin = asyncio.create_task(client.call_tool("runaway_spin", {}))
            # While the plugin spins on its own thread, other tools answer.
            for _ in range(5):
                result = await client.call_tool("calculator", {"expression": "6*7"})
                assert result.content[0].text == "42"
            result = await spin
            assert result.is_error
            assert "CPU limit" in result.content[0].text, result.content[0].text
            assert (await client.call_tool("runaway_ok", {})).content[0].text == "still here"

            result = await client.call_tool("runaway_hog", {})
            assert result.is_error
            assert "memory limit" in result.content[0].text, result.content[0].text
            assert (await client.call_tool("runaway_ok", {})).content[0].text == "still here"

            result = await client.call_tool("runaway_fetch", {})
            assert result.is_error
            text = result.content[0].text
            assert "127.0.0.1" in text and "toolshed plugins grant test.runaway http:127.0.0.1" in text, text
            assert (await client.call_tool("calculator", {"expression": "1+1"})).content[0].text == "2"

    run(main(), timeout=90)
