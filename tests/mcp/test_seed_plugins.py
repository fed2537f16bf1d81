"""Plugins written to the contracts of the systems toolshed replaces install unchanged and
answer through the MCP door: an Agent Spaces-style plugin (info.json, CommonJS main.js
with exports.activate/deactivate, actions in actions.js and shared.js, using console, URL,
setTimeout and fetch to a granted loopback host) and a Fenix-style plugin.yml whose
tool_catalog is served by functions exported under the tools' names."""

import asyncio
import hashlib
import json
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from mcp import Client

import loopback
from test_stdio import toolshed

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "plugins"
WEATHER = FIXTURES / "agent-spaces-weather"
NOTES = FIXTURES / "fenix-notes"


def run(coro, timeout=90):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


class Forecast(loopback.Handler):
    seen = []

    def do_GET(self):
        url = urlparse(self.path)
        Forecast.seen.append((url.path, parse_qs(url.query), self.headers.get("accept")))
        if url.path != "/forecast":
            return self.answer(404, "text/plain", b"")
        self.answer(200, "application/json", json.dumps({"sky": "sunny", "celsius": 21}).encode())


@pytest.fixture
def forecast():
    Forecast.seen = []
    with loopback.serving(Forecast) as address:
        yield address


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_seed_plugins_install_unchanged_and_answer_over_mcp(server, toolshed_bin, workspace, home, forecast):
    before = {d: tree_digest(d) for d in (WEATHER, NOTES)}
    for source, line in ((WEATHER, "spaces.weather 1.0.0"), (NOTES, "fenix.notes 2.0.0")):
        installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(source))
        assert installed.returncode == 0, installed.stderr
        assert line in installed.stdout, installed.stdout
    assert {d: tree_digest(d) for d in (WEATHER, NOTES)} == before, "the fixtures are installed as they are"

    # `plugins inspect` says what it mapped and what it ignored.
    inspected = toolshed(toolshed_bin, workspace, home, "plugins", "inspect", str(WEATHER), "--json")
    assert inspected.returncode == 0, inspected.stderr
    report = json.loads(inspected.stdout)
    assert report["dialect"] == "foreign"
    assert report["manifest"]["translations"]["zh"]["name"] == "天气"
    actions = {f["field"]: f["action"] for f in report["fields"]}
    assert actions["name_zh"] == "mapped" and actions["hasWorkflow"] == "ignored", actions
    # Its config block as Agent Spaces writes it (failed before: `desc` was an unknown
    # field, "30000" not a number, `{label, value}` options not the default's).
    config = {f["key"]: f for f in report["manifest"]["config"]}
    assert config["defaultTimeout"]["default"] == 30000, config
    assert config["apiKey"]["secret"] is True and config["units"]["options"] == ["metric", "imperial"], config
    assert actions["config[0].desc"] == "mapped" and actions["config[0].placeholder"] == "ignored", actions

    # TOOLSHED_LANG picks the names the manifest translates.
    zh = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "plugins", "list", "--json"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), "TOOLSHED_LANG": "zh"},
        capture_output=True, text=True, timeout=30, check=True,
    )
    names = {p["id"]: p["name"] for p in json.loads(zh.stdout)["plugins"]}
    assert names["spaces.weather"] == "天气" and names["fenix.notes"] == "Notes", names
    assert "unknown" not in zh.stderr, zh.stderr

    # The plugin asks for the network; a person grants the one host, and (in the user's
    # own config) lets toolshed reach loopback at all.
    granted = toolshed(toolshed_bin, workspace, home, "plugins", "grant", "spaces.weather", "http:127.0.0.1")
    assert granted.returncode == 0, granted.stderr
    (home / "web.toml").write_text(f'[web]\nallow = ["{forecast}"]\n')
    params = server()
    params.env["TOOLSHED_CONFIG"] = str(home / "web.toml")

    async def main():
        async with Client(params, mode="auto") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for name in ("weather_forecast", "note_add", "note_list"):
                assert name in tools, sorted(tools)
            assert tools["note_add"].input_schema["required"] == ["text"]
            assert tools["note_list"].annotations.read_only_hint is True

            result = await client.call_tool(
                "weather_forecast", {"city": "Hangzhou", "service": f"http://{forecast}/"}
            )
            assert not result.is_error, result.content
            assert result.structured_content == {
                "city": "Hangzhou", "summary": "sunny, 21 °C", "celsius": 21, "status": 200,
            }
            assert Forecast.seen == [("/forecast", {"city": ["Hangzhou"]}, "application/json")]

            # fetch goes through the grants: a host nobody granted is refused, naming the
            # command that grants it, and nothing is sent.
            port = forecast.split(":")[1]
            result = await client.call_tool(
                "weather_forecast", {"city": "Hangzhou", "service": f"http://localhost:{port}/"}
            )
            assert result.is_error
            assert "toolshed plugins grant spaces.weather http:localhost" in result.content[0].text, result.content
            assert len(Forecast.seen) == 1

            # The Fenix plugin: catalog tools, schema defaults, state kept between calls.
            first = await client.call_tool("note_add", {"text": "buy milk"})
            assert not first.is_error, first.content
            assert first.structured_content == {"number": 1, "count": 1, "tag": "general"}
            second = await client.call_tool("note_add", {"text": "ship it", "tag": "work"})
            assert second.structured_content["number"] == 2
            listed = await client.call_tool("note_list", {"tag": "work"})
            assert listed.structured_content == {"notes": [{"text": "ship it", "tag": "work"}], "count": 1}
            # The catalog's schema is enforced before the plugin runs.
            refused = await client.call_tool("note_add", {"text": ""})
            assert refused.is_error and "text" in refused.content[0].text, refused.content

    run(main())


