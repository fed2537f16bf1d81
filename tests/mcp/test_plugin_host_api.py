"""A JavaScript plugin's host API through the MCP door: `ctx.ask` put to the person by the
client (a session's elicitation, the 2026-07-28 era's input round trip); `ctx.llm.complete` answered by the
calling client's sampling callback, else by a loopback OpenAI-compatible endpoint set in
`[llm]`, else refused as unconfigured; `ctx.events.publish` reaching a client subscribed
with logging/setLevel; `ctx.config.set` changing a writable field and nothing else."""

import asyncio
import json
import textwrap

import pytest
from mcp import Client, types

import loopback
from test_stdio import toolshed

MAIN = textwrap.dedent(
    """
    exports.activate = (context) => context.registerActions([
      { name: "ask", description: "Ask a model.", properties: { question: { type: "string", required: true } },
        run: async (inputs, ctx) => ctx.llm.complete({
          system: "Answer in one word.", maxTokens: 20,
          messages: [{ role: "user", content: inputs.question }] }) },
      { name: "announce", description: "Publish an event.", properties: { what: { type: "string", required: true } },
        run: (inputs, ctx) => { ctx.events.publish("note.added", { what: inputs.what }); return "published"; } },
      { name: "remember", description: "Change a setting.",
        properties: { key: { type: "string", required: true }, value: { type: "string", required: true } },
        run: async (inputs, ctx) => { await ctx.config.set(inputs.key, inputs.value); return ctx.config[inputs.key]; } },
      { name: "recall", description: "Read the setting.", run: (inputs, ctx) => String(ctx.config.greeting) },
      { name: "clarify", description: "Ask the person.", properties: { question: { type: "string", required: true } },
        run: async (inputs, ctx) => ctx.ask(inputs.question,
          { type: "object", properties: { choice: { type: "string", enum: ["a", "b"] } }, required: ["choice"] }) },
    ]);
    """
)

MANIFEST = {
    "id": "test.hostapi",
    "version": "1.0.0",
    "name": "Host API",
    "kind": "js",
    "config": [
        {"key": "greeting", "type": "string", "default": "hello", "writable": True},
        {"key": "region", "type": "string", "default": "eu"},
    ],
    "capabilities": {"llm": True, "events": True, "config_write": True},
}


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


class FakeModel(loopback.Handler):
    """An OpenAI-compatible /v1/chat/completions."""

    seen = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeModel.seen.append((self.path, self.headers.get("authorization"), body))
        answer = json.dumps({
            "model": "fake-1",
            "choices": [{"message": {"role": "assistant", "content": "Paris"}, "finish_reason": "stop"}],
        }).encode()
        self.answer(200, "application/json", answer)


@pytest.fixture
def fake_model():
    FakeModel.seen = []
    with loopback.serving(FakeModel) as address:
        yield address


@pytest.fixture
def plugin(toolshed_bin, workspace, home, tmp_path):
    source = tmp_path / "hostapi"
    source.mkdir()
    (source / "plugin.json").write_text(json.dumps(MANIFEST))
    (source / "main.js").write_text(MAIN)
    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(source)).returncode == 0
    return source


def text(result):
    return result.content[0].text


def test_a_model_request_is_refused_until_granted_then_answered_by_the_clients_sampling(
    server, toolshed_bin, workspace, home, plugin
):
    asked = []

    async def sampling(context, params):
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Lisbon"),
            model="client-model", stop_reason="endTurn",
        )

    async def ungranted():
        async with Client(server(), mode="legacy", sampling_callback=sampling) as client:
            result = await client.call_tool("hostapi_ask", {"question": "Capital of Portugal?"})
            assert result.is_error
            assert "toolshed plugins grant test.hostapi llm" in text(result), text(result)
    run(ungranted())
    assert asked == []

    granted = toolshed(toolshed_bin, workspace, home, "plugins", "grant", "test.hostapi")
    assert "llm" in granted.stdout and "events" in granted.stdout and "config-write" in granted.stdout, granted.stdout

    async def main():
        async with Client(server(), mode="legacy", sampling_callback=sampling) as client:
            result = await client.call_tool("hostapi_ask", {"question": "Capital of Portugal?"})
            assert not result.is_error, result.content
            assert result.structured_content == {
                "text": "Lisbon", "model": "client-model", "stopReason": "endTurn", "via": "sampling",
            }
    run(main())
    assert len(asked) == 1
    assert asked[0].max_tokens == 20 and asked[0].system_prompt == "Answer in one word."
    assert asked[0].messages[0].role == "user"
    assert asked[0].messages[0].content.text == "Capital of Portugal?"

    # Without sampling and without [llm]: unconfigured, saying what to set.
    async def nothing():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("hostapi_ask", {"question": "Capital of Portugal?"})
            assert result.is_error
            assert "unconfigured" in text(result) and "[llm] base_url" in text(result), text(result)
    run(nothing())


