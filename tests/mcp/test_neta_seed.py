"""What Neta's users find in toolshed (issue 60's Neta lines), through the Python MCP
client over stdio."""

import asyncio
import os

from mcp import Client


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


def test_workspace_stat_says_whether_the_caller_may_read_and_write(server, workspace):
    """Neta's `access(path, read|write)`: the kernel's answer, narrowed by toolshed's rules."""
    (workspace / "open.txt").write_text("x")
    (workspace / "kept.txt").write_text("x")
    os.chmod(workspace / "kept.txt", 0o444)

    async def stat(params, path):
        async with Client(params, mode="legacy") as client:
            return await client.call_tool("workspace_stat", {"path": path})

    open_ = run(stat(server(), "open.txt"))
    assert open_.structured_content["access"] == {"read": True, "write": True}, open_.structured_content
    kept = run(stat(server(), "kept.txt"))
    assert kept.structured_content["access"] == {"read": True, "write": False}
    assert "write permission" in kept.content[0].text, kept.content
    # A read-only sandbox writes nothing, and says so.
    params = server()
    params.env["TOOLSHED_SANDBOX__MODE"] = "read-only"
    ro = run(stat(params, "open.txt"))
    assert ro.structured_content["access"] == {"read": True, "write": False}
    assert "read-only" in ro.content[0].text, ro.content


def test_a_remote_workspaces_reads_are_retried_after_a_transient_failure(toolshed_bin, home, tmp_path):
    """Neta's retries: a read that meets a lost worker and a runtime failing once is asked
    again with backoff, and the audit row says so (that a write is never repeated:
    crates/toolshed-cli/tests/remote.rs)."""
    import subprocess
    import threading
    import time

    from test_approvals import request

    inside = tmp_path / "inside"
    inside.mkdir()
    (inside / "app.txt").write_text("in the container\n")
    fail_once = tmp_path / "fail-once"
    runtime = tmp_path / "fake-docker"
    # A container runtime stand-in: `exec -i box CMD…` runs CMD here, unless told to fail once.
    runtime.write_text(
        "#!/bin/sh\n"
        f"if [ -e {fail_once} ]; then rm -f {fail_once}; echo 'Error: the daemon is restarting' >&2; exit 1; fi\n"
        "shift 3\nexec \"$@\"\n"
    )
    runtime.chmod(0o755)
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), "PATH": os.environ["PATH"],
           "TOOLSHED_WORKSPACE__RUNTIME": str(runtime), "TOOLSHED_WORKSPACE__WORKER": toolshed_bin,
           "TOOLSHED_SANDBOX__MODE": "full-access"}
    token = subprocess.run([toolshed_bin, "token"], env=env, capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    proc = subprocess.Popen([toolshed_bin, "--workspace", f"docker://box{inside}", "serve", "--port", "0"],
                            env=env, cwd=str(tmp_path), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if line.startswith("listening on "):
                threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
                base = line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
                break
        else:
            raise AssertionError("toolshed serve exited before listening")

        def call(tool, arguments):
            return request(f"{base}/api/v1/tools/{tool}/execute", token, "POST", {"arguments": arguments})

        def lose_the_worker():
            subprocess.run(["pkill", "-KILL", "-f", f"worker --root {inside}"], check=True)
            fail_once.write_text("")
            time.sleep(0.2)

        status, read = call("workspace_read", {"path": "app.txt"})
        assert status == 200 and "in the container" in read["content"][0]["text"], read

        lose_the_worker()
        status, read = call("workspace_read", {"path": "app.txt"})
        assert status == 200 and "in the container" in read["content"][0]["text"], read
        assert not fail_once.exists(), "the runtime was asked again"
        status, audit = request(f"{base}/api/v1/audit?tool=workspace_read&limit=5", token)
        row = next(r for r in audit["audit"] if r["call_id"] == read["call_id"])
        assert "retried: `read`" in (row.get("note") or "") and "daemon is restarting" in row["note"], row

    finally:
        proc.terminate()
        proc.wait(timeout=30)


PEEK = """---
name: peek
description: Tries to read what it may and what it may not.
---
Run scripts/peek.sh with a file to count.
"""

PEEK_SH = """echo "own: $(sed -n 2p "$SKILL_DIR/SKILL.md")"
echo "secret: $(cat secret.txt 2>/dev/null || echo unreadable)"
echo "data: $(cat data/rows.csv 2>/dev/null || echo unreadable)"
echo "state: $(ls "$TOOLSHED_HOME" 2>/dev/null | head -1 || true)"
(echo x > data/new) 2>/dev/null && echo "write: wrote" || echo "write: refused"
echo "args: $*"
exit "${EXIT:-0}"
"""


def test_a_skills_script_reads_its_own_folder_and_what_is_granted_nothing_else(toolshed_bin, workspace, home, tmp_path):
    """Neta's sandboxed skills: through `skill_run`, a skill's script reads its folder
    (even in .toolshed/skills) and the workspace folders granted read-only; nothing else."""
    import json
    import subprocess

    skill = workspace / ".claude" / "skills" / "peek"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(PEEK)
    (skill / "scripts" / "peek.sh").write_text(PEEK_SH)
    inner = workspace / ".toolshed" / "skills" / "inner"
    inner.mkdir(parents=True)
    (inner / "SKILL.md").write_text(PEEK.replace("name: peek", "name: inner"))
    (inner / "peek.sh").write_text(PEEK_SH)
    (workspace / "secret.txt").write_text("top secret\n")
    (workspace / "data").mkdir()
    (workspace / "data" / "rows.csv").write_text("a,b\n")
    (workspace / "elsewhere").symlink_to(home)
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), "PATH": os.environ["PATH"]}

    def run_skill(arguments, **more_env):
        done = subprocess.run(
            [toolshed_bin, "--workspace", str(workspace), "call", "skill_run", "--json", "--args", json.dumps(arguments)],
            env={**env, **more_env}, capture_output=True, text=True, timeout=60,
        )
        return done, (json.loads(done.stdout) if done.stdout.startswith("{") else None)

    done, out = run_skill({"name": "peek", "script": "scripts/peek.sh", "args": ["x y"]})
    assert done.returncode == 0, done.stdout + done.stderr
    said = out["structured"]["stdout"]
    assert "own: name: peek" in said, said
    assert "secret: unreadable" in said and "data: unreadable" in said, said
    assert "state: \n" in said or said.count("state:") == 1 and "toolshed.db" not in said, said
    assert "args: x y" in said, said

    done, out = run_skill({"name": "peek", "script": "scripts/peek.sh", "read": ["data"]})
    said = out["structured"]["stdout"]
    assert "data: a,b" in said and "write: refused" in said and "secret: unreadable" in said, said
    assert not (workspace / "data" / "new").exists()

    # A skill in .toolshed/skills (which commands never see) runs and reads its folder.
    done, out = run_skill({"name": "inner", "script": "peek.sh"})
    assert "own: name: inner" in out["structured"]["stdout"], out

    # A failing script is an error result with its exit code.
    done, out = run_skill({"name": "peek", "script": "scripts/peek.sh"}, EXIT="3")
    assert out["is_error"] and out["structured"]["exit_code"] == 3, out

    # What cannot be granted is refused, naming it; nothing runs.
    for read, why in ((["."], "whole workspace"), ([".toolshed/skills"], "toolshed's own"),
                      (["elsewhere"], "symbolic link"), (["data/rows.csv"], "is a file"), (["../x"], "read")):
        done, out = run_skill({"name": "peek", "script": "scripts/peek.sh", "read": read})
        text = done.stdout + done.stderr
        assert done.returncode != 0 and why in text, (read, text)
    done, out = run_skill({"name": "peek", "script": "../../../secret.txt"})
    assert done.returncode != 0 and "no script" in done.stdout + done.stderr

    # Where commands run with full access, a skill's script is still confined.
    done, out = run_skill({"name": "peek", "script": "scripts/peek.sh"}, TOOLSHED_SANDBOX__MODE="full-access")
    assert done.returncode == 0 and "secret: unreadable" in out["structured"]["stdout"], done.stdout + done.stderr