def test_a_plugin_that_needs_another_is_held_until_it_is_there(toolshed_bin, workspace, home, tmp_path):
    """Cyrene-style `dependencies`: checked when the plugin starts and when it is enabled."""
    dependent = tmp_path / "dependent"
    dependent.mkdir()
    (dependent / "plugin.json").write_text(json.dumps({
        "id": "cyrene.report", "version": "1.0.0", "name": "Report", "kind": "js",
        "author": "Cyrene", "dependencies": {"fenix.notes": "^2"},
    }))
    (dependent / "main.js").write_text(
        'export function activate(c) { c.registerActions([{ name: "make", description: "Make a report.", run: () => "ok" }]); }\n'
    )
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(dependent))
    assert installed.returncode == 0, installed.stderr
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)["plugins"]
    report = next(p for p in listed if p["id"] == "cyrene.report")
    assert report["state"] == "error", report
    assert "`fenix.notes` (^2) is not installed" in report["reason"], report

    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(NOTES)).returncode == 0
    called = toolshed(toolshed_bin, workspace, home, "call", "report_make", "--args", "{}")
    assert called.returncode == 0, called.stderr

    # Disabling the dependency stops the plugin that needs it, saying why.
    disabled = toolshed(toolshed_bin, workspace, home, "plugins", "disable", "fenix.notes")
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)["plugins"]
    report = next(p for p in listed if p["id"] == "cyrene.report")
    assert report["state"] == "error" and "`fenix.notes` is disabled" in report["reason"], (report, disabled.stdout)
    assert toolshed(toolshed_bin, workspace, home, "plugins", "disable", "cyrene.report").returncode == 0
    with pytest.raises(subprocess.CalledProcessError) as refused:
        toolshed(toolshed_bin, workspace, home, "plugins", "enable", "cyrene.report")
    enabled = refused.value
    assert "`fenix.notes` is disabled; enable it with `toolshed plugins enable fenix.notes`" in enabled.stderr


PAGE_FETCH = REPO / "tests" / "fixtures" / "seed-plugins" / "spaces-fetch"


class Page(loopback.Handler):
    agents = []

    def do_GET(self):
        Page.agents.append(self.headers.get("user-agent"))
        if self.path != "/page":
            return self.answer(404, "text/plain", b"gone")
        self.answer(200, "text/plain", ("tides " * 1000).encode())

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        kind = self.headers.get("content-type")
        self.answer(200, "application/json", json.dumps({"echo": body, "type": kind}).encode())


