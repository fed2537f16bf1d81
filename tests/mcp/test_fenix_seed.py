"""What Fenix's users find in toolshed (issue 60's Fenix lines), over REST and the CLI."""

import json
import subprocess
import urllib.request
from pathlib import Path

from test_approvals import request
from test_lifecycle_events import Stream


def call(base, token, tool, arguments):
    return request(f"{base}/api/v1/tools/{tool}/execute", token, "POST", {"arguments": arguments})


def test_a_stopped_process_has_a_close_request_recorded_with_who_asked_and_how_it_ended(serve, token_for):
    url, admin = serve()
    base = url.rsplit("/mcp", 1)[0]
    alice = token_for("alice")
    stream = Stream(base, alice)

    # One that stops when asked, one that ignores SIGTERM and is killed after the grace.
    status, polite = call(base, alice, "process_exec", {"cmd": "sleep 300", "name": "polite"})
    assert status == 200, polite
    status, stubborn = call(base, alice, "process_exec", {"cmd": "trap '' TERM; while true; do sleep 0.1; done", "name": "stubborn"})
    assert status == 200, stubborn
    polite_id, stubborn_id = polite["structured"]["id"], stubborn["structured"]["id"]

    status, stopped = call(base, alice, "process_stop", {"id": polite_id})
    assert status == 200, stopped
    fields = stopped["structured"]
    assert fields["close_request_id"] == stopped["call_id"]
    assert (fields["requested_by"], fields["asked"], fields["ended"]) == ("alice", "graceful", "graceful"), fields

    status, stopped = call(base, alice, "process_stop", {"id": stubborn_id})
    assert status == 200, stopped
    assert (stopped["structured"]["asked"], stopped["structured"]["ended"]) == ("graceful", "forced"), stopped
    forced_call = stopped["call_id"]

    # The event of each exit says who closed it and how.
    for process_id, ended in ((polite_id, "graceful"), (stubborn_id, "forced")):
        event = stream.wait_for(lambda e, pid=process_id: e.get("type") == "process.exited" and e["data"]["id"] == pid)
        close = event["data"]["close"]
        assert close["requested_by"] == "alice" and close["asked"] == "graceful" and close["ended"] == ended, event

    # And the stop's audit row.
    status, audit = request(f"{base}/api/v1/audit?tool=process_stop&limit=10", admin)
    assert status == 200, audit
    row = next(r for r in audit["audit"] if r["call_id"] == forced_call)
    assert row["note"] == f"close request {forced_call} for {stubborn_id} by alice: asked graceful, ended forced", row

    # A process that had already ended is not closed by anyone.
    status, gone = call(base, alice, "process_stop", {"id": polite_id})
    assert status == 200 and "close_request_id" not in gone["structured"], gone


TICKETS = Path(__file__).resolve().parents[1] / "fixtures" / "seed-plugins" / "fenix-tickets"


