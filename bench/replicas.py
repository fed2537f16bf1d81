#!/usr/bin/env python3
"""REST calls through a load balancer: one toolshed on SQLite, and one and two toolsheds on
one Postgres, side by side in one run.

Each setup is `toolshed serve` processes (release build, private data dirs) behind HAProxy
(round robin, HTTP keep-alive to the servers), and wrk (a C load tool) sending
`POST /api/v1/tools/calculator/execute` with an agent token made once in the shared store.
Every reply is checked in Lua (status 200, the expected result); the error count is printed
and must be 0. Each call writes its audit row, so the store is part of every call.

  sqlite-1            one server, state in toolshed.db
  postgres-1          one server, state in Postgres
  postgres-1-nocache  the same with `[store] token_cache_secs = 0`: the agent token read
                      from Postgres on every request, as before the token cache
  postgres-2          two servers on the same database

Postgres is a throwaway cluster made here (initdb in a temporary directory, fsync off, a
free loopback port), as scripts/test makes one. Setups are measured in turns (A B C A B C…)
and medians reported; absolute figures move with the machine's load (printed): compare
ratios from one run. On a 2-core machine the load tool, the balancer, Postgres and the
servers share the cores, so a second replica cannot add throughput here; the figures show
what sharing the state costs.

Usage: bench/replicas.sh [--seconds 10] [--rounds 3] [--connections 1,32]
"""

import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

