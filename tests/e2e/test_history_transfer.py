"""memory_history over MCP end to end, against the real ``serve``."""

from __future__ import annotations

import anyio
from mcp import Client, StdioServerParameters

from tests.support.history import OLD
from tests.support.spawned import executable, server_env


def test_memory_history_over_mcp_end_to_end(tmp_path):
    server = StdioServerParameters(
        command=executable(),
        args=["--db", str(tmp_path / "m.db"), "serve"],
        env=server_env(),
    )

    async def main():
        async with Client(server) as client:
            await client.call_tool("memory_store", OLD)
            await client.call_tool("memory_update", {"id": 1, "tags": ["api", "v2"]})
            listed = await client.call_tool("memory_history", {"id": 1})
            missing = await client.call_tool("memory_history", {"id": 9})
            refused = await client.call_tool("memory_history", {"id": 1, "as_of": 5})
            return listed, missing, refused

    listed, missing, refused = anyio.run(main)
    versions = listed.structured_content["versions"]
    assert [(v["version"], v["tags"], v["change"]) for v in versions] == [
        (1, ["api"], "update"),
        (2, ["api", "v2"], None),
    ]
    assert missing.structured_content == {"id": 9, "found": False, "reason": "not_found"}
    assert refused.is_error and "as_of" in refused.content[0].text