def test_a_fenix_catalogs_tool_attributes_planes_and_groups_are_kept_shown_and_honoured(serve, toolshed_bin, workspace, home):
    installed = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "plugins", "install", str(TICKETS)],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
        capture_output=True, text=True, timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    url, token = serve()
    base = url.rsplit("/mcp", 1)[0]

    # The attributes, as written, with the tool.
    status, tool = request(f"{base}/api/v1/tools/ticket_open", token)
    assert status == 200, tool
    assert tool["attributes"] == {
        "tool_kind": "kernel_primitive",
        "resource_identity_kind": "ticket",
        "implementation_source": "plugin_js",
        "implementation_ref": "index.js#ticket_open",
        "idempotency_policy": "by_key",
        "supports_streaming_output": False,
    }, tool
    assert tool["plane"] == "execution" and tool["streaming"] is False
    status, reset = request(f"{base}/api/v1/tools/tickets_reset", token)
    assert reset["plane"] == "program" and reset["annotations"]["idempotent"] is True, reset

    # Idempotent by key: the same key returns the first ticket, whichever way it comes.
    first = call(base, token, "ticket_open", {"title": "printer", "idempotency_key": "k-1"})[1]
    again = call(base, token, "ticket_open", {"title": "printer", "idempotency_key": "k-1"})[1]
    other = call(base, token, "ticket_open", {"title": "screen", "idempotency_key": "k-2"})[1]
    assert first["structured"]["id"] == again["structured"]["id"] == 1, (first, again)
    assert other["structured"]["id"] == 2, other
    assert "idempotency key `k-1` was used before" in again["content"][-1]["text"], again
    assert first["call_id"] in again["content"][-1]["text"]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Idempotency-Key": "h-1"}
    by_header = []
    for _ in range(2):
        req = urllib.request.Request(f"{base}/api/v1/tools/ticket_open/execute", method="POST", headers=headers,
                                     data=json.dumps({"arguments": {"title": "desk"}}).encode())
        with urllib.request.urlopen(req, timeout=60) as response:
            by_header.append(json.loads(response.read()))
    assert by_header[0]["structured"]["id"] == by_header[1]["structured"]["id"] == 3, by_header
    # Without a key, every call runs.
    assert call(base, token, "ticket_open", {"title": "chair"})[1]["structured"]["id"] == 4

    # The two catalogs, as Fenix names them.
    status, program = request(f"{base}/api/v1/tools?plane=program", token)
    assert status == 200 and program["catalog"] == "program", program
    assert [t["name"] for t in program["tools"]] == ["tickets_reset"], program
    status, execution = request(f"{base}/api/v1/tools?plane=execution_runtime", token)
    assert execution["catalog"] == "execution_runtime"
    names = {t["name"] for t in execution["tools"]}
    assert "ticket_open" in names and "tickets_reset" not in names and "workspace_read" in names
    status, bad = request(f"{base}/api/v1/tools?plane=control", token)
    assert status == 400 and "execution" in bad["error"]["message"], bad
    listed = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "tools", "list", "--plane", "program"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
        capture_output=True, text=True, timeout=60,
    )
    assert listed.returncode == 0 and "tickets_reset" in listed.stdout and "ticket_open" not in listed.stdout, listed

    # The groups' metadata: over REST, in the CLI, and toolshed's own groups described too.
    status, groups = request(f"{base}/api/v1/tools/groups", token)
    by_name = {g["name"]: g for g in groups["groups"]}
    assert by_name["tickets"]["label"] == "Support tickets"
    assert by_name["tickets"]["description"] == "Open tickets and read them back."
    assert by_name["tickets_admin"]["label"] == "Ticket service"
    assert by_name["workspace"]["label"] == "Workspace files" and by_name["workspace"]["description"]
    shown = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "tools", "groups"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
        capture_output=True, text=True, timeout=60,
    )
    assert "Support tickets" in shown.stdout and "Open tickets and read them back." in shown.stdout, shown.stdout


def test_a_background_processs_output_is_pushed_to_its_owners_stream(serve, token_for):
    """Fenix pushes process output rather than only polling it: `process.output` events on
    the owner's stream, at most one a second and 4 KiB each; the poll API is unchanged."""
    from test_lifecycle_events import Stream

    url, _admin = serve()
    base = url.rsplit("/mcp", 1)[0]
    alice, bob = token_for("alice"), token_for("bob")
    mine, theirs = Stream(base, alice), Stream(base, bob)
    status, started = call(base, alice, "process_exec", {
        "cmd": "for i in 1 2 3; do echo line-$i; sleep 0.6; done; sleep 2.5; head -c 20000 /dev/zero | tr '\\0' x; echo",
        "name": "talker"})
    assert status == 200, started
    pid = started["structured"]["id"]
    mine.wait_for(lambda e: e.get("type") == "process.exited" and e["data"]["id"] == pid, timeout=30)
    chunks = [e["data"] for e in mine.events if e.get("type") == "process.output" and e["data"]["id"] == pid]
    assert len(chunks) >= 2, chunks
    text_ = "".join(c["text"] for c in chunks)
    for n in (1, 2, 3):
        assert f"line-{n}" in text_, text_[:500]
    assert all(len(c["text"].encode()) <= 4096 + 200 for c in chunks), [len(c["text"]) for c in chunks]
    # 20000 bytes at once are more than one event carries: the newest 4 KiB, the rest counted.
    assert any(c.get("omitted", 0) > 10000 for c in chunks), [c.get("omitted") for c in chunks]
    assert chunks[0]["name"] == "talker" and chunks[0]["offset"] == 0
    assert not [e for e in theirs.events if e.get("type") == "process.output"]
    # Polling still reads it all.
    status, read = call(base, alice, "process_read_output", {"id": pid})
    assert status == 200 and "line-3" in read["content"][0]["text"], read


