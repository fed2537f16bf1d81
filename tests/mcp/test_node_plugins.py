"""Plugins that need Node.js run in it, unmodified, inside the command sandbox: a DingTalk-
style robot plugin signing with `require('crypto').createHmac` and posting with Node's
`http` module, through MCP and REST against a loopback fake of the robot; and a probe
that finds the data dir, another plugin's directory, the workspace's files for writing and
hosts outside its grants closed to it."""

import asyncio
import base64
import hashlib
import hmac
import json
import urllib.parse
import urllib.request
from pathlib import Path

from mcp import Client

import loopback
from test_stdio import toolshed

REPO = Path(__file__).resolve().parents[2]
DINGTALK = REPO / "tests" / "fixtures" / "seed-plugins" / "spaces-dingtalk"
SECRET = "SEC-loopback-secret"


def run(coro, timeout=90):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


class Robot(loopback.Handler):
    """A group robot: checks the signature as DingTalk does, records the messages."""

    received = []

    def do_POST(self):
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        stamp = query.get("timestamp", [""])[0]
        mac = hmac.new(SECRET.encode(), f"{stamp}\n{SECRET}".encode(), hashlib.sha256).digest()
        signed = query.get("sign", [""])[0] == base64.b64encode(mac).decode()
        if signed and query.get("access_token") == ["t0k"]:
            Robot.received.append(body)
            answer = {"errcode": 0, "errmsg": "ok"}
        else:
            answer = {"errcode": 310000, "errmsg": "sign not match"}
        self.answer(200, "application/json", json.dumps(answer).encode())


def test_a_plugin_signing_with_node_crypto_runs_unmodified_in_node(server, serve, toolshed_bin, workspace, home):
    # Failed before: `require('crypto')` was refused at load (QuickJS has no Node modules)
    # and the `password` config type was refused at install.
    Robot.received = []
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(DINGTALK))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    warnings = [
        line for line in (installed.stdout + installed.stderr).splitlines()
        if "warning" in line.lower() and "in environment (TOOLSHED_" not in line
    ]
    assert warnings == [], warnings
    with loopback.serving(Robot) as robot:
        webhook = f"http://{robot}/robot/send?access_token=t0k"
        plugin = "notify.dingtalk-robot"
        assert toolshed(toolshed_bin, workspace, home, "plugins", "config", plugin, "webhook", webhook).returncode == 0
        assert toolshed(toolshed_bin, workspace, home, "plugins", "config", plugin, "secret", SECRET).returncode == 0
        assert toolshed(toolshed_bin, workspace, home, "plugins", "grant", plugin, "http:127.0.0.1").returncode == 0
        (home / "web.toml").write_text(f'[web]\nallow = ["{robot}"]\n')

        listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)
        mine = next(p for p in listed["plugins"] if p["id"] == plugin)
        assert mine["state"] == "running", mine
        assert mine["runtime"].startswith("node"), mine
        assert "crypto" in mine["runtime"], mine

        params = server()
        params.env["TOOLSHED_CONFIG"] = str(home / "web.toml")

        async def main():
            async with Client(params, mode="legacy") as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                tool = tools["dingtalk_robot_send_text"]
                assert tool.input_schema["required"] == ["content"], tool.input_schema
                sent = await client.call_tool("dingtalk_robot_send_text", {"content": "build green", "atAll": True})
                assert not sent.is_error, sent.content
                assert sent.structured_content["success"] is True, sent.structured_content

        run(main())
        assert Robot.received == [{"msgtype": "text", "text": {"content": "build green"}, "at": {"isAtAll": True}}]

        url, token = serve({"TOOLSHED_CONFIG": str(home / "web.toml")})
        base = url.removesuffix("/mcp")

        def execute(arguments):
            request = urllib.request.Request(
                base + "/api/v1/tools/dingtalk_robot_send_text/execute",
                data=json.dumps({"arguments": arguments}).encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())

        body = execute({"content": "over rest"})
        assert not body["is_error"], body
        assert Robot.received[-1]["text"] == {"content": "over rest"}
        # The robot refusing (a wrong token) is a tool error with its message.
        body = execute({"content": "x", "webhook": f"http://{robot}/robot/send?access_token=wrong"})
        assert body["is_error"] and "sign not match" in json.dumps(body), body


