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
import os
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
        import subprocess
        doctor = subprocess.run(
            [toolshed_bin, "--workspace", str(workspace), "doctor"],
            env=dict(os.environ, TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "no-curated")),
            capture_output=True, text=True, timeout=60,
        )
        assert "notify.dingtalk-robot: node (main.js uses Node's `crypto` module)" in doctor.stdout, doctor.stdout

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

        # The Node runtime's tools have their titles in each language too.
        req = urllib.request.Request(base + "/api/v1/tools?plugin=notify.dingtalk-robot&locale=zh", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=30) as response:
            listed = {t["name"]: t for t in json.loads(response.read())["tools"]}
        assert listed["dingtalk_robot_send_text"]["title"] == "发送文本", listed
        req = urllib.request.Request(base + "/api/v1/tools?plugin=notify.dingtalk-robot", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=30) as response:
            listed = {t["name"]: t for t in json.loads(response.read())["tools"]}
        assert listed["dingtalk_robot_send_text"]["title"] == "Send text", listed

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


FEED = REPO / "tests" / "fixtures" / "seed-plugins" / "spaces-feed-slugs"


class Feed(loopback.Handler):
    def do_GET(self):
        items = "".join(f"<item><title>{t}</title></item>" for t in ("Hello, World!", "Café au lait at 9"))
        self.answer(200, "application/rss+xml", f"<rss><channel>{items}</channel></rss>".encode())


def test_a_plugin_with_an_npm_dependency_installs_it_from_its_lock_file(server, serve, toolshed_bin, workspace, home):
    # Failed before: `require('tiny-slug')` named a package QuickJS cannot load, and
    # nothing installed the plugin's dependencies.
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(FEED))
    out = installed.stdout + installed.stderr
    assert "npm: 1 package(s)" in out, out
    assert "postinstall" in out and "not run" in out, out
    assert [line for line in out.splitlines() if "warning" in line.lower() and "in environment (TOOLSHED_" not in line] == []
    target = home / "plugins" / "content.feed-slugs"
    assert (target / "node_modules" / "tiny-slug" / "index.js").is_file()
    # The plugin's own postinstall script never ran, and the fixture is as it was.
    assert not (target / "postinstall-ran").exists() and not (FEED / "postinstall-ran").exists()
    assert not (FEED / "node_modules").exists()
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)
    mine = next(p for p in listed["plugins"] if p["id"] == "content.feed-slugs")
    assert mine["state"] == "running" and mine["runtime"].startswith("node"), mine
    deps = mine["provenance"]["dependencies"]
    assert deps["manager"] == "npm" and deps["packages"] == 1 and deps["bytes"] > 0, deps

    with loopback.serving(Feed) as feed:
        assert toolshed(toolshed_bin, workspace, home, "plugins", "grant", "content.feed-slugs", f"http:{feed}").returncode == 0
        (home / "web.toml").write_text(f'[web]\nallow = ["{feed}"]\n')
        params = server()
        params.env["TOOLSHED_CONFIG"] = str(home / "web.toml")
        wanted = [{"title": "Hello, World!", "slug": "hello-world"}, {"title": "Café au lait at 9", "slug": "cafe-au-lait-at-9"}]

        async def main():
            async with Client(params, mode="legacy") as client:
                done = await client.call_tool("feed_slugs_slugs", {"url": f"http://{feed}/rss"})
                assert not done.is_error, done.content
                assert done.structured_content["data"]["items"] == wanted, done.structured_content

        run(main())
        url, token = serve({"TOOLSHED_CONFIG": str(home / "web.toml")})
        request = urllib.request.Request(
            url.removesuffix("/mcp") + "/api/v1/tools/feed_slugs_slugs/execute",
            data=json.dumps({"arguments": {"url": f"http://{feed}/rss"}}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = json.loads(response.read())
        assert not body["is_error"] and body["structured"]["data"]["items"] == wanted, body


def npm_tarball(path: Path, name: str, files: dict) -> str:
    """Writes an npm package tarball of `files` (under `package/`); its integrity string."""
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for rel, data in {"package.json": json.dumps({"name": name, "version": "1.0.0", "main": "index.js"}), **files}.items():
            raw = data if isinstance(data, bytes) else data.encode()
            info = tarfile.TarInfo(f"package/{rel}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def plugin_with_dependency(root: Path, name: str, files: dict, resolved=None) -> Path:
    """A plugin depending on package `name` (a tarball in vendor/, or `resolved`), locked."""
    root.mkdir()
    (root / "vendor").mkdir()
    integrity = npm_tarball(root / "vendor" / f"{name}-1.0.0.tgz", name, files)
    spec = resolved or f"file:vendor/{name}-1.0.0.tgz"
    (root / "info.json").write_text(json.dumps({**PROBE_INFO, "id": f"tests.uses-{name}"}))
    (root / "main.js").write_text(f"const dep = require('{name}');\nexports.activate = (c) => c.registerActions([]);\n")
    (root / "package.json").write_text(json.dumps({"name": "p", "version": "1.0.0", "dependencies": {name: spec}}))
    lock = {
        "name": "p", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
        "packages": {
            "": {"name": "p", "version": "1.0.0", "dependencies": {name: spec}},
            f"node_modules/{name}": {"version": "1.0.0", "resolved": spec, "integrity": integrity},
        },
    }
    (root / "package-lock.json").write_text(json.dumps(lock))
    return root


def install_fails(toolshed_bin, workspace, home, source, *config):
    import subprocess

    env = dict(os.environ, TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "no-curated"))
    done = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), *config, "plugins", "install", str(source)],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode != 0, done.stdout + done.stderr
    plugins = home / "plugins"
    left = sorted(p.name for p in plugins.iterdir() if p.name != ".lock") if plugins.exists() else []
    assert left == [], f"nothing is left behind: {left}"
    return done.stderr