def test_a_client_without_sampling_is_answered_by_the_configured_endpoint(
    server, toolshed_bin, workspace, home, plugin, fake_model
):
    toolshed(toolshed_bin, workspace, home, "plugins", "grant", "test.hostapi", "llm")
    (home / "llm.toml").write_text(f'[llm]\nbase_url = "http://{fake_model}/v1"\nmodel = "fake-1"\n')
    params = server()
    params.env["TOOLSHED_CONFIG"] = str(home / "llm.toml")
    params.env["TOOLSHED_LLM_API_KEY"] = "sk-test-key"

    async def main():
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("hostapi_ask", {"question": "Capital of France?"})
            assert not result.is_error, result.content
            assert result.structured_content == {
                "text": "Paris", "model": "fake-1", "stopReason": "stop", "via": "endpoint",
            }
    run(main())
    [(path, auth, body)] = FakeModel.seen
    assert path == "/v1/chat/completions" and auth == "Bearer sk-test-key"
    assert body["model"] == "fake-1" and body["max_tokens"] == 20
    assert body["messages"] == [
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "Capital of France?"},
    ]


def test_events_reach_a_subscribed_client_and_config_set_changes_only_writable_fields(
    server, toolshed_bin, workspace, home, plugin
):
    toolshed(toolshed_bin, workspace, home, "plugins", "grant", "test.hostapi", "events", "config-write")
    messages = []

    async def on_log(params):
        messages.append(params)

    async def main():
        async with Client(server(), mode="legacy", logging_callback=on_log) as client:
            await client.set_logging_level("info")
            result = await client.call_tool("hostapi_announce", {"what": "milk"})
            assert not result.is_error, result.content
            for _ in range(100):
                if messages:
                    break
                await asyncio.sleep(0.05)

            changed = await client.call_tool("hostapi_remember", {"key": "greeting", "value": "hola"})
            assert not changed.is_error and text(changed) == "hola", changed.content
            again = await client.call_tool("hostapi_recall", {})
            assert text(again) == "hola"
            refused = await client.call_tool("hostapi_remember", {"key": "region", "value": "us"})
            assert refused.is_error
            assert "only fields its manifest marks `writable = true`" in text(refused), text(refused)
    run(main())
    [message] = [m for m in messages if m.data.get("type", "").startswith("plugin.")]
    assert message.data["type"] == "plugin.test.hostapi.note.added"
    assert message.data["data"] == {"what": "milk"} and message.data["plugin_id"] == "test.hostapi"
    stored = toolshed(toolshed_bin, workspace, home, "plugins", "config", "test.hostapi", "greeting")
    assert stored.stdout.strip() == "hola"
    region = toolshed(toolshed_bin, workspace, home, "plugins", "config", "test.hostapi", "region")
    assert region.stdout.strip() == "eu"


def test_text_summarize_and_translate_ask_the_clients_model_or_the_endpoint(
    server, toolshed_bin, workspace, home, fake_model
):
    asked = []

    async def sampling(context, params):
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="  Tides rise twice a day.  "),
            model="client-model",
        )

    article = "High water comes roughly twice a day, about 12 hours 25 minutes apart. " * 20

    async def with_sampling():
        async with Client(server("--catalog", "full"), mode="legacy", sampling_callback=sampling) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["text_summarize"].annotations.open_world_hint is not False
            result = await client.call_tool(
                "text_summarize", {"text": article, "max_words": 30, "style": "bullets"}
            )
            assert not result.is_error, result.content
            assert result.structured_content == {
                "summary": "Tides rise twice a day.", "via": "sampling", "model": "client-model",
            }
            # The schema is enforced before anything is asked.
            refused = await client.call_tool("text_translate", {"text": "hi"})
            assert refused.is_error and "to" in refused.content[0].text
    run(with_sampling())
    [params] = asked
    prompt = params.messages[0].content.text
    assert "at most 30 words" in prompt and "bullet points" in prompt and article in prompt

    async def unconfigured():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("text_translate", {"text": "Bonjour", "to": "English"})
            assert result.is_error
            assert "[llm] base_url" in result.content[0].text, result.content
    run(unconfigured())

    (home / "llm.toml").write_text(f'[llm]\nbase_url = "http://{fake_model}/v1"\n')
    params = server()
    params.env["TOOLSHED_CONFIG"] = str(home / "llm.toml")

    async def endpoint():
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("text_translate", {"text": "Capitale de la France", "to": "English", "from": "French"})
            assert not result.is_error, result.content
            assert result.structured_content == {
                "translation": "Paris", "to": "English", "via": "endpoint", "model": "fake-1",
            }
    run(endpoint())
    [(_, _, body)] = FakeModel.seen
    assert "Translate the text below from French into English." in body["messages"][1]["content"]


