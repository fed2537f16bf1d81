"""Events under load through REST and Server-Sent Events: a JavaScript plugin publishes
bursts of events from several REST callers at once while a client follows
`GET /api/v1/events`. Every event reaches the stream and the state store (so a stream
resumes across a restart), or the stream is told `events.missed`: none is lost silently.
(Each event used to be its own insert, made by the bridge from the host's notices; under
this load it fell behind and skipped about a fifth of them without a word.)"""

import json
import os
import sqlite3
import subprocess
import threading
import urllib.request

import pytest

MAIN = """
exports.activate = (context) => context.registerActions([
  { name: "burst", description: "Publish n events.", properties: { n: { type: "number", required: true } },
    run: (inputs, ctx) => { for (let i = 0; i < inputs.n; i++) ctx.events.publish("tick", { i }); return "ok"; } },
]);
"""

MANIFEST = {"id": "test.burst", "version": "1.0.0", "name": "Burst", "kind": "js", "capabilities": {"events": True}}

CALLERS, CALLS, PER_CALL = 4, 25, 40


def test_a_burst_of_plugin_events_reaches_the_stream_and_the_store_whole(toolshed_bin, tmp_path):
    home, workspace, plugin = tmp_path / "home", tmp_path / "workspace", tmp_path / "plugin"
    for d in (home, workspace, plugin):
        d.mkdir()
    (plugin / "plugin.json").write_text(json.dumps(MANIFEST))
    (plugin / "main.js").write_text(MAIN)
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(tmp_path / "none"), "PATH": os.environ["PATH"]}

    def toolshed(*args):
        done = subprocess.run([toolshed_bin, "--workspace", str(workspace), *args], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    toolshed("plugins", "install", str(plugin))
    toolshed("plugins", "grant", "test.burst")
    token = toolshed("token", "create", "--owner", "alice").strip()
    proc = subprocess.Popen([toolshed_bin, "--workspace", str(workspace), "serve", "--port", "0"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if line.startswith("listening on "):
                threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
                base = line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
                break
        else:
            pytest.fail("serve did not start")
        auth = {"Authorization": f"Bearer {token}"}

        ticks, missed = [], []
        stream = urllib.request.urlopen(urllib.request.Request(f"{base}/api/v1/events", headers=auth), timeout=60)
        total = CALLERS * CALLS * PER_CALL

        def follow():
            kind = None
            for raw in stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    kind = line[len("event: "):]
                elif line.startswith("data: ") and kind == "plugin.test.burst.tick":
                    ticks.append(json.loads(line[len("data: "):])["id"])
                    if len(ticks) == total:
                        return
                elif line.startswith("data: ") and kind == "events.missed":
                    missed.append(line)
                    return

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()

        def caller():
            for _ in range(CALLS):
                request = urllib.request.Request(f"{base}/api/v1/tools/burst_burst/execute", method="POST",
                                                 data=json.dumps({"arguments": {"n": PER_CALL}}).encode(),
                                                 headers={**auth, "Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=60) as response:
                    assert response.status == 200

        callers = [threading.Thread(target=caller) for _ in range(CALLERS)]
        for t in callers:
            t.start()
        for t in callers:
            t.join()
        follower.join(60)
        assert missed or len(ticks) == total, f"{len(ticks)} of {total} events arrived and no events.missed"
        assert len(set(ticks)) == len(ticks), "an event arrived twice"
        assert ticks == sorted(ticks), "events arrived out of order"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # Stopped: what was queued for the store is written.
    db = sqlite3.connect(home / "toolshed.db")
    stored = db.execute("SELECT count(*) FROM events WHERE kind = 'plugin.test.burst.tick'").fetchone()[0]
    db.close()
    assert missed or stored == total, f"{stored} of {total} events stored"
