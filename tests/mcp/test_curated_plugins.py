"""Curated plugins through the Python MCP client: download_file streams a loopback file
with progress notifications; iot_control under a policy `ask` rule waits for the person's
answer (MCP elicitation) before Home Assistant (a loopback fake of its REST API) is called."""

import asyncio
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp import Client, types

import loopback

REPO = Path(__file__).resolve().parents[2]
PAYLOAD = bytes((i * 31 + 7) % 251 for i in range(900 * 1024))
HASS_TOKEN = "hassLongLivedTokenForTheMcpTest0123"


def run(coro, timeout=90):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


class Site(loopback.Handler):
    """A file server, and the Home Assistant REST API's documented endpoints."""

    calls = []

    def do_GET(self):
        if self.path == "/blob.bin":
            self.answer(200, "application/octet-stream", PAYLOAD)
        elif self.path == "/api/states/light.kitchen":
            self.hass(lambda: {"entity_id": "light.kitchen", "state": "off", "attributes": {"friendly_name": "Kitchen light"}})
        elif self.path == "/api/services":
            self.hass(lambda: [{"domain": "light", "services": {"turn_on": {}, "turn_off": {}}}])
        else:
            self.answer(404, "application/json", b'{"message": "Not Found"}')

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        Site.calls.append((self.path, self.headers.get("authorization"), body))
        self.hass(lambda: [{"entity_id": body.get("entity_id"), "state": "on", "attributes": {}}])

    def hass(self, make):
        if self.headers.get("authorization") != f"Bearer {HASS_TOKEN}":
            return self.answer(401, "text/plain", b"401: Unauthorized")
        self.answer(200, "application/json", json.dumps(make()).encode())


@pytest.fixture
def site():
    Site.calls = []
    with loopback.serving(Site) as address:
        yield address


def test_download_file_reports_progress_and_writes_the_file(server, workspace, home, site):
    # Downloads reach public addresses only; the user's own config allows this one.
    (home / "web.toml").write_text(f'[web]\nallow = ["{site}"]\n')
    params = server()
    params.env["TOOLSHED_CONFIG"] = str(home / "web.toml")
    reports = []

    async def progress(done, total, message):
        reports.append((done, total, message))

    async def main():
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool(
                "download_file",
                {"url": f"http://{site}/blob.bin", "path": "downloads/blob.bin",
                 "sha256": hashlib.sha256(PAYLOAD).hexdigest()},
                progress_callback=progress,
            )
            assert not result.is_error, result.content
            assert result.structured_content["bytes"] == len(PAYLOAD)

    run(main())
    assert (workspace / "downloads" / "blob.bin").read_bytes() == PAYLOAD
    assert len(reports) >= 3, reports
    assert reports[-1][0] == len(PAYLOAD) and reports[-1][1] == len(PAYLOAD), reports[-1]
    assert all(b[0] >= a[0] for a, b in zip(reports, reports[1:])), "progress only grows"


def test_iot_control_under_an_ask_rule_waits_for_the_persons_answer(server, toolshed_bin, workspace, home, site):
    curated = {"TOOLSHED_CURATED_DIR": str(REPO / "plugins")}
    env = dict(curated)

    def cli(*args, stdin=None):
        return subprocess.run(
            [toolshed_bin, "--workspace", str(workspace), *args],
            env={**os.environ, "TOOLSHED_HOME": str(home), **env},
            input=stdin, capture_output=True, text=True, timeout=30, check=True,
        )

    cli("plugins", "config", "toolshed.homeassistant", "base_url", f"http://{site}")
    cli("plugins", "config", "toolshed.homeassistant", "token", "-", stdin=HASS_TOKEN)
    cli("plugins", "grant", "toolshed.homeassistant", "http:127.0.0.1")
    # The grant narrows the web rules; the person opens the loopback site in [web] allow.
    (home / "policy.toml").write_text(
        '[[policy.rule]]\nname = "ask before touching devices"\ntools = ["iot_control"]\ndecision = "ask"\n'
        f'[web]\nallow = ["{site}"]\n'
    )
    params = server("--config", str(home / "policy.toml"))
    params.env.update(curated)
    answers, asked = [], []

    async def on_elicit(context, params: types.ElicitRequestParams):
        asked.append(params.message)
        return types.ElicitResult(action=answers.pop(0))

    async def main():
        async with Client(params, mode="legacy", elicitation_callback=on_elicit) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            control = tools["iot_control"]
            # Absent hints read as MCP's defaults: destructive and open-world.
            hints = control.annotations
            assert hints is None or (hints.destructive_hint is not False and hints.open_world_hint is not False
                                     and not hints.read_only_hint), hints
            assert tools["iot_query"].annotations.read_only_hint is True
            args = {"entity_id": "light.kitchen", "service": "light.turn_on", "data": {"brightness_pct": 40}}
            answers.append("decline")
            refused = await client.call_tool("iot_control", args)
            assert refused.is_error and "ask before touching devices" in refused.content[0].text, refused.content
            assert Site.calls == [], "nothing reached Home Assistant"
            answers.append("accept")
            done = await client.call_tool("iot_control", args)
            assert not done.is_error, done.content
            assert done.structured_content["changed"] == [{"entity_id": "light.kitchen", "state": "on"}]

    run(main())
    assert len(asked) == 2 and "iot_control" in asked[0] and "light.kitchen" in asked[0], asked
    assert Site.calls == [
        ("/api/services/light/turn_on", f"Bearer {HASS_TOKEN}", {"entity_id": "light.kitchen", "brightness_pct": 40})
    ]
