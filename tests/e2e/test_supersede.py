"""Supersede over MCP end to end, against the real ``serve``."""

from __future__ import annotations

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.support.history import NEW, OLD
from tests.support.spawned import executable, server_env
from tests.support.stores import ids

pytest_plugins = ["tests.support.pg_fixtures"]


def test_over_mcp_end_to_end(location):
    server = StdioServerParameters(
        command=executable(), args=["--db", location, "serve"], env=server_env()
    )

    async def main():
        async with Client(server) as client:
            await client.call_tool("memory_store", OLD)
            await client.call_tool("memory_store", {**NEW, "supersedes": [1]})
            found = await client.call_tool("memory_search", {"query": "API timeout"})
            try:
                await client.call_tool("memory_store", {**NEW, "supersedes": "1"})
            except MCPError as exc:
                return found, exc
            return found, None

    found, bad = anyio.run(main)
    assert ids(found.structured_content["results"]) == [2]
    assert (bad.code, bad.message) == (
        -32602,
        'invalid argument: supersedes must be an array of memory ids (got "1")',
    )
