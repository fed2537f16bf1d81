"""Memory through the MCP door: memories last across connections, are found by what they
say, and one owner (agent token) never sees another's."""

import asyncio
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


@pytest.fixture
def token_for(toolshed_bin, home):
    def make(owner):
        out = subprocess.run(
            [toolshed_bin, "token", "create", "--owner", owner],
            env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30,
        )
        return out.stdout.strip()

    return make


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
