"""Queries up to the README's bound (query.cost.MAX_QUERY_WORDS, 10,000 words) answer on PostgreSQL
as on SQLite: the same memories in the same order.

PostgreSQL used to fail past 1,664 words (one select-list entry per word); the words now
travel in arrays, and the tsquery is one parameter.
"""

from __future__ import annotations

import pytest

from agent_memory import query
from agent_memory.service import core as service
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.clock import Clock

pytest_plugins = ["tests.support.pg_fixtures"]

VOCABULARY = [f"term{i}" for i in range(400)]
MEMORIES = 60

# The shortcuts must give the engine's full page: the page's end is tested apart.
pytestmark = pytest.mark.usefixtures("no_cut")


def fill(service: MemoryService) -> None:
    """Memories of a few vocabulary words each, the first holding every word of ALL_OF."""
    service.store({"content": " ".join(ALL_OF), "type": "DECISION"})
    for i in range(1, MEMORIES):
        words = [VOCABULARY[(i * 7 + k * 13) % len(VOCABULARY)] for k in range(1 + i % 9)]
        service.store({"content": " ".join(words), "type": "TODO" if i % 2 else "PATTERN"})


ALL_OF = ["kafka", "billing", "retry", "jitter"]
N = query.cost.MAX_QUERY_WORDS
QUERIES = {
    # FTS5 syntax: the AND of 10,000 words (four distinct), which the first memory holds
    "and-of-words": " ".join(ALL_OF[i % 4] for i in range(N)),
    # not FTS5 (the "?"): the plain-language retry, the OR of its 10,000 words
    "question-repeating": " ".join(VOCABULARY[(i * 31) % 400] for i in range(N - 1)) + " why?",
    "question-distinct": " ".join(f"w{i}" for i in range(N - 2)) + " term7 term11?",
    # FTS5 syntax with operators, which count as words: 5,000 words and 4,999 ORs
    "or-of-words": " OR ".join(VOCABULARY[i % 400] for i in range(N // 2)),
}


@pytest.fixture
def both(tmp_path, pg_url):
    """A SQLite and a PostgreSQL service holding the same memories, at the same time."""
    services = []
    for location in (str(tmp_path / "memory.db"), pg_url):
        service = MemoryService(open_store(location), clock=Clock())
        fill(service)
        services.append(service)
    yield services
    for service in services:
        service.close()


@pytest.mark.parametrize("text", QUERIES.values(), ids=QUERIES.keys())
def test_a_query_of_10000_words_answers_as_on_sqlite(both, text, monkeypatch):
    # The search budget is a speed bound, and speed is bench/query_cost.py's (its rows of
    # queries at the word bound, --postgres): here a busy machine must not refuse the query.
    monkeypatch.setattr(service, "SEARCH_BUDGET_SECS", 60.0)
    sqlite, postgres = both
    parsed = query.read(text, bounded=True)  # within the bound, at it
    assert N - 2 <= len(parsed.words) <= N
    expected = sqlite.search({"query": text, "limit": 20}, record_use=False)
    found = postgres.search({"query": text, "limit": 20}, record_use=False)
    assert expected["results"], "the query must match something"
    assert [m["id"] for m in found["results"]] == [m["id"] for m in expected["results"]]
