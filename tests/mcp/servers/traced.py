"""A small MCP server (stdio) that says what `_meta` its tool calls arrive with:

    python traced.py

Tool: `meta` — the request's `_meta` (as JSON text), so a test sees the trace context a
gateway handed on.
"""

import json

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("traced")


@server.tool(name="meta", description="Says what _meta the call came with.")
def meta(ctx: Context) -> str:
    given = ctx.request_context.meta
    if given is None:
        return "{}"
    if hasattr(given, "model_dump"):
        given = given.model_dump(by_alias=True, exclude_none=True)
    return json.dumps(dict(given))


server.run()
