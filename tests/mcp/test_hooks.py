"""Claude-Code-style command hooks, proven through the MCP door with the Python client:
a bash + jq hook that blocks `rm -rf` (exit 2), a Python hook that rewrites an argument
(`updatedInput`), a post hook adding context, and a rewrite into something policy denies."""

import asyncio
from pathlib import Path

from mcp import Client

BLOCK_RM = r"""#!/usr/bin/env bash
# Blocks rm -rf, as a Claude Code user would write it.
input=$(cat)
cmd=$(jq -r '.tool_input.cmd // .tool_input.command // ""' <<<"$input")
event=$(jq -r '.hook_event_name' <<<"$input")
[ "$event" = PreToolUse ] || { echo "unexpected event $event" >&2; exit 1; }
if grep -Eq 'rm[[:space:]]+-[a-zA-Z]*(rf|fr)' <<<"$cmd"; then
  echo "Blocked by policy hook: rm -rf is not allowed ($cmd)" >&2
  exit 2
fi
exit 0
"""

REWRITE = r"""#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
args = event["tool_input"]
cmd = args.get("cmd", "")
if "please-rewrite" in cmd:
    args = dict(args, cmd=cmd.replace("please-rewrite", "rewritten-by-hook"))
elif "make-forbidden" in cmd:
    args = dict(args, cmd="echo forbidden-by-policy")
else:
    sys.exit(0)
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": args}}))
"""

POST = r"""#!/usr/bin/env bash
jq -c '{hookSpecificOutput: {hookEventName: "PostToolUse",
        additionalContext: ("post hook saw " + .tool_name + " exit " + (.tool_response.structured.exit_code | tostring))}}'
"""


def test_hooks_block_rewrite_and_are_judged_by_policy_again(server, home: Path, workspace: Path):
    # Hook scripts must be readable inside the command sandbox: not under /tmp (private
    # there) nor in the data dir; the workspace is, for this test.
    hooks = workspace / ".hooks"
    hooks.mkdir()
    for name, text in [("block-rm.sh", BLOCK_RM), ("rewrite.py", REWRITE), ("post.sh", POST)]:
        (hooks / name).write_text(text)
        (hooks / name).chmod(0o755)
    config = home / "hooks.toml"
    config.write_text(
        f"""
[[policy.rule]]
name = "nothing forbidden"
tools = ["group:exec"]
when = {{ cmd = "forbidden" }}
decision = "deny"

[[hooks.pre_tool_use]]
matcher = "group:exec"
command = "{hooks / 'block-rm.sh'}"

[[hooks.pre_tool_use]]
matcher = "exec_command"
command = "python3 {hooks / 'rewrite.py'}"

[[hooks.post_tool_use]]
matcher = "exec_command"
command = "{hooks / 'post.sh'}"
"""
    )
    (workspace / "build").mkdir()
    params = server("--config", str(config))

    async def main():
        async with Client(params, mode="legacy") as client:
            blocked = await client.call_tool("exec_command", {"cmd": "rm -rf build"})
            assert blocked.is_error
            assert "rm -rf is not allowed" in blocked.content[0].text, blocked.content
            shell = await client.call_tool("shell", {"command": "rm -fr build"})
            assert shell.is_error and "rm -rf is not allowed" in shell.content[0].text

            rewritten = await client.call_tool("exec_command", {"cmd": "echo please-rewrite"})
            assert not rewritten.is_error, rewritten.content
            texts = [c.text for c in rewritten.content]
            assert "rewritten-by-hook" in texts[0], texts
            assert "post hook saw exec_command exit 0" in texts[-1], texts

            denied = await client.call_tool("exec_command", {"cmd": "echo make-forbidden"})
            assert denied.is_error
            assert "nothing forbidden" in denied.content[0].text, denied.content

    asyncio.run(asyncio.wait_for(main(), timeout=60))
    assert (workspace / "build").is_dir(), "a blocked command ran"


def test_an_http_hook_gets_the_event_and_its_answer_decides(server, home: Path, workspace: Path):
    import http.server
    import json
    import threading

    seen = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            event = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(event)
            if "deny-me" in event["tool_input"].get("cmd", ""):
                answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                          "permissionDecision": "deny", "permissionDecisionReason": "the platform says no"}}
            else:
                answer = {}
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    hook_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook_server.serve_forever, daemon=True).start()
    config = home / "http-hook.toml"
    config.write_text(
        f"""
[[hooks.pre_tool_use]]
matcher = "exec_command"
url = "http://127.0.0.1:{hook_server.server_address[1]}/hook"
"""
    )
    params = server("--config", str(config))

    async def main():
        async with Client(params, mode="legacy") as client:
            ok = await client.call_tool("exec_command", {"cmd": "echo fine"})
            assert not ok.is_error, ok.content
            denied = await client.call_tool("exec_command", {"cmd": "echo deny-me"})
            assert denied.is_error and "the platform says no" in denied.content[0].text

    try:
        asyncio.run(asyncio.wait_for(main(), timeout=60))
    finally:
        hook_server.shutdown()
    assert [e["tool_input"]["cmd"] for e in seen] == ["echo fine", "echo deny-me"]
    assert seen[0]["hook_event_name"] == "PreToolUse" and seen[0]["tool_name"] == "exec_command"


def test_a_hook_that_fails_is_described_for_people(server, home: Path, workspace: Path):
    # Failed before: "… failed (Code(7)): …", Rust's debug text (issue 53).
    hooks = workspace / ".hooks"
    hooks.mkdir()
    (hooks / "broken.sh").write_text("#!/bin/sh\necho cannot reach the linter >&2\nexit 7\n")
    (hooks / "broken.sh").chmod(0o755)
    config = home / "hooks.toml"
    config.write_text(f'[[hooks.pre_tool_use]]\nmatcher = "exec_command"\ncommand = "{hooks / "broken.sh"}"\n')
    params = server("--config", str(config))

    async def main():
        async with Client(params, mode="legacy") as client:
            blocked = await client.call_tool("exec_command", {"cmd": "echo never"})
            assert blocked.is_error
            said = blocked.content[0].text
            assert "failed (exit code 7): cannot reach the linter" in said, said
            assert "Code(" not in said, said

    asyncio.run(asyncio.wait_for(main(), timeout=60))
