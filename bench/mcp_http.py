#!/usr/bin/env python3
"""MCP over streamable HTTP and REST, driven by wrk, side by side in one run.

For each target it starts the server, opens an MCP session (initialize, then
notifications/initialized) with the standard library, checks one reply of each kind by
hand, then lets wrk (a C load tool) send the same request over and over:

  mcp 1      one connection, one request at a time: calls/s and latency percentiles
  mcp 64     64 connections (2 wrk threads)
  rest 1/64  the same tool through toolshed's REST door (toolshed only)

Targets: toolshed (`toolshed serve`, release build, a private TOOLSHED_HOME, tool
`workspace_read` on a 4 KiB file) and @modelcontextprotocol/server-everything
(`node dist/index.js streamableHttp`, tool `echo`: no file work, so it is the cheapest
call that server has). Every wrk reply is checked in Lua (status 200, no JSON-RPC error,
not isError, the expected text present); the error count is printed and must be 0.

Absolute figures move with the machine's load (printed with each run): compare ratios
from one run.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MARKER = "toolshed-bench-line"
PROTOCOL = "2025-06-18"

LUA = r"""
counter = 0
errors = 0
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
function init(args)
  prefix = tostring(math.random(1, 1000000000))
end
function request()
  counter = counter + 1
  local id = '"' .. prefix .. '-' .. counter .. '"'
  return wrk.format(nil, nil, nil, (string.gsub(BODY, '"ID"', id)))
end
function response(status, headers, body)
  if status ~= 200 or string.find(body, '"isError":true', 1, true)
     or string.find(body, '"error":', 1, true) or not string.find(body, WANT, 1, true) then
    errors = errors + 1
    if errors == 1 then io.stderr:write("first bad reply: " .. status .. " " .. string.sub(body, 1, 300) .. "\n") end
  end
end
function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + t:get("errors") end
  io.write(string.format("RESULT %d %.1f %.1f %.1f %.1f %d\n", summary.requests,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), summary.duration, bad))
end
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 20) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the server exited early with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on port {port} after {timeout} s")


