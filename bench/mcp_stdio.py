#!/usr/bin/env python3
"""toolshed mcp against @modelcontextprotocol/server-filesystem over stdio, side by side.

A JSON-RPC driver of its own (Python stdlib only, no MCP SDK in the loop): it spawns each
server, writes newline-delimited JSON-RPC to its stdin and reads replies from its stdout.

  cold start   spawn -> `initialize` response received, median of SPAWNS spawns
  sequential   `tools/call` reading a 4 KiB file, one request in flight
  pipelined    the same call with INFLIGHT requests in flight (a new id sent per reply)
  peak RSS     VmHWM from /proc/PID/status after the pipelined session's calls,
               read before stdin is closed
  CPU per call the server's user+system time (/proc/PID/stat, in clock ticks) over the
               timed calls of all rounds, divided by the calls

bench/mcp_stdio.sh runs the Rust driver (bench/mcp-driver) by default, which does the same
at about a tenth of this driver's CPU per call; DRIVER=python selects this one.

Servers are measured alternately, round by round, so they share the machine's noise.
Each throughput round is a fresh process: spawn, initialize, WARMUP untimed calls, then
the timed calls. Every reply is parsed and checked (right id, no error, not isError, the
file's text in the content), so the client's own cost is the same for both sides.

Usage: mcp_stdio.py --toolshed BIN --filesystem DIST_INDEX_JS [options]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROTOCOL = "2025-11-25"
MARKER = "toolshed-bench-line"


class Server:
    """One running server process and a JSON-RPC conversation with it."""

    def __init__(self, name, argv, env, tool_name, tool_args):
        self.name = name
        self.argv = argv
        self.env = env
        self.tool_name = tool_name
        self.tool_args = tool_args
        self.proc = None
        self.next_id = 0
        self.init_result = None

    def spawn(self):
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self.env,
        )
        self.reader = self.proc.stdout
        self.next_id = 0

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg, separators=(",", ":")) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def read_reply(self):
        """The next response (a message with an id and no method); notifications skipped."""
        while True:
            line = self.reader.readline()
            if not line:
                raise RuntimeError(f"{self.name}: stdout closed (exit {self.proc.poll()})")
            msg = json.loads(line)  # every stdout line must be JSON-RPC
            if "method" in msg:
                if "id" in msg:  # a request from the server: we offer nothing
                    self.send({"jsonrpc": "2.0", "id": msg["id"],
                               "error": {"code": -32601, "message": "not supported by the bench"}})
                continue
            return msg

    def initialize(self):
        self.request("initialize", {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "toolshed-bench", "version": "0"},
        })
        reply = self.read_reply()
        if "result" not in reply:
            raise RuntimeError(f"{self.name}: initialize failed: {reply}")
        self.init_result = reply["result"]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call_params(self):
        return {"name": self.tool_name, "arguments": self.tool_args}

    def check(self, reply, want_id):
        if reply.get("id") != want_id:
            raise RuntimeError(f"{self.name}: reply id {reply.get('id')} != {want_id}")
        result = reply.get("result")
        if result is None or result.get("isError"):
            raise RuntimeError(f"{self.name}: call failed: {json.dumps(reply)[:400]}")
        if not any(MARKER in c.get("text", "") for c in result.get("content", [])):
            raise RuntimeError(f"{self.name}: file text missing from {json.dumps(reply)[:400]}")

    def sequential(self, n):
        for _ in range(n):
            want = self.request("tools/call", self.call_params())
            self.check(self.read_reply(), want)

    def pipelined(self, n, inflight):
        """n calls with `inflight` outstanding; replies may come back in any order."""
        params = self.call_params()
        pending = set()
        sent = done = 0
        while sent < min(inflight, n):
            pending.add(self.request("tools/call", params))
            sent += 1
        while done < n:
            reply = self.read_reply()
            rid = reply.get("id")
            if rid not in pending:
                raise RuntimeError(f"{self.name}: unexpected reply id {rid}")
            pending.discard(rid)
            self.check(reply, rid)
            done += 1
            if sent < n:
                pending.add(self.request("tools/call", params))
                sent += 1

    def cpu_ticks(self):
        """utime + stime of the server, every thread, in clock ticks."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def vm_hwm_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmHWM")

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def cold_start_ms(server):
    t0 = time.perf_counter()
    server.spawn()
    server.initialize()
    ms = (time.perf_counter() - t0) * 1000
    server.close()
    return ms


