"""The per-call output ceiling: every built-in tool that can return a lot, called through
the MCP door with its largest arguments on inputs far larger than those, replies with at
most `[limits] max_output_bytes` (100,000 by default) of text and structured data — and a
reply that had to be cut says so and how to ask for less."""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from mcp import Client, StdioServerParameters

CEILING = 100_000


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=120))


def reply_bytes(result):
    """What the reply carries for a model: its text blocks and its structured data."""
    text = sum(len(c.text.encode()) for c in result.content if getattr(c, "type", "") == "text")
    structured = result.structured_content
    return text + (len(json.dumps(structured, separators=(",", ":"), ensure_ascii=False).encode()) if structured is not None else 0)


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


class Big(BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("<html><body><article>" + "<p>" + "word " * 40 + "</p>\n") * 5000 + "</article></body></html>"
        data = body.encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Big)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_no_builtin_tool_passes_the_ceiling_whatever_its_arguments(toolshed_bin, workspace, home, site):
    big = "".join(f"{i:08d} " + "x" * 90 + "\n" for i in range(40_000))  # 4 MB
    (workspace / "big.txt").write_text(big)
    many = workspace / "many"
    many.mkdir()
    for i in range(3000):
        (many / f"file-with-a-rather-long-name-{i:05d}.txt").write_text("")
    (home / "web.toml").write_text(f'[web]\nallow = ["{site}"]\n')
    params = StdioServerParameters(
        command=toolshed_bin,
        args=["--workspace", str(workspace), "mcp"],
        env={
            "TOOLSHED_HOME": str(home),
            "TOOLSHED_CURATED_DIR": str(home / "no-curated"),
            "TOOLSHED_CONFIG": str(home / "web.toml"),
        },
        cwd=str(workspace),
    )
    megabyte = "a" * 1_000_000
    calls = [
        ("workspace_read", {"path": "big.txt", "limit": 100_000}),
        ("workspace_grep", {"pattern": "x", "path": "big.txt", "max_matches": 100_000, "max_line_len": 100_000, "context": 100}),
        ("workspace_list", {"path": "many", "max_entries": 100_000}),
        ("workspace_glob", {"patterns": ["**/*"], "max_results": 100_000}),
        ("workspace_tree", {"depth": 20, "max_entries": 100_000}),
        ("workspace_find", {"query": "file", "max_results": 10_000}),
        ("exec_command", {"cmd": "head -c 3000000 /dev/zero | tr '\\0' a", "max_output_bytes": 98_304}),
        ("shell", {"command": "seq 1 500000"}),
        ("text", {"operation": "case", "to": "upper", "text": megabyte}),
        ("text", {"operation": "regex_extract", "text": megabyte[:200_000], "pattern": "a{1,50}", "max_matches": 10_000}),
        ("json_ops", {"operation": "parse", "text": json.dumps([{"k": i, "v": "x" * 20} for i in range(20_000)])}),
        ("markdown", {"operation": "to_html", "markdown": "# T\n\n" + "para *b* " * 100_000}),
        ("crypto", {"operation": "encode", "input": "é" * 400_000, "encoding": "hex"}),
        ("random", {"operation": "float", "count": 10_000}),
        ("run_code", {"code": "return 'z'.repeat(1000000)"}),
        ("web_fetch", {"url": f"http://{site}/page", "max_length": 30_000, "format": "raw"}),
        ("http_request", {"url": f"http://{site}/page", "max_bytes": 49_152}),
    ]

    async def main():
        async with Client(params, mode="legacy") as client:
            started = await client.call_tool("process_exec", {"cmd": "seq 1 400000; sleep 30"})
            assert not started.is_error, text(started)
            pid = started.structured_content["id"]
            sizes = {}
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, text(result)[:500])
                sizes[name + " " + arguments.get("operation", "")] = reply_bytes(result)
                assert reply_bytes(result) <= CEILING, (name, reply_bytes(result))
            await asyncio.sleep(1)
            result = await client.call_tool("process_read_output", {"id": pid, "tail_lines": 10_000})
            assert reply_bytes(result) <= CEILING, reply_bytes(result)
            await client.call_tool("process_stop", {"id": pid, "mode": "forced"})
            # The inputs were big enough to matter: most replies are near the ceiling.
            assert sum(1 for n in sizes.values() if n > CEILING // 3) >= 8, sizes

            # A reply cut by the pipeline says so and how to ask for less.
            result = await client.call_tool("text", {"operation": "case", "to": "upper", "text": megabyte})
            assert "cut by toolshed" in text(result) and "max_output_bytes" in text(result), text(result)[-400:]
            # A tool that pages says itself how to go on.
            result = await client.call_tool("workspace_read", {"path": "big.txt", "limit": 100_000})
            assert "offset=" in text(result)[-300:], text(result)[-300:]

    run(main())


def test_the_ceiling_is_configurable_and_checked(toolshed_bin, workspace, home):
    (home / "small.toml").write_text("[limits]\nmax_output_bytes = 5000\n")
    params = StdioServerParameters(
        command=toolshed_bin,
        args=["--workspace", str(workspace), "mcp"],
        env={"TOOLSHED_HOME": str(home), "TOOLSHED_CURATED_DIR": str(home / "no-curated"), "TOOLSHED_CONFIG": str(home / "small.toml")},
        cwd=str(workspace),
    )

    async def main():
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("exec_command", {"cmd": "seq 1 100000"})
            assert reply_bytes(result) <= 5000 and "cut by toolshed" in text(result), reply_bytes(result)

    run(main())
