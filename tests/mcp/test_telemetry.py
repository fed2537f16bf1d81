"""OpenTelemetry export (`[telemetry]`, docs/telemetry.md): one trace per call, from the door
through the pipeline's steps to the tool and its operations, and call metrics, sent over
OTLP/HTTP to a collector stand-in on a loopback port that decodes the protobuf bodies with
the OpenTelemetry project's own message types."""

import asyncio
import json
import subprocess
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

SERVER_KIND = 2  # opentelemetry.proto.trace.v1.Span.SPAN_KIND_SERVER
STATUS_ERROR = 2


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def point_value(point):
    """A sum's or gauge's number, or a histogram's count."""
    try:
        kind = point.WhichOneof("value")
    except ValueError:  # a histogram point has no `value`
        return point.count
    return getattr(point, kind)


class Collector:
    """Records what toolshed exports: spans as dicts, metric data points by name."""

    def __init__(self):
        self.spans = []
        self.metrics = {}
        self.logs = []
        self.resources = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                assert self.headers["Content-Type"] == "application/x-protobuf"
                if self.path == "/v1/traces":
                    collector.take_traces(body)
                    answer = trace_service_pb2.ExportTraceServiceResponse()
                elif self.path == "/v1/metrics":
                    collector.take_metrics(body)
                    answer = metrics_service_pb2.ExportMetricsServiceResponse()
                elif self.path == "/v1/logs":
                    collector.take_logs(body)
                    answer = logs_service_pb2.ExportLogsServiceResponse()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = answer.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take_traces(self, body):
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            for resource_spans in request.resource_spans:
                self.resources.append({a.key: value_of(a.value) for a in resource_spans.resource.attributes})
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        self.spans.append({
                            "trace": span.trace_id.hex(),
                            "id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "name": span.name,
                            "kind": span.kind,
                            "status": span.status.code,
                            "attributes": {a.key: value_of(a.value) for a in span.attributes},
                        })

    def take_metrics(self, body):
        request = metrics_service_pb2.ExportMetricsServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            for resource_metrics in request.resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        data = getattr(metric, metric.WhichOneof("data"))
                        points = [
                            {
                                "attributes": {a.key: value_of(a.value) for a in p.attributes},
                                "value": point_value(p),
                            }
                            for p in data.data_points
                        ]
                        self.metrics[metric.name] = points

    def take_logs(self, body):
        request = logs_service_pb2.ExportLogsServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            for resource_logs in request.resource_logs:
                service = {a.key: value_of(a.value) for a in resource_logs.resource.attributes}
                for scope in resource_logs.scope_logs:
                    for record in scope.log_records:
                        self.logs.append({
                            "service": service.get("service.name"),
                            "severity": record.severity_text,
                            "body": value_of(record.body),
                            "attributes": {a.key: value_of(a.value) for a in record.attributes},
                        })

    def wait_for(self, check, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if check(self):
                    return
            time.sleep(0.1)
        with self.lock:
            names = sorted({s["name"] for s in self.spans})
            raise AssertionError(f"not exported in {timeout} s; spans: {names}; metrics: {sorted(self.metrics)}")

    def named(self, name):
        return [s for s in self.spans if s["name"] == name]

    def trace(self, trace_id):
        return [s for s in self.spans if s["trace"] == trace_id]

    def children(self, span):
        return sorted(s["name"] for s in self.spans if s["parent"] == span["id"])


@pytest.fixture
def collector():
    c = Collector()
    yield c
    c.server.shutdown()


def telemetry_env(collector, **more):
    env = {
        "TOOLSHED_TELEMETRY__OTLP_ENDPOINT": collector.url,
        "TOOLSHED_TELEMETRY__TRACES_INTERVAL_MS": "200",
        "TOOLSHED_TELEMETRY__METRICS_INTERVAL_MS": "300",
    }
    env.update({f"TOOLSHED_TELEMETRY__{k.upper()}": v for k, v in more.items()})
    return env


def rest(base, token, tool, arguments):
    req = urllib.request.Request(
        f"{base}/api/v1/tools/{tool}/execute",
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        data=json.dumps({"arguments": arguments}).encode(),
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def assert_pipeline(collector, door_span, tool):
    """The door span has one `execute_tool` child in its trace, with the pipeline's steps
    under it and the tool's run among them."""
    (call,) = [s for s in collector.trace(door_span["trace"]) if s["parent"] == door_span["id"]]
    assert call["name"] == f"execute_tool {tool}", call
    assert call["attributes"]["gen_ai.tool.name"] == tool
    assert call["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert call["attributes"]["gen_ai.tool.call.id"]
    steps = collector.children(call)
    for step in ["resolve", "review", "validate", "policy", f"run {tool}", "record"]:
        assert step in steps, (step, steps)
    return call


def test_one_trace_per_call_through_mcp_and_rest_with_steps_operations_and_metrics(serve, collector, workspace):
    url, token = serve(telemetry_env(collector))
    base = url.rsplit("/mcp", 1)[0]

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode="auto") as client:
            assert (await client.call_tool("calculator", {"expression": "6*7"})).content[0].text == "42"
            assert (await client.call_tool("calculator", {"expression": "1+1"})).content[0].text == "2"
            read = await client.call_tool("workspace_read", {"path": "hello.txt"})
            assert "hello from the workspace" in read.content[0].text

    asyncio.run(asyncio.wait_for(main(), timeout=30))
    assert rest(base, token, "calculator", {"expression": "40+2"})[1]["content"][0]["text"] == "42"
    status, _ = rest(base, token, "no_such_tool", {})
    assert status == 404

    collector.wait_for(lambda c: len(c.named("tools/call calculator")) == 2
                       and len(c.named("POST /api/v1/tools/{name}/execute")) == 2
                       and len(c.named("execute_tool no_such_tool")) == 1
                       and "toolshed.calls" in c.metrics)
    mcp_calls = collector.named("tools/call calculator")
    rest_calls = collector.named("POST /api/v1/tools/{name}/execute")
    reads = collector.named("tools/call workspace_read")
    doors = mcp_calls + rest_calls + reads
    # One trace per call: every door span starts its own, as a server span with no parent.
    assert len({s["trace"] for s in doors}) == len(doors) == 5
    for door in doors:
        assert door["kind"] == SERVER_KIND and door["parent"] == "", door
    for door in mcp_calls:
        assert door["attributes"]["mcp.method.name"] == "tools/call"
        assert door["attributes"]["gen_ai.tool.name"] == "calculator"
        assert door["attributes"]["network.transport"] == "tcp"
        assert door["attributes"]["jsonrpc.request.id"] != ""
        call = assert_pipeline(collector, door, "calculator")
        assert call["attributes"]["toolshed.door"] == "mcp"
        assert call["attributes"]["toolshed.outcome"] == "ok"
        assert call["attributes"]["toolshed.plugin"] == "system.calculator"
    ok_rest = [d for d in rest_calls if d["attributes"]["gen_ai.tool.name"] == "calculator"]
    assert len(ok_rest) == 1 and ok_rest[0]["attributes"]["http.route"] == "/api/v1/tools/{name}/execute"
    assert assert_pipeline(collector, ok_rest[0], "calculator")["attributes"]["toolshed.door"] == "rest"
    # The tool's operations belong to the call's trace: the file read under the run step.
    (read,) = reads
    call = assert_pipeline(collector, read, "workspace_read")
    (run,) = [s for s in collector.trace(read["trace"]) if s["name"] == "run workspace_read"]
    assert "fs.read" in [s["name"] for s in collector.trace(read["trace"]) if s["parent"] == run["id"]]
    # A failed call says why, on the pipeline's span and the door's.
    (failed,) = collector.named("execute_tool no_such_tool")
    assert failed["status"] == STATUS_ERROR and failed["attributes"]["error.type"] == "not_found", failed
    (failed_door,) = [s for s in rest_calls if s["attributes"]["gen_ai.tool.name"] == "no_such_tool"]
    assert failed_door["attributes"]["error.type"] == "not_found"
    # No argument values anywhere unless asked for.
    for span in collector.spans:
        for value in span["attributes"].values():
            assert "6*7" not in str(value) and "hello.txt" not in str(value), span
    resource = collector.resources[0]
    assert resource["service.name"] == "toolshed" and resource["service.instance.id"]

    # Metrics: calls by tool, plugin, door and outcome; durations; failures by type.
    collector.wait_for(lambda c: sum(
        p["value"] for p in c.metrics.get("toolshed.calls", [])
        if p["attributes"].get("gen_ai.tool.name") == "calculator") == 3)
    points = collector.metrics["toolshed.calls"]
    by_door = {(p["attributes"]["toolshed.door"], p["attributes"]["gen_ai.tool.name"]): p["value"]
               for p in points if p["attributes"]["toolshed.outcome"] == "ok"}
    assert by_door[("mcp", "calculator")] == 2 and by_door[("rest", "calculator")] == 1, points
    assert any(p["attributes"].get("error.type") == "not_found" and p["attributes"]["gen_ai.tool.name"] == "(unknown)"
               for p in collector.metrics["toolshed.call.errors"])
    assert "toolshed.call.duration" in collector.metrics
    assert "toolshed_live_processes" in collector.metrics


def test_stdio_exports_what_is_left_when_the_client_hangs_up_and_arguments_only_when_asked(
        toolshed_bin, home, workspace, collector):
    # The default batching interval (5 s) is longer than this session: what the server
    # exports, it exports on its way out.
    env = {
        "TOOLSHED_HOME": str(home),
        "TOOLSHED_CURATED_DIR": str(home / "no-curated"),
        "TOOLSHED_TELEMETRY__OTLP_ENDPOINT": collector.url + "/",
        "TOOLSHED_TELEMETRY__RECORD_ARGUMENTS": "true",
    }
    params = StdioServerParameters(command=toolshed_bin, args=["--workspace", str(workspace), "mcp"],
                                   env=env, cwd=str(workspace))

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("calculator", {"expression": "6*7"})
            assert result.content[0].text == "42"

    started = time.monotonic()
    asyncio.run(asyncio.wait_for(main(), timeout=30))
    collector.wait_for(lambda c: len(c.named("tools/call calculator")) == 1, timeout=10)
    (door,) = collector.named("tools/call calculator")
    assert door["attributes"]["network.transport"] == "pipe"
    call = assert_pipeline(collector, door, "calculator")
    assert json.loads(call["attributes"]["toolshed.arguments"]) == {"expression": "6*7"}
    assert time.monotonic() - started < 30


def test_a_bad_endpoint_is_refused_naming_it(toolshed_bin, home, workspace):
    out = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "tools", "list"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_TELEMETRY__OTLP_ENDPOINT": "collector:4318"},
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 2, out
    assert "otlp_endpoint" in out.stderr and "collector:4318" in out.stderr, out.stderr


TRACED = str(__import__("pathlib").Path(__file__).resolve().parent / "servers" / "traced.py")


def test_a_callers_trace_context_parents_the_call_and_reaches_a_mounted_server(
        serve, collector, toolshed_bin, home, workspace):
    """W3C trace context in `_meta` (or the HTTP headers) becomes the parent of the door's
    span; the call's context goes on to a mounted MCP server in `_meta`."""
    import sys
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    added = subprocess.run([toolshed_bin, "--workspace", str(workspace), "mcp", "add", "traced", "--", sys.executable, TRACED],
                           env=env, capture_output=True, text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    url, token = serve(telemetry_env(collector))
    base = url.rsplit("/mcp", 1)[0]
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    given = f"00-{trace_id}-00f067aa0ba902b7-01"
    header_trace = "0af7651916cd43dd8448eb211c80319c"

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            result = await client.call_tool("traced__meta", {}, meta={"traceparent": given, "tracestate": "rojo=1"})
            assert not result.is_error, result.content
            return json.loads(result.content[0].text)

    seen = asyncio.run(asyncio.wait_for(main(), timeout=60))
    # Over REST, the headers.
    req = urllib.request.Request(
        f"{base}/api/v1/tools/calculator/execute", method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                 "traceparent": f"00-{header_trace}-b7ad6b7169203331-01"},
        data=json.dumps({"arguments": {"expression": "1+1"}}).encode())
    with urllib.request.urlopen(req, timeout=30) as res:
        assert res.status == 200

    collector.wait_for(lambda c: c.named("tools/call traced__meta") and c.trace(header_trace))
    (door,) = collector.named("tools/call traced__meta")
    assert door["trace"] == trace_id and door["parent"] == "00f067aa0ba902b7", door
    # The mounted server got the call's context: the same trace, a span of toolshed's.
    handed = seen["traceparent"]
    assert handed.startswith(f"00-{trace_id}-"), seen
    assert handed.split("-")[2] in {s["id"] for s in collector.trace(trace_id)}, (handed, collector.trace(trace_id))
    assert seen.get("tracestate") == "rojo=1", seen
    (rest_door,) = [s for s in collector.trace(header_trace) if s["name"].startswith("POST ")]
    assert rest_door["parent"] == "b7ad6b7169203331", rest_door


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_2026_callers_traceparent_parents_the_call_and_reaches_a_mounted_server(
        server, serve, collector, toolshed_bin, home, workspace, transport):
    """The same in the 2026-07-28 era (the Python client), over stdio and HTTP: the
    `traceparent` of the request's `_meta` is the door span's parent and reaches the
    mounted server as a span of toolshed's in the same trace."""
    import sys
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")}
    added = subprocess.run([toolshed_bin, "--workspace", str(workspace), "mcp", "add", "traced", "--", sys.executable, TRACED],
                           env=env, capture_output=True, text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    trace_id = "7bf92f3577b34da6a3ce929d0e0e4736"
    given = f"00-{trace_id}-00f067aa0ba902b7-01"

    async def call(client):
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("traced__meta", {}, meta={"traceparent": given})
        assert not result.is_error, result.content
        return json.loads(result.content[0].text)

    async def main():
        if transport == "stdio":
            params = StdioServerParameters(command=toolshed_bin, args=["--workspace", str(workspace), "mcp"],
                                           env={**env, **telemetry_env(collector)}, cwd=str(workspace))
            async with Client(params, mode="auto") as client:
                return await call(client)
        url, token = serve(telemetry_env(collector))
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode="auto") as client:
            return await call(client)

    seen = asyncio.run(asyncio.wait_for(main(), timeout=60))
    collector.wait_for(lambda c: c.named("tools/call traced__meta"))
    (door,) = collector.named("tools/call traced__meta")
    assert door["trace"] == trace_id and door["parent"] == "00f067aa0ba902b7", door
    handed = seen["traceparent"]
    assert handed.startswith(f"00-{trace_id}-") and "00f067aa0ba902b7" not in handed, seen
    assert handed.split("-")[2] in {s["id"] for s in collector.trace(trace_id)}, (handed, collector.trace(trace_id))


def test_outgoing_http_carries_the_calls_trace_context_only_when_enabled(serve, collector, home, workspace):
    import loopback

    seen = []

    class Site(loopback.Handler):
        def do_GET(self):
            seen.append(self.headers.get("traceparent"))
            self.answer(200, "text/plain", b"ok")

    trace_id = "5bf92f3577b34da6a3ce929d0e0e4736"
    with loopback.serving(Site) as site:
        config = home / "traced.toml"
        config.write_text(f'[web]\nallow = ["{site}"]\n[telemetry]\npropagate_http = true\n')
        url, token = serve({**telemetry_env(collector), "TOOLSHED_CONFIG": str(config)})

        async def main():
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                result = await client.call_tool("http_request", {"url": f"http://{site}/"},
                                                meta={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"})
                assert not result.is_error, result.content

        asyncio.run(asyncio.wait_for(main(), timeout=60))
    (header,) = seen
    assert header and header.startswith(f"00-{trace_id}-") and "00f067aa0ba902b7" not in header, header
    collector.wait_for(lambda c: c.named("tools/call http_request"))
    assert header.split("-")[2] in {s["id"] for s in collector.trace(trace_id)}


def test_a_nested_call_joins_the_trace_of_the_call_that_made_it(serve, collector):
    # Failed before: run_code's inner calls ran on a task of their own, outside the span of
    # the run that made them, so each started a trace of its own.
    url, token = serve(telemetry_env(collector))

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            result = await client.call_tool("run_code", {"code": 'return await tools.calculator({expression: "6*7"});'})
            assert not result.is_error and "42" in result.content[0].text, result.content

    asyncio.run(asyncio.wait_for(main(), timeout=60))
    collector.wait_for(lambda c: c.named("tools/call run_code") and c.named("execute_tool calculator"))
    (door,) = collector.named("tools/call run_code")
    (inner,) = collector.named("execute_tool calculator")
    assert inner["trace"] == door["trace"], (inner, door)
    ancestors, span = set(), inner
    by_id = {s["id"]: s for s in collector.trace(door["trace"])}
    while span["parent"] in by_id:
        span = by_id[span["parent"]]
        ancestors.add(span["id"])
    (outer,) = [s for s in collector.trace(door["trace"]) if s["name"] == "execute_tool run_code"]
    assert outer["id"] in ancestors and door["id"] in ancestors, "the inner call sits under run_code's call"


def test_log_records_go_to_the_collector_at_the_level_asked(toolshed_bin, home, workspace, collector):
    """`[telemetry] logs`: toolshed's own log records at that level and above are exported
    over OTLP with the spans (`/v1/logs`), with the service's resource; `off` sends none."""
    def session(level):
        env = {
            "TOOLSHED_HOME": str(home),
            "TOOLSHED_CURATED_DIR": str(home / "no-curated"),
            **telemetry_env(collector, logs=level),
        }
        params = StdioServerParameters(command=toolshed_bin, args=["--workspace", str(workspace), "mcp"],
                                       env=env, cwd=str(workspace))

        async def main():
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("calculator", {"expression": "1+1"})

        asyncio.run(asyncio.wait_for(main(), timeout=30))

    session("debug")
    ended = lambda c: [r for r in c.logs if r["body"] == "the stdio session ended"]  # noqa: E731
    collector.wait_for(lambda c: len(ended(c)) == 1, timeout=10)
    record = ended(collector)[0]
    assert record["severity"] == "DEBUG" and record["service"] == "toolshed", record
    # The exporter's own HTTP requests are never logged to itself.
    assert not any("v1/logs" in str(r["body"]) for r in collector.logs), collector.logs
    # Below the level asked, nothing; `off`, nothing at all.
    before = len(collector.logs)
    session("info")
    session("off")
    collector.wait_for(lambda c: len(c.named("tools/call calculator")) >= 3, timeout=10)
    assert len(collector.logs) == before, collector.logs[before:]
