"""The web tools through the MCP door with the Python client, against a local server:
loopback is refused until `[web] allow` lists it; then web_fetch reads an article's main
content and http_request calls an API; web_search asks a SearXNG configured in the
environment, and says which variables to set when none is."""

import asyncio
import json

import pytest
from mcp import Client, StdioServerParameters

import loopback

ARTICLE = """<!doctype html>
<html><head><title>Tide tables, explained</title></head>
<body>
<nav><a href="/">Home</a> <a href="/news">News desk menu</a></nav>
<div class="ad-banner">Buy one get one free</div>
<aside class="sidebar">Trending elsewhere today</aside>
<article>
<h1>Tide tables, explained</h1>
<p>High water comes roughly twice a day, about <em>12 hours 25 minutes</em> apart.</p>
<p>Read the <a href="/charts">harbour charts</a> before you sail.</p>
<ul><li>Spring tides follow a new or full moon.</li><li>Neap tides follow the quarters.</li></ul>
</article>
<footer>Copyright footer text, all rights reserved</footer>
</body></html>
"""

SEARXNG = {
    "query": "tides",
    "results": [
        {
            "url": "https://example.org/tides",
            "title": "Tides for sailors",
            "content": "When high water comes.",
            "publishedDate": "2026-10-01T00:00:00",
        }
    ],
}


# DuckDuckGo's HTML results page, as its markup is (made here, not downloaded).
DDG_PAGE = """<html><body><div id="links" class="results">
<div class="result results_links results_links_deep result--ad"><h2 class="result__title">
<a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=shop.example">Tide clocks</a></h2></div>
<div class="result results_links results_links_deep web-result"><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Ftides&amp;rut=1">Tides for <b>sailors</b></a></h2>
<a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Ftides">When high water comes.</a>
</div></div></div></body></html>"""


class Handler(loopback.Handler):
    seen: list = []

    def do_GET(self):  # noqa: N802 (the http.server name)
        Handler.seen.append(self.path)
        if self.path.startswith("/article"):
            self.answer(200, "text/html; charset=utf-8", ARTICLE.encode())
        elif self.path.startswith("/search"):
            self.answer(200, "application/json", json.dumps(SEARXNG).encode())
        elif self.path.startswith("/html/"):
            self.answer(200, "text/html; charset=utf-8", DDG_PAGE.encode())
        elif self.path.startswith("/api"):
            self.answer(200, "application/json", b'{"ok": true}')
        else:
            self.answer(404, "text/plain", b"no")

    def do_POST(self):  # noqa: N802 (the http.server name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])) or b"{}")
        Handler.seen.append((self.path, self.headers.get("authorization"), body))
        if self.path == "/search":
            # Perplexity's Search API, as it answers.
            answer = {"id": "s-1", "results": [
                {"title": "Tides for sailors", "url": "https://example.org/tides",
                 "snippet": "When high water comes.", "date": "2026-10-01", "last_updated": "2026-10-02"}]}
        elif self.path == "/chat/completions":
            # DeepSeek's chat model, answering in OpenAI's shape with the JSON asked for.
            content = "```json\n" + json.dumps({"results": [
                {"title": "Tide tables", "url": "https://example.org/tables", "snippet": "Times of high water."}]}) + "\n```"
            answer = {"id": "c-1", "object": "chat.completion", "model": body.get("model"),
                      "choices": [{"index": 0, "finish_reason": "stop",
                                   "message": {"role": "assistant", "content": content}}]}
        else:
            self.answer(404, "text/plain", b"no")
            return
        self.answer(200, "application/json", json.dumps(answer).encode())



@pytest.fixture
def site():
    Handler.seen = []
    with loopback.serving(Handler) as address:
        yield address


def params(toolshed_bin, workspace, home, **env):
    return StdioServerParameters(
        command=toolshed_bin,
        args=["--workspace", str(workspace), "mcp", "--tools", "web_*,http_request"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), **env},
        cwd=str(workspace),
    )


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


def test_loopback_is_refused_until_allowed_then_fetch_and_request_work(toolshed_bin, workspace, home, site):
    async def refused():
        async with Client(params(toolshed_bin, workspace, home), mode="legacy") as client:
            result = await client.call_tool("web_fetch", {"url": f"http://{site}/article"})
            assert result.is_error
            assert "loopback" in result.content[0].text, result.content[0].text
            result = await client.call_tool("http_request", {"url": f"http://{site}/api"})
            assert result.is_error
    run(refused())
    assert Handler.seen == [], "nothing reached the server"

    # In the user's own config (here the --config file): a workspace's toolshed.toml may
    # not widen what the web tools reach.
    (home / "web.toml").write_text(f'[web]\nallow = ["{site}"]\n')

    async def allowed():
        trusted = params(toolshed_bin, workspace, home, TOOLSHED_CONFIG=str(home / "web.toml"))
        async with Client(trusted, mode="auto") as client:
            result = await client.call_tool("web_fetch", {"url": f"http://{site}/article"})
            assert not result.is_error, result.content
            text = result.content[0].text
            assert "Tide tables, explained" in text
            assert "*12 hours 25 minutes*" in text
            assert f"[harbour charts](http://{site}/charts)" in text
            for chrome in ("News desk menu", "Buy one get one free", "Trending elsewhere", "Copyright footer"):
                assert chrome not in text, chrome

            result = await client.call_tool("http_request", {"method": "GET", "url": f"http://{site}/api"})
            assert not result.is_error, result.content
            assert result.structured_content["status"] == 200
            assert json.loads(result.structured_content["body"]) == {"ok": True}
    run(allowed())