FILES_MAIN = textwrap.dedent(
    """
    exports.activate = (context) => context.registerActions([
      { name: "save", description: "Write a file.",
        properties: { path: { type: "string", required: true }, text: { type: "string", required: true } },
        run: async (inputs, ctx) => { await ctx.fs.writeText(inputs.path, inputs.text); return "saved"; } },
      { name: "load", description: "Read a file.", properties: { path: { type: "string", required: true } },
        run: (inputs, ctx) => ctx.fs.readText(inputs.path) },
    ]);
    """
)


def test_a_plugins_file_access_is_held_to_the_rules_on_reads_and_writes(
    server, toolshed_bin, workspace, home, tmp_path
):
    # Failed before: ctx.fs.writeText and readText checked only the plugin's grants, so a
    # plugin granted the whole workspace wrote secrets/ past a rule that refuses it to every
    # tool, and read what a rule on reads keeps private.
    source = tmp_path / "files"
    source.mkdir()
    manifest = {
        "id": "test.files", "version": "1.0.0", "name": "Files", "kind": "js",
        "capabilities": {"fs_read": ["."], "fs_write": ["."]},
    }
    (source / "plugin.json").write_text(json.dumps(manifest))
    (source / "main.js").write_text(FILES_MAIN)
    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(source)).returncode == 0
    toolshed(toolshed_bin, workspace, home, "plugins", "grant", "test.files")
    (workspace / "secrets").mkdir()
    (workspace / "private").mkdir()
    (workspace / "private" / "p.txt").write_text("private")
    config = tmp_path / "rules.toml"
    config.write_text(
        '[[policy.rule]]\nname = "no secrets"\nwhen = { writes = { glob = "secrets/**" } }\n'
        'decision = "deny"\n\n'
        '[[policy.rule]]\nname = "private stays private"\nwhen = { reads = { glob = "private/**" } }\n'
        'decision = "deny"\n'
    )
    params = server()
    params.env = {**params.env, "TOOLSHED_CONFIG": str(config)}

    async def main():
        async with Client(params, mode="legacy") as client:
            save, load = "files_save", "files_load"
            result = await client.call_tool(save, {"path": "secrets/x.txt", "text": "x"})
            assert result.is_error and "no secrets" in text(result), text(result)
            result = await client.call_tool(load, {"path": "private/p.txt"})
            assert result.is_error and "private stays private" in text(result), text(result)
            # Elsewhere the plugin reads and writes as granted.
            result = await client.call_tool(save, {"path": "notes/n.txt", "text": "n"})
            assert not result.is_error, text(result)
            result = await client.call_tool(load, {"path": "notes/n.txt"})
            assert not result.is_error and text(result) == "n", text(result)

    run(main())
    assert list((workspace / "secrets").iterdir()) == []


NET_MAIN = textwrap.dedent(
    """
    exports.activate = (context) => context.registerActions([
      { name: "get", description: "Fetch a URL.", properties: { url: { type: "string", required: true } },
        run: async (inputs, ctx) => {
          try { const r = await ctx.http.get(inputs.url); return `status ${r.status}: ${r.body}`; }
          catch (e) { return `refused: ${e.message}`; } } },
    ]);
    """
)


