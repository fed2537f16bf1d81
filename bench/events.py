#!/usr/bin/env python3
"""Events under load through REST and Server-Sent Events: how many events per second a
`toolshed serve` records (each one is kept in the state store, so a stream resumes across a
restart) and delivers to a subscribed stream.

A JavaScript plugin written here has one action, `burst`, that publishes N events with
`ctx.events.publish`. C clients call it over REST (`POST /api/v1/tools/events_burst/execute`,
keep-alive connections, the agent token) as fast as they can for S seconds while one SSE
client follows `GET /api/v1/events` and counts what arrives. Reported per round: calls/s,
events/s published (calls × N), events/s received on the stream, the median call latency,
and the events stored (`SELECT count(*) FROM events`, capped at the store's 10,000). Then
the medians of the rounds. With `--versus BIN` the same against a second build, rounds in
turns (A B A B …), ratios pair by pair.

Usage: bench/events.py --toolshed target/release/toolshed [--versus OTHER] [--rounds 5]
       [--seconds 5] [--clients 4] [--per-call 20]
"""

import argparse
import http.client
import json
import os
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

MAIN = """
exports.activate = (context) => context.registerActions([
  { name: "burst", description: "Publish n events.", properties: { n: { type: "number", required: true } },
    run: (inputs, ctx) => { for (let i = 0; i < inputs.n; i++) ctx.events.publish("tick", { i }); return "ok"; } },
]);
"""

MANIFEST = {
    "id": "bench.events",
    "version": "1.0.0",
    "name": "Events",
    "kind": "js",
    "capabilities": {"events": True},
}


class Server:
    def __init__(self, binary, root):
        self.home, self.workspace = root / "home", root / "workspace"
        self.home.mkdir()
        self.workspace.mkdir()
        self.env = {"TOOLSHED_HOME": str(self.home), "TOOLSHED_CURATED_DIR": str(root / "none"),
                    "PATH": os.environ["PATH"]}
        self.binary = binary
        plugin = root / "plugin"
        plugin.mkdir()
        (plugin / "plugin.json").write_text(json.dumps(MANIFEST))
        (plugin / "main.js").write_text(MAIN)
        self.run("plugins", "install", str(plugin))
        self.run("plugins", "grant", "bench.events")
        self.token = self.run("token", "create", "--owner", "bench").strip()
        self.proc = subprocess.Popen(
            [binary, "--workspace", str(self.workspace), "serve", "--port", "0"], env=self.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            if line.startswith("listening on "):
                threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
                base = line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
                break
        else:
            raise SystemExit("serve did not start")
        host_port = base.split("//", 1)[1].split("/", 1)[0]
        self.host, self.port = host_port.rsplit(":", 1)

    def run(self, *args):
        done = subprocess.run([self.binary, "--workspace", str(self.workspace), *args], env=self.env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def connection(self):
        return http.client.HTTPConnection(self.host, int(self.port), timeout=60)

    def stored(self):
        db = sqlite3.connect(self.home / "toolshed.db")
        try:
            return db.execute("SELECT count(*) FROM events").fetchone()[0]
        finally:
            db.close()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def round_on(server, seconds, clients, per_call):
    received = [0]
    missed = [0]
    stop = threading.Event()
    ready = threading.Event()

    def follow():
        conn = server.connection()
        conn.request("GET", "/api/v1/events", headers={"Authorization": f"Bearer {server.token}"})
        response = conn.getresponse()
        ready.set()
        while not stop.is_set():
            line = response.fp.readline()
            if not line:
                return
            if line.startswith(b"event: plugin.bench.events.tick"):
                received[0] += 1
            elif line.startswith(b"event: events.missed"):
                missed[0] += 1

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    ready.wait(10)
    time.sleep(0.2)
    body = json.dumps({"arguments": {"n": per_call}})
    latencies = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def caller():
        conn = server.connection()
        mine = []
        while time.monotonic() < deadline:
            began = time.monotonic()
            conn.request("POST", "/api/v1/tools/events_burst/execute", body=body,
                         headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"})
            response = conn.getresponse()
            payload = response.read()
            assert response.status == 200, payload
            mine.append(time.monotonic() - began)
        with lock:
            latencies.extend(mine)

    began = time.monotonic()
    threads = [threading.Thread(target=caller) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    calls = len(latencies)
    time.sleep(0.5)  # what is still on its way to the stream
    stop.set()
    return {
        "calls/s": calls / elapsed,
        "events/s published": calls * per_call / elapsed,
        "events/s received": received[0] / elapsed,
        "received of published": received[0] / max(1, calls * per_call),
        "call p50 (ms)": statistics.median(latencies) * 1000,
        "events.missed on the stream": missed[0],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolshed", required=True)
    parser.add_argument("--versus")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--per-call", type=int, default=20)
    opts = parser.parse_args()
    builds = [("A", opts.toolshed)] + ([("B", opts.versus)] if opts.versus else [])
    print(f"load average: {os.getloadavg()}; {opts.clients} clients, {opts.per_call} events per call, "
          f"{opts.seconds} s rounds")
    with tempfile.TemporaryDirectory() as root:
        servers = {}
        for name, binary in builds:
            (Path(root) / name).mkdir()
            servers[name] = Server(os.path.abspath(binary), Path(root) / name)
        results = {name: [] for name, _ in builds}
        try:
            for r in range(opts.rounds):
                for name, _ in builds:
                    figures = round_on(servers[name], opts.seconds, opts.clients, opts.per_call)
                    results[name].append(figures)
                    print(f"round {r + 1} {name}: " + ", ".join(f"{k} {v:,.2f}" for k, v in figures.items()))
            for name, _ in builds:
                print(f"{name} stored events at the end: {servers[name].stored()}")
        finally:
            for server in servers.values():
                server.stop()
    keys = list(results["A"][0])
    print()
    print("| metric (median) | " + " | ".join(name for name, _ in builds) + (" | A/B (paired median) |" if opts.versus else " |"))
    print("|---" * (len(builds) + 1 + bool(opts.versus)) + "|")
    for key in keys:
        row = [statistics.median(r[key] for r in results[name]) for name, _ in builds]
        cells = " | ".join(f"{v:,.2f}" for v in row)
        if opts.versus:
            pairs = [a[key] / b[key] for a, b in zip(results["A"], results["B"]) if b[key]]
            cells += f" | {statistics.median(pairs):.2f}×" if pairs else " | —"
        print(f"| {key} | {cells} |")


if __name__ == "__main__":
    main()
