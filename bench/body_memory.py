#!/usr/bin/env python3
"""Peak memory per request size: what one `json_ops` request of 1 KiB ... 12 MiB costs
toolshed over REST, MCP over HTTP and stdio, and what 32 concurrent requests cost (4 MiB
bodies, and documents of about 1 MiB that json_ops takes).

Each figure comes from a fresh process: its peak RSS (VmHWM) after the request(s) minus
its peak before, in MiB, and that increase over the request's size ("× body"; for the
concurrent rows, over the sum of the bodies). Two shapes of body, each over json_ops'
1 MiB input limit or under it depending on the size:

- `text`: the document as a JSON string (`operation: parse, text: "..."`) — a request
  whose size is in strings (file contents, patches, command input look the same);
- `document`: the document as a JSON value (`operation: query, document: {...}`) — held
  as a tree of objects, which costs many times its text.

REST and MCP-over-HTTP bodies stop at the server's 4 MiB limit (the 4 MiB row is 4 MiB
less 1 KiB); stdio lines go up to 16 MiB. Binaries run alternately, `--rounds` times;
medians are printed. `--only DOOR` runs the rows whose door contains DOOR.

Usage: bench/body_memory.py [--rounds 3] [--concurrent 32] [--only DOOR] BIN [BIN...]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

KIB = 1024
MIB = 1024 * 1024
REST_SIZES = [KIB, 64 * KIB, MIB, 4 * MIB - KIB]
STDIO_SIZES = [MIB, 4 * MIB, 8 * MIB, 12 * MIB]


def peak_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def arguments(shape, size):
    """json_ops arguments whose request body is about `size` bytes."""
    item_len = len(json.dumps({"id": 100000, "name": "item-100000", "tags": ["alpha", "beta"], "ok": True})) + 1
    count = max(1, (size - 200) // (item_len + (4 if shape == "text" else 0)))
    items = [{"id": i, "name": f"item-{i}", "tags": ["alpha", "beta"], "ok": True} for i in range(count)]
    if shape == "text":
        return {"operation": "parse", "text": json.dumps({"items": items})}
    return {"operation": "query", "document": {"items": items}, "path": "$.items[0].id"}


def fit(shape, size, wrap):
    """Arguments whose wrapped body is at most `size` bytes (and close to it)."""
    target = size
    while True:
        args = arguments(shape, target)
        body = wrap(args)
        if len(body) <= size or target < 256:
            return body
        target -= max(64, (len(body) - size) + 16)


def start_serve(binary, home, ws):
    env = {**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "none")}
    token = subprocess.run([binary, "token"], env=env, capture_output=True, text=True, check=True).stdout.strip()
    proc = subprocess.Popen([binary, "--workspace", str(ws), "serve", "--port", "0"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if line.startswith("listening on "):
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, token, line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
    raise SystemExit("toolshed serve did not start")


def post(base, token, body):
    req = urllib.request.Request(f"{base}/api/v1/tools/json_ops/execute", data=body, method="POST",
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as response:
            return response.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code


def rest(binary, shape, size, concurrent=1):
    body = fit(shape, size, lambda a: json.dumps({"arguments": a}).encode())
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        ws.mkdir()
        proc, token, base = start_serve(binary, home, ws)
        try:
            post(base, token, b'{"arguments":{"operation":"parse","text":"{}"}}')  # warm
            before = peak_kib(proc.pid)
            with ThreadPoolExecutor(concurrent) as pool:
                statuses = list(pool.map(lambda _: post(base, token, body), range(concurrent)))
            after = peak_kib(proc.pid)
        finally:
            proc.terminate()
            proc.wait()
    assert all(s in (200, 400) for s in statuses), statuses
    return len(body), (after - before) / KIB


def mcp_http(binary, shape, size, concurrent=1):
    def wrap(a):
        message = {"jsonrpc": "2.0", "id": "call-0", "method": "tools/call", "params": {"name": "json_ops", "arguments": a}}
        return json.dumps(message).encode()

    body = fit(shape, size, wrap)
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        ws.mkdir()
        proc, token, base = start_serve(binary, home, ws)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}

        def send(data, session=None):
            extra = {"mcp-session-id": session} if session else {}
            req = urllib.request.Request(f"{base}/mcp", data=data, method="POST", headers={**headers, **extra})
            with urllib.request.urlopen(req, timeout=300) as response:
                return response.headers.get("mcp-session-id"), response.read()

        try:
            session, _ = send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"}}}).encode())
            send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', session)
            send(wrap({"operation": "parse", "text": "{}"}), session)  # warm
            before = peak_kib(proc.pid)
            # Each request its own id: replies on a session are routed by id.
            marker = b'"id": "call-0",'
            assert body.count(marker) == 1
            bodies = [body.replace(marker, f'"id": "call-{i}",'.encode()) for i in range(concurrent)]
            with ThreadPoolExecutor(concurrent) as pool:
                replies = list(pool.map(lambda b: send(b, session)[1], bodies))
            after = peak_kib(proc.pid)
        finally:
            proc.terminate()
            proc.wait()
    assert all(b'"jsonrpc"' in reply for reply in replies), replies[0][:200]
    return len(body), (after - before) / KIB


def stdio(binary, shape, size):
    def wrap(a):
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "json_ops", "arguments": a}}
        return json.dumps(message).encode()

    line = fit(shape, size, wrap)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TOOLSHED_HOME": tmp + "/home", "TOOLSHED_CURATED_DIR": tmp + "/none"}
        proc = subprocess.Popen([binary, "--workspace", tmp, "mcp"], env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

        def send(message):
            proc.stdin.write(message + b"\n")
            proc.stdin.flush()
            return proc.stdout.readline()

        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}).encode())
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        send(wrap({"operation": "parse", "text": "{}"}))  # warm
        time.sleep(0.2)
        before = peak_kib(proc.pid)
        reply = send(line)
        after = peak_kib(proc.pid)
        proc.stdin.close()
        proc.wait(timeout=30)
    assert reply.startswith(b'{"jsonrpc"'), reply[:200]
    return len(line), (after - before) / KIB


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=32)
    parser.add_argument("--only", default="", help="run only the doors whose name contains this")
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    cases = [("REST", shape, size) for shape in ("text", "document") for size in REST_SIZES]
    cases += [("MCP HTTP", shape, size) for shape in ("text", "document") for size in REST_SIZES]
    cases += [("stdio", shape, size) for shape in ("text", "document") for size in STDIO_SIZES]
    cases += [(f"REST ×{args.concurrent}", shape, 4 * MIB - KIB) for shape in ("text", "document")]
    # Documents json_ops takes (within its 1 MiB limit): their trees are what is held.
    cases += [(f"{door} ×{args.concurrent}", "document", MIB) for door in ("REST", "MCP HTTP")]
    cases = [case for case in cases if args.only in case[0]]
    results = {}
    for _ in range(args.rounds):
        for case in cases:
            for binary in args.binaries:
                door, shape, size = case
                if door == "REST":
                    got = rest(binary, shape, size)
                elif door == "stdio":
                    got = stdio(binary, shape, size)
                elif door == "MCP HTTP":
                    got = mcp_http(binary, shape, size)
                elif door.startswith("MCP HTTP ×"):
                    got = mcp_http(binary, shape, size, args.concurrent)
                else:
                    got = rest(binary, shape, size, args.concurrent)
                results.setdefault((case, binary), []).append(got)
    names = [Path(b).name if len(set(Path(x).name for x in args.binaries)) == len(args.binaries) else b
             for b in args.binaries]
    print(f"Peak RSS added by one request (MiB, median of {args.rounds}; × body in brackets)\n")
    print("| door | body | size | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for case in cases:
        door, shape, size = case
        cells = []
        body_len = 0
        for binary in args.binaries:
            runs = results[(case, binary)]
            body_len = runs[0][0]
            added = statistics.median(r[1] for r in runs)
            total = body_len * (args.concurrent if "×" in door else 1)
            cells.append(f"{added:.1f} ({added * MIB / total:.1f}×)")
        shown = f"{body_len / MIB:.2f} MiB" if body_len >= MIB else f"{body_len / KIB:.0f} KiB"
        print(f"| {door} | {shape} | {shown} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