def test_workspace_init_lays_out_fenixs_workspace_and_its_env_layers_stack(toolshed_bin, workspace, home):
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}

    def toolshed(*args):
        return subprocess.run([toolshed_bin, "--workspace", str(workspace), *args], env=env,
                              capture_output=True, text=True, timeout=60)

    (workspace / "memory").mkdir()
    (workspace / "memory" / "README.md").write_text("mine\n")
    done = toolshed("workspace", "init", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "agent_program_versions/CURRENT" in report["created"] and "conversations/" in report["created"]
    assert "memory/README.md" in report["kept"] and "memory/" in report["kept"], report
    assert (workspace / "memory" / "README.md").read_text() == "mine\n", "an existing file was overwritten"
    assert (workspace / "agent_program_versions" / "CURRENT").read_text().strip() == "v1"
    again = json.loads(toolshed("workspace", "init", "--json").stdout)
    assert again["created"] == [], again

    # .env < .env.agent < the current program version's .env (< the process environment).
    (workspace / ".env").write_text("LAYER_A=1\nLAYER_B=1\n")
    (workspace / ".env.agent").write_text("LAYER_B=2\nLAYER_C=2\n")
    (workspace / "agent_program_versions" / "v1" / ".env").write_text("LAYER_C=3\nLAYER_D=3\n")
    ran = toolshed("call", "exec_command", "--json", "--args", json.dumps({"cmd": "echo $LAYER_A$LAYER_B$LAYER_C$LAYER_D"}))
    assert ran.returncode == 0, ran.stderr
    assert "1233" in ran.stdout, ran.stdout
    doctor = toolshed("doctor")
    assert "LAYER_B (.env.agent)" in doctor.stdout and "LAYER_C (agent_program_versions/v1/.env)" in doctor.stdout, doctor.stdout


def test_a_session_layer_set_over_rest_sits_over_the_env_files_and_under_a_calls_env(serve, workspace, token_for):
    (workspace / ".env").write_text("LAYER_A=file\n")
    (workspace / ".env.agent").write_text("LAYER_B=agent\n")
    url, _ = serve()
    base = url.rsplit("/mcp", 1)[0]
    alice, bob = token_for("alice"), token_for("bob")

    def echo(token, env=None):
        arguments = {"cmd": "echo \"[$LAYER_A|$LAYER_B|$MY_SESSION]\""}
        if env:
            arguments["env"] = env
        status, body = call(base, token, "exec_command", arguments)
        assert status == 200, body
        return body["content"][0]["text"]

    status, layers = request(f"{base}/api/v1/env", alice, "PUT", {"vars": [{"name": "LAYER_B", "value": "sess-value"}, {"name": "MY_SESSION", "value": "s1"}]})
    assert status == 200, layers
    assert layers["session"] == ["LAYER_B", "MY_SESSION"] and layers["owner"] == "alice", layers
    assert any(f["name"] == "LAYER_B" and f["source"].endswith(".env.agent") for f in layers["files"]), layers
    assert "sess-value" not in json.dumps(layers) and "s1" not in json.dumps(layers), "no values are shown"
    assert "[file|sess-value|s1]" in echo(alice)
    assert "[file|sess-value|call]" in echo(alice, {"MY_SESSION": "call"}), "the call's own env wins"
    assert "[file|agent|]" in echo(bob), "another owner's session layer is not bob's"

    # Bad input is named; nothing changes.
    status, error = request(f"{base}/api/v1/env", alice, "PUT", {"vars": [{"name": "1BAD", "value": "x"}]})
    assert status == 400 and "1BAD" in json.dumps(error), error
    assert "[file|sess-value|s1]" in echo(alice)

    status, layers = request(f"{base}/api/v1/env", alice, "DELETE")
    assert status == 200 and layers["session"] == [], layers
    assert "[file|agent|]" in echo(alice)


def test_the_workspace_layout_is_bootstrapped_on_first_use_only_when_asked(toolshed_bin, workspace, home):
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    args = [toolshed_bin, "--workspace", str(workspace), "call", "calculator", "--args", '{"expression": "1+1"}']
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not (workspace / "agent_program_versions").exists(), "no layout unless asked"

    (workspace / "memory").mkdir()
    (workspace / "memory" / "README.md").write_text("mine\n")
    done = subprocess.run(args, env={**env, "TOOLSHED_WORKSPACE__BOOTSTRAP": "true"}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (workspace / "agent_program_versions" / "CURRENT").read_text().strip() == "v1"
    assert (workspace / "conversations" / "README.md").is_file() and (workspace / ".env.agent").is_file()
    assert (workspace / "memory" / "README.md").read_text() == "mine\n", "an existing file was overwritten"