def test_several_workspace_roots_are_reached_by_name_and_each_is_granted_to_commands(toolshed_bin, home, tmp_path):
    """Neta's several roots per session: `--workspace A --workspace B` (or a client's
    roots), files of B reached as `@B/path` or by absolute path, commands run in a root
    with `workdir: @B` and write every root, each root's `.toolshed/` hidden, nothing
    reached past a root, and a confined skill script sees none of them."""
    import json

    from mcp import StdioServerParameters, types

    app, lib = tmp_path / "app", tmp_path / "lib"
    (app / "src").mkdir(parents=True)
    (lib / "src").mkdir(parents=True)
    (app / "a.txt").write_text("in app\n")
    (lib / "src" / "x.txt").write_text("in lib\n")
    (lib / ".toolshed").mkdir()
    (lib / ".toolshed" / "secret").write_text("lib's own state\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    skill = app / ".claude" / "skills" / "peek"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(PEEK)
    (skill / "peek.sh").write_text(f'echo "lib: $(cat {lib}/src/x.txt 2>/dev/null || echo unreadable)"\n')
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), "PATH": os.environ["PATH"]}

    def text(result):
        return "".join(getattr(c, "text", "") for c in result.content)

    async def check(client):
        read = await client.call_tool("workspace_read", {"path": "@lib/src/x.txt"})
        assert not read.is_error and "in lib" in text(read), read
        by_place = await client.call_tool("workspace_read", {"path": str(lib / "src" / "x.txt")})
        assert not by_place.is_error and "in lib" in text(by_place), by_place
        primary = await client.call_tool("workspace_read", {"path": "a.txt"})
        assert "in app" in text(primary)

        wrote = await client.call_tool("workspace_write", {"path": "@lib/new.txt", "content": "new\n"})
        assert not wrote.is_error, wrote
        assert (lib / "new.txt").read_text() == "new\n" and not (app / "new.txt").exists()

        found = await client.call_tool("workspace_glob", {"pattern": "**/*.txt", "path": "@lib"})
        assert "@lib/src/x.txt" in text(found) and "@lib/new.txt" in text(found), text(found)
        hits = await client.call_tool("workspace_grep", {"pattern": "in lib", "path": "@lib"})
        assert "@lib/src/x.txt" in text(hits), text(hits)

        ran = await client.call_tool("exec_command", {
            "command": f"pwd; echo from-lib > made.txt; echo both > {app}/both.txt; cat {lib}/.toolshed/secret 2>&1 || true",
            "workdir": "@lib/src"})
        said = text(ran)
        assert str(lib / "src") in said, said
        assert (lib / "src" / "made.txt").exists() and (app / "both.txt").exists()
        assert "lib's own state" not in said, "a further root's .toolshed/ must stay hidden from commands"

        for path in ["@lib/../outside.txt", "@lib/.toolshed/secret", "@lib/../app/a.txt"]:
            refused = await client.call_tool("workspace_read", {"path": path})
            assert refused.is_error, path
            assert "lib's own state" not in text(refused) and "in app" not in text(refused), path

        peek = await client.call_tool("skill_run", {"name": "peek", "script": "peek.sh"})
        assert "lib: unreadable" in text(peek) + json.dumps(getattr(peek, "structured_content", None) or {}), peek
        # A folder of a further root is granted as `@lib/folder`.
        granted = await client.call_tool("skill_run", {"name": "peek", "script": "peek.sh", "read": ["@lib/src"]})
        assert "lib: in lib" in text(granted) + json.dumps(getattr(granted, "structured_content", None) or {}), granted

    params = StdioServerParameters(
        command=toolshed_bin, args=["--workspace", str(app), "--workspace", str(lib), "mcp"],
        env=env, cwd=str(app),
    )

    async def flags():
        async with Client(params) as client:
            await check(client)

    run(flags())

    # The same from a client's roots, with no --workspace at all.
    (lib / "new.txt").unlink()
    (lib / "src" / "made.txt").unlink()
    roots_params = StdioServerParameters(command=toolshed_bin, args=["mcp"], env=env, cwd="/")

    async def list_roots(_context):
        return types.ListRootsResult(roots=[types.Root(uri=app.as_uri()), types.Root(uri=lib.as_uri())])

    async def roots():
        async with Client(roots_params, mode="legacy", list_roots_callback=list_roots) as client:
            await check(client)

    run(roots())

    # toolshed's own data dir inside a further root stays hidden from tools and commands.
    import subprocess
    inside = {**env, "TOOLSHED_HOME": str(lib / "state")}
    base = [toolshed_bin, "--workspace", str(app), "--workspace", str(lib), "call"]
    read = subprocess.run([*base, "workspace_read", "--args", json.dumps({"path": "@lib/state/secret.key"})],
                          env=inside, cwd=str(app), capture_output=True, text=True, timeout=60)
    assert read.returncode != 0 and "hidden" in read.stderr, read.stderr
    ran = subprocess.run([*base, "exec_command", "--args", json.dumps({"command": f"cat {lib}/state/secret.key; echo x > {lib}/state/evil"})],
                         env=inside, cwd=str(app), capture_output=True, text=True, timeout=60)
    assert "Permission denied" in ran.stdout + ran.stderr and not (lib / "state" / "evil").exists(), ran.stdout

    # Over HTTP, the session's instructions name the further roots and how to reach them.
    import threading
    import urllib.request
    token = subprocess.run([toolshed_bin, "token"], env=env, capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    proc = subprocess.Popen([toolshed_bin, "--workspace", str(app), "--workspace", str(lib), "serve", "--port", "0"],
                            env=env, cwd=str(app), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in proc.stderr:
            if line.startswith("listening on "):
                url = line.split(" ", 2)[2].strip()
                threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
                break
        assert url, "toolshed serve did not start"
        hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).encode()
        sent = urllib.request.Request(url, data=hello, method="POST", headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        with urllib.request.urlopen(sent, timeout=30) as response:
            body = response.read().decode()
        assert f"@lib = {lib}" in body and "@NAME/path" in body, body
    finally:
        proc.terminate()
        proc.wait(timeout=30)
