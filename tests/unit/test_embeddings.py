"""The embedding lifecycle: vectors with their rows, backfill, the edit race and the model pin."""

from __future__ import annotations

import logging
import struct

import pytest

from agent_memory.contract.models import Pin
from agent_memory.service.core import BACKFILL_BATCH_ROWS, MemoryService
from agent_memory.service.lifecycle import sweep
from agent_memory.storage import open_store
from tests.support.fake_ollama import embed, embedder_for

NOMIC = Pin("nomic-embed-text", 768, "nomic")


def vectors(raw) -> dict[int, list[float]]:
    rows = raw.execute("SELECT memory_id, vector FROM memory_vector_floats").fetchall()
    return {i: list(struct.unpack(f"<{len(b) // 4}f", b)) for i, b in rows}


def status(raw, memory_id: int) -> int:
    return raw.execute(
        "SELECT embedding_status FROM memories WHERE id = ?", (memory_id,)
    ).fetchone()[0]


def test_a_store_writes_its_vector_and_pins_the_model(hybrid, raw):
    memory_id = hybrid.store({"content": "We chose SQLite.", "type": "DECISION"})["id"]
    assert status(raw, memory_id) == 1
    assert vectors(raw)[memory_id] == pytest.approx(embed("We chose SQLite."), abs=1e-6)
    meta = dict(raw.execute("SELECT key, value FROM meta WHERE key LIKE 'embedding%'"))
    assert meta == {
        "embedding_model": "nomic-embed-text",
        "embedding_dim": "768",
        "embedding_prefixes": "nomic",
        "embedding_provider": "ollama",
    }
    assert hybrid.db.pin() == NOMIC


def test_without_ollama_a_store_succeeds_pending(service, raw):
    memory_id = service.store({"content": "offline note", "type": "TODO"})["id"]
    assert status(raw, memory_id) == 0
    assert raw.execute(
        "SELECT count(*) FROM sqlite_master WHERE name = 'memory_vector_floats'"
    ).fetchone() == (0,)


def test_forget_and_ttl_expiry_take_the_vector(hybrid, raw, clock):
    kept = hybrid.store({"content": "kept", "type": "TODO"})["id"]
    forgotten = hybrid.store({"content": "forgotten", "type": "TODO"})["id"]
    expiring = hybrid.store({"content": "expiring", "type": "TODO", "ttl_secs": 10})["id"]
    assert set(vectors(raw)) == {kept, forgotten, expiring}
    hybrid.forget({"id": forgotten})
    clock.advance(10)
    assert sweep(hybrid)["expired"] == 1
    assert set(vectors(raw)) == {kept}
    for table in ("memory_vector_bits", "memory_vector_floats"):
        assert raw.execute(f"SELECT memory_id FROM {table}").fetchall() == [(kept,)]


def test_update_re_embeds_new_content_in_the_same_write(hybrid, raw):
    memory_id = hybrid.store({"content": "We chose MySQL.", "type": "DECISION"})["id"]
    updated = hybrid.update({"id": memory_id, "content": "Redis caches sessions."})
    assert updated["embedding_status"] == 1
    assert vectors(raw)[memory_id] == pytest.approx(embed("Redis caches sessions."), abs=1e-6)
    found = hybrid.search({"query": "memoize", "limit": 1})  # the new meaning finds it
    assert [r["id"] for r in found["results"]] == [memory_id]


def test_update_while_ollama_is_down_leaves_it_pending_with_no_stale_vector(hybrid, raw, ollama):
    memory_id = hybrid.store({"content": "We chose MySQL.", "type": "DECISION"})["id"]
    ollama.down = True
    updated = hybrid.update({"id": memory_id, "content": "Redis caches sessions."})
    assert updated["embedding_status"] == 0
    assert memory_id not in vectors(raw)  # the old meaning no longer matches by vector
    ollama.down = False
    assert sweep(hybrid)["embedded"] == 1
    assert vectors(raw)[memory_id] == pytest.approx(embed("Redis caches sessions."), abs=1e-6)