def test_an_agent_spaces_plugin_as_its_templates_write_it_runs_unmodified(server, serve, toolshed_bin, workspace, home):
    # Failed before: the config block's `desc`/`value` were unknown fields, the actions'
    # array `properties`, `category` and `icon` were refused, run() got its arguments the
    # other way round, and `{success: false}` came back as a success.
    before = tree_digest(PAGE_FETCH)
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(PAGE_FETCH))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    warnings = [
        line for line in (installed.stdout + installed.stderr).splitlines()
        # The test runner's own TOOLSHED_* variables are warned about as config keys; any
        # other warning would be about the plugin.
        if "warning" in line.lower() and "in environment (TOOLSHED_" not in line
    ]
    assert warnings == [], warnings
    assert tree_digest(PAGE_FETCH) == before, "the fixture is installed as it is"
    inspected = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "inspect", str(PAGE_FETCH), "--json").stdout)
    assert inspected["manifest"]["dialect"] == "agent-spaces", inspected["manifest"]
    assert toolshed(toolshed_bin, workspace, home, "plugins", "grant", "workflow.page-fetch", "http:127.0.0.1").returncode == 0

    with loopback.serving(Page) as site:
        (home / "web.toml").write_text(f'[web]\nallow = ["{site}"]\n')
        params = server()
        params.env["TOOLSHED_CONFIG"] = str(home / "web.toml")

        async def main():
            async with Client(params, mode="legacy") as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                tool = tools["page_fetch_get_text"]
                # `tool: false` marks a workflow node, not a tool for an agent.
                assert "page_fetch_preview_page" not in tools, sorted(tools)
                # The English label and description, never a raw key; a default makes a
                # property optional; the select's options are its enum.
                assert tool.title == "Fetch page text" and "maxChars" in tool.description, tool
                schema = tool.input_schema
                assert schema["required"] == ["url"], schema
                assert schema["properties"]["mode"]["enum"] == ["text", "length"], schema
                assert schema["properties"]["maxChars"]["default"] == 2000, schema
                # A config template default is filled from the config when the call runs,
                # and never shown in the schema.
                assert "default" not in schema["properties"]["userAgent"], schema

                done = await client.call_tool("page_fetch_get_text", {"url": f"http://{site}/page"})
                assert not done.is_error, done.content
                assert done.content[0].text.startswith(f"Fetched http://{site}/page"), done.content[0].text
                assert done.structured_content["data"]["status"] == 200
                assert len(done.structured_content["data"]["text"]) == 2000
                assert Page.agents[-1] == "page-fetch/1.0", Page.agents
                length = await client.call_tool("page_fetch_get_text", {"url": f"http://{site}/page", "mode": "length"})
                assert length.structured_content["data"]["text"] == str(len("tides " * 1000)), length.content

                # ctx.api, Agent Spaces' helpers, over the same grants.
                posted = await client.call_tool("page_fetch_post_json", {"url": f"http://{site}/api", "body": {"q": 1}})
                assert not posted.is_error, posted.content
                assert posted.structured_content["data"] == {"echo": {"q": 1}, "type": "application/json"}, posted.content

                failed = await client.call_tool("page_fetch_get_text", {"url": f"http://{site}/missing"})
                assert failed.is_error and "The page answered 404" in failed.content[0].text, failed.content

        run(main())

        # The same action through REST.
        import urllib.request
        url, token = serve({"TOOLSHED_CONFIG": str(home / "web.toml")})
        request = urllib.request.Request(
            url.removesuffix("/mcp") + "/api/v1/tools/page_fetch_get_text/execute",
            data=json.dumps({"arguments": {"url": f"http://{site}/page", "mode": "length"}}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = json.loads(response.read())
        assert not body["is_error"] and body["structured"]["data"]["text"] == "6000", body

        # Tags, author and dialect are listed, and `?tag=` filters in any language (failed
        # before: tags appeared nowhere and the filter was ignored).
        def listed(query):
            req = urllib.request.Request(
                url.removesuffix("/mcp") + "/api/v1/plugins" + query,
                headers={"Authorization": f"Bearer {token}"},
            )
            with urllib.request.urlopen(req, timeout=30) as response:
                return {p["id"]: p for p in json.loads(response.read())["plugins"]}

        everything = listed("")
        mine = everything["workflow.page-fetch"]
        # The plain `tags` as the manifest writes them (Chinese here, as the templates do);
        # `?locale=en` gives the English ones.
        assert mine["tags"] == ["网络"] and mine["author"] == "toolshed tests" and mine["dialect"] == "agent-spaces", mine
        assert listed("?locale=en")["workflow.page-fetch"]["tags"] == ["network"]
        assert set(listed("?tag=network")) == {"workflow.page-fetch"}
        assert set(listed("?tag=%E7%BD%91%E7%BB%9C")) == {"workflow.page-fetch"}  # 网络
        assert listed("?tag=network&locale=zh")["workflow.page-fetch"]["tags"] == ["网络"]
        assert "dialect" in listed("")["workflow.page-fetch"]
        assert listed("?tag=nothing-has-this") == {}

        # Tool titles in the language asked for (failed before: plugin names only).
        def tools(path):
            req = urllib.request.Request(url.removesuffix("/mcp") + "/api/v1" + path, headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, timeout=30) as response:
                return {t["name"]: t for t in json.loads(response.read())["tools"]}

        assert tools("/plugins/workflow.page-fetch/tools?locale=zh")["page_fetch_get_text"]["title"] == "抓取网页文本"
        assert tools("/plugins/workflow.page-fetch/tools?locale=en")["page_fetch_get_text"]["title"] == "Fetch page text"
        zh = tools("/tools?plugin=workflow.page-fetch&locale=zh-CN")["page_fetch_get_text"]
        assert zh["title"] == "抓取网页文本" and "translations" not in zh, zh
        # A key the language lacks falls back to the plugin's other text, never the key.
        assert "action." not in zh["description"], zh


def test_a_client_plugin_that_serves_nothing_here_installs_and_keeps_running(toolshed_bin, workspace, home):
    # Failed before: activate() registering nothing put the plugin in `error`.
    client_part = REPO / "tests" / "fixtures" / "seed-plugins" / "spaces-client"
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(client_part))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)
    mine = next(p for p in listed["plugins"] if p["id"] == "workflow.clipboard-view")
    assert mine["state"] == "running", mine


