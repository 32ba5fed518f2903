"""Two real `serve --embedder local` processes on one file: what one stores, the other finds
by meaning, with no Ollama anywhere (the local model in each process)."""

from __future__ import annotations

import anyio
from mcp import Client, StdioServerParameters

from tests.support.local_model import needs_model
from tests.support.paraphrase_set import DATASTORE
from tests.support.paraphrase_set import PARAPHRASE as QUESTION
from tests.support.spawned import executable, server_env

# No word of the question is in any memory (stemmed or not), so only meaning can find it.
OTHERS = [f"Deploy step {i} runs lint before packaging" for i in range(12)]


def params(db_path) -> StdioServerParameters:
    return StdioServerParameters(
        command=executable(),
        args=["serve", "--db", str(db_path), "--embedder", "local"],
        env=server_env(),
    )


@needs_model
def test_one_server_stores_the_other_finds_it_by_meaning(db_path):
    async def main():
        async with Client(params(db_path)) as writer, Client(params(db_path)) as reader:
            for content in OTHERS:
                await writer.call_tool("memory_store", {"content": content, "type": "PATTERN"})
            stored = await writer.call_tool(
                "memory_store", {"content": DATASTORE, "type": "DECISION"}
            )
            answer = await reader.call_tool("memory_search", {"query": QUESTION, "limit": 3})
            return stored.structured_content["id"], answer.structured_content

    memory_id, answer = anyio.run(main)
    assert answer["search_mode"] == "hybrid"
    assert answer["results"][0]["id"] == memory_id
