"""The browser through the MCP door, against real Chromium and loopback pages: pages that
render with JavaScript, a login form, screenshots as image blocks, the network rules for
every kind of request, owner isolation and a killed browser."""

import asyncio
import base64
import http.server
import os
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CHROMIUM = next(
    (p for p in ["/usr/lib/chromium/chromium", "/usr/bin/chromium"] if os.access(p, os.X_OK)), None
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("TOOLSHED_REQUIRE_BROWSER"),
    reason="Chromium is not installed (scripts/test installs it)",
)


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def text(result):
    return " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")


class Canary:
    """A loopback listener that must see no connection: records every one it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.hits = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            conn.settimeout(1)
            try:
                self.hits.append(conn.recv(200))
            except OSError:
                self.hits.append(b"")
            conn.close()


def site_handler(canary_port):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            canary = f"127.0.0.1:{canary_port}"
            if self.path == "/js":
                # Nothing readable until a script writes it.
                self.page(
                    "<html><head><title>Built by script</title></head><body><div id='app'></div>"
                    "<script>setTimeout(() => { document.getElementById('app').innerHTML ="
                    " '<h1>Rendered by JavaScript</h1><p>The answer is <b>forty-two</b>.</p>'"
                    " + '<ul><li>first item</li><li>second item</li></ul>'; }, 50);</script>"
                    "</body></html>"
                )
            elif self.path == "/login":
                self.page(
                    "<html><head><title>Sign in</title></head><body><h1>Sign in</h1>"
                    "<form method='post' action='/login'>"
                    "<input id='user' name='user'><input id='pass' name='pass' type='password'>"
                    "<button type='submit'>Sign in</button></form></body></html>"
                )
            elif self.path == "/welcome":
                cookie = self.headers.get("Cookie", "")
                if "session=ada-ok" in cookie:
                    self.page("<html><head><title>Home</title></head><body><main><h1>Welcome, Ada</h1>"
                              "<p>You have 3 new messages.</p></main></body></html>")
                else:
                    self.page("<html><body><p>not signed in</p></body></html>", status=401)
            elif self.path == "/tall":
                rows = "".join(f"<p style='height:100px;margin:0'>row {i}</p>" for i in range(30))
                self.page(f"<html><body style='margin:0'>{rows}</body></html>")
            elif self.path == "/canaries":
                self.page(
                    "<html><head><title>Canaries</title>"
                    f"<script src='http://{canary}/script.js'></script></head><body>"
                    f"<img src='http://{canary}/image.png'>"
                    f"<iframe src='http://{canary}/frame.html'></iframe>"
                    f"<iframe src='http://localhost:{canary_port}/frame-by-name.html'></iframe>"
                    "<p id='done'>page loaded</p><script>"
                    f"fetch('http://{canary}/fetch').catch(() => {{}});"
                    f"try {{ new WebSocket('ws://{canary}/socket'); }} catch (e) {{}}"
                    f"const x = new XMLHttpRequest(); x.open('GET', 'http://{canary}/xhr'); x.send();"
                    "</script></body></html>"
                )
            elif self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", f"http://{canary}/after-redirect")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.page("<p>not here</p>", status=404)

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length", "0"))
            form = self.rfile.read(length).decode()
            if self.path == "/login" and form == "user=ada&pass=l0velace":
                self.send_response(303)
                self.send_header("Location", "/welcome")
                self.send_header("Set-Cookie", "session=ada-ok; Path=/")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.page(f"<p>bad login: {form}</p>", status=403)

        def page(self, body, status=200):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    return Handler


@pytest.fixture
def pages():
    """(site base URL, canary): the site is allowed through `[web] allow`, the canary not."""
    canary = Canary()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), site_handler(canary.port))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", canary
    server.shutdown()
    canary.sock.close()


def enable_browser(toolshed_bin, home):
    subprocess.run(
        [toolshed_bin, "plugins", "enable", "system.browser"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated")},
        check=True,
        capture_output=True,
        timeout=60,
    )


def stdio(toolshed_bin, workspace, home, site, **env):
    return StdioServerParameters(
        command=toolshed_bin,
        args=["--workspace", str(workspace), "mcp"],
        env={
            "TOOLSHED_HOME": str(home),
            "TOOLSHED_CURATED_DIR": str(home / "no-curated"),
            "TOOLSHED_WEB__ALLOW": f'["{site.removeprefix("http://")}"]',
            **env,
        },
        cwd=str(workspace),
    )


def test_a_script_built_page_a_login_and_a_screenshot(toolshed_bin, workspace, home, pages):
    site, _canary = pages
    enable_browser(toolshed_bin, home)

    async def main():
        async with Client(stdio(toolshed_bin, workspace, home, site), mode="legacy") as client:
            # web_fetch sees the page before any script ran: nothing readable.
            fetched = await client.call_tool("web_fetch", {"url": f"{site}/js"})
            assert "forty-two" not in text(fetched), text(fetched)
            assert "no readable content" in text(fetched), text(fetched)

            opened = await client.call_tool("browser_open", {"url": f"{site}/js"})
            assert not opened.is_error, text(opened)
            session = opened.structured_content["session"]
            waited = await client.call_tool("browser_wait", {"session": session, "text": "forty-two"})
            assert not waited.is_error, text(waited)
            read = await client.call_tool("browser_get_content", {"session": session})
            assert not read.is_error, text(read)
            assert "# Rendered by JavaScript" in text(read), text(read)
            assert "**forty-two**" in text(read), text(read)
            assert "- first item" in text(read), text(read)

            # A login form, filled in and submitted; the next page is read.
            went = await client.call_tool("browser_navigate", {"session": session, "url": f"{site}/login"})
            assert "Title: Sign in" in text(went), text(went)
            typed = await client.call_tool("browser_type", {"session": session, "selector": "#user", "text": "ada"})
            assert not typed.is_error, text(typed)
            submitted = await client.call_tool(
                "browser_type", {"session": session, "selector": "#pass", "text": "l0velace", "submit": True}
            )
            assert not submitted.is_error, text(submitted)
            assert f"URL: {site}/welcome" in text(submitted), text(submitted)
            read = await client.call_tool("browser_get_content", {"session": session, "format": "text"})
            assert "Welcome, Ada" in text(read) and "3 new messages" in text(read), text(read)
            # Another session is another browser context: the login does not carry over.
            other = await client.call_tool("browser_open", {"url": f"{site}/welcome"})
            assert "Status: 401" in text(other), text(other)
            other_read = await client.call_tool(
                "browser_get_content", {"session": other.structured_content["session"], "format": "text"}
            )
            assert "not signed in" in text(other_read), text(other_read)

            # A screenshot arrives as an image block holding a PNG of the viewport's size.
            shot = await client.call_tool("browser_screenshot", {"session": session})
            assert not shot.is_error, text(shot)
            images = [c for c in shot.content if c.type == "image"]
            assert len(images) == 1 and images[0].mime_type == "image/png", shot.content
            png = base64.b64decode(images[0].data)
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
            assert struct.unpack(">II", png[16:24]) == (1280, 800)

            # The full page of a tall page: 30 rows of 100 px.
            await client.call_tool("browser_navigate", {"session": session, "url": f"{site}/tall"})
            shot = await client.call_tool("browser_screenshot", {"session": session, "full_page": True})
            png = base64.b64decode(next(c for c in shot.content if c.type == "image").data)
            assert struct.unpack(">II", png[16:24]) == (1280, 3000), text(shot)

            # What the browser never opens.
            for url in ["file:///etc/passwd", "data:text/html,<p>x</p>", "chrome://version"]:
                refused = await client.call_tool("browser_navigate", {"session": session, "url": url})
                assert refused.is_error and "http(s)" in text(refused), text(refused)
            # browser_evaluate is off unless a person turns it on.
            evaluated = await client.call_tool("browser_evaluate", {"session": session, "expression": "1+1"})
            assert evaluated.is_error and "evaluate = true" in text(evaluated), text(evaluated)
            closed = await client.call_tool("browser_close", {"session": session})
            assert not closed.is_error, text(closed)
            gone = await client.call_tool("browser_get_content", {"session": session})
            assert gone.is_error and "no browser session" in text(gone), text(gone)

    run(main())


# Whatever commands get (a network of their own, the host's, or no sandbox at all), the
# browser runs sandboxed in a network of its own, out only through the web rules.
@pytest.mark.parametrize("sandbox", [{}, {"TOOLSHED_SANDBOX__NETWORK": "on"}, {"TOOLSHED_SANDBOX__MODE": "full-access"}])
def test_the_canary_sees_no_connection_from_any_kind_of_request(toolshed_bin, workspace, home, pages, sandbox):
    site, canary = pages
    enable_browser(toolshed_bin, home)

    async def main():
        params = stdio(toolshed_bin, workspace, home, site, **sandbox)
        async with Client(params, mode="legacy") as client:
            opened = await client.call_tool("browser_open", {"url": f"{site}/canaries"})
            assert not opened.is_error, text(opened)
            session = opened.structured_content["session"]
            await client.call_tool("browser_wait", {"session": session, "network_idle": True, "timeout_ms": 5000})
            read = await client.call_tool("browser_get_content", {"session": session, "format": "text"})
            assert "page loaded" in text(read), text(read)
            # The top-level page, directly and through a redirect.
            for url in [f"http://127.0.0.1:{canary.port}/direct", f"http://localhost:{canary.port}/",
                        f"{site}/redirect"]:
                went = await client.call_tool("browser_navigate", {"session": session, "url": url})
                assert went.is_error, text(went)
                assert "network rules" in text(went) or "refused" in text(went), text(went)
            time.sleep(0.5)

    run(main())
    assert canary.hits == [], canary.hits
    # The canary does record what reaches it.
    socket.create_connection(("127.0.0.1", canary.port), timeout=5).close()
    deadline = time.time() + 5
    while not canary.hits and time.time() < deadline:
        time.sleep(0.05)
    assert len(canary.hits) == 1


def connect(url, token):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return http, Client(streamable_http_client(url, http_client=http), mode="legacy")


def browser_processes(root_pid):
    """Pids of the processes under `root_pid` running Chromium with toolshed's profile."""
    children = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append((int(entry.name), cmdline))
    found, stack = [], [root_pid]
    while stack:
        for pid, cmdline in children.get(stack.pop(), []):
            stack.append(pid)
            if b"--remote-debugging-pipe" in cmdline:
                found.append(pid)
    return found


