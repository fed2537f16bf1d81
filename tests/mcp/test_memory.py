"""Memory through the MCP door: memories last across connections, are found by what they
say, and one owner (agent token) never sees another's."""

import asyncio
import json
import subprocess

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def text(result):
    return " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_three_memories_are_found_by_a_word_only_one_has_in_a_later_session(server):
    async def store():
        async with Client(server(), mode="legacy") as client:
            ids = []
            for note in [
                "The staging database runs postgres 16 on port 5433",
                "Deploys go out on Tuesdays after the review",
                "The on-call rota lives in the wiki under Operations",
            ]:
                result = await client.call_tool("memory_store", {"text": note, "tags": ["ops"]})
                assert not result.is_error, text(result)
                ids.append(result.structured_content["id"])
            return ids

    ids = run(store())

    # Another connection (another MCP owner id) of the same person finds them.
    async def recall():
        async with Client(server(), mode="auto") as client:
            result = await client.call_tool("memory_search", {"query": "tuesdays"})
            assert not result.is_error, text(result)
            results = result.structured_content["results"]
            assert [r["id"] for r in results] == [ids[1]], results
            assert "**Tuesdays**" in results[0]["snippet"], results
            result = await client.call_tool("memory_search", {"query": "ops OR wiki", "tags": ["ops"]})
            assert len(result.structured_content["results"]) == 3, text(result)
            result = await client.call_tool("memory_search", {"query": "NEAR(\"*"})
            assert not result.is_error or "search" in text(result), text(result)
            result = await client.call_tool("memory_get", {"id": ids[0]})
            assert "port 5433" in text(result)
            result = await client.call_tool("memory_delete", {"id": ids[0]})
            assert not result.is_error and "restore" in text(result), text(result)
            result = await client.call_tool("memory_search", {"query": "postgres"})
            assert result.structured_content["results"] == []
            result = await client.call_tool("memory_delete", {"id": ids[0], "restore": True})
            assert not result.is_error, text(result)
            result = await client.call_tool("memory_search", {"query": "postgres"})
            assert [r["id"] for r in result.structured_content["results"]] == [ids[0]]
            result = await client.call_tool("memory_append_daily", {"text": "reviewed the rota"})
            assert "Journal" in text(result), text(result)

    run(recall())


def connect(url, token):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return http, Client(streamable_http_client(url, http_client=http), mode="legacy")


def test_two_tokens_never_see_each_others_memories(serve, token_for):
    url, _admin = serve()
    alice, bob = token_for("alice"), token_for("bob")

    async def main():
        http, client = connect(url, alice)
        async with http, client:
            result = await client.call_tool("memory_store", {"text": "alice's secret recipe uses saffron"})
            assert not result.is_error, text(result)
            secret = result.structured_content["id"]
        http, client = connect(url, bob)
        async with http, client:
            result = await client.call_tool("memory_search", {"query": "saffron"})
            assert result.structured_content["results"] == [], text(result)
            result = await client.call_tool("memory_get", {"id": secret})
            assert result.is_error and "no memory" in text(result), text(result)
            result = await client.call_tool("memory_delete", {"id": secret})
            assert result.is_error, text(result)
            result = await client.call_tool("memory_list", {})
            assert result.structured_content["memories"] == [], text(result)
        http, client = connect(url, alice)
        async with http, client:
            result = await client.call_tool("memory_search", {"query": "saffron"})
            assert [r["id"] for r in result.structured_content["results"]] == [secret]

    run(main())


NOTES_TOML = """\
id = "test.notes"
version = "1.0.0"
name = "Notes"
kind = "js"
[capabilities]
memory = true
"""

NOTES_JS = """
export function activate(context) {
  context.registerActions([
    { name: "remember", description: "Stores a note.",
      properties: { text: { type: "string", required: true } },
      async run(inputs, ctx) {
        const stored = await ctx.memory.store({ text: inputs.text, tags: ["notes"] });
        return stored.id + " in " + stored.namespace;
      } },
    { name: "recall", description: "Searches the notes.",
      properties: { query: { type: "string", required: true } },
      async run(inputs, ctx) {
        const found = await ctx.memory.search(inputs.query);
        return JSON.stringify(found.map((f) => f.id));
      } },
    { name: "peek", description: "Reads a memory by id.",
      properties: { id: { type: "string", required: true } },
      async run(inputs, ctx) {
        try { return (await ctx.memory.get(inputs.id)).text; } catch (e) { return "refused: " + e.message; }
      } },
  ]);
}
"""