def test_a_cyrene_plugin_json_without_an_id_installs_and_answers(server, serve, toolshed_bin, workspace, home):
    # Failed before: with an object `author` and a list of `dependencies` but no other
    # foreign field, plugin.json was read as toolshed's own and refused (and it has no id).
    echo = REPO / "tests" / "fixtures" / "seed-plugins" / "cyrene-echo"
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(echo))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "cyrene-echo 1.2.0" in installed.stdout, installed.stdout
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)
    mine = next(p for p in listed["plugins"] if p["id"] == "cyrene-echo")
    assert mine["state"] == "running", mine

    async def main():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("cyrene_echo_say", {"text": "hi"})
            assert not result.is_error and result.content[0].text == "echo: hi", result.content

    run(main())

    import urllib.request
    url, token = serve()
    request = urllib.request.Request(
        url.removesuffix("/mcp") + "/api/v1/tools/cyrene_echo_say/execute",
        data=json.dumps({"arguments": {"text": "over rest"}}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert not body["is_error"] and body["content"][0]["text"] == "echo: over rest", body


STATIC = REPO / "tests" / "fixtures" / "seed-plugins" / "spaces-static"
WEB_CLIENT = REPO / "tests" / "fixtures" / "seed-plugins" / "spaces-web-client"


class TitledPage(loopback.Handler):
    def do_GET(self):
        self.answer(200, "text/html", b"<html><head><title> Tide tables </title></head></html>")


def test_static_workflow_and_tools_declarations_become_tools(server, serve, toolshed_bin, workspace, home):
    # Failed before: activate() registered nothing, so the plugin had no tools; its
    # iconPath, homepage and view entry were dropped.
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(STATIC))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)
    mine = next(p for p in listed["plugins"] if p["id"] == "workflow.text-kit")
    assert mine["state"] == "running" and mine["runtime"] == "quickjs", mine
    assert mine["icon"] == "assets/logo.svg" and mine["homepage"] == "https://example.com/text-kit", mine
    assert mine["not_served"] == ["view (view.js): not served by a headless host"], mine
    assert toolshed(toolshed_bin, workspace, home, "plugins", "grant", "workflow.text-kit", "http:127.0.0.1").returncode == 0

    with loopback.serving(TitledPage) as site:
        (home / "web.toml").write_text(f'[web]\nallow = ["{site}"]\n')
        params = server()
        params.env["TOOLSHED_CONFIG"] = str(home / "web.toml")

        async def main():
            async with Client(params, mode="legacy") as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                # The workflow node and the tool of one name are one tool, in the node's
                # form (a title, the switch as a boolean with its default).
                count = tools["text_kit_count_words"]
                assert count.title == "Count words", count
                assert count.input_schema["properties"]["unique"]["type"] == "boolean", count.input_schema
                assert count.input_schema["required"] == ["text"], count.input_schema
                title = tools["text_kit_page_title"]
                assert title.input_schema["required"] == ["url"], title.input_schema
                assert title.input_schema["properties"]["timeout"]["default"] == 5000, title.input_schema

                done = await client.call_tool("text_kit_count_words", {"text": "the sea the tide", "unique": True})
                assert not done.is_error and done.structured_content["data"]["count"] == 3, done.content
                done = await client.call_tool("text_kit_page_title", {"url": f"http://{site}/"})
                assert not done.is_error, done.content
                assert done.structured_content["data"]["title"] == "Tide tables", done.structured_content

        run(main())

        import urllib.request
        url, token = serve({"TOOLSHED_CONFIG": str(home / "web.toml")})
        base = url.removesuffix("/mcp") + "/api/v1"
        request = urllib.request.Request(
            base + "/tools/text_kit_page_title/execute",
            data=json.dumps({"arguments": {"url": f"http://{site}/"}}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = json.loads(response.read())
        assert not body["is_error"] and body["structured"]["data"]["title"] == "Tide tables", body
        # The icon iconPath names is served.
        request = urllib.request.Request(base + "/plugins/workflow.text-kit/icon", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.headers["content-type"] == "image/svg+xml"
            assert response.read() == (STATIC / "assets" / "logo.svg").read_bytes()


def test_a_client_only_web_plugin_installs_and_keeps_running_with_no_tools(toolshed_bin, workspace, home):
    # Failed before: web-plugin.json with only client and view entries was refused
    # (`missing field kind`).
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(WEB_CLIENT))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)
    mine = next(p for p in listed["plugins"] if p["id"] == "workflow.board-view")
    assert mine["state"] == "running" and mine["tools"] == [], mine
    assert mine["icon"] == "https://example.com/board-view/icon.png", mine
    assert mine["not_served"] == [
        "client (https://example.com/board-view/web-client.js): not served by a headless host",
        "view (https://example.com/board-view/view.js): not served by a headless host",
    ], mine
    inspected = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "inspect", str(WEB_CLIENT), "--json").stdout)
    assert not [f for f in inspected["fields"] if "knows" in f["why"]], inspected["fields"]


