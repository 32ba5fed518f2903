"""Which commands build an embedder: only those that make or compare vectors.

The others (list, show, forget, link, unlink, an update without new content, context
without --query, export, import) never ask Ollama anything, never load the local model,
and so print nothing about either. Checked against the fake Ollama, a real HTTP server
that records every request.
"""

from __future__ import annotations

import json

import pytest

from agent_memory import app as wiring
from agent_memory.mcp import server as mcp_server
from agent_memory.service.core import EMBEDDING_OFF, MemoryService
from agent_memory.settings import Settings
from agent_memory.storage import open_store
from tests.support.spawned import NO_OLLAMA_URL
from tests.support.terminal import am_with_ollama


@pytest.fixture
def unpinned(db_path, tmp_path):
    """Two memories without vectors (so `auto` would have to probe for an embedder), their
    export, and a GSD STATE.md."""
    svc = MemoryService(open_store(db_path))
    first = svc.store({"content": "We chose SQLite.", "type": "DECISION", "scope": "kore"})
    second = svc.store({"content": "Fix the login crash", "type": "ERROR", "scope": "kore"})
    svc.link({"from_id": first["id"], "to_id": second["id"], "kind": "relates_to"})
    lines: list[str] = []
    svc.export(lines.append)
    svc.close()
    (tmp_path / "memories.jsonl").write_text("".join(lines), encoding="utf-8")
    (tmp_path / "STATE.md").write_text("## Decisions\n- use WAL\n", encoding="utf-8")
    return first["id"]


NO_VECTORS_NEEDED = [
    ["list"],
    ["show", "1"],
    ["forget", "2"],
    ["link", "1", "2", "--kind", "relates_to"],
    ["unlink", "1", "2", "--kind", "relates_to"],
    ["update", "1", "--tag", "db"],
    ["context", "--scope", "kore"],
    ["stats"],
    ["export"],
    ["import", "--from", "jsonl", "{tmp}/memories.jsonl"],
    ["import", "--from", "gsd-state", "{tmp}/STATE.md"],
]


@pytest.mark.parametrize("command", NO_VECTORS_NEEDED, ids=lambda c: " ".join(c[:3]))
def test_commands_that_need_no_vector_never_ask_ollama(
    db_path, tmp_path, ollama, unpinned, command
):
    ollama.down = True  # auto's probe would fail, log it, and fall back to the local model
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in command]
    result = am_with_ollama(db_path, ollama, *args)
    assert result.exit_code == 0, result.output
    assert ollama.requests == []
    assert "Ollama" not in result.stderr and "local model" not in result.stderr


def test_search_and_store_do_ask_for_an_embedder(db_path, ollama, unpinned):
    assert am_with_ollama(db_path, ollama, "search", "SQLite").exit_code == 0
    assert ollama.requests  # the probe and the query's vector
    asked = len(ollama.requests)
    assert am_with_ollama(db_path, ollama, "store", "--type", "TODO", "one more").exit_code == 0
    assert len(ollama.requests) > asked


def settings(db_path, embedder: str) -> Settings:
    return Settings(
        db=db_path,
        ollama_url=NO_OLLAMA_URL,
        embed_model="nomic-embed-text",
        sweep_interval=3600,
        max_content_bytes=1024,
        embedder=embedder,
    )


def stats_resource(service) -> dict:
    return json.loads(mcp_server.read_resource(service, "memory://stats").contents[0].text)


def test_memory_stats_with_embedding_off_says_that_nothing_is_coming(db_path, unpinned):
    service = wiring.build_service(settings(db_path, "none"))
    try:
        stats = stats_resource(service)
    finally:
        service.close()
    assert stats["pending_embedding"] == 2
    assert stats["embedding"] == EMBEDDING_OFF
    assert "no memory gets a vector" in stats["embedding"]


@pytest.mark.parametrize("embedding", [True, False])
def test_memory_stats_with_an_embedder_reports_a_backlog(db_path, unpinned, embedding):
    """A command without an embedder (embedding=False) has not turned embedding off."""
    service = wiring.build_service(settings(db_path, "ollama"), embedding=embedding)
    try:
        stats = stats_resource(service)
    finally:
        service.close()
    assert stats["pending_embedding"] == 2 and "embedding" not in stats
