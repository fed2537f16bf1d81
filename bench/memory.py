"""Memory at scale, through a warm MCP session over stdio: `memory_store` of N memories
(about 500 bytes each), then `memory_search` latency over them, and the database's size per
memory.

    python3 bench/memory.py TOOLSHED_BIN [N]

Requests are written back to back and their replies read as they come (a client that
pipelines, as the MCP clients of agents do), in windows of 64; each store is still one
`tools/call` through the whole pipeline (review, validation, policy, audit). Search
latency is one request at a time: the time from writing a `tools/call` to reading its
reply, over 200 queries of words that occur in about 1 %, 0.1 % and 0.01 % of the memories.
Prints a Markdown table.
"""

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

WORDS = """alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november
oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu deploy staging
postgres redis queue worker review schedule cache latency budget token migration rollout
incident backup restore replica shard index vacuum lock timeout retry circuit breaker canary
metric alert dashboard runbook oncall escalation""".split()


def main():
    toolshed = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")
        workspace = os.path.join(tmp, "ws")
        os.mkdir(workspace)
        env = {**os.environ, "TOOLSHED_HOME": home, "TOOLSHED_CURATED_DIR": os.path.join(tmp, "none")}
        process = subprocess.Popen(
            [toolshed, "--workspace", workspace, "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            text=True, bufsize=1 << 20,
        )
        next_id = [0]

        def send(method, params):
            next_id[0] += 1
            process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params}) + "\n")
            return next_id[0]

        def read_reply():
            while True:
                message = json.loads(process.stdout.readline())
                if "id" in message:
                    if "error" in message or message["result"].get("isError"):
                        raise RuntimeError(json.dumps(message)[:500])
                    return message

        send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
        process.stdin.flush()
        read_reply()
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")

        rare = {"sapphire": 0.01, "obsidian": 0.001, "quartzite": 0.0001}
        started = time.perf_counter()
        window = 64
        in_flight = 0
        for i in range(n):
            words = [rng.choice(WORDS) for _ in range(70)]
            for word, share in rare.items():
                if rng.random() < share:
                    words[rng.randrange(len(words))] = word
            text = " ".join(words)[:500]
            send("tools/call", {"name": "memory_store", "arguments": {"text": text, "title": f"note {i}", "tags": [rng.choice(WORDS[:8])]}})
            in_flight += 1
            if in_flight == window:
                process.stdin.flush()
                for _ in range(window // 2):
                    read_reply()
                in_flight -= window // 2
        process.stdin.flush()
        for _ in range(in_flight):
            read_reply()
        store_s = time.perf_counter() - started

        latencies = {word: [] for word in list(rare) + ["deploy staging"]}
        for _ in range(50):
            for query in latencies:
                t0 = time.perf_counter()
                send("tools/call", {"name": "memory_search", "arguments": {"query": query, "limit": 10}})
                process.stdin.flush()
                read_reply()
                latencies[query].append((time.perf_counter() - t0) * 1000)
        process.stdin.close()
        process.wait(timeout=60)
        db = os.path.join(home, "data", "toolshed.db")
        if not os.path.exists(db):
            db = next(
                os.path.join(root, f) for root, _, files in os.walk(home) for f in files if f == "toolshed.db"
            )
        size = sum(os.path.getsize(db + suffix) for suffix in ("", "-wal") if os.path.exists(db + suffix))

    print(f"| measure | value |")
    print(f"|---|---|")
    print(f"| memory_store of {n:,} memories (~500 bytes, pipelined in windows of 64) | {store_s:.1f} s ({n / store_s:,.0f}/s) |")
    for query, times in latencies.items():
        times.sort()
        print(f"| memory_search `{query}`: median, p95 of {len(times)} | {statistics.median(times):.2f} ms, {times[int(len(times) * 0.95) - 1]:.2f} ms |")
    print(f"| database (with WAL) per memory, audit rows included | {size / n:,.0f} bytes |")


if __name__ == "__main__":
    main()
