"""Plain-language keyword search (decisions.md, "Plain-language keyword queries") on the
everyday set, in keyword mode (no embedder), on both engines alike. A page ends where the
keyword share drops (ranking.end): a question whose only word in the store is a small part
of it ("which python version is required": "python" alone) gets nothing."""

from __future__ import annotations

from agent_memory.contract.models import Filters
from agent_memory.query import read as read_query
from agent_memory.storage import open_store
from agent_memory.storage.base import NewMemory
from tests.support.everyday_set import MEMORIES, QUERIES, TAGS

pytest_plugins = ["tests.support.pg_fixtures"]

T0 = 1_767_225_600
LIMIT = 10
# Measured on both engines: 33 of 36 targets first, 35 in the top 3 (the page of the 36th ends
# before it; before pages ended, 35 and 36; FTS5's implicit AND: 13 first, 13 in the top 10,
# 23 questions answered with nothing).
TOP1_FLOOR = 33
TOP3_FLOOR = 35


def stored(store, tagged: bool = False) -> dict[int, str]:
    """The set's memories in ``store`` (with ``tagged``, with their TAGS): id -> key."""
    return {
        store.insert(
            NewMemory(m.type, m.content, list(TAGS[m.key]) if tagged else [], None, None, T0, None),
            None,
        ): m.key
        for m in MEMORIES
    }


def search(store, text: str, limit: int = LIMIT, **filters) -> list[int]:
    page = store.search(read_query(text), None, now=T0, limit=limit, filters=Filters(**filters))
    assert page.mode == "keyword"
    return [m["id"] for m in page.results]


def ranks(store, tagged: bool = False) -> list[int | None]:
    keys = stored(store, tagged)
    found = []
    for q in QUERIES:
        got = [keys[i] for i in search(store, q.query)]
        found.append(got.index(q.target) + 1 if q.target in got else None)
    return found


def test_every_everyday_question_finds_its_target(store, capsys):
    found = ranks(store)
    top1 = sum(r == 1 for r in found)
    top3 = sum(r is not None and r <= 3 for r in found)
    with capsys.disabled():
        missed = [q.query for q, r in zip(QUERIES, found, strict=True) if r is None]
        print(
            f"\neveryday set: top1 {top1}, top3 {top3}, top10 {len(found) - len(missed)}"
            f" of {len(found)}; missed {missed}"
        )
    assert top1 >= TOP1_FLOOR
    assert top3 >= TOP3_FLOOR


def test_with_tags_every_question_finds_its_target_first(store):
    """Tags searched, a tag hit weighing bm25.TAG_WEIGHT (docs/search.md): every target
    found is first (at a weight of 2, "database choice" puts the memory tagged "database"
    that does not answer it first). "what does 429 mean" ends before its target: no memory
    holds "what", "does" or "mean", so "429" is a fifth of the question."""
    found = dict(zip((q.query for q in QUERIES), ranks(store, tagged=True), strict=True))
    assert found.pop("what does 429 mean") is None
    assert set(found.values()) == {1}


def test_each_tag_alone_finds_a_memory_holding_it_first(store):
    keys = stored(store, tagged=True)
    for tag in sorted({tag for tags in TAGS.values() for tag in tags}):
        assert tag in TAGS[keys[search(store, f'"{tag}"')[0]]], tag


def test_a_question_missing_one_word_still_finds_its_memory(store):
    keys = stored(store)
    for text in ("which port is busy", "token expiry", "time zones", "database choice"):
        assert search(store, text), text
    assert keys[search(store, "which port is busy")[0]] == "port"


def test_memories_holding_every_word_rank_first(store):
    keys = stored(store)
    # "worker" is in two memories; only one also holds "queue": it comes first.
    assert [keys[i] for i in search(store, "queue worker")] == ["queue", "memory-leak"]


def test_common_words_bring_nothing_in(store):
    keys = stored(store)
    # "we" is in 8 of 18 memories, "the" in 14: only the informative words match.
    found = [keys[i] for i in search(store, "which database did we pick", limit=50)]
    assert found == ["database"]
    found = [keys[i] for i in search(store, "the we", limit=50)]  # both common: "we" kept
    assert len(found) == sum(" we " in f" {m.content.lower()} " for m in MEMORIES)


def test_fts5_syntax_keeps_its_exact_meaning(store):
    keys = stored(store)
    assert [keys[i] for i in search(store, "port AND busy")] == ["port"]
    assert search(store, "port AND zebra") == []
    assert search(store, '"which port"') == []
    assert [keys[i] for i in search(store, '"port 8080"')] == ["port"]
    assert [keys[i] for i in search(store, "thumbnail*")] == ["memory-leak"]
    assert [keys[i] for i in search(store, "worker NOT queue")] == ["memory-leak"]


def test_filters_apply_to_both_tiers(store):
    keys = stored(store)
    found = [keys[i] for i in search(store, "which port is busy", memory_type="ERROR")]
    assert found[0] == "port"
    assert all(m.type == "ERROR" for m in MEMORIES if m.key in found)


def test_both_engines_rank_the_everyday_set_alike(tmp_path, pg_url):
    sqlite, postgres = open_store(tmp_path / "memory.db"), open_store(pg_url)
    try:
        assert stored(sqlite, tagged=True) == stored(postgres, tagged=True)
        for q in QUERIES:
            for limit in (1, 3, LIMIT):
                assert search(sqlite, q.query, limit) == search(postgres, q.query, limit), q
    finally:
        sqlite.close()
        postgres.close()
