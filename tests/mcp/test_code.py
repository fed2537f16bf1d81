"""Code mode: `run_code` runs one JavaScript snippet that calls tools through the whole
pipeline — one `tools/call` for many tool calls, each audited and linked to it — in a
runtime that has no network or files of its own and stops at its CPU limit."""

import asyncio
import json
import os
import subprocess

from mcp import Client


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


def text(result):
    return " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def audit(toolshed_bin, workspace, home, *flags):
    env = {**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    out = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "audit", "--json", "--limit", "1000", *flags],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)["audit"]


SUMMARY = """
const texts = [];
for (let i = 1; i <= 20; i++) texts.push(await tools.workspace_read({path: `src/f${i}.txt`}));
const todos = texts.flatMap((t) => t.split("\\n").filter((line) => /TODO/.test(line)));
console.log(`read ${texts.length} files`);
return [
  `files: ${texts.length}`,
  `todo lines: ${todos.length}`,
  `first: ${todos[0].replace(/^\\s*\\d+\\t/, "")}`,
].join("\\n");
"""


def test_a_snippet_reads_twenty_files_greps_them_and_returns_three_lines(server, workspace, toolshed_bin, home):
    (workspace / "src").mkdir()
    for i in range(1, 21):
        todo = f"TODO: fix {i}\n" if i % 4 == 0 else ""
        (workspace / "src" / f"f{i}.txt").write_text(f"line one of {i}\n{todo}last line\n" * 10)

    async def main():
        async with Client(server(), mode="legacy") as client:
            assert "run_code" in {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("run_code", {"code": SUMMARY})
            assert not result.is_error, text(result)
            value = result.structured_content["value"]
            assert value.split("\n") == ["files: 20", "todo lines: 50", "first: TODO: fix 4"], value
            assert result.structured_content["logs"] == ["read 20 files"]
            # What the model reads is the console line and the three lines, not 20 files.
            assert len(text(result)) < 200, text(result)

    run(main())
    (outer,) = audit(toolshed_bin, workspace, home, "--tool", "run_code")
    inner = audit(toolshed_bin, workspace, home, "--parent", outer["call_id"])
    assert len(inner) == 20, inner
    assert {r["tool"] for r in inner} == {"workspace_read"}
    assert all(r["outcome"] == "ok" and r["owner"] == outer["owner"] for r in inner), inner
    assert all(r["parent"] == outer["call_id"] for r in inner)


def test_an_endless_loop_stops_at_the_cpu_limit_and_the_next_snippet_runs(server):
    async def main():
        async with Client(server(), mode="auto") as client:
            result = await client.call_tool("run_code", {"code": "while (true) {}"})
            assert result.is_error and "CPU limit" in text(result), text(result)
            result = await client.call_tool("run_code", {"code": "return 6 * 7"})
            assert not result.is_error and text(result) == "42", text(result)

    run(main())


def test_a_denied_tool_is_a_catchable_error_with_its_kind(server, workspace):
    (workspace / "toolshed.toml").write_text(
        '[profiles.scripted]\nallow = ["run_code", "workspace_read"]\n'
    )
    code = """
    const kinds = [];
    try { await tools.workspace_write({path: "made.txt", content: "x"}); }
    catch (e) { kinds.push(e.kind, e.tool); }
    try { await tools.workspace_read({path: "missing.txt"}); }
    catch (e) { kinds.push(e.kind); }
    try { await tools.calculator({expr: "1"}); }
    catch (e) { kinds.push(e.kind); }
    try { await tools.run_code({code: "return 1"}); }
    catch (e) { kinds.push(e.kind); }
    return kinds;
    """

    async def main():
        async with Client(server("--profile", "scripted"), mode="legacy") as client:
            result = await client.call_tool("run_code", {"code": code})
            assert not result.is_error, text(result)
            kinds = result.structured_content["value"]
            # The profile hides workspace_write and calculator; a missing file is the tool's
            # own error; run_code may not call itself.
            assert kinds[0] == "denied" and kinds[1] == "workspace_write", kinds
            assert kinds[2] in ("tool_error", "not_found", "failed"), kinds
            assert kinds[3] == "denied" and kinds[4] == "denied", kinds
            # Uncaught, the error fails the run with its message.
            result = await client.call_tool("run_code", {"code": 'await tools.workspace_write({path: "made.txt", content: "x"})'})
            assert result.is_error and "workspace_write" in text(result), text(result)
        assert not (workspace / "made.txt").exists()

    run(main())


def test_a_snippet_reaches_no_network_or_files_but_through_tools(server, workspace):
    code = """
    const seen = [typeof fetch, typeof require, typeof process, typeof ctx, typeof setTimeout,
                  typeof std, typeof os, typeof XMLHttpRequest];
    let imported = "no";
    try { await import("fs"); imported = "yes"; } catch (e) { imported = "refused"; }
    let evaluated = "no";
    try { evaluated = typeof (0, eval)("this.ctx"); } catch (e) { evaluated = "refused"; }
    return {seen, imported, evaluated, hello: await tools.workspace_read({path: "hello.txt"})};
    """

    async def main():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("run_code", {"code": code})
            assert not result.is_error, text(result)
            value = result.structured_content["value"]
            assert set(value["seen"]) == {"undefined"}, value
            assert value["imported"] == "refused", value
            assert value["evaluated"] in ("undefined", "refused"), value
            assert "hello from the workspace" in value["hello"], value

    run(main())


def test_bad_code_is_explained(server):
    async def main():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("run_code", {"code": "return (("})
            assert result.is_error and "does not parse" in text(result), text(result)
            result = await client.call_tool("run_code", {"code": "throw new Error('nope')"})
            assert result.is_error and "nope" in text(result), text(result)

    run(main())
