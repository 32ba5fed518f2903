"""Hybrid pages are the same on both engines: the same memories, scores and explanations.

Both stores hold the same memories and vectors (ids alike); each question, with the same
query vector and unrelated-text noise, must give the same page, and each result the same
fused score, on SQLite and on PostgreSQL (pgvector's HNSW on so few rows is exact).
"""

from __future__ import annotations

import random

import pytest

from agent_memory.contract.models import Embedding, Filters, Noise
from agent_memory.storage import open_store
from tests.support.stores import DIMENSION, PIN, T0, new

pytest_plugins = ["tests.support.pg_fixtures"]

WORDS = ["sqlite", "kafka", "retry", "cache", "schema", "docker", "oauth", "billing", "the"]
QUESTIONS = [
    "what is the sqlite cache?",
    "kafka retry",
    "oauth",
    "the docker schema billing",
    # FTS5 syntax: no keyword scale (its operators are not words), on either engine
    "sqlite NOT kafka",
    "cache AND schema",
    '"kafka retry"',
]


def toy(rng: random.Random) -> Embedding:
    return Embedding.of(PIN, [rng.gauss(0, 1) for _ in range(DIMENSION)])


@pytest.fixture
def stores(pg_url, tmp_path):
    opened = [open_store(tmp_path / "memory.db"), open_store(pg_url)]
    rng = random.Random(3)
    rows = [
        (" ".join(rng.sample(WORDS, rng.randint(1, 4))), toy(rng), rng.choice(["a", "b"]))
        for _ in range(80)
    ]
    for store in opened:
        for i, (text, embedding, scope) in enumerate(rows):
            store.insert(new(f"{text} note {i}", scope=scope, at=T0 + i), embedding)
    yield opened
    for store in opened:
        store.close()


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("scope", [None, "a"])
def test_a_hybrid_page_is_the_same_on_both_engines(stores, question, scope):
    rng = random.Random(question)
    query, unrelated = toy(rng), Noise(0.0, 0.3, 12)
    pages = [
        store.search(
            question,
            query,
            now=T0 + 1_000,
            limit=10,
            filters=Filters(scope=scope),
            unrelated=unrelated,
        )
        for store in stores
    ]
    sqlite, postgres = pages
    assert sqlite.mode == postgres.mode == "hybrid"
    assert [m["id"] for m in sqlite.results] == [m["id"] for m in postgres.results]
    assert sqlite.results, "a page to compare"
    for memory_id, why in sqlite.why.items():
        assert postgres.why[memory_id]["score"] == pytest.approx(why["score"], rel=1e-6)
        assert (postgres.why[memory_id]["keyword"] is None) == (why["keyword"] is None)
    assert sqlite.explain["below_floor"] == postgres.explain["below_floor"]
    assert sqlite.explain["words"] == postgres.explain["words"]