def test_owners_are_kept_apart_and_a_killed_browser_is_reported_and_replaced(
    toolshed_bin, home, serve, token_for, pages
):
    site, _canary = pages
    enable_browser(toolshed_bin, home)

    url, _admin = serve({"TOOLSHED_WEB__ALLOW": f'["{site.removeprefix("http://")}"]'})
    alice, bob = token_for("alice"), token_for("bob")
    server_pid = serve.procs[-1].pid

    async def main():
        http_a, a = connect(url, alice)
        http_b, b = connect(url, bob)
        async with http_a, a, http_b, b:
            opened = await a.call_tool("browser_open", {"url": f"{site}/login"})
            assert not opened.is_error, text(opened)
            session = opened.structured_content["session"]
            # Bob cannot read, navigate, screenshot or close Alice's session, nor see it.
            for tool, extra in [("browser_get_content", {}), ("browser_navigate", {"url": f"{site}/js"}),
                                ("browser_screenshot", {}), ("browser_close", {}), ("browser_session_info", {})]:
                result = await b.call_tool(tool, {"session": session, **extra})
                assert result.is_error and "no browser session" in text(result), (tool, text(result))
            listed = await b.call_tool("browser_list", {})
            assert session not in text(listed), text(listed)
            still = await a.call_tool("browser_get_content", {"session": session})
            assert "Sign in" in text(still), text(still)

            # Chromium killed mid-session: the next call says the session is lost, and a new
            # browser_open starts a new browser.
            victims = browser_processes(server_pid)
            assert victims, "no Chromium found under the server"
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass  # gone with the one killed before it
            lost = await a.call_tool("browser_get_content", {"session": session})
            assert lost.is_error and "lost" in text(lost), text(lost)
            again = await a.call_tool("browser_open", {"url": f"{site}/js"})
            assert not again.is_error, text(again)
            fresh = again.structured_content["session"]
            assert fresh != session
            waited = await a.call_tool("browser_wait", {"session": fresh, "text": "forty-two"})
            assert not waited.is_error, text(waited)

    run(main())


