"""Near-duplicate hints over MCP with the real ``serve``: the hint's ids are in the tool's
text."""

from __future__ import annotations

import json

import anyio
from mcp import Client, StdioServerParameters

from tests.support.local_model import needs_model
from tests.support.similar import FIRST, REWORDED
from tests.support.spawned import executable, server_env

pytest_plugins = ["tests.support.pg_fixtures"]


@needs_model
def test_over_mcp_the_hint_s_ids_are_in_the_tool_text(location):
    server = StdioServerParameters(
        command=executable(),
        args=["serve", "--db", location, "--embedder", "local"],
        env=server_env(),
    )

    async def main():
        async with Client(server) as client:
            first = await client.call_tool("memory_store", {"content": FIRST, "type": "DECISION"})
            second = await client.call_tool(
                "memory_store", {"content": REWORDED, "type": "DECISION"}
            )
            return first.structured_content["id"], second

    first, second = anyio.run(main)
    assert not second.is_error
    assert second.structured_content["similar_by"] == "cosine"
    assert [h["id"] for h in second.structured_content["similar"]] == [first]
    assert json.loads(second.content[0].text) == second.structured_content
