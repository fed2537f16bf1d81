"""Command execution through the MCP door, with the official Python client: streamed
progress, cancellation that kills the process tree, sessions that end with the server,
and the proxy route of `toolshed serve` to a background process (HTTP and WebSocket)."""

import asyncio
import base64
import hashlib
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import urllib.error
import urllib.request
import pytest
from mcp import Client

from test_http import connect, http_server  # noqa: F401  (the fixture)

MODES = ["legacy", "auto"]


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def running(needle: str) -> bool:
    """Whether a live (non-zombie) process has `needle` in its command line."""
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rpartition(") ")[2][:1]
        except (FileNotFoundError, ProcessLookupError, PermissionError, NotADirectoryError):
            continue
        if needle in cmdline and state != "Z":
            return True
    return False


def wait_gone(needle: str, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not running(needle):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("mode", MODES)
def test_exec_command_streams_progress(server, mode):
    async def main():
        seen = []

        async def on_progress(progress, total, message):
            seen.append(message or "")

        async with Client(server(), mode=mode) as client:
            result = await client.call_tool(
                "exec_command",
                {"cmd": "for i in 1 2 3; do echo line$i; sleep 0.3; done", "yield_ms": 20000},
                progress_callback=on_progress,
            )
            assert not result.is_error, result.content
            assert "line3" in result.content[0].text
            assert result.structured_content["exit_code"] == 0
        streamed = "".join(seen)
        assert "line1" in streamed and "line3" in streamed, seen
        assert len(seen) >= 2, "output arrived in several reports while the command ran"

    run(main())


@pytest.mark.parametrize("mode", MODES)
def test_a_cancelled_call_kills_its_process_tree(server, mode):
    marker = f"sleep 43.{os.getpid() % 1000}{'1' if mode == 'legacy' else '2'}"

    async def main():
        async with Client(server(), mode=mode) as client:
            call = asyncio.create_task(
                client.call_tool("exec_command", {"cmd": f"setsid {marker} & {marker}", "yield_ms": 60000})
            )
            for _ in range(100):
                if running(marker):
                    break
                await asyncio.sleep(0.05)
            assert running(marker)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert await asyncio.to_thread(wait_gone, marker), "the cancelled command's tree survived"
            # The connection is still usable.
            assert (await client.call_tool("calculator", {"expression": "1+1"})).content[0].text == "2"

    run(main())


def test_sessions_end_with_the_server(server):
    marker = f"sleep 44.{os.getpid() % 1000}"

    async def main():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("exec_command", {"cmd": marker, "yield_ms": 0})
            assert result.structured_content["running"] is True
            started = await client.call_tool("process_exec", {"cmd": f"{marker}5"})
            assert not started.is_error, started.content
            assert running(marker)

    run(main())
    assert wait_gone(marker), "closing the client left processes running"


def test_owners_see_only_their_sessions(server):
    async def main():
        async with Client(server(), mode="auto") as client:
            mine = await client.call_tool(
                "exec_command", {"cmd": "sleep 45.5", "yield_ms": 0}, meta={"toolshed/owner": "agent-a"}
            )
            sid = mine.structured_content["session_id"]
            theirs = await client.call_tool(
                "command_run_read_output", {"session_id": sid}, meta={"toolshed/owner": "agent-b"}
            )
            assert theirs.is_error and "no command session" in theirs.content[0].text
            listed = await client.call_tool("command_run_list", {}, meta={"toolshed/owner": "agent-b"})
            assert listed.structured_content["sessions"] == []
            done = await client.call_tool(
                "command_run_terminate", {"session_id": sid, "force": True}, meta={"toolshed/owner": "agent-a"}
            )
            assert done.structured_content["running"] is False

    run(main())


WS_SERVER = r'''
import base64, hashlib, http.server, socketserver, struct, sys

class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        sys.stdout.write("request %s\n" % self.path); sys.stdout.flush()

    def do_GET(self):
        if self.headers.get("Upgrade", "").lower() != "websocket":
            body = ("hello from %s" % self.path).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Saw-Authorization", self.headers.get("Authorization", "none"))
            self.send_header("X-Saw-Cookie", self.headers.get("Cookie", "none"))
            self.end_headers()
            self.wfile.write(body)
            return
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        head = self.rfile.read(2)
        length = head[1] & 0x7F
        mask = self.rfile.read(4)
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(length)))
        reply = b"echo:" + data
        self.wfile.write(bytes([0x81, len(reply)]) + reply)
        self.wfile.flush()

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("network", ["on", "filtered", "off"])
def test_the_proxy_reaches_a_background_server_over_http_and_websocket(serve, workspace, network):
    # With a network of its own (filtered, off) the server listens on the sandbox's own
    # loopback; the proxy reaches it through the sandbox's inbound socket.
    # (From the environment: a workspace file may not widen the network to "on".)
    url, token = serve({"TOOLSHED_SANDBOX__NETWORK": network})
    base = url.rsplit("/mcp", 1)[0]
    (workspace / "ws_server.py").write_text(WS_SERVER)
    port = free_port()

    async def main():
        http, client = connect(url, token, "legacy")
        async with http, client:
            started = await client.call_tool(
                "process_exec", {"cmd": f"{sys.executable} ws_server.py {port}", "port": port, "name": "ws"}
            )
            assert not started.is_error, started.content
            assert started.structured_content["sandbox"]["network"] == network
            pid = started.structured_content["id"]
            for _ in range(100):
                info = await client.call_tool("process_proxy_info", {"id": pid})
                if info.structured_content["listening"]:
                    break
                await asyncio.sleep(0.1)
            assert info.structured_content["url"] == f"{base}/proxy/{pid}/"

            auth = {"Authorization": f"Bearer {token}"}
            status, headers, body = await asyncio.to_thread(get, f"{base}/proxy/{pid}/some/page?x=1", auth)
            assert status == 200, body
            assert body == "hello from /some/page?x=1"
            assert headers["x-saw-authorization"] == "none", "the toolshed token is not forwarded"
            # Nor is the dashboard's session cookie; the app's own cookies are.
            cookies = {**auth, "Cookie": "toolshed_session=0123abcd; theme=dark"}
            status, headers, _ = await asyncio.to_thread(get, f"{base}/proxy/{pid}/c", cookies)
            assert status == 200 and headers["x-saw-cookie"] == "theme=dark", headers
            status, _, body = await asyncio.to_thread(get, f"{base}/proxy/{pid}/a%2Fb%20c?q=%26", auth)
            assert (status, body) == (200, "hello from /a%2Fb%20c?q=%26"), "the path reaches the app as sent"
            assert (await asyncio.to_thread(get, f"{base}/proxy/{pid}/", {}))[0] == 401
            assert (await asyncio.to_thread(get, f"{base}/proxy/p999/", auth))[0] == 404

            reply = await asyncio.to_thread(websocket_echo, base, f"/proxy/{pid}/ws", token, b"ping")
            assert reply == b"echo:ping"

            for _ in range(100):  # the output reaches toolshed a moment after the request
                logs = await client.call_tool("process_read_output", {"id": pid})
                if "request /some/page?x=1" in logs.content[0].text:
                    break
                await asyncio.sleep(0.05)
            assert "request /some/page?x=1" in logs.content[0].text

            stopped = await client.call_tool("process_stop", {"id": pid})
            assert stopped.structured_content["running"] is False
            gone = await asyncio.to_thread(get, f"{base}/proxy/{pid}/", auth)
            assert gone[0] == 404

    run(main())


def websocket_echo(base: str, path: str, token: str, payload: bytes) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    key = base64.b64encode(os.urandom(16)).decode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer {token}\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(1)
            assert chunk, head
            head += chunk
        assert head.startswith(b"HTTP/1.1 101"), head
        expected = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        assert expected in head, head
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
        frame = sock.recv(2)
        length = frame[1] & 0x7F
        data = b""
        while len(data) < length:
            data += sock.recv(length - len(data))
        return data


def get(url: str, headers: dict) -> tuple:
    """GET with urllib: (status, headers, body text), also for error statuses."""
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read().decode()


def test_exec_command_runs_sh_and_pwsh_when_asked(toolshed_bin, home, workspace, tmp_path):
    """`shell: "sh"` and `shell: "pwsh"`: PowerShell is not packaged for this machine, so a
    stand-in `pwsh` on the PATH shows the command line toolshed gives it; without one the
    call is `unconfigured` and says what to install."""
    from mcp import StdioServerParameters

    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    fake = bin_dir / "pwsh"
    fake.write_text('#!/bin/sh\necho "pwsh got: $*"\n')
    fake.chmod(0o755)

    def params(path):
        return StdioServerParameters(
            command=toolshed_bin, args=["--workspace", str(workspace), "mcp"],
            env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), "PATH": path},
            cwd=str(workspace))

    async def with_fake():
        async with Client(params(f"{bin_dir}:{os.environ['PATH']}"), mode="legacy") as client:
            result = await client.call_tool("exec_command", {"cmd": "Get-ChildItem | Select-Object Name", "shell": "pwsh"})
            assert not result.is_error, result.content
            assert "pwsh got: -NoLogo -NoProfile -NonInteractive -Command Get-ChildItem | Select-Object Name" \
                in result.content[0].text, result.content
            sh = await client.call_tool("exec_command", {"cmd": "echo $0", "shell": "sh"})
            assert not sh.is_error and "sh" in sh.content[0].text, sh.content

    async def without():
        async with Client(params(os.environ["PATH"]), mode="legacy") as client:
            result = await client.call_tool("exec_command", {"cmd": "Get-Date", "shell": "pwsh"})
            assert result.is_error, result.content
            said = result.content[0].text
            assert "PowerShell (`pwsh`) is not installed" in said and "leave out `shell`" in said, said

    run(with_fake())
    if not any((Path(d) / "pwsh").exists() for d in os.environ["PATH"].split(":")):
        run(without())
