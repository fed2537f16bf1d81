"""A small MCP server (stdio) that reaches the network the way a real one does — through
the HTTP proxy its environment names — and writes to the package cache it is given:

    python fetcher.py

Tools: `fetch {url}` (the body, or why not), `cache_write {text}` (writes a file into
`$npm_config_cache` and says where), `note {text}` (writes `note.txt` in its working
directory, the workspace), `peek` (reads it back; marked read-only).
"""

import os
import urllib.request
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

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


@server.tool(name="note", description="Writes note.txt in the workspace.")
def note(text: str) -> str:
    try:
        Path("note.txt").write_text(text)
        return "noted"
    except OSError as e:
        return f"not written: {e}"


@server.tool(name="peek", description="Reads note.txt.", annotations=ToolAnnotations(readOnlyHint=True))
def peek() -> str:
    try:
        return "note: " + Path("note.txt").read_text()
    except OSError as e:
        return f"no note: {e}"


server.run()
