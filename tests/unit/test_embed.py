"""``agent-memory embed``: a terminal user embeds what waits for a vector, and a search from
the terminal says how it ran and what is still waiting."""

from __future__ import annotations

import re

import pytest
import sqlalchemy

from agent_memory.contract.models import Pin
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.fake_ollama import embedder_for
from tests.support.terminal import am_with_ollama

NOMIC = Pin("nomic-embed-text", 768, "nomic")
TEXTS = [f"memory number {i} about the datastore" for i in range(5)]


@pytest.fixture
def waiting(db_path):
    """Five memories stored without an embedder: each waits for a vector, none is pinned."""
    svc = MemoryService(open_store(db_path))
    for text in TEXTS:
        svc.store({"content": text, "type": "TODO"})
    svc.close()
    return db_path


def counts(db_path):
    store = open_store(db_path)
    try:
        return store.pin(), store.embedding_counts()
    finally:
        store.close()


def test_embed_gives_every_waiting_memory_its_vector_and_pins_the_database(waiting, ollama):
    result = am_with_ollama(waiting, ollama, "embed", "--batch", "2")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1] == (
        "embedded 5 memories with nomic-embed-text (ollama, 768 dimensions, nomic prefixes)"
    )
    assert counts(waiting) == (NOMIC, (5, 0))
    assert sorted(ollama.embedded[1:]) == sorted(f"search_document: {t}" for t in TEXTS)
    again = am_with_ollama(waiting, ollama, "embed")
    assert again.exit_code == 0 and "embedded 0 memories" in again.stderr


def test_embed_reports_its_batches_and_resumes_where_it_stopped(waiting, ollama):
    svc = MemoryService(open_store(waiting), embedder=embedder_for(ollama.url))
    seen: list[tuple[int, int]] = []
    ollama.fail_after = 2  # the probe and one batch of two
    try:
        with pytest.raises(Exception, match="after 2 memories"):
            svc.embed_pending(batch=2, progress=lambda done, total: seen.append((done, total)))
        assert seen == [(0, 5), (2, 5)]
        ollama.fail_after = None
        seen.clear()
        assert svc.embed_pending(batch=2, progress=lambda d, t: seen.append((d, t))) == (3, NOMIC)
        assert seen == [(2, 5), (4, 5), (5, 5)]
    finally:
        svc.close()


def test_embed_when_the_embedder_does_not_answer_is_one_line(waiting, ollama):
    ollama.down = True
    result = am_with_ollama(waiting, ollama, "embed", embedder="ollama")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"cannot embed: nomic-embed-text at {ollama.url} did not answer; check that Ollama is "
        "running and the model is pulled (ollama pull nomic-embed-text), then run embed "
        "again to go on"
    )
    assert counts(waiting) == (None, (5, 5))


def test_embed_with_embedding_off_is_one_line(waiting, ollama):
    result = am_with_ollama(waiting, ollama, "embed", embedder="none")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "cannot embed: search by meaning is off (--embedder none); run it with --embedder "
        "auto, ollama or local"
    )
    assert ollama.requests == []


def test_embed_never_drops_the_vectors_of_another_model(waiting, ollama):
    ollama.models = ["nomic-embed-text:latest", "mxbai-embed-large:latest"]
    assert am_with_ollama(waiting, ollama, "embed", "--batch", "1").exit_code == 0
    svc = MemoryService(open_store(waiting))
    svc.store({"content": "one more, waiting", "type": "TODO"})
    svc.close()
    result = am_with_ollama(
        waiting, ollama, "--embed-model", "mxbai-embed-large", "embed", embedder="ollama"
    )
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "cannot embed: this database's vectors were made with nomic-embed-text (ollama, 768 "
        "dimensions, nomic prefixes), not with mxbai-embed-large (ollama, 768 dimensions, "
        "none prefixes); run `agent-memory --embedder ollama --embed-model mxbai-embed-large "
        "reembed` to move it to that model, or embed with the one it is pinned to "
        "(--embedder auto)"
    )
    assert counts(waiting) == (NOMIC, (6, 1))


