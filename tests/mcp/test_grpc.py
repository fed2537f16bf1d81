"""The gRPC door (issue 60, line 11): the plugin manager's service over gRPC, driven by a
client grpcio-tools generates from proto/toolshed/v1/plugin_manager.proto at test time,
against `toolshed serve --grpc-port 0`. The same token, scopes, owners and pipeline as
REST: every call lands in the audit as door `grpc`."""

import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """The client's modules, generated from the repository's .proto."""
    out = tmp_path_factory.mktemp("grpc-client")
    proto = ROOT / "proto"
    code = protoc.main([
        "grpc_tools.protoc", f"-I{proto}", f"--python_out={out}", f"--grpc_python_out={out}",
        str(proto / "toolshed" / "v1" / "plugin_manager.proto"),
    ])
    assert code == 0, "protoc could not build the client from plugin_manager.proto"
    sys.path.insert(0, str(out))
    try:
        from toolshed.v1 import plugin_manager_pb2, plugin_manager_pb2_grpc
    finally:
        sys.path.remove(str(out))
    return plugin_manager_pb2, plugin_manager_pb2_grpc


@pytest.fixture
def grpc_server(toolshed_bin, home, workspace):
    """Starts `toolshed serve --port 0 --grpc-port 0`; returns (REST base, gRPC address,
    admin token)."""
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    procs = []

    def start():
        token = subprocess.run([toolshed_bin, "token"], env=env, capture_output=True, text=True,
                               check=True, timeout=30).stdout.strip()
        proc = subprocess.Popen(
            [toolshed_bin, "--workspace", str(workspace), "serve", "--port", "0", "--grpc-port", "0"],
            env=env, cwd=str(workspace), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )
        procs.append(proc)
        rest = address = None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("listening on "):
                rest = line.split(" ", 2)[2].strip().removesuffix("/mcp")
            if line.startswith("gRPC on "):
                address = line.split()[2]
            if rest and address:
                threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
                return rest, address, token
        pytest.fail(f"toolshed serve exited before listening: {''.join(seen)}")

    start.procs = procs
    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def rest_get(url, token):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30) as response:
        return json.loads(response.read())


def auth(token, owner=None):
    metadata = [("authorization", f"Bearer {token}")]
    if owner:
        metadata.append(("x-toolshed-owner", owner))
    return metadata


def code_of(call):
    with pytest.raises(grpc.RpcError) as raised:
        call()
    return raised.value.code(), raised.value.details()