def test_a_plugin_granted_loopback_still_cannot_reach_it_until_the_web_rules_allow_it(
    server, toolshed_bin, workspace, home, tmp_path
):
    # Failed before: the grant `http:127.0.0.1` opened loopback by itself. A grant narrows
    # the web rules; the canary counts every connection it accepted.
    accepted = []

    class Canary(loopback.Handler):
        def do_GET(self):
            self.answer(200, "text/plain", b"canary")

    import http.server
    import threading

    class Counting(http.server.ThreadingHTTPServer):
        def verify_request(self, request, client_address):
            accepted.append(client_address)
            return True

    httpd = Counting(("127.0.0.1", 0), Canary)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    try:
        source = tmp_path / "net"
        source.mkdir()
        manifest = {
            "id": "test.net", "version": "1.0.0", "name": "Net", "kind": "js",
            "capabilities": {"network": ["127.0.0.1"]},
        }
        (source / "plugin.json").write_text(json.dumps(manifest))
        (source / "main.js").write_text(NET_MAIN)
        assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(source)).returncode == 0
        assert toolshed(toolshed_bin, workspace, home, "plugins", "grant", "test.net", "http:127.0.0.1").returncode == 0
        url = f"http://127.0.0.1:{port}/"

        async def fetch(params):
            async with Client(params, mode="legacy") as client:
                return text(await client.call_tool("net_get", {"url": url}))

        said = run(fetch(server()))
        assert said.startswith("refused") and "canary" not in said, said
        assert accepted == [], "a connection reached the canary"
        # The person opens it in [web] allow: now the grant lets the plugin through.
        web = tmp_path / "web.toml"
        web.write_text(f'[web]\nallow = ["127.0.0.1:{port}"]\n')
        said = run(fetch(server("--config", str(web))))
        assert said == "status 200: canary", said
    finally:
        httpd.shutdown()


def test_a_node_plugin_asks_a_model_over_its_pipe(server, toolshed_bin, workspace, home, tmp_path):
    # Failed before: ctx.llm was refused in the Node.js runtime.
    source = tmp_path / "hostapi-node"
    source.mkdir()
    (source / "plugin.json").write_text(json.dumps({**MANIFEST, "id": "test.hostapi-node", "name": "Host API (Node)"}))
    (source / "main.js").write_text('const { createHash } = require("crypto");\n' + MAIN)
    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(source)).returncode == 0
    assert toolshed(toolshed_bin, workspace, home, "plugins", "grant", "test.hostapi-node", "llm").returncode == 0
    listed = json.loads(toolshed(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)
    assert next(p for p in listed["plugins"] if p["id"] == "test.hostapi-node")["runtime"].startswith("node")

    async def sampling(context, params):
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Lisbon"),
            model="client-model", stop_reason="endTurn",
        )

    async def main():
        async with Client(server(), mode="legacy", sampling_callback=sampling) as client:
            result = await client.call_tool("hostapi_node_ask", {"question": "Capital of Portugal?"})
            assert not result.is_error, result.content
            assert result.structured_content["text"] == "Lisbon", result.structured_content
            assert result.structured_content["via"] == "sampling", result.structured_content
    run(main())


@pytest.mark.parametrize("runtime", ["quickjs", "node"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_plugin_asks_the_person_through_the_client(server, toolshed_bin, workspace, home, tmp_path, runtime, mode):
    # No grant: the person sees every question and may decline it.
    plugin_id = "test.hostapi" if runtime == "quickjs" else "test.hostapi-node"
    source = tmp_path / plugin_id
    source.mkdir()
    (source / "plugin.json").write_text(json.dumps({**MANIFEST, "id": plugin_id, "capabilities": {}}))
    prelude = 'const { createHash } = require("crypto");\n' if runtime == "node" else ""
    (source / "main.js").write_text(prelude + MAIN)
    assert toolshed(toolshed_bin, workspace, home, "plugins", "install", str(source)).returncode == 0
    tool = plugin_id.removeprefix("test.").replace("-", "_") + "_clarify"
    asked = []

    async def on_elicit(context, params: types.ElicitRequestParams):
        asked.append((params.message, params.requested_schema))
        return types.ElicitResult(action="accept", content={"choice": "b"})

    async def main():
        async with Client(server(), mode=mode, elicitation_callback=on_elicit) as client:
            result = await client.call_tool(tool, {"question": "A or B?"})
            assert not result.is_error, result.content
            assert result.structured_content == {"action": "accept", "content": {"choice": "b"}}, result.structured_content
    run(main())
    assert asked == [("A or B?", {"type": "object", "properties": {"choice": {"type": "string", "enum": ["a", "b"]}}, "required": ["choice"]})], asked
