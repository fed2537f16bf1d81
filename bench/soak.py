#!/usr/bin/env python3
"""Soak: one `toolshed serve` shared by agents that leak, and by clients that hold sockets (issue 53).

1. Abandoned MCP sessions, per owner. Four agent tokens (owners leaker-1..leaker-4) each
   open 16 MCP sessions, start `sleep 600` in each (exec_command, yield_ms 100) and abandon
   them (never DELETE); the admin token opens 4 more. Then a fifth owner, `worker`, opens a
   session and makes 20 calls (exec_command `echo ok`, calculator `6*7`, alternately).
   Counted: leaker sessions accepted / refused, leaker commands started / refused, worker
   calls that succeeded (all 20 should) and their median latency.
2. Held connections under a low descriptor limit. The server starts with RLIMIT_NOFILE soft
   256 (hard as inherited), then again with soft and hard 256. 500 connections each send half
   a request head and hold it; meanwhile 20 sequential `GET /api/v1/health` (new connection,
   5 s timeout, 45 s for all) are timed. Counted: health checks answered 200, their median
   latency, held connections the server closed, and the soft limit the server runs with.

Usage: bench/soak.py [--binary target/release/toolshed] [--hard-nofile-256]
(default binary: target/release/toolshed if it exists, else target/debug/toolshed; with
--hard-nofile-256 scenario 2 runs only with soft and hard 256). Failures are reported as
figures; the run stops itself after 180 s. A Markdown table for docs/benchmarks.md ends it.
"""

import argparse
import contextlib
import http.client
import json
import os
import resource
import select
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

PROTOCOL = "2025-06-18"


class Budget(Exception):  # the time for one phase is spent
    pass


class OutOfTime(BaseException):  # the whole run is past 180 s (SIGALRM); no scenario catches it
    pass


class Server:
    """`toolshed serve --port 0` on a fresh TOOLSHED_HOME and workspace, in its own process group."""

    def __init__(self, binary, tmp, nofile=None):
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        ws.mkdir(parents=True)
        self.binary, self.base = binary, None
        self.env = {k: v for k, v in os.environ.items() if k not in ("TOOLSHED_CONFIG", "TOOLSHED_TOKEN")}
        self.env.update(TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "none"))
        self.token = self.cli("token")
        pre = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile)) if nofile else None
        self.proc = subprocess.Popen([binary, "--workspace", str(ws), "serve", "--port", "0"], env=self.env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=pre, start_new_session=True)
        ready = threading.Event()

        def drain():
            for line in self.proc.stderr:
                if self.base is None and line.startswith("listening on "):
                    self.base = line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(30) or self.base is None:
            self.stop()
            raise RuntimeError("toolshed serve did not start")
        host, port = self.base.split("//", 1)[1].rsplit(":", 1)
        self.addr = (host, int(port))

    def cli(self, *args):
        return subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()

    def nofile(self):
        """(soft, hard) 'Max open files' of the running server, from /proc."""
        try:
            text = Path(f"/proc/{self.proc.pid}/limits").read_text()
            return tuple(next(x for x in text.splitlines() if x.startswith("Max open files")).split()[3:5])
        except (OSError, StopIteration):
            return ("?", "?")

    def descendants(self, pid):
        try:
            kids = [int(k) for t in Path(f"/proc/{pid}/task").iterdir() for k in (t / "children").read_text().split()]
        except OSError:
            return []
        return kids + [d for k in kids for d in self.descendants(k)]

    def stop(self):
        """SIGTERM, then SIGKILL to its process group and to every process it had started."""
        left = self.descendants(self.proc.pid) if self.proc.poll() is None else []
        self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for kill, pid in [(os.killpg, self.proc.pid)] + [(os.kill, p) for p in left]:
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def post_mcp(server, token, message, session, deadline, cap=15):
    """POST one JSON-RPC message to /mcp (reply as JSON or SSE): (status, session id, reply, text)."""
    timeout = min(cap, deadline - time.monotonic())
    if timeout <= 0:
        raise Budget()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if session:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": PROTOCOL})
    conn, ends = http.client.HTTPConnection(*server.addr, timeout=timeout), time.monotonic() + timeout
    try:
        conn.request("POST", "/mcp", body=json.dumps(message).encode(), headers=headers)
        resp = conn.getresponse()
        sid, text = resp.getheader("mcp-session-id"), ""
        sse = "text/event-stream" in (resp.getheader("content-type") or "")
        while time.monotonic() < ends:  # JSON: one read; SSE: up to the first `data:` line with a reply
            line = (resp.readline() if sse else resp.read()).decode(errors="replace")
            text += line
            data = line[5:] if line.startswith("data:") else None if sse else line
            with contextlib.suppress(ValueError, TypeError):
                reply = json.loads(data)
                if isinstance(reply, dict) and ("result" in reply or "error" in reply):
                    return resp.status, sid, reply, text
            if not line or not sse:
                break
        return resp.status, sid, None, text
    except (OSError, http.client.HTTPException) as e:
        return None, None, None, f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def refusal(status, reply, text):
    why = reply.get("error", {}).get("message") if isinstance(reply, dict) else None
    return f"HTTP {status}: {why or text.strip()[:200]}"