def test_an_update_without_new_content_keeps_the_vector_and_reports_its_status(hybrid, raw, ollama):
    memory_id = hybrid.store({"content": "We chose MySQL.", "type": "DECISION"})["id"]
    ollama.down = True
    assert hybrid.update({"id": memory_id, "tags": ["db"]})["embedding_status"] == 1
    assert memory_id in vectors(raw)
    pending = hybrid.store({"content": "queued", "type": "TODO"})["id"]
    assert hybrid.update({"id": pending, "scope": "x"})["embedding_status"] == 0


def test_backfill_after_an_outage(hybrid, raw, ollama):
    ollama.down = True
    ids = [
        hybrid.store({"content": f"We chose datastore {i}", "type": "DECISION"})["id"]
        for i in range(3)
    ]
    assert hybrid.search({"query": "database pick"})["search_mode"] == "keyword"
    assert sweep(hybrid)["embedded"] == 0  # still down: nothing, and no error
    ollama.down = False
    assert sweep(hybrid)["embedded"] == 3
    assert [status(raw, i) for i in ids] == [1, 1, 1]
    answer = hybrid.search({"query": "which database to pick"})
    assert answer["search_mode"] == "hybrid" and len(answer["results"]) == 3


def test_backfill_takes_at_most_one_batch_per_tick(hybrid, ollama):
    ollama.down = True
    for i in range(BACKFILL_BATCH_ROWS + 2):
        hybrid.store({"content": f"note {i}", "type": "TODO"})
    ollama.down = False
    assert sweep(hybrid)["embedded"] == BACKFILL_BATCH_ROWS
    assert sweep(hybrid)["embedded"] == 2
    assert sweep(hybrid)["embedded"] == 0


@pytest.mark.parametrize("race", ["edited", "forgotten"])
def test_a_row_changed_while_its_batch_is_in_flight_keeps_no_old_vector(hybrid, raw, ollama, race):
    ollama.down = True
    racing = hybrid.store({"content": "old text about PostgreSQL", "type": "DECISION"})["id"]
    other = hybrid.store({"content": "another note", "type": "TODO"})["id"]
    ollama.down = False

    def meanwhile(_texts):
        ollama.on_embed = None
        if race == "edited":  # an edit through another process, made while Ollama was down
            hybrid.db.update(racing, {"content": "new text about redis"}, hybrid.now(), None)
        else:
            hybrid.db.delete(racing)

    ollama.on_embed = meanwhile
    assert sweep(hybrid)["embedded"] == 1  # only the untouched row
    assert set(vectors(raw)) == {other}
    if race == "edited":
        assert status(raw, racing) == 0
        assert sweep(hybrid)["embedded"] == 1  # the next tick embeds the current text
        assert vectors(raw)[racing] == pytest.approx(embed("new text about redis"), abs=1e-6)


def test_an_edit_with_ollama_up_during_a_backfill_wins(hybrid, raw, ollama):
    ollama.down = True
    racing = hybrid.store({"content": "old text", "type": "DECISION"})["id"]
    ollama.down = False

    def meanwhile(_texts):
        ollama.on_embed = None
        hybrid.update({"id": racing, "content": "new text"})  # embeds it (nested request)

    ollama.on_embed = meanwhile
    assert sweep(hybrid)["embedded"] == 0
    assert vectors(raw)[racing] == pytest.approx(embed("new text"), abs=1e-6)


# -- the model pin ----------------------------------------------------------------------------