def test_web_search_asks_the_configured_searxng(toolshed_bin, workspace, home, site):
    async def unconfigured():
        server = params(toolshed_bin, workspace, home, TOOLSHED_WEB__SEARCH__FALLBACK="off")
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("web_search", {"query": "tides"})
            assert result.is_error
            assert "SEARXNG_URL" in result.content[0].text and "BRAVE_API_KEY" in result.content[0].text
    run(unconfigured())

    # With no keyed provider, the keyless DuckDuckGo fallback (on by default) answers.
    async def keyless():
        server = params(toolshed_bin, workspace, home, DUCKDUCKGO_BASE_URL=f"http://{site}")
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("web_search", {"query": "tides"})
            assert not result.is_error, result.content
            assert result.structured_content["provider"] == "duckduckgo"
            assert result.structured_content["results"] == [
                {"title": "Tides for sailors", "url": "https://example.org/tides", "snippet": "When high water comes."}
            ]
            assert "best effort" in result.content[0].text
    run(keyless())
    assert any(path.startswith("/html/?q=tides") for path in Handler.seen), Handler.seen

    async def configured():
        server = params(toolshed_bin, workspace, home, SEARXNG_URL=f"http://{site}")
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("web_search", {"query": "tides", "count": 3})
            assert not result.is_error, result.content
            assert "Tides for sailors" in result.content[0].text
            assert "https://example.org/tides" in result.content[0].text
    run(configured())
    assert any(path.startswith("/search?") and "q=tides" in path for path in Handler.seen), Handler.seen


def test_a_port_other_than_http_and_https_is_refused_before_anything_is_asked_of_the_network(
    toolshed_bin, workspace, home
):
    # Failed before the port policy: web_fetch of a public host's port 22 resolved the name
    # and dialled it. Now it is refused before a DNS query (this machine has no DNS for
    # the name: an answer about the name would show it was asked).
    url = "http://files.somewhere-public.org:22/"

    async def refused():
        async with Client(params(toolshed_bin, workspace, home), mode="legacy") as client:
            for tool, args in [("web_fetch", {"url": url}), ("http_request", {"url": url})]:
                result = await client.call_tool(tool, args)
                said = result.content[0].text
                assert result.is_error and "port 22" in said and "[web] allow" in said, (tool, said)
    run(refused())

    # Listed with its port in [web] allow, the port rule no longer refuses it (the name
    # then fails to resolve here, offline).
    (home / "web.toml").write_text('[web]\nallow = ["files.somewhere-public.org:22"]\n')

    async def allowed():
        trusted = params(toolshed_bin, workspace, home, TOOLSHED_CONFIG=str(home / "web.toml"))
        async with Client(trusted, mode="legacy") as client:
            result = await client.call_tool("web_fetch", {"url": url})
            assert "port 22 of" not in result.content[0].text, result.content[0].text
    run(allowed())


def test_web_search_through_perplexity_and_deepseek(toolshed_bin, workspace, home, site):
    async def ask(provider, **env):
        server = params(toolshed_bin, workspace, home, **env)
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("web_search", {"query": "tides", "count": 2, "provider": provider})

    result = run(ask("perplexity", PERPLEXITY_API_KEY="pplx-secret", PERPLEXITY_BASE_URL=f"http://{site}"))
    assert not result.is_error, result.content
    assert result.structured_content["provider"] == "perplexity"
    assert result.structured_content["results"] == [
        {"title": "Tides for sailors", "url": "https://example.org/tides", "snippet": "When high water comes.", "date": "2026-10-01"}
    ]
    assert ("/search", "Bearer pplx-secret", {"query": "tides", "max_results": 2}) in Handler.seen, Handler.seen

    result = run(ask("deepseek", DEEPSEEK_API_KEY="ds-secret", DEEPSEEK_BASE_URL=f"http://{site}"))
    assert not result.is_error, result.content
    found = result.structured_content["results"]
    assert [r["url"] for r in found] == ["https://example.org/tables"], found
    assert "not from a search index" in found[0]["snippet"], found
    asked = [b for p, a, b in (x for x in Handler.seen if isinstance(x, tuple)) if p == "/chat/completions"]
    assert asked and asked[0]["model"] == "deepseek-chat" and "tides" in asked[0]["messages"][0]["content"], asked
    # Without its key, the provider is unconfigured and says which variable to set.
    result = run(ask("deepseek"))
    assert result.is_error and "DEEPSEEK_API_KEY" in result.content[0].text, result.content


def test_a_refused_connection_is_tried_again_with_backoff_and_the_audit_says_so(toolshed_bin, workspace, home):
    """Neta's retries, for the network: a server that is not listening yet (restarting) is
    dialled again — nothing was sent, so even a POST is safe — and the audit row says so."""
    import socket
    import subprocess
    import threading
    import time
    from http.server import ThreadingHTTPServer

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    (home / "web.toml").write_text(f'[web]\nallow = ["127.0.0.1:{port}"]\n')
    env = {"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"),
           "TOOLSHED_CONFIG": str(home / "web.toml")}
    servers = []

    def start_late():
        time.sleep(0.4)
        httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        servers.append(httpd)
        httpd.serve_forever()

    threading.Thread(target=start_late, daemon=True).start()
    try:
        done = subprocess.run(
            [toolshed_bin, "--workspace", str(workspace), "call", "http_request", "--json", "--args",
             json.dumps({"method": "POST", "url": f"http://127.0.0.1:{port}/search", "body": "{}"})],
            env=env, capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["structured"]["status"] == 200, done.stdout
        audit = subprocess.run([toolshed_bin, "--workspace", str(workspace), "audit", "--tool", "http_request", "--json"],
                               env=env, capture_output=True, text=True, timeout=60)
        row = json.loads(audit.stdout)["audit"][0]
        assert f"retried: connecting to `127.0.0.1:{port}`" in (row.get("note") or ""), row
    finally:
        for httpd in servers:
            httpd.shutdown()
