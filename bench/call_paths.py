#!/usr/bin/env python3
"""What a call costs by the path it takes, over MCP stdio, side by side in one run:

  builtin    `calculator` (a built-in Rust tool), one call in flight
  quickjs    a QuickJS plugin's tool of the same weight (it upper-cases its text), one in
             flight: the call crosses into the plugin's runtime thread and back
  direct10   ten `calculator` calls, one after another, as a model would make them
  run_code   one `run_code` whose snippet makes the same ten calls through `tools.calculator`
             (each through the whole pipeline: review, validation, policy, audit with its
             parent), in a fresh QuickJS runtime

Each round starts a fresh `toolshed mcp` per path, warms it with one call, then times
`--calls` calls one at a time; rounds alternate the paths so they share the machine's
noise, and medians of the rounds' medians are printed with the load average.

`--pause MS` waits that long before each timed call, as a model thinking between calls
would (the machine is otherwise idle between them).

Usage: call_paths.py --toolshed BIN [--calls 200] [--rounds 7] [--pause 0]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agents_overhead import Session  # noqa: E402 - the bench directory's own driver

INFO = """{"id": "bench.shout", "name": "Bench shout", "version": "1.0.0", "description": "Shouts.",
"author": "bench", "type": "server"}"""
MAIN = """exports.activate = (context) => context.registerActions([{
  name: "shout", description: "Upper-cases a text.", properties: [{ key: "text", type: "text", required: true }],
  run: async (ctx, args) => args.text.toUpperCase(),
}]);
"""
SNIPPET = """let total = 0;
for (let i = 0; i < 10; i++) total += Number(await tools.calculator({expression: `${i}+1`}));
return String(total);"""


PAUSE = 0.0


def timed(session, name, arguments, calls):
    session.call(name, arguments)  # warm: the runtime started, the tool resolved
    times = []
    for _ in range(calls):
        time.sleep(PAUSE)
        start = time.perf_counter()
        result = session.call(name, arguments)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def ten_direct(session, calls):
    session.call("calculator", {"expression": "0+1"})
    times = []
    for _ in range(calls):
        time.sleep(PAUSE)
        start = time.perf_counter()
        total = sum(float(session.call("calculator", {"expression": f"{i}+1"})["content"][0]["text"])
                    for i in range(10))
        times.append(time.perf_counter() - start)
    assert total == 55, total
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolshed", required=True)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pause", type=float, default=0.0)
    args = parser.parse_args()
    global PAUSE
    PAUSE = args.pause / 1000
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace, plugin = (os.path.join(tmp, d) for d in ("home", "ws", "shout"))
        for d in (workspace, plugin):
            os.mkdir(d)
        with open(os.path.join(plugin, "info.json"), "w") as f:
            f.write(INFO)
        with open(os.path.join(plugin, "main.js"), "w") as f:
            f.write(MAIN)
        env = {**os.environ, "TOOLSHED_HOME": home, "TOOLSHED_CURATED_DIR": os.path.join(tmp, "none")}
        subprocess.run([args.toolshed, "--workspace", workspace, "plugins", "install", plugin], env=env,
                       check=True, capture_output=True)
        argv = [args.toolshed, "--workspace", workspace, "mcp"]
        results = {k: [] for k in ("builtin", "quickjs", "direct10", "run_code")}
        loads = []
        for _ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            s = Session(argv, env)
            results["builtin"].append(timed(s, "calculator", {"expression": "6*7"}, args.calls)[0])
            s.close()
            s = Session(argv, env)
            median, result = timed(s, "shout_shout", {"text": "quiet"}, args.calls)
            assert result["content"][0]["text"] == "QUIET", result
            results["quickjs"].append(median)
            s.close()
            s = Session(argv, env)
            results["direct10"].append(ten_direct(s, max(args.calls // 10, 5)))
            s.close()
            s = Session(argv, env)
            median, result = timed(s, "run_code", {"code": SNIPPET}, max(args.calls // 10, 5))
            assert "55" in json.dumps(result), result
            results["run_code"].append(median)
            s.close()

    def ms(key):
        return statistics.median(results[key]) * 1000

    print(f"medians of {args.rounds} rounds, {args.pause:g} ms pause before each call; "
          f"load average {min(loads):.2f} to {max(loads):.2f}")
    print("| path | median (ms) | against |")
    print("|---|---|---|")
    print(f"| built-in `calculator`, one call | {ms('builtin'):.3f} | |")
    print(f"| QuickJS plugin tool, one call | {ms('quickjs'):.3f} | {ms('quickjs') / ms('builtin'):.2f}× the built-in |")
    print(f"| ten `calculator` calls from the client | {ms('direct10'):.3f} | |")
    print(f"| one `run_code` making the ten calls | {ms('run_code'):.3f} | "
          f"{ms('run_code') / ms('direct10'):.2f}× the ten direct calls |")


if __name__ == "__main__":
    main()