def test_the_plugin_manager_service_lists_executes_streams_and_runs_the_lifecycle(
        grpc_server, pb, workspace, toolshed_bin, home):
    messages, stubs = pb
    rest, address, token = grpc_server()
    with grpc.insecure_channel(address) as channel:
        manager = stubs.PluginManagerStub(channel)

        # The guard of the HTTP server: no token, a wrong one.
        code, details = code_of(lambda: manager.ListPlugins(messages.ListPluginsRequest(), timeout=30))
        assert code == grpc.StatusCode.UNAUTHENTICATED and "toolshed token" in details
        code, _ = code_of(lambda: manager.ListPlugins(
            messages.ListPluginsRequest(), metadata=auth("not-the-token"), timeout=30))
        assert code == grpc.StatusCode.UNAUTHENTICATED

        # Plugins and their tools.
        plugins = manager.ListPlugins(messages.ListPluginsRequest(), metadata=auth(token), timeout=30).plugins
        by_id = {p.id: p for p in plugins}
        assert by_id["system.workspace"].state == "running"
        assert by_id["system.workspace"].kind == "builtin"
        assert "workspace_read" in by_id["system.workspace"].tools
        tools = manager.ListTools(messages.ListToolsRequest(plugin_id="system.workspace"),
                                  metadata=auth(token), timeout=30).tools
        read = next(t for t in tools if t.name == "workspace_read")
        assert read.plugin_id == "system.workspace" and read.read_only
        assert "path" in json.loads(read.input_schema_json)["properties"]
        assert all(t.plugin_id == "system.workspace" for t in tools)
        code, details = code_of(lambda: manager.ListTools(
            messages.ListToolsRequest(plugin_id="no.such"), metadata=auth(token), timeout=30))
        assert code == grpc.StatusCode.NOT_FOUND and "no.such" in details
        code, _ = code_of(lambda: manager.GetPlugin(messages.PluginRef(id="no.such"), metadata=auth(token), timeout=30))
        assert code == grpc.StatusCode.NOT_FOUND

        # Execute, through the pipeline.
        result = manager.Execute(messages.ExecuteRequest(
            tool="workspace_read", arguments_json=json.dumps({"path": "hello.txt"})),
            metadata=auth(token, owner="grpc-agent"), timeout=60)
        assert not result.is_error
        assert "hello from the workspace" in "".join(c.text for c in result.content)
        assert result.plugin_id == "system.workspace" and result.call_id
        # A tool that ran and failed is a result; a call that could not run is a status.
        failed = manager.Execute(messages.ExecuteRequest(
            tool="exec_command", arguments_json=json.dumps({"command": "exit 3"})),
            metadata=auth(token), timeout=60)
        assert failed.is_error
        for request, expected in [
            (messages.ExecuteRequest(tool="no_such_tool"), grpc.StatusCode.NOT_FOUND),
            (messages.ExecuteRequest(tool="workspace_read", arguments_json="{}"), grpc.StatusCode.INVALID_ARGUMENT),
            (messages.ExecuteRequest(tool="workspace_read", arguments_json="{not json"), grpc.StatusCode.INVALID_ARGUMENT),
            (messages.ExecuteRequest(tool="workspace_read", arguments_json="[1]"), grpc.StatusCode.INVALID_ARGUMENT),
            (messages.ExecuteRequest(tool=""), grpc.StatusCode.INVALID_ARGUMENT),
            # The workspace's boundary holds here as at every door.
            (messages.ExecuteRequest(tool="workspace_read", arguments_json=json.dumps({"path": "../../etc/passwd"})),
             grpc.StatusCode.PERMISSION_DENIED),
        ]:
            code, details = code_of(lambda: manager.Execute(request, metadata=auth(token), timeout=60))
            assert code == expected, (request, code, details)
            assert details

        # Streamed: the command's output arrives as progress before the result, which is last.
        events = list(manager.ExecuteStream(messages.ExecuteRequest(
            tool="exec_command",
            arguments_json=json.dumps({"command": "for i in 1 2 3; do echo line$i; sleep 0.2; done"})),
            metadata=auth(token), timeout=60))
        kinds = [e.WhichOneof("event") for e in events]
        assert kinds[-1] == "result" and kinds.count("result") == 1, kinds
        assert "progress" in kinds, kinds
        streamed = "".join(e.progress.message for e in events if e.WhichOneof("event") == "progress")
        assert "line1" in streamed, streamed
        assert "line3" in "".join(c.text for c in events[-1].result.content)

        # The audit names the door and the owner asked for.
        audit = rest_get(f"{rest}/api/v1/audit?tool=workspace_read&limit=20", token)["audit"]
        row = next(r for r in audit if r["call_id"] == result.call_id)
        assert row["door"] == "grpc" and row["owner"] == "grpc-agent", row

        # The lifecycle needs `plugins:admin`: an agent token has only what it was given.
        agent = subprocess.run(
            [toolshed_bin, "token", "create", "--owner", "bot", "--scope", "tools:list", "--scope", "tools:call"],
            env={"TOOLSHED_HOME": str(home)}, capture_output=True, text=True, check=True, timeout=30,
        ).stdout.strip()
        code, details = code_of(lambda: manager.PausePlugin(
            messages.PluginRef(id="system.calculator"), metadata=auth(agent), timeout=30))
        assert code == grpc.StatusCode.PERMISSION_DENIED and "plugins:admin" in details
        assert manager.ListPlugins(messages.ListPluginsRequest(), metadata=auth(agent), timeout=30).plugins
        # An agent token cannot act as another owner.
        code, _ = code_of(lambda: manager.Execute(messages.ExecuteRequest(tool="calculator", arguments_json='{"expression": "1+1"}'),
                                                  metadata=auth(agent, owner="someone-else"), timeout=30))
        assert code == grpc.StatusCode.PERMISSION_DENIED

        paused = manager.PausePlugin(messages.PluginRef(id="system.calculator"), metadata=auth(token), timeout=30)
        assert paused.state == "paused"
        code, details = code_of(lambda: manager.Execute(messages.ExecuteRequest(
            tool="calculator", arguments_json='{"expression": "6*7"}'), metadata=auth(token), timeout=30))
        assert code == grpc.StatusCode.NOT_FOUND and "paused" in details, (code, details)
        assert manager.ResumePlugin(messages.PluginRef(id="system.calculator"), metadata=auth(token), timeout=30).state == "running"
        answer = manager.Execute(messages.ExecuteRequest(
            tool="calculator", arguments_json='{"expression": "6*7"}'), metadata=auth(agent), timeout=30)
        assert "42" in "".join(c.text for c in answer.content)
        code, _ = code_of(lambda: manager.EnablePlugin(messages.PluginRef(id="no.such"), metadata=auth(token), timeout=30))
        assert code == grpc.StatusCode.NOT_FOUND