def test_a_js_plugin_keeps_memories_only_once_granted(server, toolshed_bin, workspace, home, tmp_path):
    from test_stdio import toolshed

    source = tmp_path / "notes"
    source.mkdir()
    (source / "plugin.toml").write_text(NOTES_TOML)
    (source / "main.js").write_text(NOTES_JS)
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(source))
    assert installed.returncode == 0, installed.stderr

    async def refused():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("notes_remember", {"text": "the cache key rotates weekly"})
            assert result.is_error, text(result)
            assert "toolshed plugins grant test.notes memory" in text(result), text(result)

    run(refused())
    granted = toolshed(toolshed_bin, workspace, home, "plugins", "grant", "test.notes", "memory")
    assert granted.returncode == 0, granted.stderr

    async def granted_calls():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("notes_remember", {"text": "the cache key rotates weekly"})
            assert not result.is_error, text(result)
            stored, namespace = text(result).split(" in ")
            assert namespace == "plugin/test.notes", text(result)
            result = await client.call_tool("notes_recall", {"query": "rotates"})
            assert not result.is_error and json.loads(text(result)) == [stored], text(result)
            # The person's own memories stay out of the plugin's reach.
            mine = await client.call_tool("memory_store", {"text": "my own note about rotates"})
            mine = mine.structured_content["id"]
            result = await client.call_tool("notes_recall", {"query": "rotates"})
            assert json.loads(text(result)) == [stored], text(result)
            result = await client.call_tool("notes_peek", {"id": mine})
            assert text(result).startswith("refused: no memory"), text(result)
            # The person sees what the plugin stored, in its namespace.
            result = await client.call_tool("memory_search", {"query": "rotates", "namespace": "plugin/test.notes"})
            assert [r["id"] for r in result.structured_content["results"]] == [stored], text(result)

    run(granted_calls())


class RawSession:
    """`toolshed mcp` driven with raw JSON-RPC lines, so that it can be killed mid-call."""

    def __init__(self, toolshed_bin, workspace, home, extra_env):
        env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), **extra_env}
        self.process = subprocess.Popen(
            [toolshed_bin, "--workspace", str(workspace), "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
        )
        self.next_id = 0
        self.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})
        self.reply()
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def send(self, method, params):
        self.next_id += 1
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})

    def reply(self):
        while True:
            message = json.loads(self.process.stdout.readline())
            if "id" in message:
                return message["result"]

    def call(self, name, arguments):
        self.send("tools/call", {"name": name, "arguments": arguments})
        result = self.reply()
        assert not result.get("isError"), result
        return result.get("structuredContent")


def test_compaction_is_all_or_nothing_when_the_server_is_killed(toolshed_bin, workspace, home):
    import random
    import signal
    import sqlite3
    import time

    # One compaction gathers every memory: a transaction long enough to be killed in (and
    # a reply ceiling that lets the material of the first step through whole).
    env = {"TOOLSHED_MEMORY__COMPACT_BYTES": "16000000", "TOOLSHED_LIMITS__MAX_OUTPUT_BYTES": "20000000"}
    count = 3000
    session = RawSession(toolshed_bin, workspace, home, env)
    for i in range(count):
        session.send("tools/call", {"name": "memory_store", "arguments": {"text": f"entry {i}: " + "lorem ipsum " * 30, "namespace": "log"}})
    for _ in range(count):
        assert not session.reply().get("isError")
    session.process.stdin.close()
    session.process.wait(timeout=60)

    database = home / "toolshed.db"
    rng = random.Random(21)
    outcomes = []
    for delay in [0.0, 0.002, 0.01, 0.03, 0.06, 0.1] + [rng.uniform(0, 0.1) for _ in range(4)]:
        session = RawSession(toolshed_bin, workspace, home, env)
        token = session.call("memory_compact_summary", {"namespace": "log"})["token"]
        session.send("tools/call", {"name": "memory_compact_summary", "arguments": {"namespace": "log", "token": token, "summary": "all of it, summarised"}})
        time.sleep(delay)
        session.process.send_signal(signal.SIGKILL)
        session.process.wait(timeout=30)

        db = sqlite3.connect(database)
        try:
            summaries = db.execute("SELECT id, title FROM memories WHERE kind = 'summary'").fetchall()
            notes = db.execute("SELECT count(*) FROM memories WHERE kind = 'note' AND namespace = 'log'").fetchone()[0]
            assert notes == count, notes
            for summary_id, title in summaries:
                replaced = int(title.split()[2])
                archived = db.execute("SELECT count(*) FROM memories WHERE archived_in = ?", (summary_id,)).fetchone()[0]
                assert archived == replaced, (title, archived)
            dangling = db.execute(
                "SELECT count(*) FROM memories WHERE archived_in IS NOT NULL AND archived_in NOT IN (SELECT id FROM memories WHERE kind = 'summary')"
            ).fetchone()[0]
            assert dangling == 0
            assert len(summaries) <= 1, summaries
            outcomes.append(len(summaries))
            # The search index agrees with the table after the kill.
            indexed = db.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'summarised'").fetchone()[0]
            assert indexed == len(summaries), (indexed, summaries)
            # Undone, so that the next round compacts the same thousands of memories again.
            with db:
                db.execute("UPDATE memories SET archived_in = NULL WHERE archived_in IS NOT NULL")
                db.execute("DELETE FROM memories WHERE kind = 'summary'")
        finally:
            db.close()
    print("compactions that had committed when killed:", outcomes)
