"""Pages are the same on both engines: the same memories, scores, explanations and end.

Both stores hold the same memories (some tagged, some superseded) and vectors (ids alike);
each question, with the same query vector and unrelated-text noise, must give the same page,
each result the same keyword share, sigmas and fused score, and the page the same end, on
SQLite and on PostgreSQL (pgvector's HNSW on so few rows is exact); and so must a keyword
page.
"""

from __future__ import annotations

import random

import pytest

from agent_memory.contract.models import Embedding, Filters, Noise
from agent_memory.query import read as read_query
from agent_memory.storage import open_store
from tests.support.stores import DIMENSION, PIN, T0, new

pytest_plugins = ["tests.support.pg_fixtures"]

WORDS = ["sqlite", "kafka", "retry", "cache", "schema", "docker", "oauth", "billing", "the"]
QUESTIONS = [
    "what is the sqlite cache?",
    "kafka retry",
    "oauth",
    "the docker schema billing",
    "retry cache",  # words typed together in some memories, apart in others
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
            tags = [WORDS[i % 8]] if i % 3 == 0 else []  # a tag hit weighs more than a word
            store.insert(new(f"{text} note {i}", scope=scope, at=T0 + i, tags=tags), embedding)
        for old in (2, 5, 9):  # superseded by the memory after each
            store.link(old + 1, old, "supersedes", T0 + 100, ids=(old + 1, old))
    yield opened
    for store in opened:
        store.close()


def same(a, b) -> None:
    """Two explanations alike, floats to 1e-6 (the engines compute cosines in float32, in
    their own order)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            same(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y)
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=1e-6, abs=1e-6)
    else:
        assert a == b


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("scope", [None, "a"])
@pytest.mark.parametrize("hybrid", [True, False], ids=["hybrid", "keyword"])
def test_a_page_is_the_same_on_both_engines(stores, question, scope, hybrid):
    rng = random.Random(question)
    query, unrelated = toy(rng), Noise(0.0, 0.3, 12)
    pages = [
        store.search(
            read_query(question),
            query if hybrid else None,
            now=T0 + 1_000,
            limit=10,
            filters=Filters(scope=scope),
            unrelated=unrelated,
            superseded="hide",
        )
        for store in stores
    ]
    sqlite, postgres = pages
    assert sqlite.mode == postgres.mode == ("hybrid" if hybrid else "keyword")
    assert [m["id"] for m in sqlite.results] == [m["id"] for m in postgres.results]
    assert sqlite.results, "a page to compare"
    if scope is None:  # (filtered by a scope, only what that scope's memories supersede)
        assert not {2, 5, 9} & {m["id"] for m in sqlite.results}
    same(dict(sqlite.why), dict(postgres.why))
    same(sqlite.explain, postgres.explain)