LUA = r"""
errors = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"42"', 1, true) then
    errors = errors + 1
    if errors == 1 then io.stderr:write("first bad reply: " .. status .. " " .. string.sub(body, 1, 300) .. "\n") end
  end
end
function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + t:get("errors") end
  io.write(string.format("RESULT %d %.1f %.1f %.1f %d\n", summary.requests,
    latency:percentile(50), latency:percentile(99), summary.duration, bad))
end
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except Exception:
            time.sleep(0.1)
    sys.exit(f"{url} did not answer")


class Postgres:
    """A throwaway cluster on a free loopback port."""

    def __init__(self, work):
        self.bin = Path(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[-1]).parent
        self.dir = work / "pg"
        self.dir.mkdir()
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.port = free_port()
        self.run(f"'{self.bin}/initdb' -D '{self.dir}/data' -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8")
        self.run(f"'{self.bin}/pg_ctl' -D '{self.dir}/data' -l '{self.dir}/log' -w -o "
                 f"\"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories='{self.dir}' "
                 f"-c fsync=off -c synchronous_commit=off\" start")
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def run(self, command):
        args = ["su", "postgres", "-s", "/bin/sh", "-c", command] if os.getuid() == 0 else ["sh", "-c", command]
        subprocess.run(args, check=True, capture_output=True, timeout=60)

    def database(self, name):
        subprocess.run([str(self.bin / "psql"), self.url, "-qAt", "-c", f"CREATE DATABASE {name}"],
                       check=True, capture_output=True, timeout=30)
        return self.url.rsplit("/", 1)[0] + "/" + name

    def stop(self):
        try:
            self.run(f"'{self.bin}/pg_ctl' -D '{self.dir}/data' -m immediate -w stop")
        except subprocess.CalledProcessError:
            pass


class Setup:
    """`servers` toolsheds on one store (`url`: Postgres, None: each its SQLite file) behind
    HAProxy."""

    def __init__(self, name, toolshed, work, servers, url, token_cache=True):
        self.name = name
        self.procs = []
        self.lb_port = free_port()
        root = work / name
        root.mkdir()
        (root / "workspace").mkdir()
        config = root / "config.toml"
        config.write_text(f'[server]\nallowed_hosts = ["127.0.0.1:{self.lb_port}"]\n'
                          + (f'[store]\nurl = "{url}"\n' if url else "")
                          + ("" if token_cache else "token_cache_secs = 0\n"))
        ports = []
        for i in range(servers):
            home = root / f"home{i}"
            home.mkdir()
            env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CONFIG": str(config),
                   "TOOLSHED_CURATED_DIR": str(root / "none"), "PATH": os.environ["PATH"]}
            if i > 0:
                shutil.copy(root / "home0" / "secret.key", home / "secret.key")
            if i == 0:
                self.token = subprocess.run([toolshed, "token", "create", "--owner", "bench"], env=env,
                                            capture_output=True, text=True, check=True).stdout.strip()
            port = free_port()
            self.procs.append(subprocess.Popen(
                [toolshed, "--workspace", str(root / "workspace"), "serve", "--port", str(port)],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_http(f"http://127.0.0.1:{port}/health")
            ports.append(port)
        servers_cfg = "".join(f"  server s{i} 127.0.0.1:{p}\n" for i, p in enumerate(ports))
        cfg = root / "haproxy.cfg"
        cfg.write_text(
            "global\n  maxconn 4096\n"
            "defaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n"
            "  option http-keep-alive\n"
            f"frontend lb\n  bind 127.0.0.1:{self.lb_port}\n  default_backend toolshed\n"
            f"backend toolshed\n  balance roundrobin\n{servers_cfg}")
        self.procs.append(subprocess.Popen(["haproxy", "-f", str(cfg)], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL))
        wait_http(f"http://127.0.0.1:{self.lb_port}/health")
        self.url = f"http://127.0.0.1:{self.lb_port}/api/v1/tools/calculator/execute"
        req = urllib.request.Request(self.url, method="POST", data=b'{"arguments":{"expression":"6*7"}}',
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Content-Type": "application/json"})
        assert '"42"' in urllib.request.urlopen(req, timeout=10).read().decode()

    def stop(self):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def wrk(setup, connections, seconds, work):
    script = work / f"{setup.name}-{connections}.lua"
    script.write_text(
        "wrk.method = 'POST'\n"
        "wrk.body = '{\"arguments\":{\"expression\":\"6*7\"}}'\n"
        "wrk.headers['Content-Type'] = 'application/json'\n"
        f"wrk.headers['Authorization'] = 'Bearer {setup.token}'\n" + LUA)
    threads = 1 if connections == 1 else 2
    out = subprocess.run(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s",
                          "-s", str(script), setup.url], capture_output=True, text=True, timeout=seconds + 60)
    line = next((l for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        sys.exit(f"wrk printed no result:\n{out.stdout}\n{out.stderr}")
    if out.stderr.strip():
        print(out.stderr.strip(), file=sys.stderr)
    n, p50, p99, duration_us, errors = line.split()[1:]
    return {"rps": int(n) / (float(duration_us) / 1e6), "p50": float(p50) / 1000,
            "p99": float(p99) / 1000, "errors": int(errors)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolshed", required=True)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", default="1,32")
    args = parser.parse_args()
    conns = [int(c) for c in args.connections.split(",")]
    work = Path(tempfile.mkdtemp(prefix="toolshed-bench-replicas-"))
    if os.getuid() == 0:
        os.chmod(work, 0o755)
    pg = Postgres(work)
    setups = []
    try:
        setups = [
            Setup("sqlite-1", args.toolshed, work, 1, None),
            Setup("postgres-1", args.toolshed, work, 1, pg.database("bench_one")),
            Setup("postgres-1-nocache", args.toolshed, work, 1, pg.database("bench_nocache"), token_cache=False),
            Setup("postgres-2", args.toolshed, work, 2, pg.database("bench_two")),
        ]
        results = {(s.name, c): [] for s in setups for c in conns}
        for r in range(args.rounds):
            for c in conns:
                for s in setups:
                    res = wrk(s, c, args.seconds, work)
                    results[(s.name, c)].append(res)
                    print(f"round {r + 1} {s.name:<18} c={c:<3} {res['rps']:8.0f} calls/s  p50 {res['p50']:6.2f} ms"
                          f"  p99 {res['p99']:6.2f} ms  errors {res['errors']}  load {open('/proc/loadavg').read().split()[0]}",
                          flush=True)

        def med(xs):
            xs = sorted(xs)
            return xs[len(xs) // 2]

        print(f"\nmedians of {args.rounds} rounds, {args.seconds} s each, through HAProxy:")
        print("| setup | connections | calls/s | p50 ms | p99 ms | errors | calls/s vs sqlite-1 |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for c in conns:
            base = med([x["rps"] for x in results[("sqlite-1", c)]])
            for s in setups:
                xs = results[(s.name, c)]
                rps = med([x["rps"] for x in xs])
                print(f"| {s.name} | {c} | {rps:.0f} | {med([x['p50'] for x in xs]):.2f} | "
                      f"{med([x['p99'] for x in xs]):.2f} | {sum(x['errors'] for x in xs)} | {rps / base:.2f} |")
    finally:
        for s in setups:
            s.stop()
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