def test_a_call_whose_client_goes_away_is_cancelled_and_its_process_killed(grpc_server, pb, workspace):
    messages, stubs = pb
    rest, address, token = grpc_server()
    with grpc.insecure_channel(address) as channel:
        manager = stubs.PluginManagerStub(channel)
        code, _ = code_of(lambda: manager.Execute(messages.ExecuteRequest(
            tool="exec_command",
            arguments_json=json.dumps({"command": "sleep 3; echo late > late.txt", "timeout_ms": 30000})),
            metadata=auth(token), timeout=0.5))
        # The client's deadline and the server's cancellation race: either says the call ended.
        assert code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED), code
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        audit = rest_get(f"{rest}/api/v1/audit?tool=exec_command&limit=5", token)["audit"]
        if audit and audit[0]["door"] == "grpc":
            break
        time.sleep(0.2)
    assert audit and audit[0]["door"] == "grpc" and audit[0]["outcome"] != "ok", audit
    time.sleep(4)
    assert not (workspace / "late.txt").exists(), "the command outlived the call its client gave up"


def test_a_grpc_port_already_taken_is_named_and_serve_stops(toolshed_bin, home, workspace):
    import socket
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        out = subprocess.run(
            [toolshed_bin, "--workspace", str(workspace), "serve", "--port", "0", "--grpc-port", str(port)],
            env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
            capture_output=True, text=True, timeout=60,
        )
    finally:
        taken.close()
    assert out.returncode != 0
    assert f"cannot listen for gRPC on 127.0.0.1:{port}" in out.stderr and "--grpc-port" in out.stderr, out.stderr


def test_sigterm_lets_a_running_grpc_call_finish_within_the_grace_period(grpc_server, pb):
    import signal
    messages, stubs = pb
    rest, address, token = grpc_server()
    proc = grpc_server.procs[-1]
    with grpc.insecure_channel(address) as channel:
        manager = stubs.PluginManagerStub(channel)
        stream = manager.ExecuteStream(messages.ExecuteRequest(
            tool="exec_command", arguments_json=json.dumps({"command": "sleep 1.5; echo finished"})),
            metadata=auth(token), timeout=60)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        events = list(stream)
    result = events[-1].result
    assert not result.is_error and "finished" in "".join(c.text for c in result.content), events
    assert proc.wait(timeout=30) == 0
