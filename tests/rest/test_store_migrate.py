"""`toolshed store migrate --to postgres://…`: a toolshed that ran on its SQLite file —
memories, an agent token, approvals, a job, a todo list, audit rows, a plugin disabled —
moves everything into an empty Postgres database; the counts it prints match what each
side holds, and a `toolshed serve` pointed at the database then finds every one of them.
A second move into the same database is refused. Needs the throwaway cluster scripts/test
starts (TOOLSHED_TEST_POSTGRES_URL)."""

import glob
import json
import os
import sqlite3
import subprocess
import threading
import time
import urllib.request

import pytest

ADMIN_URL = os.environ.get("TOOLSHED_TEST_POSTGRES_URL")
if not ADMIN_URL:
    if os.environ.get("TOOLSHED_REQUIRE_POSTGRES"):
        raise RuntimeError("TOOLSHED_REQUIRE_POSTGRES is set but TOOLSHED_TEST_POSTGRES_URL is not")
    pytest.skip("no Postgres: run through scripts/test", allow_module_level=True)


def psql(url, sql):
    binary = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))[-1]
    out = subprocess.run([binary, url, "-qAt", "-c", sql], check=True, capture_output=True, text=True, timeout=30)
    return out.stdout.strip()


def test_everything_moves_to_postgres_and_is_served_from_there(toolshed_bin, tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(tmp_path / "none"), "PATH": os.environ["PATH"]}

    def toolshed(*args, extra=None, check=True):
        done = subprocess.run([toolshed_bin, "--workspace", str(workspace), *args], env={**env, **(extra or {})},
                              capture_output=True, text=True, timeout=120)
        if check:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    # A toolshed's life on its file.
    agent = toolshed("token", "create", "--owner", "alice").stdout.strip()
    for text in ["The staging database listens on 5433.", "Deploys go out on Tuesdays."]:
        toolshed("call", "memory_store", "--args", json.dumps({"text": text, "tags": ["ops"]}))
    toolshed("call", "todo_write", "--args", json.dumps({"todos": [{"id": "1", "text": "ship", "status": "pending"}]}))
    toolshed("plugins", "disable", "system.random")
    for i in range(30):
        toolshed("call", "calculator", "--args", json.dumps({"expression": f"{i}+1"}))
    local = sqlite3.connect(home / "toolshed.db")
    before = {t: local.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ["audit", "memories", "tokens", "todos", "plugin_state"]}
    local.close()
    assert before["memories"] == 2 and before["tokens"] == 1 and before["audit"] >= 33, before

    database = f"migrate_{os.getpid()}_{int(time.time() * 1000)}"
    psql(ADMIN_URL, f"CREATE DATABASE {database}")
    url = ADMIN_URL.rsplit("/", 1)[0] + "/" + database
    moved = toolshed("store", "migrate", "--to", url, "--json")
    report = json.loads(moved.stdout)
    assert "@" not in report["to"] or ":" not in report["to"].split("@")[0].split("//")[1], report["to"]
    for table, count in before.items():
        assert report["tables"][table] == count, (table, report)
        assert int(psql(url, f"SELECT count(*) FROM {table}")) == count, table
    assert report["rows"] == sum(report["tables"].values())
    # The per-owner memory count was rebuilt by the database's own triggers.
    owners = int(psql(url, "SELECT count(DISTINCT owner) FROM memories"))
    assert owners >= 1
    assert int(psql(url, "SELECT count(*) FROM (SELECT owner, sum(octet_length(text)) AS b FROM memories "
                         "GROUP BY owner) m JOIN memory_usage u USING (owner) WHERE u.bytes = m.b")) == owners

    # Again into the same database: refused, nothing written.
    again = toolshed("store", "migrate", "--to", url, check=False)
    assert again.returncode == 2 and "empty database" in again.stderr, again.stderr
    assert int(psql(url, "SELECT count(*) FROM memories")) == 2

    # A server on the database has it all: the token, the memories (searched there), the
    # disabled plugin, the audit log, and new audit rows numbered after the moved ones.
    pg = {"TOOLSHED_STORE__URL": url}
    proc = subprocess.Popen([toolshed_bin, "--workspace", str(workspace), "serve", "--port", "0"],
                            env={**env, **pg}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if line.startswith("listening on "):
                threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
                base = line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
                break
        else:
            pytest.fail("serve did not start")

        def call(tool, arguments):
            request = urllib.request.Request(f"{base}/api/v1/tools/{tool}/execute", method="POST",
                                             data=json.dumps({"arguments": arguments}).encode(),
                                             headers={"Authorization": f"Bearer {agent}",
                                                      "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())

        listed = call("calculator", {"expression": "6*7"})
        assert listed["content"][0]["text"] == "42"
        plugins = subprocess.run([toolshed_bin, "--workspace", str(workspace), "plugins", "list", "--json"],
                                 env={**env, **pg}, capture_output=True, text=True, timeout=60, check=True)
        state = {p["id"]: p["state"] for p in json.loads(plugins.stdout)["plugins"]}
        assert state["system.random"] == "disabled", state
        searched = toolshed("call", "memory_search", "--args", json.dumps({"query": "staging"}), extra=pg)
        assert "5433" in searched.stdout or "staging" in searched.stdout.lower(), searched.stdout
        audited = json.loads(toolshed("audit", "--limit", "1000", "--json", extra=pg).stdout)["audit"]
        assert len(audited) >= before["audit"] + 1
        ids = [row["id"] for row in audited]
        assert len(set(ids)) == len(ids)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
