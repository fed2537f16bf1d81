"""What Neta's users find in toolshed (issue 60's Neta lines), through the Python MCP
client over stdio."""

import asyncio
import os

from mcp import Client


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


def test_workspace_stat_says_whether_the_caller_may_read_and_write(server, workspace):
    """Neta's `access(path, read|write)`: the kernel's answer, narrowed by toolshed's rules."""
    (workspace / "open.txt").write_text("x")
    (workspace / "kept.txt").write_text("x")
    os.chmod(workspace / "kept.txt", 0o444)

    async def stat(params, path):
        async with Client(params, mode="legacy") as client:
            return await client.call_tool("workspace_stat", {"path": path})

    open_ = run(stat(server(), "open.txt"))
    assert open_.structured_content["access"] == {"read": True, "write": True}, open_.structured_content
    kept = run(stat(server(), "kept.txt"))
    assert kept.structured_content["access"] == {"read": True, "write": False}
    assert "write permission" in kept.content[0].text, kept.content
    # A read-only sandbox writes nothing, and says so.
    params = server()
    params.env["TOOLSHED_SANDBOX__MODE"] = "read-only"
    ro = run(stat(params, "open.txt"))
    assert ro.structured_content["access"] == {"read": True, "write": False}
    assert "read-only" in ro.content[0].text, ro.content