def post(port, path, headers, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", path, body=json.dumps(body), headers=headers)
    resp = conn.getresponse()
    data = resp.read().decode()
    conn.close()
    return resp.status, dict((k.lower(), v) for k, v in resp.getheaders()), data


def messages(content_type, data):
    """The JSON-RPC messages of a reply, JSON or SSE."""
    if content_type.startswith("application/json"):
        return [json.loads(data)]
    out = []
    for event in data.split("\n\n"):
        lines = [l[5:].lstrip() for l in event.splitlines() if l.startswith("data:")]
        if lines and "".join(lines).strip():
            out.append(json.loads("\n".join(lines)))
    return out


def open_session(port, auth):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **auth}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
    status, got, data = post(port, "/mcp", headers, init)
    assert status == 200, (status, data)
    session = got.get("mcp-session-id")
    headers = {**headers, "MCP-Protocol-Version": PROTOCOL}
    if session:
        headers["Mcp-Session-Id"] = session
    status, _, _ = post(port, "/mcp", headers, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert status in (200, 202), status
    return headers


def wrk(wrk_bin, url, headers, body, want, connections, seconds, work):
    script = work / f"req-{connections}.lua"
    script.write_text(
        f"BODY = {json.dumps(json.dumps(body))}\n"
        f"WANT = {json.dumps(want)}\n"
        + "wrk.method = 'POST'\n"
        + "".join(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}\n" for k, v in headers.items())
        + LUA
    )
    threads = 1 if connections == 1 else 2
    out = subprocess.run([wrk_bin, "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s",
                          "-s", str(script), url], capture_output=True, text=True, timeout=seconds + 60)
    line = next((l for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        sys.exit(f"wrk printed no result:\n{out.stdout}\n{out.stderr}")
    if out.stderr.strip():
        print(out.stderr.strip(), file=sys.stderr)
    n, p50, p90, p99, duration_us, errors = line.split()[1:]
    return {"rps": int(n) / (float(duration_us) / 1e6), "p50": float(p50) / 1000, "p90": float(p90) / 1000,
            "p99": float(p99) / 1000, "errors": int(errors), "requests": int(n)}


def loadavg():
    return open("/proc/loadavg").read().split()[0]


def check_reply(status, got, data, want):
    assert status == 200, (status, data)
    msgs = messages(got.get("content-type", ""), data)
    final = [m for m in msgs if "id" in m]
    assert final and "result" in final[-1], data
    assert want in json.dumps(final[-1]), data
    return got.get("content-type", "").split(";")[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolshed", required=True)
    ap.add_argument("--everything", help="server-everything's dist/index.js")
    ap.add_argument("--node", default="node")
    ap.add_argument("--wrk", default="wrk")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toolshed-http-bench-"))
    procs = []
    try:
        ws = work / "ws"
        ws.mkdir()
        (ws / "f.txt").write_text((f"{MARKER} " + "x" * 43 + "\n") * 64)
        home = work / "home"
        port = free_port()
        env = {**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_LOG__LEVEL": "warn"}
        token = subprocess.run([args.toolshed, "token"], env=env, capture_output=True, text=True, check=True).stdout.strip()
        ts = subprocess.Popen([args.toolshed, "--workspace", str(ws), "serve", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(ts)
        wait_port(port, ts)
        auth = {"Authorization": f"Bearer {token}"}
        mcp_headers = open_session(port, auth)
        call = {"jsonrpc": "2.0", "id": "ID", "method": "tools/call",
                "params": {"name": "workspace_read", "arguments": {"path": "f.txt"}}}
        kind = check_reply(*post(port, "/mcp", mcp_headers, {**call, "id": 1}), MARKER)
        rest_headers = {"Content-Type": "application/json", **auth}
        rest_body = {"arguments": {"path": "f.txt"}}
        status, _, data = post(port, "/api/v1/tools/workspace_read/execute", rest_headers, rest_body)
        assert status == 200 and MARKER in data, (status, data[:300])
        print(f"toolshed /mcp replies to tools/call as {kind}")

        targets = [
            ("toolshed mcp", f"http://127.0.0.1:{port}/mcp", mcp_headers, call, MARKER),
            ("toolshed rest", f"http://127.0.0.1:{port}/api/v1/tools/workspace_read/execute", rest_headers,
             rest_body, MARKER),
        ]
        if args.everything:
            eport = free_port()
            ev = subprocess.Popen([args.node, args.everything, "streamableHttp"], env={**os.environ, "PORT": str(eport)},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(ev)
            wait_port(eport, ev)
            ev_headers = open_session(eport, {})
            echo = {"jsonrpc": "2.0", "id": "ID", "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": MARKER}}}
            check_reply(*post(eport, "/mcp", ev_headers, {**echo, "id": 1}), MARKER)
            targets.append(("server-everything mcp", f"http://127.0.0.1:{eport}/mcp", ev_headers, echo, MARKER))

        results = {}
        for round_ in range(args.rounds):
            for connections in (1, 64):
                for name, url, headers, body, want in targets:
                    r = wrk(args.wrk, url, headers, body, want, connections, args.seconds, work)
                    r["load"] = loadavg()
                    results.setdefault((name, connections), []).append(r)
                    print(f"round {round_ + 1} {name} c={connections}: {r['rps']:,.0f} req/s, p50 {r['p50']:.2f} ms, "
                          f"p99 {r['p99']:.2f} ms, errors {r['errors']}, load {r['load']}", flush=True)

        def med(xs):
            xs = sorted(xs)
            return xs[len(xs) // 2]

        print()
        print(f"wrk {args.seconds} s per run, {args.rounds} rounds alternated; medians; load average at the end "
              f"{loadavg()}")
        print()
        print("| target | connections | req/s | p50 (ms) | p99 (ms) | errors |")
        print("|---|---|---|---|---|---|")
        for (name, c), rs in results.items():
            print(f"| {name} | {c} | {med([r['rps'] for r in rs]):,.0f} | {med([r['p50'] for r in rs]):.2f} | "
                  f"{med([r['p99'] for r in rs]):.2f} | {sum(r['errors'] for r in rs)} |")
        print()
        for c in (1, 64):
            m = [r["rps"] for r in results[("toolshed mcp", c)]]
            rest = [r["rps"] for r in results[("toolshed rest", c)]]
            ratios = [a / b for a, b in zip(m, rest)]
            print(f"toolshed mcp / rest at {c} connection(s), per round: "
                  + ", ".join(f"{x:.2f}" for x in ratios) + f" (median {med(ratios):.2f})")
        if any(r["errors"] for rs in results.values() for r in rs):
            sys.exit("some replies were errors")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
