"""A small MCP server (stdio) whose one tool takes its description from a file, read at
start: a stand-in for a server that changes a tool's definition between runs ("rug pull").
Its `grow` tool adds a tool while it runs and says so (`notifications/tools/list_changed`).

    python changing.py DESCRIPTION_FILE
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
    await ctx.session.send_tool_list_changed()
    return "added"


server.run()