LEDGER = REPO / "tests" / "fixtures" / "seed-plugins" / "fenix-ledger"


class Ledger(loopback.Handler):
    entries = []
    tokens = []

    def do_GET(self):
        Ledger.tokens.append(self.headers.get("authorization"))
        total = sum(e["amount"] for e in Ledger.entries)
        self.answer(200, "application/json", json.dumps({"balance": total}).encode())

    def do_POST(self):
        Ledger.tokens.append(self.headers.get("authorization"))
        entry = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Ledger.entries.append(entry)
        total = sum(e["amount"] for e in Ledger.entries)
        self.answer(200, "application/json", json.dumps({"id": len(Ledger.entries), "balance": total}).encode())


def test_a_fenix_plugin_yml_as_the_seed_writes_it_runs_with_its_env_contract(server, serve, toolshed_bin, workspace, home):
    # Failed before: `tools[0]: missing field name` (tool_id), then `requirements: invalid
    # type: map`; display_name and default_runtime_plane were unknown.
    Ledger.entries, Ledger.tokens = [], []
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(LEDGER))
    out = installed.stdout + installed.stderr
    assert "fenix.ledger 3.0.0" in out, out
    assert [l for l in out.splitlines() if "warning" in l.lower() and "in environment (TOOLSHED_" not in l] == []
    inspected = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "inspect", str(LEDGER), "--json").stdout)
    manifest = inspected["manifest"]
    assert manifest["name"] == "Ledger" and manifest["dialect"] == "fenix", manifest
    assert [r["binary"] for r in manifest["requirements"]] == ["sh", "git"], manifest["requirements"]
    tools = {t["name"]: t for t in manifest["tools"]}
    assert tools["ledger_balance"]["title"] == "Balance" and tools["ledger_balance"]["group"] == "ledger"
    assert not [f for f in inspected["fields"] if "knows" in f["why"] or f["action"] == "ignored"], inspected["fields"]

    # Its env contract is enforced: without the variables it says which are missing.
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)
    mine = next(p for p in listed["plugins"] if p["id"] == "fenix.ledger")
    assert "LEDGER_TOKEN" in (mine["reason"] or "") and "LEDGER_URL" in (mine["reason"] or ""), mine
    # The contract's variables reach the plugin only once a person grants them.
    assert toolshed(
        toolshed_bin, workspace, home, "plugins", "grant", "fenix.ledger",
        "http:127.0.0.1", "env:LEDGER_URL", "env:LEDGER_TOKEN",
    ).returncode == 0

    with loopback.serving(Ledger) as ledger:
        (home / "web.toml").write_text(f'[web]\nallow = ["{ledger}"]\n')
        env = {"TOOLSHED_CONFIG": str(home / "web.toml"), "LEDGER_URL": f"http://{ledger}/", "LEDGER_TOKEN": "tok-ledger-1"}
        params = server()
        params.env.update(env)

        async def main():
            async with Client(params, mode="legacy") as client:
                listed = {t.name: t for t in (await client.list_tools()).tools}
                assert listed["ledger_balance"].annotations.read_only_hint is True
                assert listed["ledger_record"].input_schema["required"] == ["amount", "memo"]
                done = await client.call_tool("ledger_record", {"amount": 12.5, "memo": "lunch"})
                assert not done.is_error, done.content
                assert done.structured_content == {"id": 1, "balance": 12.5}, done.structured_content

        run(main())
        url, token = serve(env)
        import urllib.request
        request = urllib.request.Request(
            url.removesuffix("/mcp") + "/api/v1/tools/ledger_balance/execute",
            data=json.dumps({"arguments": {}}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = json.loads(response.read())
        assert not body["is_error"] and body["structured"] == {"balance": 12.5}, body
        assert Ledger.tokens == ["Bearer tok-ledger-1", "Bearer tok-ledger-1"], Ledger.tokens


SEED_FIXTURES = sorted(p for p in (REPO / "tests" / "fixtures" / "seed-plugins").iterdir() if p.is_dir())


def test_every_seed_fixture_installs_unmodified_with_no_manifest_warning(toolshed_bin, workspace, home):
    for fixture in SEED_FIXTURES:
        before = tree_digest(fixture)
        installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(fixture))
        out = installed.stdout + installed.stderr
        warnings = [l for l in out.splitlines() if "warning" in l.lower() and "in environment (TOOLSHED_" not in l]
        assert warnings == [], (fixture.name, warnings)
        assert tree_digest(fixture) == before, f"{fixture.name} is installed as it is"
        inspected = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "inspect", str(fixture), "--json").stdout)
        unknown = [f for f in inspected["fields"] if "knows" in f["why"]]
        assert unknown == [], (fixture.name, unknown)
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)
    problems = [d for d in listed["problems"] if "seed-plugins" in json.dumps(d) or "plugins/" in json.dumps(d)]
    assert problems == [], problems