def test_caps_the_owner_profile_idle_sessions_and_a_missing_browser(toolshed_bin, workspace, home, pages):
    site, _canary = pages
    enable_browser(toolshed_bin, home)
    shared = {
        "TOOLSHED_BROWSER__PROFILE": "owner",
        "TOOLSHED_BROWSER__MAX_SESSIONS_PER_OWNER": "2",
        "TOOLSHED_BROWSER__IDLE_TIMEOUT_SECS": "2",
    }

    async def owner_profile():
        async with Client(stdio(toolshed_bin, workspace, home, site, **shared), mode="legacy") as client:
            first = (await client.call_tool("browser_open", {"url": f"{site}/login"})).structured_content["session"]
            await client.call_tool("browser_type", {"session": first, "selector": "#user", "text": "ada"})
            await client.call_tool("browser_type", {"session": first, "selector": "#pass", "text": "l0velace", "submit": True})
            # profile = "owner": the owner's second session shares the login.
            second = await client.call_tool("browser_open", {"url": f"{site}/welcome"})
            assert "Title: Home" in text(second), text(second)
            third = await client.call_tool("browser_open", {})
            assert third.is_error and "max_sessions_per_owner" in text(third), text(third)
            # Unused for the idle timeout, both sessions are closed.
            deadline = time.time() + 15
            while time.time() < deadline:
                listed = await client.call_tool("browser_list", {})
                if "No browser sessions" in text(listed):
                    break
                await asyncio.sleep(0.5)
            assert "No browser sessions" in text(listed), text(listed)
            gone = await client.call_tool("browser_get_content", {"session": first})
            assert gone.is_error and "no browser session" in text(gone), text(gone)

    run(owner_profile())

    async def memory_cap():
        params = stdio(toolshed_bin, workspace, home, site, TOOLSHED_BROWSER__MAX_MEMORY_MB="1")
        async with Client(params, mode="legacy") as client:
            refused = await client.call_tool("browser_open", {})
            assert refused.is_error and "max_memory_mb" in text(refused), text(refused)

    run(memory_cap())

    async def missing():
        params = stdio(toolshed_bin, workspace, home, site, TOOLSHED_BROWSER__EXECUTABLE="/nonexistent/chromium")
        async with Client(params, mode="legacy") as client:
            refused = await client.call_tool("browser_open", {})
            assert refused.is_error and "apt-get install chromium" in text(refused), text(refused)

    run(missing())

    listed = subprocess.run(
        [toolshed_bin, "plugins", "list"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"),
             "TOOLSHED_BROWSER__EXECUTABLE": "/nonexistent/chromium"},
        capture_output=True, text=True, timeout=60,
    )
    assert "system.browser (degraded): `[browser] executable` is `/nonexistent/chromium`" in listed.stdout, listed