def test_another_model_never_mixes_vectors_and_searches_stay_keyword(
    db_path, clock, ollama, caplog
):
    ollama.models = ["nomic-embed-text:latest", "mxbai-embed-large:latest"]
    first = MemoryService(open_store(db_path), clock=clock, embedder=embedder_for(ollama.url))
    first.store({"content": "pinned to nomic", "type": "TODO"})
    first.close()

    other = MemoryService(
        open_store(db_path), clock=clock, embedder=embedder_for(ollama.url, "mxbai-embed-large")
    )
    try:
        with caplog.at_level(logging.WARNING):
            other.report_embedder()
            memory_id = other.store({"content": "stored with mxbai configured", "type": "TODO"})[
                "id"
            ]
            assert other.search({"query": "pinned"})["search_mode"] == "keyword"
            asked = ollama.embed_requests()
            assert other.backfill() == 0
            assert ollama.embed_requests() == asked  # it does not even ask
        assert other.db.pin() == NOMIC
        assert [m["id"] for m in other.list({})] == [memory_id, 1]  # stored all the same
        assert other.db.pending(10) == [(memory_id, "stored with mxbai configured")]
        lines = [r.getMessage() for r in caplog.records if "reembed" in r.getMessage()]
        assert len(lines) == 1  # one clear line, however often it is hit
        assert "agent-memory --embedder ollama --embed-model mxbai-embed-large reembed" in lines[0]
        assert "nomic-embed-text (ollama, 768 dimensions" in lines[0]
    finally:
        other.close()


def test_a_same_named_model_of_another_dimension_is_a_mismatch_too(db_path, clock, ollama):
    ollama.models = ["custom-embed:latest"]
    svc = MemoryService(
        open_store(db_path), clock=clock, embedder=embedder_for(ollama.url, "custom-embed")
    )
    try:
        svc.store({"content": "768 dimensions", "type": "TODO"})
        ollama.dimension = 384
        memory_id = svc.store({"content": "384 dimensions", "type": "TODO"})["id"]
        assert svc.search({"query": "dimensions"})["search_mode"] == "keyword"
        assert svc.db.pending(10) == [(memory_id, "384 dimensions")]
        assert svc.db.pin() == Pin("custom-embed", 768, "none")
    finally:
        svc.close()


def test_a_wrong_dimension_for_nomic_is_refused_as_a_failed_embed(hybrid, ollama, caplog):
    ollama.dimension = 384
    with caplog.at_level(logging.WARNING):
        memory_id = hybrid.store({"content": "x", "type": "TODO"})["id"]
    assert hybrid.db.pin() is None
    assert hybrid.db.pending(10) == [(memory_id, "x")]
    assert "should give 768 dimensions, got 384" in caplog.text


@pytest.mark.parametrize(
    ("models", "down", "expected"),
    [
        (["nomic-embed-text:latest"], False, "ready"),
        (["nomic-embed-text:v1.5"], False, "ready"),
        (["llama3:latest"], False, "model_missing"),
        ([], False, "model_missing"),
        (["nomic-embed-text:latest"], True, "unreachable"),
    ],
)
def test_health_shows_the_embedder_status(hybrid, ollama, models, down, expected, caplog):
    ollama.models, ollama.down = models, down
    assert hybrid.health()["embedder"] == expected
    with caplog.at_level(logging.INFO):
        assert hybrid.report_embedder() == expected
    assert ("searches are hybrid" in caplog.text) is (expected == "ready")
    if expected == "model_missing":
        assert "ollama pull nomic-embed-text" in caplog.text


@pytest.mark.parametrize(
    "answer",
    [
        {"embeddings": []},
        {"embeddings": [[0.1, 0.2]] * 2},
        {"embeddings": [["a"] * 768]},
        {"embeddings": [[float("nan")] * 768]},
        {"embeddings": [[True] * 768]},
        {"nothing": 1},
        [1, 2],
    ],
)
def test_a_malformed_answer_is_a_failed_embed(ollama, answer, caplog):
    ollama.answer = answer
    embedder = embedder_for(ollama.url)
    with caplog.at_level(logging.WARNING):
        assert embedder.embed_documents(["x"]) is None
    assert "cannot embed with nomic-embed-text at" in caplog.text
