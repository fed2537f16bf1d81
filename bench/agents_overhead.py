#!/usr/bin/env python3
"""What a call costs when a subagent makes it (`agent_run`) against the same call made
directly, over MCP stdio, side by side in one run.

A scripted OpenAI-compatible model on loopback (`[llm] base_url`) plays, per run, one turn
asking for N `calculator` calls and one turn answering. Three measurements, alternated
round by round so they share the machine's noise, each in a fresh `toolshed mcp`:

  direct     N `tools/call calculator`, one in flight
  nested     one `agent_run` whose model asks for the N calls (each goes through the
             pipeline as the subagent, recorded with its parent)
  one-call   one `agent_run` whose model asks for one call: the two model round trips
             and the run's own set-up, subtracted from `nested` (N + 1 calls) to leave
             the share of N calls

Per-call overhead of a nested call = (nested - one-call) / N - direct / N.
A JSON-RPC driver of its own (stdlib only), as bench/mcp_stdio.py.

Usage: agents_overhead.py --toolshed BIN [--calls 50] [--rounds 7]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Model(BaseHTTPRequestHandler):
    calls = 0

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        asked_tools = any(m["role"] == "tool" for m in body["messages"])
        message = {"role": "assistant", "content": "done" if asked_tools else None}
        if not asked_tools:
            message["tool_calls"] = [
                {"id": f"c{i}", "type": "function",
                 "function": {"name": "calculator", "arguments": json.dumps({"expression": f"{i}+1"})}}
                for i in range(Model.calls)
            ]
        data = json.dumps({"model": "bench", "choices": [{"message": message, "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Session:
    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next:
                assert "error" not in reply, reply
                return reply["result"]

    def call(self, name, arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        assert not result.get("isError"), result
        return result

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolshed", required=True)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    tmp = tempfile.mkdtemp()
    home, workspace = os.path.join(tmp, "home"), os.path.join(tmp, "ws")
    os.makedirs(home)
    os.makedirs(workspace)
    config = os.path.join(tmp, "config.toml")
    with open(config, "w") as f:
        f.write(f'[llm]\nbase_url = "http://127.0.0.1:{httpd.server_address[1]}/v1"\n'
                f'[orchestration]\nmax_steps = 100\n')
    env = {"TOOLSHED_HOME": home, "TOOLSHED_CONFIG": config, "PATH": os.environ.get("PATH", ""),
           "TOOLSHED_CURATED_DIR": os.path.join(tmp, "none")}
    argv = [args.toolshed, "--workspace", workspace, "mcp", "--catalog", "full"]
    n = args.calls
    times = {"direct": [], "nested": [], "empty": []}
    for _ in range(args.rounds):
        for kind in ("direct", "nested", "empty"):
            session = Session(argv, env)
            session.call("calculator", {"expression": "1+1"})  # warm
            Model.calls = n + 1 if kind == "nested" else 1
            started = time.perf_counter()
            if kind == "direct":
                for i in range(n):
                    session.call("calculator", {"expression": f"{i}+1"})
            else:
                result = session.call("agent_run", {"task": "add", "max_steps": 3})
                calls = len(result["structuredContent"]["calls"])
                assert calls == Model.calls, result
            times[kind].append(time.perf_counter() - started)
            session.close()
    load = os.getloadavg()[0]
    med = {k: statistics.median(v) for k, v in times.items()}
    direct = med["direct"] / n * 1e3
    nested = (med["nested"] - med["empty"]) / n * 1e3
    print(f"calls per run: {n}, rounds: {args.rounds}, load (1 min): {load:.2f}")
    print(f"direct call over MCP stdio, median per call:      {direct:.3f} ms")
    print(f"nested call from agent_run, median per call:      {nested:.3f} ms")
    print(f"an agent_run of one call (2 model turns):          {med['empty'] * 1e3:.2f} ms")
    print(f"nested / direct: {nested / direct:.2f}x; overhead per call: {nested - direct:+.3f} ms")


if __name__ == "__main__":
    main()
