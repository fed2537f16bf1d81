#!/usr/bin/env python3
"""Crash loops: toolshed driven hard, then counted for what it lost.

1. Lost updates: two `toolshed serve` processes on one workspace; in each round two owners
   read shared.txt, then edit different lines at the same moment. Counted: edits reported
   as done that are not in the file.
2-4. Kills: one `toolshed serve` runs multi-file patches, writes new files, rewrites a big
   file and answers calls from eight threads; it is SIGKILLed at a random moment, then a new
   server opens the same workspace and data dir. Counted: torn files (the big file not whole
   or mixed), partial patches (the patched files neither all before nor all after), stray
   temporary files (in .toolshed/tmp, or .tsw-* anywhere), and acknowledged calls with no
   audit row.

Usage: bench/crash_loops.py [--toolshed BIN] [--iterations 60] [--seed N]
Prints one line per counter; every count should be 0.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def request(url, token, method="GET", body=None, owner=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if owner:
        headers["X-Toolshed-Owner"] = owner
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


class Server:
    """`toolshed serve --port 0` on a workspace and data dir."""

    def __init__(self, binary, workspace, home):
        env = {**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "none")}
        env.pop("TOOLSHED_CONFIG", None)
        self.token = subprocess.run(
            [binary, "token"], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        self.proc = subprocess.Popen(
            [binary, "--workspace", str(workspace), "serve", "--port", "0"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )
        for line in self.proc.stderr:
            if line.startswith("listening on "):
                self.base = line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
                threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
                return
        raise SystemExit("toolshed serve did not start")

    def call(self, tool, arguments, owner=None):
        return request(f"{self.base}/api/v1/tools/{tool}/execute", self.token, "POST",
                       {"arguments": arguments}, owner=owner)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()


def lost_updates(binary, rounds, work):
    ws, home = work / "ws1", work / "home1"
    ws.mkdir()
    (ws / "shared.txt").write_text("".join(f"line {i}\n" for i in range(2 * rounds)))
    servers = [Server(binary, ws, home), Server(binary, ws, home)]
    lost = conflicts = done = 0
    try:
        for r in range(rounds):
            for w, server in enumerate(servers):
                server.call("workspace_read", {"path": "shared.txt"}, owner=f"owner-{w}")
            barrier = threading.Barrier(2)

            def edit(w):
                barrier.wait()
                return servers[w].call(
                    "workspace_edit",
                    {"path": "shared.txt", "old_text": f"line {2 * r + w}\n", "new_text": f"edited {r} {w}\n"},
                    owner=f"owner-{w}",
                )

            with ThreadPoolExecutor(2) as pool:
                results = list(pool.map(edit, range(2)))
            text = (ws / "shared.txt").read_text()
            for w, (status, body) in enumerate(results):
                if status == 200 and not body.get("is_error"):
                    done += 1
                    lost += f"edited {r} {w}\n" not in text
                else:
                    conflicts += 1
    finally:
        for server in servers:
            server.stop()
    return {"edits done": done, "refused as conflicts": conflicts, "lost updates": lost}


TO_B = ("*** Begin Patch\n*** Update File: a.txt\n@@\n-A\n+B\n*** Update File: b.txt\n@@\n-A\n+B\n"
        "*** Update File: c.txt\n*** Move to: d/c.txt\n@@\n-c\n+c\n*** Add File: n.txt\n+new\n*** End Patch\n")
TO_A = ("*** Begin Patch\n*** Update File: a.txt\n@@\n-B\n+A\n*** Update File: b.txt\n@@\n-B\n+A\n"
        "*** Update File: d/c.txt\n*** Move to: c.txt\n@@\n-c\n+c\n*** Delete File: n.txt\n*** End Patch\n")
BIG = 256 * 1024


def patch_state(ws):
    read = lambda p: (ws / p).read_text() if (ws / p).exists() else None  # noqa: E731
    seen = (read("a.txt"), read("b.txt"), read("c.txt"), read("d/c.txt"), read("n.txt"))
    if seen == ("A\n", "A\n", "c\n", None, None):
        return "A"
    if seen == ("B\n", "B\n", None, "c\n", "new\n"):
        return "B"
    return None


def strays(ws):
    scratch = ws / ".toolshed" / "tmp"
    names = [p.name for p in scratch.iterdir()] if scratch.exists() else []
    left = [n for n in names if n not in (".gitignore", ".sweep.lock")]
    return len(left) + len(list(ws.rglob(".tsw-*")))


def kills(binary, iterations, work, rng):
    ws, home = work / "ws2", work / "home2"
    ws.mkdir()
    for name, text in (("a.txt", "A\n"), ("b.txt", "A\n"), ("c.txt", "c\n")):
        (ws / name).write_text(text)
    (ws / "d").mkdir()
    (ws / "big.txt").write_text("z" * BIG)
    counts = {"kills": 0, "torn files": 0, "partial patches": 0, "stray temporary files": 0,
              "acknowledged calls": 0, "missing audit rows": 0, "patches applied": 0}
    for i in range(iterations):
        server = Server(binary, ws, home)
        stop = threading.Event()
        acked = []
        state = [patch_state(ws)]

        def patcher():
            while not stop.is_set():
                try:
                    for p in ("a.txt", "b.txt", "c.txt", "d/c.txt"):
                        server.call("workspace_read", {"path": p})
                    status, body = server.call("workspace_patch", {"patch": TO_B if state[-1] == "A" else TO_A})
                except OSError:
                    return
                if status == 200 and not body.get("is_error"):
                    state.append("B" if state[-1] == "A" else "A")
                    counts["patches applied"] += 1

        def writer():
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    server.call("workspace_read", {"path": "big.txt"})
                    server.call("workspace_write", {"path": "big.txt", "content": chr(97 + n % 26) * BIG})
                    server.call("workspace_write", {"path": f"new/{i}-{n}.txt", "content": "x" * 65536,
                                                    "create_parents": True})
                except OSError:
                    return

        def caller():
            while not stop.is_set():
                try:
                    status, body = server.call("workspace_stat", {"path": "a.txt"})
                except OSError:
                    return
                if status == 200:
                    acked.append(body["call_id"])

        threads = [threading.Thread(target=t) for t in (patcher, writer, *[caller] * 6)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.05, 0.4))
        server.kill()
        stop.set()
        for t in threads:
            t.join()
        counts["kills"] += 1
        # The next server to open the workspace finishes or discards what was cut off.
        server = Server(binary, ws, home)
        big = (ws / "big.txt").read_text()
        counts["torn files"] += len(big) != BIG or len(set(big)) != 1
        counts["partial patches"] += patch_state(ws) is None
        counts["stray temporary files"] += strays(ws)
        # Every audit row, page by page (the newest 1,000 alone miss the earlier rounds').
        recorded, cursor = set(), ""
        while True:
            query = f"?limit=1000&cursor={cursor}" if cursor else "?limit=1000"
            status, body = request(f"{server.base}/api/v1/audit{query}", server.token)
            recorded |= {row["call_id"] for row in body.get("audit", [])}
            cursor = body.get("next_cursor")
            if not cursor:
                break
        counts["acknowledged calls"] += len(acked)
        counts["missing audit rows"] += sum(1 for c in acked if c not in recorded)
        server.stop()
        shutil.rmtree(ws / "new", ignore_errors=True)
        if patch_state(ws) is None:
            break
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--toolshed", default=str(root / "target" / "release" / "toolshed"))
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    if not Path(args.toolshed).is_file():
        sys.exit(f"{args.toolshed} does not exist: build it with `cargo build --release -p toolshed-cli`")
    rng = random.Random(args.seed)
    print(f"toolshed: {args.toolshed}; {args.iterations} iterations per loop; seed {args.seed}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        started = time.time()
        for key, value in lost_updates(args.toolshed, args.iterations, work).items():
            print(f"  {key}: {value}")
        for key, value in kills(args.toolshed, args.iterations, work, rng).items():
            print(f"  {key}: {value}")
        print(f"({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