PROBE_INFO = {
    "id": "tests.node-probe",
    "name": "Probe",
    "version": "1.0.0",
    "description": "Tries what a Node plugin may not do.",
    "author": "toolshed tests",
    "type": "server",
}

PROBE_MAIN = r"""
const fs = require("fs");
exports.activate = (context) => {
  context.registerActions([
    {
      name: "read",
      description: "Reads a file.",
      properties: [{ key: "path", type: "text", required: true }],
      run: async (ctx, args) => {
        try { return "read: " + fs.readFileSync(args.path, "utf8").slice(0, 100); }
        catch (e) { return "refused: " + e.code; }
      },
    },
    {
      name: "write",
      description: "Writes a file.",
      properties: [{ key: "path", type: "text", required: true }],
      run: async (ctx, args) => {
        try { fs.writeFileSync(args.path, "x"); return "wrote"; }
        catch (e) { return "refused: " + e.code; }
      },
    },
    {
      name: "get",
      description: "Fetches a URL.",
      properties: [{ key: "url", type: "text", required: true }],
      run: async (ctx, args) => {
        try { const r = await fetch(args.url); return "got " + r.status + " " + (await r.text()); }
        catch (e) { return "refused: " + e.message; }
      },
    },
  ]);
};
"""


class Counter(loopback.Handler):
    hits = []

    def do_GET(self):
        Counter.hits.append(self.server.server_address[1])
        self.answer(200, "text/plain", b"hello")


def test_a_node_plugin_is_held_by_the_sandbox(toolshed_bin, workspace, home, tmp_path):
    Counter.hits = []
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "info.json").write_text(json.dumps(PROBE_INFO))
    (probe / "main.js").write_text(PROBE_MAIN)
    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(probe)).returncode == 0
    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(DINGTALK)).returncode == 0
    (home / "marker.txt").write_text("the data dir")
    installed = home / "plugins" / "tests.node-probe"
    with loopback.serving(Counter) as granted, loopback.serving(Counter) as other:
        assert toolshed(toolshed_bin, workspace, home, "plugins", "grant", "tests.node-probe", f"http:{granted}").returncode == 0
        (home / "web.toml").write_text(f'[web]\nallow = ["{granted}", "{other}"]\n')

        def call(tool, args):
            done = toolshed(
                toolshed_bin, workspace, home, "--config", str(home / "web.toml"),
                "call", tool, "--args", json.dumps(args),
            )
            assert done.returncode == 0, done.stdout + done.stderr
            return done.stdout.strip()

        # Its own files, the workspace's and the system's are readable.
        assert call("node_probe_read", {"path": str(installed / "main.js")}).startswith("read:")
        assert call("node_probe_read", {"path": str(workspace / "hello.txt")}) == "read: hello from the workspace"
        # The data dir and another plugin's directory are not there at all.
        assert call("node_probe_read", {"path": str(home / "marker.txt")}) == "refused: ENOENT"
        other_plugin = home / "plugins" / "notify.dingtalk-robot" / "main.js"
        assert other_plugin.exists()
        assert call("node_probe_read", {"path": str(other_plugin)}) == "refused: ENOENT"
        # Without an fs-write grant the workspace is read-only, and so is its own directory.
        assert call("node_probe_write", {"path": str(workspace / "new.txt")}) == "refused: EROFS"
        assert not (workspace / "new.txt").exists()
        assert call("node_probe_write", {"path": str(installed / "main.js")}) == "refused: EROFS"
        # The granted host answers; one [web] allow opens but nobody granted is refused
        # before anything reaches it.
        assert call("node_probe_get", {"url": f"http://{granted}/"}) == "got 200 hello"
        refused = call("node_probe_get", {"url": f"http://{other}/"})
        assert refused.startswith("refused:"), refused
        assert Counter.hits == [int(granted.split(":")[1])], Counter.hits
