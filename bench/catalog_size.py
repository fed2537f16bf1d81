"""How many bytes (and about how many tokens) a client's model pays for `tools/list`.

Starts each server over stdio, asks `initialize` and every page of `tools/list`, and
measures the tools as the client receives them: the JSON of the `tools` array, compact.
Tokens are estimated as bytes / 4 (close to what the common tokenizers give for JSON and
English prose; a model's own tokenizer differs by some percent).

    python3 bench/catalog_size.py TOOLSHED_BIN [REFERENCE_SERVER_JS]

Prints a Markdown table: toolshed's default catalog, every tool listed (`--catalog
full`), each shipped profile and discovery mode, then the
reference filesystem server when its `dist/index.js` is given, and the largest toolshed
tools.
"""

import json
import os
import subprocess
import sys
import tempfile


def tools_of(argv, env=None):
    """The tools a stdio MCP server lists, every page."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        text=True,
    )

    def ask(message_id, method, params):
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params}) + "\n")
        process.stdin.flush()
        while True:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"{argv[0]} closed its output")
            message = json.loads(line)
            if message.get("id") == message_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    try:
        ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "catalog-size", "version": "0"}})
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        tools, cursor, n = [], None, 2
        while True:
            page = ask(n, "tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(page.get("tools", []))
            cursor = page.get("nextCursor")
            n += 1
            if not cursor:
                return tools
    finally:
        process.stdin.close()
        process.wait(timeout=10)


def size(value):
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def row(label, tools):
    total = size(tools)
    print(f"| {label} | {len(tools)} | {total:,} | {total // 4:,} |")


def main():
    toolshed = sys.argv[1]
    reference = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as tmp:
        workspace = os.path.join(tmp, "ws")
        os.mkdir(workspace)
        env = {"TOOLSHED_HOME": os.path.join(tmp, "home"), "TOOLSHED_CURATED_DIR": os.path.join(tmp, "none")}
        builtins = tools_of([toolshed, "--workspace", workspace, "mcp"], env)
        print("| catalog | tools | bytes | ≈ tokens |")
        print("|---|---|---|---|")
        row("toolshed, all built-ins (default: `--catalog standard`)", builtins)
        row("toolshed `--catalog full`", tools_of([toolshed, "--workspace", workspace, "mcp", "--catalog", "full"], env))
        for profile in ("coding", "readonly", "web"):
            row(f"toolshed `--profile {profile}`", tools_of([toolshed, "--workspace", workspace, "mcp", "--profile", profile], env))
        row("toolshed `--catalog discover` (no core)", tools_of([toolshed, "--workspace", workspace, "mcp", "--catalog", "discover"], env))
        core = os.path.join(tmp, "core.toml")
        with open(core, "w") as f:
            f.write('[mcp]\ncore = ["workspace_read", "workspace_edit"]\n')
        row(
            "toolshed `--catalog discover`, core `workspace_read`, `workspace_edit`",
            tools_of([toolshed, "--workspace", workspace, "--config", core, "mcp", "--catalog", "discover"], env),
        )
        if reference:
            row("@modelcontextprotocol/server-filesystem", tools_of(["node", reference, workspace]))
        print()
        print("| largest toolshed tools | bytes |")
        print("|---|---|")
        for tool in sorted(builtins, key=size, reverse=True)[:10]:
            print(f"| `{tool['name']}` | {size(tool):,} |")


if __name__ == "__main__":
    main()