def test_npm_installs_that_cannot_work_or_run_away_leave_nothing_behind(toolshed_bin, workspace, home, tmp_path):
    # A native addon is refused by name: its build step would never run.
    addon = plugin_with_dependency(tmp_path / "addon", "fast-thing", {"index.js": "module.exports = 1;", "binding.gyp": "{}"})
    said = install_fails(toolshed_bin, workspace, home, addon)
    assert "`fast-thing` is a native addon" in said and "nothing was installed" in said.lower(), said

    # Past the size limit: stopped.
    (home / "small.toml").write_text("[plugins]\nnpm_max_mb = 1\n")
    big = plugin_with_dependency(tmp_path / "big", "big-thing", {"index.js": "module.exports = 1;", "blob.bin": os.urandom(3 << 20)})
    said = install_fails(toolshed_bin, workspace, home, big, "--config", str(home / "small.toml"))
    assert "1 MiB" in said and "nothing was installed" in said, said

    # Past the time limit (a registry that never answers): stopped.
    class Silent(loopback.Handler):
        def do_GET(self):
            import time
            time.sleep(20)

    with loopback.serving(Silent) as registry:
        (home / "slow.toml").write_text(f'[plugins]\nnpm_timeout_secs = 2\n[web]\nallow = ["{registry}"]\n')
        slow = plugin_with_dependency(
            tmp_path / "slow", "slow-thing", {"index.js": "module.exports = 1;"},
            resolved=f"http://{registry}/slow-thing/-/slow-thing-1.0.0.tgz",
        )
        os.environ["npm_config_registry"] = f"http://{registry}/"
        try:
            said = install_fails(toolshed_bin, workspace, home, slow, "--config", str(home / "slow.toml"))
        finally:
            del os.environ["npm_config_registry"]
        assert "ran past its 2 s limit" in said, said

    # No lock file: refused with the fix.
    bare = tmp_path / "bare"
    plugin_with_dependency(bare, "tiny", {"index.js": "module.exports = 1;"})
    (bare / "package-lock.json").unlink()
    said = install_fails(toolshed_bin, workspace, home, bare)
    assert "no package-lock.json" in said and "npm install --package-lock-only" in said, said


def test_without_node_a_node_plugin_is_unconfigured_saying_what_to_install(toolshed_bin, workspace, home):
    # Failed before: the plugin went to `error` on its first start instead.
    import subprocess

    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(DINGTALK)).returncode == 0
    env = dict(os.environ, TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "no-curated"), PATH="/nonexistent")

    def state():
        listed = subprocess.run([toolshed_bin, "--workspace", str(workspace), "plugins", "list", "--json"],
                                env=env, capture_output=True, text=True, timeout=60)
        return next(p for p in json.loads(listed.stdout)["plugins"] if p["id"] == "notify.dingtalk-robot")

    # Never started: its tools are not known yet, and starting it says what to install.
    mine = state()
    assert mine["state"] == "error" and "apt-get install nodejs" in mine["reason"], mine
    # Once its tools are known (it ran where Node.js was), they are unconfigured instead.
    toolshed(toolshed_bin, workspace, home, "plugins", "reload", "notify.dingtalk-robot")
    mine = state()
    assert mine["state"] == "degraded" and "install node" in mine["reason"], mine
    called = subprocess.run([toolshed_bin, "--workspace", str(workspace), "call", "dingtalk_robot_send_text", "--args", '{"content": "x"}'],
                            env=env, capture_output=True, text=True, timeout=60)
    assert called.returncode != 0 and "unconfigured" in called.stderr and "install node" in called.stderr, called.stderr
    inspected = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "inspect", str(DINGTALK), "--json").stdout)
    node = [r for r in inspected["manifest"]["requirements"] if r["binary"] == "node"]
    assert node and "apt-get install nodejs" in node[0]["description"], inspected["manifest"]
