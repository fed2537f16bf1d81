"""Lifecycle events pushed, not polled: a background process exiting is announced as
`process.exited` on the SSE stream of its owner (and only its owner), kept across a
restart so `Last-Event-ID` resumes, and sent to an MCP client that subscribed with
`logging/setLevel` as `notifications/message`."""

import asyncio
import json
import subprocess
import threading
import urllib.request

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def run(coro, timeout=90):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def token(toolshed_bin, home, owner):
    return subprocess.run(
        [toolshed_bin, "token", "create", "--owner", owner],
        env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()


class Stream:
    """Follows `GET /api/v1/events` in a thread, collecting every event."""

    def __init__(self, base, token, last_event_id=None):
        headers = {"Authorization": f"Bearer {token}"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.request = urllib.request.Request(f"{base}/api/v1/events", headers=headers)
        self.events = []
        self.opened = threading.Event()
        self.thread = threading.Thread(target=self.follow, daemon=True)
        self.thread.start()
        assert self.opened.wait(10), "the event stream did not open"

    def follow(self):
        data = []
        try:
            with urllib.request.urlopen(self.request, timeout=60) as response:
                self.opened.set()
                for raw in response:
                    line = raw.decode().rstrip("\n")
                    if line.startswith("data:"):
                        data.append(line[5:].strip())
                    elif line == "" and data:
                        self.events.append(json.loads("\n".join(data)))
                        data = []
        except Exception:
            self.opened.set()

    def wait_for(self, predicate, timeout=20):
        for _ in range(int(timeout * 20)):
            found = [e for e in self.events if predicate(e)]
            if found:
                return found[0]
            threading.Event().wait(0.05)
        raise AssertionError(f"no such event; got {self.events}")


def exited(process_id):
    return lambda e: e.get("type") == "process.exited" and e["data"]["id"] == process_id


def test_a_process_exit_reaches_its_owners_stream_and_mcp_log_across_a_restart(serve, toolshed_bin, home):
    url, _admin = serve()
    base = url.rsplit("/mcp", 1)[0]
    alice, bob = token(toolshed_bin, home, "alice"), token(toolshed_bin, home, "bob")
    alice_stream, bob_stream = Stream(base, alice), Stream(base, bob)
    messages = []

    async def on_log(params):
        messages.append(params)

    async def main():
        http_a = create_mcp_http_client(headers={"Authorization": f"Bearer {alice}"})
        http_b = create_mcp_http_client(headers={"Authorization": f"Bearer {bob}"})
        client_a = Client(streamable_http_client(url, http_client=http_a), mode="legacy", logging_callback=on_log)
        client_b = Client(streamable_http_client(url, http_client=http_b), mode="legacy")
        async with http_a, client_a, http_b, client_b:
            await client_a.set_logging_level("info")
            started = await client_a.call_tool("process_exec", {"cmd": "sleep 0.6; exit 3", "name": "short"})
            assert not started.is_error, started.content
            mine = started.structured_content["id"]
            theirs = await client_b.call_tool("process_exec", {"cmd": "sleep 1.2"})
            assert not theirs.is_error, theirs.content
            for _ in range(200):
                if any(m.data.get("id") == mine for m in messages):
                    break
                await asyncio.sleep(0.05)
            return mine, theirs.structured_content["id"]

    mine, theirs = run(main())

    # The MCP client that asked for log messages got the exit, as a warning (exit 3).
    logged = [m for m in messages if m.data.get("type") == "process.exited"]
    assert [m.data["id"] for m in logged] == [mine], messages
    assert logged[0].level == "warning" and logged[0].logger == "toolshed"
    assert logged[0].data["exit_code"] == 3 and logged[0].data["owner"] == "alice"

    # Alice's stream has her process's exit; Bob's has his own, never hers.
    event = alice_stream.wait_for(exited(mine))
    assert event["owner"] == "alice" and event["data"]["exit_code"] == 3 and event["data"]["name"] == "short"
    bob_stream.wait_for(exited(theirs))
    assert not [e for e in bob_stream.events if e.get("type") == "process.exited" and e["data"]["id"] == mine]
    assert not [e for e in alice_stream.events if e.get("type") == "process.exited" and e["data"]["id"] == theirs]

    # A restart: resuming from just before the exit replays it, nothing missed.
    serve.procs[-1].terminate()
    serve.procs[-1].wait(timeout=20)
    url, _admin = serve()
    base = url.rsplit("/mcp", 1)[0]
    resumed = Stream(base, alice, last_event_id=event["id"] - 1)
    replayed = resumed.wait_for(exited(mine))
    assert replayed["id"] == event["id"], (replayed, event)
    assert resumed.events[0]["type"] != "events.missed", resumed.events
    assert not [e for e in resumed.events if e.get("type") == "process.exited" and e["data"]["id"] == theirs]
    # ...and resuming from the exit itself replays nothing of it.
    after = Stream(base, alice, last_event_id=event["id"])
    threading.Event().wait(0.5)
    assert not [e for e in after.events if e.get("id") == event["id"]], after.events
    assert not [e for e in after.events if e.get("type") == "events.missed"], after.events
