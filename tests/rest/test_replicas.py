"""Two `toolshed serve` replicas on one Postgres database (`[store] url`), behind a small
round-robin proxy written here, behave as one service: an agent token made once works on
both, a plugin disabled through one is gone from the other within a second (LISTEN/NOTIFY),
an approval asked for on one is answered on the other, the audit log holds both replicas'
calls, and a stateless-era (2026-07-28) MCP client calls tools through the proxy with no
affinity. Needs the throwaway cluster scripts/test starts (TOOLSHED_TEST_POSTGRES_URL)."""

import asyncio
import glob
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import sys
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from tasks_client import Created, Tasks, settled, text  # noqa: E402

ADMIN_URL = os.environ.get("TOOLSHED_TEST_POSTGRES_URL")
if not ADMIN_URL:
    if os.environ.get("TOOLSHED_REQUIRE_POSTGRES"):
        raise RuntimeError("TOOLSHED_REQUIRE_POSTGRES is set but TOOLSHED_TEST_POSTGRES_URL is not")
    pytest.skip("no Postgres: run through scripts/test", allow_module_level=True)


def psql(url, sql):
    binary = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))[-1]
    subprocess.run([binary, url, "-qAt", "-c", sql], check=True, capture_output=True, timeout=30)


class RoundRobin:
    """A TCP proxy on a loopback port: each new connection goes to the next backend."""

    def __init__(self, backends):
        self.backends = backends
        self.turn = 0
        self.served = {}  # backend port -> connections
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            backend = self.backends[self.turn % len(self.backends)]
            self.turn += 1
            self.served[backend] = self.served.get(backend, 0) + 1
            upstream = socket.create_connection(("127.0.0.1", backend))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def pipe(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def request(base, path, token, method="GET", body=None, timeout=30):
    headers = {"Authorization": f"Bearer {token}"}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    req = urllib.request.Request(base + path, method=method, headers=headers, data=data)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


@pytest.fixture
def replicas(toolshed_bin, tmp_path):
    """Two replicas on a fresh database; yields (a, b, agent token, proxy)."""
    database = f"replicas_{os.getpid()}_{int(time.time() * 1000)}"
    psql(ADMIN_URL, f"CREATE DATABASE {database}")
    url = ADMIN_URL.rsplit("/", 1)[0] + "/" + database
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # The proxy first: the replicas must accept its address as their Host, as they would a
    # load balancer's name.
    proxy = RoundRobin([])
    config = tmp_path / "config.toml"
    config.write_text(
        f'[server]\nallowed_hosts = ["127.0.0.1:{proxy.port}"]\n'
        '[[policy.rule]]\nname = "ask for randomness"\ntools = ["random"]\ndecision = "ask"\n'
        "[approvals]\ntimeout_secs = 60\n"
    )
    procs, replicas = [], []
    for name in ("a", "b"):
        home = tmp_path / name
        home.mkdir()
        env = {
            "TOOLSHED_HOME": str(home),
            "TOOLSHED_CONFIG": str(config),
            "TOOLSHED_CURATED_DIR": str(tmp_path / "no-curated"),
            "TOOLSHED_STORE__URL": url,
            "TOOLSHED_SERVER__REPLICA": name,
            "PATH": os.environ.get("PATH", ""),
        }
        if replicas:
            # One key seals secret config values for every replica (a Secret, deployed).
            shutil.copy(tmp_path / "a" / "secret.key", home / "secret.key")
        admin = subprocess.run([toolshed_bin, "token"], env=env, capture_output=True, text=True,
                               check=True, timeout=30).stdout.strip()
        proc = subprocess.Popen(
            [toolshed_bin, "--workspace", str(workspace), "serve", "--port", "0"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        procs.append(proc)
        for line in proc.stderr:
            if line.startswith("listening on "):
                threading.Thread(target=lambda p=proc: [None for _ in p.stderr], daemon=True).start()
                base = line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
                break
        else:
            pytest.fail(f"replica {name} did not start")
        replicas.append({"base": base, "admin": admin, "env": env})
    # An agent token made once, through either replica's CLI: it is in the shared database.
    agent = subprocess.run(
        [toolshed_bin, "token", "create", "--owner", "team",
         "--scope", "tools:call", "--scope", "tools:list", "--scope", "plugins:admin",
         "--scope", "approvals:answer", "--scope", "audit:read"],
        env=replicas[0]["env"], capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()
    proxy.backends = [int(r["base"].rsplit(":", 1)[1]) for r in replicas]
    yield replicas[0], replicas[1], agent, proxy
    proxy.listener.close()
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_replicas_share_tokens_plugin_choices_approvals_and_the_audit_log(replicas):
    a, b, agent, proxy = replicas
    # The agent token works on both.
    for replica in (a, b):
        status, body = request(replica["base"], "/api/v1/tools/calculator/execute", agent, "POST",
                               {"arguments": {"expression": "6*7"}})
        assert status == 200 and body["content"][0]["text"] == "42", body

    # A plugin disabled through A is gone from B within a second, and back when enabled.
    status, body = request(a["base"], "/api/v1/plugins/system.calculator/disable", agent, "POST")
    assert status == 200, body
    started = time.monotonic()
    while True:
        status, body = request(b["base"], "/api/v1/tools/calculator/execute", agent, "POST",
                               {"arguments": {"expression": "1+1"}})
        if status != 200:
            break
        assert time.monotonic() - started < 1.0, "B still runs a plugin A disabled after a second"
        time.sleep(0.05)
    assert "disabled" in json.dumps(body), body
    request(a["base"], "/api/v1/plugins/system.calculator/enable", agent, "POST")
    started = time.monotonic()
    while request(b["base"], "/api/v1/tools/calculator/execute", agent, "POST",
                  {"arguments": {"expression": "1+1"}})[0] != 200:
        assert time.monotonic() - started < 1.0, "B did not see the plugin enabled again"
        time.sleep(0.05)

    # An approval asked for on A, answered on B, releases A's call.
    answer = {}
    thread = threading.Thread(target=lambda: answer.update(reply=request(
        a["base"], "/api/v1/tools/random/execute", agent, "POST", {"arguments": {"operation": "uuid"}}, timeout=60)))
    thread.start()
    deadline = time.monotonic() + 20
    while True:
        status, pending = request(b["base"], "/api/v1/approvals", agent)
        assert status == 200, pending
        if pending["approvals"]:
            break
        assert time.monotonic() < deadline, "B never listed A's approval request"
        time.sleep(0.1)
    (asked,) = pending["approvals"]
    assert asked["tool"] == "random"
    # A person answers (an agent may not approve its own owner's calls: self_approval).
    status, body = request(b["base"], f"/api/v1/approvals/{asked['id']}/approve", b["admin"], "POST", {})
    assert status == 200, body
    thread.join(timeout=30)
    status, body = answer["reply"]
    assert status == 200 and not body["is_error"], body

    # One audit log: calls made on both replicas, read from either.
    for replica in (a, b):
        status, body = request(replica["base"], "/api/v1/audit?limit=50", agent)
        assert status == 200, body
        tools = [row["tool"] for row in body["audit"]]
        assert tools.count("calculator") >= 4 and "random" in tools, tools


def test_a_job_started_on_one_replica_is_read_on_the_other(replicas):
    a, b, agent, proxy = replicas
    status, body = request(a["base"], "/api/v1/tools/calculator/execute", agent, "POST",
                           {"arguments": {"expression": "6*7"}, "async": True})
    assert status == 202, body
    job = body["job"]["id"]
    deadline = time.monotonic() + 10
    while True:
        status, view = request(b["base"], f"/api/v1/jobs/{job}", agent)
        assert status == 200, view
        if view["state"] != "running":
            break
        assert time.monotonic() < deadline, view
        time.sleep(0.05)
    assert view["state"] == "succeeded" and "42" in json.dumps(view["result"]), view


def test_a_process_id_names_its_replica_and_the_other_says_where_to_go(replicas):
    a, b, agent, proxy = replicas
    status, body = request(a["base"], "/api/v1/tools/process_exec/execute", agent, "POST",
                           {"arguments": {"cmd": "sleep 44.25"}})
    assert status == 200 and not body["is_error"], body
    pid = body["structured"]["id"]
    assert pid.startswith("a.p"), pid
    # Asked on the other replica: not "unknown", but where it runs.
    status, body = request(b["base"], "/api/v1/tools/process_read_output/execute", agent, "POST",
                           {"arguments": {"id": pid}})
    said = json.dumps(body)
    assert status == 404 and "replica `a`" in said and "this is `b`" in said, (status, body)
    status, body = request(a["base"], "/api/v1/tools/process_stop/execute", agent, "POST",
                           {"arguments": {"id": pid}})
    assert status == 200 and not body["is_error"], body


def test_one_event_stream_holds_every_replicas_events(replicas):
    a, b, agent, proxy = replicas
    # B's live stream, open before anything happens on A.
    seen, data, ready = [], [], threading.Event()

    def read():
        req = urllib.request.Request(f"{b['base']}/api/v1/events", headers={"Authorization": f"Bearer {agent}"})
        with urllib.request.urlopen(req, timeout=30) as response:
            ready.set()
            for raw in response:
                line = raw.decode().rstrip("\n")
                if line.startswith("data:"):
                    data.append(line[5:].strip())
                elif line == "" and data:
                    seen.append(json.loads("\n".join(data)))
                    data.clear()
                    if any(e.get("type") == "job.finished" for e in seen):
                        return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert ready.wait(10)
    time.sleep(0.2)
    status, body = request(a["base"], "/api/v1/tools/calculator/execute", agent, "POST",
                           {"arguments": {"expression": "6*7"}, "async": True})
    assert status == 202, body
    job = body["job"]["id"]
    reader.join(timeout=15)
    finished = [e for e in seen if e.get("type") == "job.finished"]
    assert finished and finished[0]["job_id"] == job, seen
    # Read later from either replica, by id, the event is the same one.
    ids = [e["id"] for e in seen if "id" in e]
    assert ids == sorted(ids), ids


FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "plugins", "skillful")


def call_ping(replica, token):
    return request(replica["base"], "/api/v1/tools/skillful_ping/execute", token, "POST",
                   {"arguments": {"target": {"host": "db", "port": 5432}}})


def test_a_plugin_installed_through_one_replica_is_callable_through_the_other(replicas, tmp_path):
    a, b, agent, proxy = replicas
    assert call_ping(b, agent)[0] == 404
    status, body = request(a["base"], "/api/v1/plugins", agent, "POST", {"source": os.path.abspath(FIXTURE)})
    assert status == 201, body
    assert call_ping(a, agent)[0] == 200
    started = time.monotonic()
    while True:
        status, body = call_ping(b, agent)
        if status == 200:
            break
        assert time.monotonic() - started < 1.0, f"B cannot call what A installed after a second: {body}"
        time.sleep(0.05)
    assert "pong" in json.dumps(body).lower(), body
    # B holds the same files, in its own data dir.
    installed = tmp_path / "b" / "plugins" / "test.skillful" / "main.js"
    assert installed.read_bytes() == open(os.path.join(FIXTURE, "main.js"), "rb").read()
    # Uninstalled through B: gone from A too.
    status, body = request(b["base"], "/api/v1/plugins/test.skillful", agent, "DELETE")
    assert status == 200, body
    started = time.monotonic()
    while call_ping(a, agent)[0] == 200:
        assert time.monotonic() - started < 2.0, "A still runs a plugin B uninstalled"
        time.sleep(0.05)
    assert not (tmp_path / "a" / "plugins" / "test.skillful").exists()


def mcp_post(base, token, body, session=None, version="2025-06-18"):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version}
    if session:
        headers["Mcp-Session-Id"] = session
    req = urllib.request.Request(f"{base}/mcp", method="POST", headers=headers, data=json.dumps(body).encode())
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, res.headers.get("Mcp-Session-Id"), res.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, None, e.read().decode()


def test_a_session_of_the_older_protocol_names_its_replica_and_is_refused_elsewhere_with_why(replicas):
    a, b, agent, proxy = replicas
    status, session, _ = mcp_post(a["base"], agent, {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert status == 200 and session and session.startswith("a."), (status, session)
    assert mcp_post(a["base"], agent, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] in (200, 202)
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    status, _, body = mcp_post(a["base"], agent, listing, session)
    assert status == 200 and "calculator" in body, body
    # The same session's request on the other replica: refused, saying where it lives.
    status, _, body = mcp_post(b["base"], agent, listing, session)
    assert status == 404, (status, body)
    message = json.loads(body)["error"]["message"]
    assert "replica `a`" in message and "replica `b`" in message and "2026-07-28" in message, message


def test_a_stateless_mcp_client_calls_through_the_proxy_with_no_affinity(replicas):
    a, b, agent, proxy = replicas
    url = f"http://127.0.0.1:{proxy.port}/mcp"

    async def main():
        # No kept-alive connections: every request is a new connection, to the next replica.
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {agent}"},
                                 limits=httpx.Limits(max_keepalive_connections=0), timeout=30)
        async with http, Client(streamable_http_client(url, http_client=http), mode="auto") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            # Listed or on demand (tool_search names it), it is called by name.
            assert "workspace_read" in names and "tool_search" in names, names
            for i in range(6):
                result = await client.call_tool("calculator", {"expression": f"{i}+1"})
                assert not result.is_error and result.content[0].text == str(i + 1), result

    before = dict(proxy.served)
    asyncio.run(asyncio.wait_for(main(), timeout=60))
    served = [proxy.served.get(port, 0) - before.get(port, 0) for port in proxy.backends]
    assert all(n >= 3 for n in served), f"both replicas served the session's requests: {served}"


def test_a_task_started_on_one_replica_is_read_on_either(replicas):
    """A stateless-era client through the round-robin proxy: the call that became a task ran
    on one replica, and every tasks/get goes to the next one, reading the shared store."""
    a, b, agent, proxy = replicas
    url = f"http://127.0.0.1:{proxy.port}/mcp"

    async def main():
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {agent}"},
                                 limits=httpx.Limits(max_keepalive_connections=0), timeout=30)
        async with http, Client(streamable_http_client(url, http_client=http), mode="auto",
                                extensions=[Tasks()]) as client:
            created = await client.session.call_tool(
                "exec_command", {"cmd": "sleep 2; echo from-a-replica", "yield_ms": 60000}, allow_claimed=True)
            assert isinstance(created, Created), created
            return await settled(client, created.task_id)

    before = dict(proxy.served)
    done = asyncio.run(asyncio.wait_for(main(), timeout=60))
    assert done["status"] == "completed" and "from-a-replica" in text(done["result"]), done
    served = [proxy.served.get(port, 0) - before.get(port, 0) for port in proxy.backends]
    assert all(n >= 2 for n in served), f"both replicas answered the task's requests: {served}"


def test_a_due_schedule_runs_once_across_replicas(replicas):
    a, b, agent, proxy = replicas
    from datetime import datetime, timedelta, timezone
    due = (datetime.now(timezone.utc) + timedelta(seconds=3)).isoformat(timespec="seconds")
    status, body = request(a["base"], "/api/v1/tools/schedule_create/execute", agent, "POST", {"arguments": {
        "name": "once", "at": due, "tool": "calculator", "arguments": {"expression": "40+2"}}})
    assert status == 200, body
    # Both replicas look for due schedules every second; one of them takes it.
    deadline = time.monotonic() + 30
    while True:
        status, body = request(b["base"], "/api/v1/tools/schedule_list/execute", agent, "POST", {"arguments": {}})
        assert status == 200, body
        [entry] = body["structured"]["schedules"]
        if entry["last_job"]:
            break
        assert time.monotonic() < deadline, entry
        time.sleep(0.2)
    assert entry["runs"] == 1 and entry["next"] is None, entry
    time.sleep(2.5)  # both replicas have looked again since
    status, audit = request(a["base"], "/api/v1/audit?tool=calculator&limit=50", agent)
    assert status == 200, audit
    scheduled = [row for row in audit["audit"] if row["door"] == "schedule"]
    assert len(scheduled) == 1, scheduled
    # The job is read through either replica.
    for replica in (a, b):
        status, job = request(replica["base"], f"/api/v1/jobs/{entry['last_job']}", agent)
        assert status == 200 and job["owner"] == "team", job
