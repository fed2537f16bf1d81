"""Code intelligence through MCP over stdio, on the Rust fixture crate with rust-analyzer.

    python3 bench/lsp.py TOOLSHED_BIN [ROUNDS]

1. Cold: a fresh `toolshed mcp` on a fresh copy of tests/fixtures/lsp/rust per round, then
   the time of its first `lsp` definition (by position): rust-analyzer started inside the
   command sandbox, the crate loaded and indexed, the answer.
2. Warm: in one session, 50 `lsp` definitions (by position), 50 by name, 50 references
   and 50 diagnostics of the same unchanged file (the `operation`s of one tool).
3. Memory: toolshed's RSS and rust-analyzer's (PSS of its process tree) after that.

Needs rust-analyzer (`rustup component add rust-analyzer`). Prints a Markdown table.
"""

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from browser import Session, rss_mib, tree_pss_mib

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "lsp" / "rust"
AT = {"path": "src/lib.rs", "line": 7, "column": 23}


def timed(session, name, args, n):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        result = session.call(name, args)
        times.append((time.perf_counter() - start) * 1000)
    return times, result


def main():
    toolshed = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")
        env = {**os.environ, "TOOLSHED_HOME": home, "TOOLSHED_CURATED_DIR": os.path.join(tmp, "none")}
        cold = []
        for n in range(rounds):
            workspace = os.path.join(tmp, f"ws{n}")
            shutil.copytree(FIXTURE, workspace)
            session = Session(toolshed, workspace, env)
            start = time.perf_counter()
            result = session.call("lsp", {"operation": "definition", **AT})
            cold.append((time.perf_counter() - start) * 1000)
            assert result["structuredContent"]["locations"][0]["line"] == 18, result
            session.close()
        rows.append((f"first `lsp definition` (cold rust-analyzer), {rounds} rounds", cold))

        session = Session(toolshed, os.path.join(tmp, "ws0"), env)
        session.call("lsp", {"operation": "definition", **AT})
        session.call("lsp", {"operation": "diagnostics", "path": "src/lib.rs"})
        for label, name, args in [
            ("warm `lsp definition` by position", "lsp", {"operation": "definition", **AT}),
            ("warm `lsp definition` by name", "lsp", {"operation": "definition", "symbol": "circle_area"}),
            ("warm `lsp references`", "lsp", {"operation": "references", **AT}),
            ("warm `lsp diagnostics` (no change)", "lsp", {"operation": "diagnostics", "path": "src/lib.rs"}),
        ]:
            times, _ = timed(session, name, args, 50)
            rows.append((f"{label}, 50 calls", times))
        host_rss = rss_mib(session.process.pid)
        servers_pss = tree_pss_mib(session.process.pid)
        session.close()

    print("| measure | median | min | max |")
    print("|---|---|---|---|")
    for label, times in rows:
        print(f"| {label} | {statistics.median(times):.1f} ms | {min(times):.1f} ms | {max(times):.1f} ms |")
    print(f"| toolshed RSS with the server warm | {host_rss:.1f} MiB | | |")
    print(f"| rust-analyzer's processes (PSS) | {servers_pss:.0f} MiB | | |")


if __name__ == "__main__":
    main()
