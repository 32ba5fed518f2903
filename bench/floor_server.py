"""The protocol floor: a do-nothing MCP stdio server on the same SDK, with the same tool names.

Whatever it costs is the SDK's and Python's price; agent-memory's figures are read against it.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

NAMES = [
    "memory_store",
    "memory_search",
    "memory_list",
    "memory_update",
    "memory_link",
    "memory_unlink",
    "memory_forget",
]
TOOLS = [Tool(name=n, description=n, input_schema={"type": "object"}) for n in NAMES]
ANSWERS = {"memory_store": {"id": 1}, "memory_search": {"search_mode": "keyword", "results": []}}


async def list_tools(_ctx, _params):
    return ListToolsResult(tools=TOOLS)


async def call_tool(_ctx, params):
    out = ANSWERS.get(params.name, {})
    text = TextContent(type="text", text=json.dumps(out))
    return CallToolResult(content=[text], structured_content=out)


async def main() -> None:
    server = Server("floor", version="0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    del sys.argv[1:]  # a marker argument lets the bench find this process
    anyio.run(main)
