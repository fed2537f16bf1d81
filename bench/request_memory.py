#!/usr/bin/env python3
"""Memory per request: the peak RSS of `toolshed serve` while it answers 4 MiB REST bodies.

For each binary given, a fresh server receives, one at a time and then N at once, a 4 MiB
`workspace_write` and a 4 MiB argument of the wrong type (`calculator` with a 4 MiB
expression that is not a string... of the right shape), and its peak RSS (VmHWM) is read
after each phase. Binaries run alternately, `--rounds` times, so that both see the same
machine; the medians are printed.

Usage: bench/request_memory.py [--concurrent 32] [--rounds 3] BIN [BIN...]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SIZE = 4 * 1024 * 1024 - 256


def peak_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def post(base, token, tool, arguments):
    body = json.dumps({"arguments": arguments}).encode()
    req = urllib.request.Request(
        f"{base}/api/v1/tools/{tool}/execute", data=body, method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as response:
            return response.status, len(response.read())
    except urllib.error.HTTPError as e:
        return e.code, len(e.read())


def measure(binary, concurrent):
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        ws.mkdir()
        env = {**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "none")}
        token = subprocess.run([binary, "token"], env=env, capture_output=True, text=True,
                               check=True).stdout.strip()
        proc = subprocess.Popen([binary, "--workspace", str(ws), "serve", "--port", "0"], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        base = None
        for line in proc.stderr:
            if line.startswith("listening on "):
                base = line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
                threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
                break
        try:
            idle = peak_kib(proc.pid)
            write = {"path": "big.txt", "content": "x" * SIZE}
            wrong = {"expression": ["x" * SIZE]}
            post(base, token, "workspace_write", write)
            _, reply = post(base, token, "calculator", wrong)
            one = peak_kib(proc.pid)

            def task(i):
                if i % 2:
                    return post(base, token, "calculator", wrong)
                return post(base, token, "workspace_write", {"path": f"big{i}.txt", "content": "x" * SIZE})

            with ThreadPoolExecutor(concurrent) as pool:
                list(pool.map(task, range(concurrent)))
            many = peak_kib(proc.pid)
        finally:
            proc.terminate()
            proc.wait()
        return idle, one, many, reply


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrent", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    results = {b: [] for b in args.binaries}
    for _ in range(args.rounds):
        for binary in args.binaries:
            results[binary].append(measure(binary, args.concurrent))
    print(f"peak RSS of toolshed serve (MiB, median of {args.rounds}); 4 MiB bodies")
    print(f"{'binary':40} {'idle':>6} {'1 at a time':>12} {f'{args.concurrent} at once':>12} {'error reply':>12}")
    for binary, runs in results.items():
        med = lambda k: statistics.median(r[k] for r in runs) / 1024  # noqa: E731
        reply = statistics.median(r[3] for r in runs)
        print(f"{binary:40} {med(0):6.1f} {med(1):12.1f} {med(2):12.1f} {reply:>10.0f} B")


if __name__ == "__main__":
    main()
