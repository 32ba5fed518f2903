"""Exact duplicates from two processes storing the same content at once: one memory."""

from __future__ import annotations

import anyio
from mcp import Client

from tests.support.spawned import executable, server_env

pytest_plugins = ["tests.support.pg_fixtures"]


CONTENTS = [f"Shared fact number {n}: the cache is warmed at start." for n in range(12)]


def test_two_processes_storing_the_same_content_at_once_make_one_memory(location):
    """Two real ``serve`` processes store the same twelve contents at the same moments:
    each content is one memory, and both processes' answers name it."""

    def server():
        from mcp import StdioServerParameters

        return StdioServerParameters(
            command=executable(), args=["--db", location, "serve"], env=server_env()
        )

    async def main():
        answers: dict[str, list[dict]] = {c: [] for c in CONTENTS}
        async with Client(server()) as one, Client(server()) as two:

            async def store(client, content):
                result = await client.call_tool(
                    "memory_store", {"content": content, "type": "PATTERN"}
                )
                answers[content].append(result.structured_content)

            for content in CONTENTS:
                async with anyio.create_task_group() as group:
                    group.start_soon(store, one, content)
                    group.start_soon(store, two, content)
            listed = await one.call_tool("memory_list", {})
        return answers, listed.structured_content["memories"]

    answers, memories = anyio.run(main)
    assert sorted(m["content"] for m in memories) == sorted(CONTENTS)
    for content, (a, b) in answers.items():
        assert a["id"] == b["id"], content  # both answers name the one memory
        assert sorted("duplicate_of" in x for x in (a, b)) == [False, True], content
