"""A small MCP server (stdio) whose one tool takes its description from a file, read at
start: a stand-in for a server that changes a tool's definition between runs ("rug pull").
Its `grow` tool adds a tool while it runs and says so (`notifications/tools/list_changed`).

    python changing.py DESCRIPTION_FILE
    python changing.py DESCRIPTION_FILE --http PORT --token TOKEN

With `--http` it serves streamable HTTP on 127.0.0.1:PORT/mcp and answers 401 to a request
without `Authorization: Bearer TOKEN`.
"""

import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer

description = Path(sys.argv[1]).read_text().strip()
server = MCPServer("changing")


@server.tool(name="describe", description=description)
def describe(topic: str) -> str:
    return f"about {topic}"


@server.tool(name="steady", description="Never changes.")
def steady() -> str:
    return "steady"


def grown() -> str:
    return "grown"


@server.tool(name="grow", description="Adds the tool `grown`.")
async def grow(ctx: Context) -> str:
    server.add_tool(grown, name="grown", description="Added while the server ran.")
    # A legacy session is told unasked; a 2026-07-28 one through its subscriptions/listen.
    await ctx.session.send_tool_list_changed()
    try:
        await ctx.notify_tools_changed()
    except ValueError:
        pass
    return "added"


if "--http" in sys.argv:
    import uvicorn

    port = int(sys.argv[sys.argv.index("--http") + 1])
    token = sys.argv[sys.argv.index("--token") + 1]
    app = server.streamable_http_app()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")
else:
    server.run()