def test_an_env_contract_variable_reaches_a_plugin_only_once_granted(toolshed_bin, workspace, home):
    # Failed before the review: naming a variable in the env contract was enough to read
    # it from toolshed's environment.
    installed = toolshed(toolshed_bin, workspace, home, "plugins", "install", str(LEDGER))
    assert installed.returncode == 0, installed.stderr
    import os
    import subprocess

    env = dict(os.environ, TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "no-curated"),
               LEDGER_URL="http://127.0.0.1:9/", LEDGER_TOKEN="tok-not-granted")
    probe = home / "probe"
    probe.mkdir()
    (probe / "plugin.yml").write_text(
        "plugin_id: probe.env\nversion: 1\nname: Env probe\ndescription: Says what env it sees.\nmain: index.js\n"
        "env_contract:\n  LEDGER_TOKEN: {required: false}\n"
        "tool_catalog:\n  - tool_id: probe_env\n    summary: What the plugin sees of its env.\n    parameters: {type: object, properties: {}}\n"
    )
    (probe / "index.js").write_text("exports.probe_env = async (inputs, ctx) => ({ seen: ctx.env.LEDGER_TOKEN || null });\n")
    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(probe)).returncode == 0

    def seen():
        done = subprocess.run([toolshed_bin, "--workspace", str(workspace), "call", "probe_env", "--json"],
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)["structured"]["seen"]

    assert seen() is None
    refused = subprocess.run([toolshed_bin, "--workspace", str(workspace), "plugins", "grant", "probe.env", "env:HOME"],
                             env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "does not name `HOME`" in refused.stderr, refused.stderr
    assert toolshed(toolshed_bin, workspace, home, "plugins", "grant", "probe.env", "env:LEDGER_TOKEN").returncode == 0
    assert seen() == "tok-not-granted"
