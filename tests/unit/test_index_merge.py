"""The sweep merges the keyword index: every store's transaction adds a segment to the FTS5
index and FTS5 merges a level only once it holds four, so a store-built index keeps many
segments, each looked into by every word of every search. The sweep merges any level
holding two, in short write transactions; answers do not change. PostgreSQL has nothing to
merge."""

from __future__ import annotations

import sqlean

from agent_memory.service.lifecycle import sweep
from agent_memory.storage.sqlite import portable
from bench import corpus

QUERIES = ["database migrations", "why did the deploy fail?", "cache", "timeout retries"]


def segments(db_path) -> int:
    """The FTS5 index's segments: a data row's id holds its segment's id from bit 37 on
    (FTS5_SEGMENT_ROWID in SQLite's fts5Int.h); ids up to 10 are the index's own records."""
    with sqlean.connect(db_path) as conn:
        found = conn.execute("SELECT count(DISTINCT id >> 37) FROM memories_fts_data WHERE id > 10")
        return found.fetchone()[0]


def answers(service) -> list[list[tuple[int, float]]]:
    pages = [service.search({"query": q, "limit": 20})["results"] for q in QUERIES]
    return [[(r["id"], r["decay_score"]) for r in page] for page in pages]


def test_the_sweep_merges_a_store_built_index_and_answers_stay(service, db_path):
    for memory in corpus.developer_memories(120):
        service.store({"content": memory["content"], "type": memory["type"]})
    before, pieces = answers(service), segments(db_path)
    assert pieces > 4
    report = sweep(service)
    assert report["merged"] > 0
    assert segments(db_path) < pieces / 2
    assert answers(service) == before
    assert sweep(service)["merged"] == 0  # nothing left at any level
    with sqlean.connect(db_path) as conn:
        setting = conn.execute("SELECT v FROM memories_fts_config WHERE k = 'usermerge'")
        assert setting.fetchone() == (2,)


def test_merging_goes_in_steps_and_a_pause_can_stop_it(service, db_path, monkeypatch):
    monkeypatch.setattr(portable, "MERGE_STEP_PAGES", 2)
    for memory in corpus.developer_memories(120):
        service.store({"content": memory["content"], "type": memory["type"]})
    pieces = segments(db_path)
    steps, _ = service.db.merge_index(service.now(), lambda: True)  # stop after one step
    assert steps == 1 and pieces > segments(db_path) > 3  # merged some, not all
    steps, _ = service.db.merge_index(service.now(), lambda: False)
    assert steps >= 1 and segments(db_path) <= 3
