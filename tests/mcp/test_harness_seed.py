"""What the TypeScript agent harness's users find in toolshed (issue 60's harness lines):
file-policy events on the owner's event stream, and a reminder when a call is repeated."""

import asyncio
import json

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from test_lifecycle_events import Stream


def run(coro, timeout=90):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


async def calls(url, token, *steps):
    """Runs each (tool, arguments) through one MCP-over-HTTP session; returns the results."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    client = Client(streamable_http_client(url, http_client=http), mode="legacy")
    results = []
    async with http, client:
        for tool, arguments in steps:
            results.append(await client.call_tool(tool, arguments))
    return results


def test_denied_reads_and_writes_reach_the_owners_event_stream(serve, workspace, home, token_for):
    (home / "policy.toml").write_text(
        '[[policy.rule]]\nname = "no secrets"\nwhen = { writes = { glob = "secrets/**" } }\n'
        'decision = "deny"\nmessage = "secrets/ is off limits"\n'
    )
    (workspace / "notes.txt").write_text("hello\n")
    url, admin = serve({"TOOLSHED_CONFIG": str(home / "policy.toml")})
    base = url.rsplit("/mcp", 1)[0]
    alice, bob = token_for("alice"), token_for("bob")
    mine, theirs, operator = Stream(base, alice), Stream(base, bob), Stream(base, admin)
    results = run(calls(url, alice,
        ("workspace_write", {"path": "secrets/key.txt", "content": "x"}),
        ("workspace_read", {"path": "../../etc/passwd"}),
        ("workspace_read", {"path": "notes.txt"}),
    ))
    assert results[0].is_error and "off limits" in text(results[0])
    assert results[1].is_error
    assert not results[2].is_error

    write = mine.wait_for(lambda e: e.get("type") == "fs.write.denied")
    assert write["data"]["tool"] == "workspace_write"
    assert write["data"]["paths"] == ["secrets/key.txt"]
    assert write["data"]["rule"] == "no secrets"
    read = mine.wait_for(lambda e: e.get("type") == "fs.read.denied")
    assert read["data"]["paths"] == ["../../etc/passwd"]
    assert read["data"]["rule"] == "workspace jail"
    # Only denials are announced, and only to the owner whose call it was (and the admin).
    assert len([e for e in mine.events if e.get("type", "").startswith("fs.")]) == 2
    operator.wait_for(lambda e: e.get("type") == "fs.read.denied" and e["owner"] == "alice")
    assert not [e for e in theirs.events if e.get("type", "").startswith("fs.")]


def test_a_call_repeated_with_the_same_arguments_says_so(serve, workspace):
    (workspace / "notes.txt").write_text("hello\n")
    url, token = serve()
    same = ("workspace_read", {"path": "notes.txt"})
    other = ("workspace_read", {"path": "notes.txt", "offset": 1})
    results = run(calls(url, token, same, same, other, same, same, same, same))
    reminders = ["note from toolshed" in text(r) for r in results]
    # A different call in between starts the count again: the third identical one in a row
    # says so, and every one after it.
    assert reminders == [False, False, False, False, False, True, True], [text(r) for r in results]
    assert "`workspace_read` with the same arguments) 3 times in a row" in text(results[5])
    assert "4 times in a row" in text(results[6])
    # A failing call repeated says so in its error too.
    missing = ("workspace_read", {"path": "nothing-here.txt"})
    failed = run(calls(url, token, missing, missing, missing))
    assert failed[2].is_error and "note from toolshed" in text(failed[2])
    assert "note from toolshed" not in text(failed[1])


def test_the_repeat_reminder_can_be_turned_off(serve, workspace):
    (workspace / "notes.txt").write_text("hello\n")
    url, token = serve({"TOOLSHED_LIMITS__REPEAT_REMINDER_AFTER": "0"})
    same = ("workspace_read", {"path": "notes.txt"})
    results = run(calls(url, token, *[same] * 5))
    assert not any("note from toolshed" in text(r) for r in results)


def test_plugins_manage_is_off_until_enabled_asks_by_default_and_manages_plugins(server, home, workspace, toolshed_bin):
    """The harness's model-facing plugin tool: off by default, danger high (asked about),
    and through it a model lists, inspects, disables, enables and reloads plugins."""
    import subprocess

    from mcp import Client
    from mcp.shared.exceptions import MCPError

    def names(params):
        async def main():
            async with Client(params, mode="legacy") as client:
                return {t.name for t in (await client.list_tools()).tools}
        return run(main())

    assert "plugins_manage" not in names(server("--catalog", "full"))
    done = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "plugins", "enable", "system.plugins_manage"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "plugins_manage" in names(server("--catalog", "full"))

    # Its danger is high: a policy that asks about high-danger tools asks about it. With
    # nobody to answer (this client cannot be asked), the call is refused.
    (home / "ask.toml").write_text('[policy.default]\nhigh = "ask"\n[approvals]\ntimeout_secs = 1\n')
    params = server("--catalog", "full")
    params.env["TOOLSHED_CONFIG"] = str(home / "ask.toml")

    async def asked():
        async with Client(params, mode="legacy") as client:
            return await client.call_tool("plugins_manage", {"action": "list"})
    refused = run(asked())
    assert refused.is_error and "approv" in text(refused), text(refused)

    # Under the default policy the model manages the plugins.
    params = server("--catalog", "full")

    async def manage():
        async with Client(params, mode="legacy") as client:
            listed = await client.call_tool("plugins_manage", {"action": "list"})
            ids = {p["id"]: p["state"] for p in listed.structured_content["plugins"]}
            assert ids["system.random"] == "running", ids
            seen = await client.call_tool("plugins_manage", {"action": "inspect", "id": "system.random"})
            assert seen.structured_content["description"] and seen.structured_content["kind"] == "builtin"
            off = await client.call_tool("plugins_manage", {"action": "disable", "id": "system.random"})
            assert off.structured_content["state"] == "disabled", off
            try:
                await client.call_tool("random", {})
                raise AssertionError("a disabled plugin's tool ran")
            except MCPError as e:
                assert "disabled" in str(e), e
            on = await client.call_tool("plugins_manage", {"action": "enable", "id": "system.random"})
            assert on.structured_content["state"] == "running", on
            again = await client.call_tool("plugins_manage", {"action": "reload", "id": "system.random"})
            assert again.structured_content["state"] == "running", again
            itself = await client.call_tool("plugins_manage", {"action": "disable", "id": "system.plugins_manage"})
            assert itself.is_error and "own plugin" in text(itself), text(itself)
            missing = await client.call_tool("plugins_manage", {"action": "inspect"})
            assert missing.is_error and "`id`" in text(missing), text(missing)
    run(manage())


def test_run_code_offers_typescript_declarations_of_the_tools_it_can_call(server):
    """The declarations come as an MCP resource (nothing added to tools/list), of exactly the
    tools the caller may call from a snippet."""
    from mcp import Client

    async def main(params):
        async with Client(params, mode="legacy") as client:
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            if "toolshed://run_code/tools.d.ts" not in listed:
                return None, [t.name for t in (await client.list_tools()).tools]
            read = await client.read_resource("toolshed://run_code/tools.d.ts")
            return read.contents[0].text, [t.name for t in (await client.list_tools()).tools]

    text_, names = run(main(server()))
    assert text_ is not None and "run_code" in names
    assert "declare const tools: {" in text_
    assert "  workspace_read(args: {" in text_ and "    path: string;" in text_, text_[:2000]
    assert "calculator(args: {" in text_ and "expression: string;" in text_
    assert "run_code(" not in text_
    assert not any("d.ts" in n for n in names)

    # Narrowed to a few tools, the declarations are of those; without run_code, none.
    text_, _ = run(main(server("--tools", "run_code,calculator")))
    assert "calculator(args" in text_ and "workspace_read" not in text_, text_
    text_, _ = run(main(server("--tools", "calculator")))
    assert text_ is None


def test_human_commands_run_without_the_model_as_mcp_prompts_and_over_rest(serve, home):
    """The harness's slash commands: `status`, `approvals`, `approve ID`, `deny ID`, as MCP
    prompts (getting one runs it) and as POST /api/v1/commands/NAME."""
    import time

    from test_approvals import request

    (home / "ask.toml").write_text(
        '[[policy.rule]]\nname = "ask about arithmetic"\ntools = ["calculator"]\ndecision = "ask"\n'
    )
    url, token = serve({"TOOLSHED_CONFIG": str(home / "ask.toml")})
    base = url.rsplit("/mcp", 1)[0]
    execute = f"{base}/api/v1/tools/calculator/execute"

    def waiting_job(expression):
        status, started = request(execute, token, "POST", {"arguments": {"expression": expression}, "async": True})
        assert status == 202, started
        for _ in range(100):
            status, listed = request(f"{base}/api/v1/approvals", token)
            mine = [a for a in listed["approvals"] if a["state"] == "pending" and expression in a["summary"]]
            if mine:
                return started["job"]["id"], mine[0]["id"]
            time.sleep(0.05)
        raise AssertionError("no approval request appeared")

    def job_state(job):
        for _ in range(100):
            status, view = request(f"{base}/api/v1/jobs/{job}", token)
            if view["state"] != "running":
                return view
            time.sleep(0.05)
        return view

    job, approval = waiting_job("6*7")

    async def over_mcp():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            names = [p.name for p in (await client.list_prompts()).prompts]
            assert {"status", "approvals", "approve", "deny"} <= set(names), names
            status = await client.get_prompt("status")
            said = status.messages[0].content.text
            assert "plugins:" in said and "approvals waiting: 1" in said, said
            waiting = (await client.get_prompt("approvals")).messages[0].content.text
            assert approval in waiting and "calculator" in waiting, waiting
            done = (await client.get_prompt("approve", {"id": approval})).messages[0].content.text
            assert done.startswith(f"Approved {approval}"), done
            try:
                await client.get_prompt("approve", {"id": approval})
                raise AssertionError("an answered request was answered again")
            except Exception as e:
                assert "not pending" in str(e), e

    run(over_mcp())
    view = job_state(job)
    assert view["state"] == "succeeded" and "42" in json.dumps(view["result"]), view

    # Over REST: deny one, and the mistakes are named.
    job, approval = waiting_job("1+1")
    status, said = request(f"{base}/api/v1/commands/deny/{approval}", token, "POST")
    assert status == 200 and said["text"].startswith(f"Denied {approval}"), said
    assert job_state(job)["state"] == "failed"
    status, said = request(f"{base}/api/v1/commands/status", token, "POST")
    assert status == 200 and said["data"]["approvals_pending"] == 0 and said["data"]["plugins"]["running"] > 5, said
    status, listed = request(f"{base}/api/v1/commands", token)
    assert [c["name"] for c in listed["commands"]] == ["status", "approvals", "approve", "deny"], listed
    status, said = request(f"{base}/api/v1/commands/approve", token, "POST")
    assert status == 404 and "/api/v1/commands/approve/ID" in said["error"]["message"], said
    status, said = request(f"{base}/api/v1/commands/approve/ap-999999", token, "POST")
    assert status == 404 and "no approval request" in said["error"]["message"], said
    status, said = request(f"{base}/api/v1/commands/status/x", token, "POST")
    assert status == 404 and "takes no id" in said["error"]["message"], said
    status, said = request(f"{base}/api/v1/commands/reboot", token, "POST")
    assert status == 404 and "status, approvals, approve, deny" in said["error"]["message"], said


def test_presentation_native_code_or_both_by_profile_or_token(server, home, token_for, toolshed_bin, workspace):
    import subprocess

    (home / "present.toml").write_text(
        '[profiles.coder]\npresentation = "code"\n[profiles.plain]\npresentation = "native"\n'
    )

    async def listed(params):
        async with Client(params, mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            ran = None
            if "run_code" in names:
                ran = await client.call_tool("run_code", {"code": 'return await tools.calculator({expression: "6*7"})'})
            return names, ran

    def params(*flags, **env):
        p = server(*flags)
        p.env = {**p.env, "TOOLSHED_CONFIG": str(home / "present.toml"), **env}
        return p

    from mcp import Client

    names, ran = run(listed(params("--profile", "coder")))
    assert names == ["run_code"], names
    assert "42" in text(ran), text(ran)
    names, _ = run(listed(params("--profile", "plain")))
    assert "run_code" not in names and "calculator" in names, names
    names, _ = run(listed(params()))
    assert "run_code" in names and "workspace_read" in names

    # By token: its presentation scope.
    coder = subprocess.run(
        [toolshed_bin, "token", "create", "--owner", "carol", "--scope", "tools:call", "--scope", "tools:list",
         "--scope", "presentation:code"],
        env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()
    names, _ = run(listed(params(TOOLSHED_TOKEN=coder)))
    assert names == ["run_code"], names

    # A presentation that is not one is refused, naming the choices.
    (home / "bad.toml").write_text('[profiles.x]\npresentation = "mixed"\n')
    done = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "--config", str(home / "bad.toml"), "tools", "list"],
        env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode != 0 and "native, code or both" in done.stderr, done.stderr


SHELL_ENV_PLUGIN = """
id = "test.dsh"
version = "1.0.0"
name = "Shell environment"
kind = "js"
[capabilities.shell_env]
DSH_NOTES_DIR = "${plugin_dir}/notes"
DSH_GREETING = "hello from a plugin"
"""

SHELL_ENV_JS = """
export function activate(context) {
  context.registerActions([{ name: "dsh_ping", description: "Answers.", async run() { return "pong"; } }]);
}
"""


def test_a_plugin_granted_shell_env_adds_its_variables_to_commands(serve, toolshed_bin, workspace, home, tmp_path, token_for):
    import subprocess

    from test_approvals import request

    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}

    def toolshed(*args):
        return subprocess.run([toolshed_bin, "--workspace", str(workspace), *args], env=env,
                              capture_output=True, text=True, timeout=120)

    # A manifest may not contribute what changes every program (PATH, LD_PRELOAD...).
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "plugin.toml").write_text(SHELL_ENV_PLUGIN.replace('id = "test.dsh"', 'id = "test.bad"') + 'LD_PRELOAD = "/tmp/x.so"\n')
    (bad / "main.js").write_text(SHELL_ENV_JS)
    refused = toolshed("plugins", "install", str(bad))
    assert refused.returncode != 0 and "shell_env" in refused.stderr and "LD_PRELOAD" in refused.stderr, refused.stderr

    source = tmp_path / "dsh"
    source.mkdir()
    (source / "plugin.toml").write_text(SHELL_ENV_PLUGIN)
    (source / "main.js").write_text(SHELL_ENV_JS)
    done = toolshed("plugins", "install", str(source))
    assert done.returncode == 0, done.stderr
    echo = json.dumps({"cmd": "echo \"[$DSH_GREETING|$DSH_NOTES_DIR]\""})

    # Not granted: nothing reaches commands.
    ran = toolshed("call", "exec_command", "--args", echo)
    assert ran.returncode == 0 and "[|]" in ran.stdout, ran.stdout + ran.stderr

    done = toolshed("plugins", "grant", "test.dsh", "shell-env")
    assert done.returncode == 0, done.stderr
    ran = toolshed("call", "exec_command", "--args", echo)
    assert "[hello from a plugin|" in ran.stdout and "/test.dsh/notes]" in ran.stdout, ran.stdout + ran.stderr
    doctor = toolshed("doctor")
    assert "DSH_GREETING (plugin test.dsh)" in doctor.stdout, doctor.stdout
    assert "hello from a plugin" not in doctor.stdout, "doctor shows no values"

    # A call's own env wins; over REST the layer is listed by name; paused, it is gone.
    url, admin = serve()
    base = url.rsplit("/mcp", 1)[0]
    alice = token_for("alice")
    status, ran = request(f"{base}/api/v1/tools/exec_command/execute", alice, "POST",
                          {"arguments": {"cmd": "echo \"[$DSH_GREETING]\"", "env": {"DSH_GREETING": "mine"}}})
    assert status == 200 and "[mine]" in ran["content"][0]["text"], ran
    status, layers = request(f"{base}/api/v1/env", alice)
    assert status == 200, layers
    assert {"name": "DSH_GREETING", "plugin": "test.dsh"} in layers["plugins"], layers
    assert all("hello" not in json.dumps(v) for v in layers["plugins"]), layers
    done = toolshed("plugins", "pause", "test.dsh")
    assert done.returncode == 0, done.stderr
    for _ in range(100):
        status, layers = request(f"{base}/api/v1/env", alice)
        if not layers["plugins"]:
            break
        import time
        time.sleep(0.1)
    assert layers["plugins"] == [], layers
    status, ran = request(f"{base}/api/v1/tools/exec_command/execute", alice, "POST",
                          {"arguments": {"cmd": "echo \"[$DSH_GREETING]\""}})
    assert status == 200 and "[]" in ran["content"][0]["text"], ran


def test_write_stdin_waits_for_the_prompt_and_terminal_sessions_are_listed_and_stopped_as_jobs(serve, token_for):
    """The harness's terminal readiness: write_stdin answers when the shell shows its
    prompt again, not at the first short silence, and says so; a terminal session is
    listed over REST with the tool that stops it, and stopped there through the pipeline."""
    from test_approvals import request

    url, admin = serve()
    base = url.rsplit("/mcp", 1)[0]
    alice = token_for("alice")

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {alice}"})
        client = Client(streamable_http_client(url, http_client=http), mode="legacy")
        async with http, client:
            started = await client.call_tool("exec_command", {
                "cmd": "bash --norc --noprofile -i", "tty": True, "yield_ms": 3000})
            session = started.structured_content["session_id"]
            # Output, a pause longer than the old 50 ms settle, more output, then the prompt.
            typed = await client.call_tool("write_stdin", {
                "session_id": session, "chars": "echo first; sleep 0.4; echo second\n", "yield_ms": 10000})
            said = text(typed)
            assert "first" in said and "second" in said, said
            terminal = typed.structured_content["terminal"]
            assert terminal["state"] == "ready" and terminal["prompt"].endswith(("$ ", "# ")), terminal
            assert "ready for input" in said, said
            # A program that shows no prompt: the wait ends when it goes quiet.
            quiet = await client.call_tool("write_stdin", {"session_id": session, "chars": "cat\n", "yield_ms": 10000})
            assert quiet.structured_content["terminal"]["state"] == "quiet", quiet.structured_content

            status, listed = await asyncio.to_thread(request, f"{base}/api/v1/running?kind=command_session", alice)
            assert status == 200, listed
            item = next(r for r in listed["running"] if r["id"] == str(session))
            assert item["running"] and item["stop_tool"] == "command_run_terminate", item
            status, stopped = await asyncio.to_thread(
                request, f"{base}/api/v1/running/system.exec_command/{session}/stop", alice, "POST")
            assert status == 200, stopped
            status, listed = await asyncio.to_thread(request, f"{base}/api/v1/running?kind=command_session", alice)
            item = next(r for r in listed["running"] if r["id"] == str(session))
            assert not item["running"], item
            # Another owner's session is not theirs to stop.
            bob = token_for("bob")
            status, refused = await asyncio.to_thread(
                request, f"{base}/api/v1/running/system.exec_command/{session}/stop", bob, "POST")
            assert status == 404, refused

    run(main())
    status, audit = request(f"{base}/api/v1/audit?tool=command_run_terminate&limit=5", admin)
    assert any(r["owner"] == "alice" for r in audit["audit"]), audit
