"""The browser tools through a warm MCP session over stdio, against a local page.

    python3 bench/browser.py TOOLSHED_BIN [ROUNDS]

1. Cold start: a fresh `toolshed mcp` (initialized) per round, then the time of its first
   `browser_open` of the page: Chromium started inside the command sandbox, a page made
   and loaded.
2. Warm: in one session, `browser_navigate` to the page and `browser_get_content` of it,
   one after the other, 30 times.
3. Memory with 5 sessions open on the page: the resident memory of the toolshed process,
   and the proportional memory (PSS) of the browser's processes together.

Needs Chromium (Debian: `apt-get install chromium`). Prints a Markdown table of medians.
"""

import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

PAGE = (
    "<html><head><title>Bench page</title></head><body><main><h1>Release notes</h1>"
    + "".join(f"<p>Paragraph {i}: the build got faster and the catalog smaller.</p>" for i in range(40))
    + "<div id='late'></div><script>document.getElementById('late').textContent = 'rendered';</script>"
    + "</main></body></html>"
).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


class Session:
    def __init__(self, toolshed, workspace, env):
        self.process = subprocess.Popen(
            [toolshed, "--workspace", workspace, "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            text=True, bufsize=1 << 20,
        )
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")

    def request(self, method, params):
        self.next_id += 1
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                             "params": params}) + "\n")
        self.process.stdin.flush()
        while True:
            message = json.loads(self.process.stdout.readline())
            if message.get("id") == self.next_id:
                if "error" in message or message["result"].get("isError"):
                    raise RuntimeError(json.dumps(message)[:500])
                return message["result"]

    def call(self, name, arguments):
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def tree_pss_mib(root):
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(name))
    total, stack = 0, list(children.get(root, []))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            pass
    return total / 1024


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def main():
    toolshed = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/notes"
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace = os.path.join(tmp, "home"), os.path.join(tmp, "ws")
        os.mkdir(workspace)
        env = {**os.environ, "TOOLSHED_HOME": home, "TOOLSHED_CURATED_DIR": os.path.join(tmp, "none"),
               "TOOLSHED_WEB__ALLOW": f'["127.0.0.1:{server.server_address[1]}"]'}
        subprocess.run([toolshed, "plugins", "enable", "system.browser"], env=env, check=True,
                       capture_output=True)

        cold = []
        for _ in range(rounds):
            session = Session(toolshed, workspace, env)
            start = time.perf_counter()
            session.call("browser_open", {"url": url})
            cold.append((time.perf_counter() - start) * 1000)
            session.close()

        session = Session(toolshed, workspace, env)
        opened = session.call("browser_open", {"url": url})
        sid = opened["structuredContent"]["session"]
        warm = []
        for _ in range(30):
            start = time.perf_counter()
            session.call("browser_navigate", {"session": sid, "url": url})
            content = session.call("browser_get_content", {"session": sid})
            warm.append((time.perf_counter() - start) * 1000)
        assert "rendered" in content["content"][0]["text"]
        for _ in range(4):
            session.call("browser_open", {"url": url})
        time.sleep(1)
        host_rss = rss_mib(session.process.pid)
        browser_pss = tree_pss_mib(session.process.pid)
        session.close()

    print("| measure | median | min | max |")
    print("|---|---|---|---|")
    print(f"| first `browser_open` (cold Chromium), {rounds} rounds | {statistics.median(cold):.0f} ms "
          f"| {min(cold):.0f} ms | {max(cold):.0f} ms |")
    print(f"| warm `browser_navigate` + `browser_get_content`, 30 rounds | {statistics.median(warm):.1f} ms "
          f"| {min(warm):.1f} ms | {max(warm):.1f} ms |")
    print(f"| toolshed RSS with 5 sessions open | {host_rss:.1f} MiB | | |")
    print(f"| the browser's processes (PSS) with 5 sessions open | {browser_pss:.0f} MiB | | |")


if __name__ == "__main__":
    main()
