"""The command sandbox through the MCP door, with the official Python client: every
command result says which sandbox it ran in, and what the sandbox denies reaches the model
as the command's own failure (EACCES/EPERM), not as a tool error of toolshed's."""

import asyncio

from mcp import Client


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def test_a_command_result_carries_its_sandbox_block(server):
    async def main():
        async with Client(server()) as client:
            result = await client.call_tool("exec_command", {"cmd": "echo hi > made.txt && cat made.txt"})
            assert not result.is_error, result.content
            sandbox = result.structured_content["sandbox"]
            assert sandbox["mode"] == "workspace-write"
            enforced = sandbox["enforced"]
            for layer in ("pid-namespace", "seccomp", "no-new-privs", "hidden-paths"):
                assert layer in enforced, enforced
            assert any(layer.startswith("landlock-abi-") for layer in enforced), enforced

    run(main())


def test_a_denied_write_is_the_commands_own_failure(server, home, workspace):
    async def main():
        async with Client(server()) as client:
            result = await client.call_tool("exec_command", {"cmd": "echo x > /etc/toolshed-sandbox-probe"})
            assert result.is_error
            assert result.structured_content["exit_code"] != 0
            text = result.content[0].text
            assert "Permission denied" in text or "Operation not permitted" in text, text
            # toolshed's data dir is not there for commands at all.
            secret = await client.call_tool("exec_command", {"cmd": f"ls {home}"})
            assert secret.is_error and "No such file" in secret.content[0].text, secret.content
            # Signalling the host is refused, and the host keeps serving.
            killed = await client.call_tool("shell", {"command": "kill -TERM $PPID; kill -KILL 1"})
            assert killed.is_error
            after = await client.call_tool("exec_command", {"cmd": "echo still here"})
            assert "still here" in after.content[0].text

    run(main())
    assert not (workspace.parent / "toolshed-sandbox-probe").exists()