def open_session(server, token, deadline):
    """initialize, then notifications/initialized: (session id or None, refusal text)."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}
    status, sid, reply, text = post_mcp(server, token, init, None, deadline)
    if status != 200 or not sid or not reply or "error" in reply:
        return None, refusal(status, reply, text)
    post_mcp(server, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, deadline)
    return sid, None


def call_tool(server, token, sid, tool, arguments, deadline, n=2):
    """tools/call: ('ok' | 'refused' (isError) | 'failed' (HTTP or JSON-RPC error), text)."""
    msg = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    status, _, reply, text = post_mcp(server, token, msg, sid, deadline)
    if status != 200 or not reply or "error" in reply:
        return "failed", refusal(status, reply, text)
    result = reply.get("result", {})
    said = " ".join(c.get("text", "") for c in result.get("content", []) if isinstance(c, dict))
    return ("refused" if result.get("isError") else "ok"), said.strip()[:300]


def abandoned_sessions(binary, budget):
    fig = {"sessions ok": 0, "sessions refused": 0, "exec ok": 0, "exec refused": 0, "exec failed": 0,
           "admin ok": 0, "worker ok": 0, "ms": [], "session refusal": "", "exec refusal": "", "worker failure": ""}
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        server = Server(binary, tmp)
        deadline = time.monotonic() + budget
        try:
            tokens = {o: server.cli("token", "create", "--owner", o)
                      for o in ("leaker-1", "leaker-2", "leaker-3", "leaker-4", "worker")}

            def leak(owner):
                for _ in range(16):
                    try:
                        sid, text = open_session(server, tokens[owner], deadline)
                        kind = call_tool(server, tokens[owner], sid, "exec_command",
                                         {"cmd": "sleep 600", "yield_ms": 100}, deadline) if sid else None
                    except Budget:
                        return
                    with lock:
                        fig["sessions ok" if sid else "sessions refused"] += 1
                        if sid:
                            fig[f"exec {kind[0]}"] += 1
                            text = None if kind[0] == "ok" else f"({kind[0]}) {kind[1]}"
                        key = "exec refusal" if sid else "session refusal"
                        fig[key] = fig[key] or text or ""

            threads = [threading.Thread(target=leak, args=(f"leaker-{i}",)) for i in range(1, 5)]
            [t.start() for t in threads] + [t.join() for t in threads]
            for _ in range(4):
                fig["admin ok"] += open_session(server, server.token, deadline)[0] is not None
            sid, why = open_session(server, tokens["worker"], deadline + 30)
            fig["worker failure"] = "" if sid else f"session refused: {why}"
            for i in range(20 if sid else 0):
                tool, args = [("exec_command", {"cmd": "echo ok"}), ("calculator", {"expression": "6*7"})][i % 2]
                started = time.monotonic()
                kind, text = call_tool(server, tokens["worker"], sid, tool, args, deadline + 30, n=i + 2)
                fig["ms"].append((time.monotonic() - started) * 1000)
                fig["worker ok"] += kind == "ok"
                if kind != "ok" and not fig["worker failure"]:
                    fig["worker failure"] = f"{tool}: ({kind}) {text}"
        except (Budget, subprocess.SubprocessError) as e:
            fig["worker failure"] = fig["worker failure"] or f"aborted: {e!r}"
        finally:
            fig["alive"] = server.proc.poll() is None
            server.stop()
    return fig


def health(addr, timeout):
    """One `GET /api/v1/health` on a new connection: (answered 200?, ms)."""
    started, conn, ok = time.monotonic(), http.client.HTTPConnection(*addr, timeout=timeout), False
    with contextlib.suppress(OSError, http.client.HTTPException):
        conn.request("GET", "/api/v1/health", headers={"Connection": "close"})
        ok = conn.getresponse().status == 200
    conn.close()
    return ok, (time.monotonic() - started) * 1000


def held_connections(binary, nofile, budget, count=500):
    fig = {"health ok": 0, "tried": 0, "ms": [], "held": 0, "closed": 0, "limit": ("?", "?"), "alive": False}
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        try:
            server = Server(binary, tmp, nofile)
        except (RuntimeError, subprocess.SubprocessError) as e:
            return {**fig, "error": repr(e)}
        fig["limit"], held, pending = server.nofile(), [], {}
        try:
            half = f"GET /api/v1/health HTTP/1.1\r\nHost: {server.addr[0]}:{server.addr[1]}\r\n".encode()
            poller = select.poll()
            for _ in range(count):  # connect all at once, without blocking; 5 s for all
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex(server.addr)
                pending[s.fileno()] = s
                poller.register(s, select.POLLOUT)
            connected_by = time.monotonic() + 5
            while pending and time.monotonic() < connected_by:
                for fd, _ in poller.poll(200):
                    s = pending.pop(fd)
                    poller.unregister(fd)
                    try:
                        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 and s.send(half):
                            held.append(s)
                            continue
                    except OSError:
                        pass
                    s.close()
            fig["held"] = len(held)
            time.sleep(0.5)
            deadline = time.monotonic() + budget
            while fig["tried"] < 20 and time.monotonic() < deadline:
                ok, ms = health(server.addr, min(5.0, max(0.1, deadline - time.monotonic())))
                fig["tried"], fig["health ok"] = fig["tried"] + 1, fig["health ok"] + ok
                fig["ms"].append(ms)
            for s in held:  # closed = EOF or reset; an answer (e.g. 408) counts too
                try:
                    s.recv(4096)
                except BlockingIOError:  # still open, still waiting
                    continue
                except OSError:  # reset
                    pass
                fig["closed"] += 1
        finally:
            fig["alive"] = server.proc.poll() is None
            for s in held + list(pending.values()):
                s.close()
            server.stop()
    return fig


def med(values):
    return f"{statistics.median(values):.1f} ms" if values else "n/a"


def main():
    root = Path(__file__).resolve().parent.parent
    release = root / "target" / "release" / "toolshed"
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=str(release if release.is_file() else root / "target/debug/toolshed"))
    parser.add_argument("--hard-nofile-256", action="store_true",
                        help="run scenario 2 only with soft and hard RLIMIT_NOFILE 256")
    args = parser.parse_args()
    if not Path(args.binary).is_file():
        raise SystemExit(f"{args.binary} does not exist: build it with `cargo build --release -p toolshed-cli`")

    def out_of_time(*_):
        raise OutOfTime("the whole run took more than 180 s")

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(180)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 2048:  # the 500 held sockets are this process's too
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048 if hard == resource.RLIM_INFINITY else min(2048, hard), hard))
    print(f"toolshed: {args.binary}")
    started, rows = time.monotonic(), []
    try:
        a = abandoned_sessions(args.binary, budget=50)
        print("1. abandoned MCP sessions: 4 owners x 16 with `sleep 600` running, 4 admin sessions, never deleted")
        print(f"  first session refusal: {a['session refusal'] or '-'}")
        print(f"  first command refusal: {a['exec refusal'] or '-'}")
        print(f"  first worker failure:  {a['worker failure'] or '-'}")
        print(f"  server alive after: {a['alive']}")
        rows += [("abandoned sessions", "leaker sessions accepted / refused", f"{a['sessions ok']} / {a['sessions refused']}"),
                 ("abandoned sessions", "leaker `sleep 600` started / refused / failed",
                  f"{a['exec ok']} / {a['exec refused']} / {a['exec failed']}"),
                 ("abandoned sessions", "admin sessions accepted", f"{a['admin ok']} / 4"),
                 ("abandoned sessions", "worker calls ok (median latency)", f"{a['worker ok']} / 20 ({med(a['ms'])})")]
        runs = [("soft 256", (256, hard)), ("hard 256", (256, 256))]
        for name, limit in runs[1:] if args.hard_nofile_256 else runs:
            h = held_connections(args.binary, limit, budget=45)
            print(f"2. 500 held half request heads, server started with RLIMIT_NOFILE {name}")
            print(f"  server's Max open files: soft {h['limit'][0]}, hard {h['limit'][1]}")
            print(f"  health checks tried in 45 s: {h['tried']} / 20; server alive after: {h['alive']} {h.get('error', '')}")
            scenario = f"held connections (NOFILE {name})"
            rows += [(scenario, "server's soft NOFILE", h["limit"][0]),
                     (scenario, "held connections connected / closed by the server", f"{h['held']} / {h['closed']}"),
                     (scenario, "health checks 200 (tried; median latency)",
                      f"{h['health ok']} / 20 ({h['tried']} tried; {med(h['ms'])})")]
    except OutOfTime as e:
        print(f"stopped: {e}")
    finally:
        signal.alarm(0)
    print(f"({time.monotonic() - started:.0f} s)\n")
    print("| scenario | figure | value |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")


if __name__ == "__main__":
    main()
