"""The MCP server in process through the SDK's in-process client: one session per call of
``run``."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError

from agent_memory.mcp import server as mcp_server


def run(service, *calls):
    """Run (tool, args) calls in one session; return each result or the MCPError raised."""

    async def main():
        out = []
        async with Client(mcp_server.build_server(service)) as client:
            for name, args in calls:
                try:
                    out.append(await client.call_tool(name, args))
                except MCPError as exc:
                    out.append(exc)
        return out

    return anyio.run(main)