def test_embed_needs_a_database(tmp_path, ollama):
    result = am_with_ollama(tmp_path / "none.db", ollama, "embed")
    assert result.exit_code == 1
    assert "no database at" in result.stderr
    assert not (tmp_path / "none.db").exists()


def test_a_terminal_search_says_what_waits_for_a_vector(waiting, ollama):
    result = am_with_ollama(waiting, ollama, "search", "datastore", embedder="ollama")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1] == (
        "5 found (keyword search: 5 memories waiting for a vector; run `agent-memory embed`)"
    )
    assert am_with_ollama(waiting, ollama, "embed").exit_code == 0
    result = am_with_ollama(waiting, ollama, "search", "datastore")
    assert result.stderr.splitlines()[-1] == "5 found (hybrid search)"
    svc = MemoryService(open_store(waiting))
    svc.store({"content": "one more datastore note", "type": "TODO"})
    svc.close()
    result = am_with_ollama(waiting, ollama, "search", "datastore")
    assert result.stderr.splitlines()[-1] == (
        "6 found (hybrid search: 1 memory waiting for a vector; run `agent-memory embed`)"
    )


def test_a_terminal_search_with_embedding_off_says_so(waiting, ollama):
    result = am_with_ollama(waiting, ollama, "search", "datastore", embedder="none")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1] == (
        "5 found (keyword search: search by meaning is off (--embedder none))"
    )
    assert ollama.requests == []


def test_embed_logs_nothing_at_the_default_level(waiting, ollama):
    """Its answer is its last line; the database opening is logged at the info level, which
    only --log-level info shows (as for export and import)."""
    result = am_with_ollama(waiting, ollama, "embed")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "embedded 5 memories with nomic-embed-text (ollama, 768 dimensions, nomic prefixes)"
    ]
    assert "INFO" in am_with_ollama(waiting, ollama, "--log-level", "info", "embed").stderr


def test_an_embed_stopped_after_one_memory_counts_it_in_the_singular(waiting, ollama):
    ollama.fail_after = 2  # the probe and one batch of one
    result = am_with_ollama(waiting, ollama, "embed", "--batch", "1", embedder="ollama")
    assert result.exit_code == 1
    assert " did not answer after 1 memory; " in result.stderr.splitlines()[-1]


# count(*) over the memories table without a condition (SQL as SQLAlchemy compiles it too)
EVERY_MEMORY_COUNTED = re.compile(r"count\(\*\)(?: AS \w+)? FROM memories(?! WHERE)", re.I)


def test_a_terminal_search_never_counts_every_memory(waiting, ollama):
    """What it says beside its mode needs only the memories waiting for a vector (a
    partial index), never a count of the whole table (0.4 s at 100,000 on PostgreSQL)."""
    statements: list[str] = []

    def seen(conn, cursor, statement, *args):
        statements.append(" ".join(statement.split()))

    def counted_all_in_a_search(embedder: str) -> list[str]:
        statements.clear()
        assert (
            am_with_ollama(waiting, ollama, "search", "datastore", embedder=embedder).exit_code == 0
        )
        assert statements  # the listener saw the search
        return [s for s in statements if EVERY_MEMORY_COUNTED.search(s)]

    sqlalchemy.event.listen(sqlalchemy.Engine, "before_cursor_execute", seen)
    try:
        assert counted_all_in_a_search("ollama") == []  # keyword: 5 waiting
        assert counted_all_in_a_search("none") == []
        assert am_with_ollama(waiting, ollama, "embed").exit_code == 0
        assert counted_all_in_a_search("auto") == []  # hybrid: none waiting
    finally:
        sqlalchemy.event.remove(sqlalchemy.Engine, "before_cursor_execute", seen)
