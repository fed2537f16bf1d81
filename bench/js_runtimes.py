#!/usr/bin/env python3
"""The two JavaScript runtimes side by side: one plugin action run by QuickJS and by
Node.js, through `toolshed mcp` over stdio.

    python3 bench/js_runtimes.py TOOLSHED_BIN [ROUNDS] [CALLS]

Two plugins of the same action (an HMAC-SHA256 of the input, hex) are installed in one
home: `bench.quickjs` signs with the QuickJS `crypto` global, `bench.node` with
`require('crypto')`, which puts it in Node.js. Rounds alternate between them (A B A B),
each in a fresh `toolshed mcp` process:

  activation  `toolshed plugins reload ID` as a whole process (start, activate, stop)
  first call  the first `tools/call` of a session: the plugin is parked until a call
              needs it, so this starts its runtime and runs `activate` first
  call        the median of CALLS sequential calls after it
  RSS         the toolshed process's VmRSS after the calls, plus, for Node, the `node`
              process's own VmRSS (its child)

Prints a Markdown table of medians over ROUNDS rounds.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

INFO = """{{"id": "bench.{name}", "name": "Bench {name}", "version": "1.0.0", "description": "Signs text.",
"author": "bench", "type": "server"}}"""
QUICKJS = """exports.activate = (context) => context.registerActions([{
  name: "sign", description: "Sign a text.", properties: [{ key: "text", type: "text", required: true }],
  run: async (ctx, args) => crypto.createHmac("sha256", "bench-key").update(args.text).digest("hex"),
}]);
"""
NODE = """const { createHmac } = require("crypto");
exports.activate = (context) => context.registerActions([{
  name: "sign", description: "Sign a text.", properties: [{ key: "text", type: "text", required: true }],
  run: async (ctx, args) => createHmac("sha256", "bench-key").update(args.text).digest("hex"),
}]);
"""


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(entry))
        except OSError:
            continue
    return found


def descendants(pid):
    out = []
    for child in children(pid):
        out.append(child)
        out.extend(descendants(child))
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def session(toolshed, env, workspace, tool, calls):
    process = subprocess.Popen(
        [toolshed, "--workspace", workspace, "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
    )
    next_id = [0]

    def request(method, params):
        next_id[0] += 1
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params}) + "\n")
        process.stdin.flush()
        while True:
            message = json.loads(process.stdout.readline())
            if message.get("id") == next_id[0]:
                if "error" in message or message["result"].get("isError"):
                    raise RuntimeError(json.dumps(message)[:400])
                return message

    request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
    process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    process.stdin.flush()
    start = time.perf_counter()
    request("tools/call", {"name": tool, "arguments": {"text": "first"}})
    first = time.perf_counter() - start
    times = []
    for i in range(calls):
        start = time.perf_counter()
        request("tools/call", {"name": tool, "arguments": {"text": f"call {i}"}})
        times.append(time.perf_counter() - start)
    node = [p for p in descendants(process.pid) if comm(p) in ("node", "nodejs")]
    rss = rss_kib(process.pid) + sum(rss_kib(p) for p in node)
    process.stdin.close()
    process.wait(timeout=30)
    return first, statistics.median(times), rss


def main():
    toolshed = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")
        workspace = os.path.join(tmp, "ws")
        os.mkdir(workspace)
        env = {**os.environ, "TOOLSHED_HOME": home, "TOOLSHED_CURATED_DIR": os.path.join(tmp, "none")}
        for name, main_js in (("quickjs", QUICKJS), ("node", NODE)):
            src = os.path.join(tmp, name)
            os.mkdir(src)
            with open(os.path.join(src, "info.json"), "w") as f:
                f.write(INFO.format(name=name))
            with open(os.path.join(src, "main.js"), "w") as f:
                f.write(main_js)
            subprocess.run([toolshed, "--workspace", workspace, "plugins", "install", src], env=env, check=True, capture_output=True)
        results = {"quickjs": [], "node": []}
        for _ in range(rounds):
            for name in ("quickjs", "node"):
                start = time.perf_counter()
                subprocess.run([toolshed, "--workspace", workspace, "plugins", "reload", f"bench.{name}"], env=env, check=True, capture_output=True)
                activation = time.perf_counter() - start
                first, call, rss = session(toolshed, env, workspace, f"{name}_sign", calls)
                results[name].append((activation, first, call, rss))

    def med(name, i):
        return statistics.median(r[i] for r in results[name])

    print(f"| metric (median of {rounds} rounds) | QuickJS | Node.js | Node / QuickJS |")
    print("|---|---|---|---|")
    for label, i, scale, unit in (
        ("`plugins reload` (start, activate, stop), whole process", 0, 1000, "ms"),
        ("first call of a session (starts the runtime)", 1, 1000, "ms"),
        (f"call, median of {calls}", 2, 1000, "ms"),
        ("RSS after the calls (toolshed + node)", 3, 1 / 1024, "MiB"),
    ):
        q, n = med("quickjs", i) * scale, med("node", i) * scale
        print(f"| {label} ({unit}) | {q:.2f} | {n:.2f} | {n / q:.1f}× |")


if __name__ == "__main__":
    main()
