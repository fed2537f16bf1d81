#!/usr/bin/env python3
"""A typical stdio session, for scripts/text-order/generate: start, list the tools, then
call each workspace tool a few times (the reads many times, also 16 at once), then a few
utilities.

Usage: workload.py SERVER_COMMAND...   (e.g. trace.py OUT -- toolshed --workspace W mcp)

Newline-delimited JSON-RPC, no SDK. Commands are not run: the tracer does not follow
forked processes. Exits non-zero if a call fails, so a broken trace is noticed.
"""

import json
import subprocess
import sys


def main():
    server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    next_id = 0

    def send(method, params=None, notify=False):
        nonlocal next_id
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            next_id += 1
            message["id"] = next_id
        server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()
        if notify:
            return None
        while True:
            reply = json.loads(server.stdout.readline())
            if reply.get("id") == next_id:
                if "error" in reply:
                    raise SystemExit(f"workload.py: {method} failed: {reply['error']}")
                return reply["result"]

    def call(name, **arguments):
        result = send("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise SystemExit(f"workload.py: {name} failed: {result['content']}")
        return result

    send(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "text-order", "version": "1"},
        },
    )
    send("notifications/initialized", notify=True)
    send("tools/list")
    call("workspace_mkdir", path="src/deep")
    body = "".join(f"line {i}: fn main() {{ println!(\"{i}\"); }}\n" for i in range(200))
    call("workspace_write", path="src/main.rs", content=body)
    call("workspace_write", path="notes.md", content="# Notes\n\nSome *text*.\n")
    for _ in range(300):
        call("workspace_read", path="src/main.rs")
        call("workspace_read", path="notes.md", offset=2, limit=1)
    pipelined(server, next_id, calls=10_000, in_flight=16)
    next_id += 10_000
    call("workspace_edit", path="src/main.rs", old_text="line 7:", new_text="line seven:")
    call(
        "workspace_patch",
        patch="*** Begin Patch\n*** Update File: notes.md\n@@\n-Some *text*.\n+Some text.\n*** End Patch\n",
    )
    for _ in range(20):
        call("workspace_list", path=".")
        call("workspace_tree", path=".")
        call("workspace_stat", path="src/main.rs")
        call("workspace_glob", patterns=["**/*.rs"])
        call("workspace_grep", pattern="println", path=".")
        call("workspace_find", query="main")
    call("workspace_move", **{"from": "notes.md", "to": "src/notes.md"})
    call("workspace_delete", path="src/notes.md")
    call("calculator", expression="2 * (3 + 4)")
    call("datetime", operation="now")
    call("json_ops", operation="parse", text='{"a": 1}')
    server.stdin.close()
    server.wait()


def pipelined(server, first_id, calls, in_flight):
    """Reads with several requests in flight, as agents that call tools in parallel send
    them: a server runs other code then (more threads, waits on locks, the audit log
    growing past its first pages), which belongs with the rest of a session's code."""
    sent = done = 0

    def send_one():
        nonlocal sent
        sent += 1
        request = {
            "jsonrpc": "2.0",
            "id": first_id + sent,
            "method": "tools/call",
            "params": {"name": "workspace_read", "arguments": {"path": "src/main.rs"}},
        }
        server.stdin.write(json.dumps(request).encode() + b"\n")

    while sent < min(in_flight, calls):
        send_one()
    server.stdin.flush()
    while done < calls:
        reply = json.loads(server.stdout.readline())
        if "id" not in reply:
            continue
        if "error" in reply or reply["result"].get("isError"):
            raise SystemExit(f"workload.py: a pipelined read failed: {reply}")
        done += 1
        if sent < calls:
            send_one()
            server.stdin.flush()


if __name__ == "__main__":
    main()
