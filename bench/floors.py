"""The floors agent-memory's figures are read against: do-nothing servers on the same stacks.

    python -m bench.floors mcp MARKER     the protocol floor: an MCP stdio server on the same
                                          SDK, with the same tool names
    python -m bench.floors rest PORT      the REST floor: a Flask app under waitress, with
                                          agent-memory's store and search routes

Whatever a floor costs is the price of its stack (the SDK, Flask, waitress, Python) on this
machine. The MCP floor's MARKER argument lets the bench find its process.
"""

from __future__ import annotations

import json
import sys

import anyio
from flask import Flask, jsonify, request
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool
from waitress.server import create_server

from agent_memory.http.server import REST_THREADS

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


async def serve_mcp() -> None:
    server = Server("floor", version="0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


app = Flask(__name__)


@app.post("/api/memories")
def store():
    request.get_json()
    return jsonify(id=1), 201


@app.post("/api/search")
def search():
    request.get_json()
    return jsonify(search_mode="keyword", results=[])


def serve_rest(port: int) -> None:
    server = create_server(app, host="127.0.0.1", port=port, threads=REST_THREADS)
    print(f"REST listening on 127.0.0.1:{server.effective_port}", file=sys.stderr, flush=True)
    server.run()


if __name__ == "__main__":
    kind, arg = sys.argv[1], sys.argv[2]
    if kind == "rest":
        serve_rest(int(arg))
    else:
        del sys.argv[1:]
        anyio.run(serve_mcp)
