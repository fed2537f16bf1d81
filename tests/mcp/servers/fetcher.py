"""A small MCP server (stdio) that reaches the network the way a real one does — through
the HTTP proxy its environment names — and writes to the package cache it is given:

    python fetcher.py

Tools: `fetch {url}` (the body, or why not), `cache_write {text}` (writes a file into
`$npm_config_cache` and says where).
"""

import os
import urllib.request
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("fetcher")


@server.tool(name="fetch", description="Fetches a URL.")
def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return "body: " + response.read().decode()
    except Exception as e:  # the reason goes back to the caller
        return f"refused: {e}"


@server.tool(name="cache_write", description="Writes a file into the package cache.")
def cache_write(text: str) -> str:
    cache = Path(os.environ["npm_config_cache"])
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "note.txt").write_text(text)
    return f"wrote {cache / 'note.txt'}"


server.run()