def session(server, warmup):
    server.spawn()
    server.initialize()
    server.sequential(warmup)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--toolshed", required=True, help="path of the toolshed binary")
    ap.add_argument("--filesystem", required=True,
                    help="path of @modelcontextprotocol/server-filesystem's dist/index.js")
    ap.add_argument("--node", default="node")
    ap.add_argument("--spawns", type=int, default=15)
    ap.add_argument("--sequential", type=int, default=2000)
    ap.add_argument("--pipelined", type=int, default=10000)
    ap.add_argument("--inflight", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=100)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="toolshed-mcp-bench-")
    ws = os.path.join(work, "ws")
    os.makedirs(ws)
    line = f"{MARKER} " + "x" * 43 + "\n"  # 64 bytes
    text = line * 64
    assert len(text.encode()) == 4096
    fpath = os.path.join(ws, "f.txt")
    with open(fpath, "w") as f:
        f.write(text)
    env = dict(os.environ, TOOLSHED_HOME=os.path.join(work, "home"))

    toolshed = Server("toolshed", [args.toolshed, "--workspace", ws, "mcp"], env,
                      "workspace_read", {"path": "f.txt"})
    fs_argv = [args.node, args.filesystem, ws]
    filesystem = Server("server-filesystem", fs_argv, env, None, {"path": fpath})

    # Pick server-filesystem's text-read tool from its own tool list.
    filesystem.tool_name = "list"
    filesystem.spawn()
    filesystem.initialize()
    filesystem.request("tools/list", {})
    names = [t["name"] for t in filesystem.read_reply()["result"]["tools"]]
    filesystem.close()
    filesystem.tool_name = next((n for n in ("read_text_file", "read_file") if n in names), None)
    if filesystem.tool_name is None:
        sys.exit(f"server-filesystem offers no text-read tool: {names}")
    servers = [toolshed, filesystem]

    # One untimed spawn each: page cache, and toolshed's first-run data dir.
    for s in servers:
        cold_start_ms(s)
    versions = {s.name: (s.init_result.get("protocolVersion"),
                         s.init_result.get("serverInfo", {}).get("version")) for s in servers}

    cold = {s.name: [] for s in servers}
    for _ in range(args.spawns):
        for s in servers:
            cold[s.name].append(cold_start_ms(s))

    seq = {s.name: [] for s in servers}
    pipe = {s.name: [] for s in servers}
    rss = {s.name: [] for s in servers}
    seq_ticks = {s.name: 0 for s in servers}
    pipe_ticks = {s.name: 0 for s in servers}
    for _ in range(args.rounds):
        for s in servers:
            session(s, args.warmup)
            c0 = s.cpu_ticks()
            t0 = time.perf_counter()
            s.sequential(args.sequential)
            seq[s.name].append(args.sequential / (time.perf_counter() - t0))
            seq_ticks[s.name] += s.cpu_ticks() - c0
            s.close()
        for s in servers:
            session(s, args.warmup)
            c0 = s.cpu_ticks()
            t0 = time.perf_counter()
            s.pipelined(args.pipelined, args.inflight)
            pipe[s.name].append(args.pipelined / (time.perf_counter() - t0))
            pipe_ticks[s.name] += s.cpu_ticks() - c0
            rss[s.name].append(s.vm_hwm_kib() / 1024)
            s.close()

    med = statistics.median
    a, b = toolshed.name, filesystem.name
    print(f"4 KiB file; {args.spawns} spawns; {args.rounds} rounds of {args.sequential} sequential "
          f"and {args.pipelined} pipelined calls ({args.inflight} in flight), {args.warmup} warm-up "
          f"calls each; server-filesystem tool `{filesystem.tool_name}`; negotiated protocol / "
          f"server version: toolshed {versions[a][0]} / {versions[a][1]}, "
          f"server-filesystem {versions[b][0]} / {versions[b][1]}; driver: bench/mcp_stdio.py (Python)")
    print()
    print("| metric | toolshed | server-filesystem | toolshed / server-filesystem |")
    print("|---|---|---|---|")
    rows = [
        ("cold start to `initialize` reply (ms, median)", cold, "{:.1f}"),
        ("sequential `tools/call` (calls/s, median)", seq, "{:,.0f}"),
        (f"{args.inflight} in flight `tools/call` (calls/s, median)", pipe, "{:,.0f}"),
        (f"peak RSS after {args.warmup + args.pipelined:,} calls (MB, VmHWM, median)", rss, "{:.1f}"),
    ]
    for label, data, fmt in rows:
        x, y = med(data[a]), med(data[b])
        print(f"| {label} | {fmt.format(x)} | {fmt.format(y)} | {x / y:.2f}× |")
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    for label, ticks, calls in [
        ("server CPU per call, sequential (µs, user+system, all rounds)", seq_ticks, args.sequential),
        (f"server CPU per call, {args.inflight} in flight (µs, user+system, all rounds)",
         pipe_ticks, args.pipelined),
    ]:
        x, y = (ticks[n] * tick_us / (calls * args.rounds) for n in (a, b))
        print(f"| {label} | {x:,.0f} | {y:,.0f} | {x / y:.2f}× |")

    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
