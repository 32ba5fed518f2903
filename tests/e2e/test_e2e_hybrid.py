"""End to end: real ``serve`` and ``serve-rest`` processes with the fake Ollama on 127.0.0.1."""

from __future__ import annotations

import time

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.fake_ollama import embedder_for
from tests.support.paraphrase_set import DATASTORE, PARAPHRASE
from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import executable, server_env

DEADLINE_SECS = 60


def params(db_path, ollama_url: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=executable(),
        args=["--db", str(db_path), "serve"],
        env=server_env(AGENT_MEMORY_OLLAMA_URL=ollama_url),
    )


def test_mcp_search_finds_a_paraphrase_and_backfills_at_start(db_path, tmp_path, ollama):
    offline = MemoryService(open_store(db_path))  # stored with no Ollama: pending
    queued = offline.store(
        {"content": "The login page crashed on an empty password.", "type": "ERROR"}
    )["id"]
    offline.close()
    errlog = (tmp_path / "stderr.log").open("w+")

    async def main():
        async with Client(stdio_client(params(db_path, ollama.url), errlog=errlog)) as client:
            stored = await client.call_tool(
                "memory_store", {"content": DATASTORE, "type": "DECISION"}
            )
            found = await client.call_tool("memory_search", {"query": PARAPHRASE, "limit": 1})
            deadline = time.monotonic() + DEADLINE_SECS
            while time.monotonic() < deadline:  # each turn is a real round trip, not a sleep
                backfilled = await client.call_tool(
                    "memory_search", {"query": "authentication bug", "limit": 1}
                )
                if [r["id"] for r in backfilled.structured_content["results"]] == [queued]:
                    break
            updated = await client.call_tool(
                "memory_update", {"id": queued, "content": "Redis caches sessions."}
            )
            return stored, found, backfilled, updated

    stored, found, backfilled, updated = anyio.run(main)
    assert found.structured_content["search_mode"] == "hybrid"
    assert [r["id"] for r in found.structured_content["results"]] == [
        stored.structured_content["id"]
    ]
    assert [r["id"] for r in backfilled.structured_content["results"]] == [queued]
    assert updated.structured_content["embedding_status"] == 1
    errlog.seek(0)
    log = errlog.read()
    assert "embedder ready: nomic-embed-text" in log
    assert "1 embedded" in log  # the start-up sweep's backfill


def test_rest_and_mcp_share_vectors(db_path, ollama):
    with RestDaemon(db_path, env={"AGENT_MEMORY_OLLAMA_URL": ollama.url}) as daemon:
        assert daemon.request("GET", "/health").json()["embedder"] == "ready"
        stored = daemon.request(
            "POST", "/api/memories", json={"content": DATASTORE, "type": "DECISION"}
        )
        assert stored.status_code == 201

        async def main():
            async with Client(params(db_path, ollama.url)) as client:
                return await client.call_tool("memory_search", {"query": PARAPHRASE, "limit": 1})

        found = anyio.run(main)
        assert found.structured_content["search_mode"] == "hybrid"
        assert [r["id"] for r in found.structured_content["results"]] == [stored.json()["id"]]
        patched = daemon.request(
            "PATCH", f"/api/memories/{stored.json()['id']}", json={"content": "x"}
        )
        assert patched.json()["embedding_status"] == 1
        # the new content's vector is the one searched by meaning
        answer = daemon.request("POST", "/api/search", json={"query": "x", "explain": True}).json()
        assert answer["search_mode"] == "hybrid" and len(answer["results"]) == 1
        assert answer["results"][0]["why"]["vector"]["similarity"] == pytest.approx(1.0)
        assert daemon.stop() == 0


def test_without_ollama_the_servers_stay_keyword(db_path):
    with RestDaemon(db_path) as daemon:  # server_env points at a port nothing listens on
        daemon.request("POST", "/api/memories", json={"content": DATASTORE, "type": "DECISION"})
        answer = daemon.request("POST", "/api/search", json={"query": "datastore"}).json()
        assert answer["search_mode"] == "keyword" and len(answer["results"]) == 1
        assert daemon.stop() == 0
    assert any("Ollama unreachable" in line for line in daemon.stderr_lines)


def test_two_servers_each_with_an_index_see_each_others_vectors(db_path, tmp_path, ollama):
    """Each serve process keeps its own vector index: a memory stored, changed or forgotten
    through one is found (or not) by meaning through the other at its next search."""
    seed = MemoryService(open_store(db_path), embedder=embedder_for(ollama.url))
    for i in range(30):
        seed.store({"content": f"note {i} about the deploy pipeline", "type": "PATTERN"})
    seed.close()
    errlog = (tmp_path / "reader.log").open("w+")

    def loaded() -> bool:
        errlog.seek(0)
        return "vector index: 30 vectors" in errlog.read()

    async def top(client, query: str) -> list[int]:
        answer = await client.call_tool("memory_search", {"query": query, "limit": 3})
        assert answer.structured_content["search_mode"] == "hybrid"
        return [r["id"] for r in answer.structured_content["results"]]

    async def main():
        async with (
            Client(params(db_path, ollama.url)) as writer,
            Client(stdio_client(params(db_path, ollama.url), errlog=errlog)) as reader,
        ):
            deadline = time.monotonic() + DEADLINE_SECS
            while not loaded() and time.monotonic() < deadline:  # real round trips
                await top(reader, "deploy")
            assert loaded()
            stored = await writer.call_tool(
                "memory_store", {"content": DATASTORE, "type": "DECISION"}
            )
            memory_id = stored.structured_content["id"]
            found = await top(reader, PARAPHRASE)
            await writer.call_tool(
                "memory_update", {"id": memory_id, "content": "Redis caches sessions."}
            )
            by_new, by_old = await top(reader, "memoize"), await top(reader, PARAPHRASE)
            await writer.call_tool("memory_forget", {"id": memory_id})
            gone = await top(reader, "memoize")
            return memory_id, found, by_new, by_old, gone

    memory_id, found, by_new, by_old, gone = anyio.run(main)
    assert found[0] == memory_id
    assert by_new[0] == memory_id and memory_id not in by_old
    assert memory_id not in gone
