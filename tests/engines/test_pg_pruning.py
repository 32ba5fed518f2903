"""A question's common words left out on PostgreSQL, as on SQLite (agent_memory.query.bm25).

A query searched as words ranks the rows holding every word first, then the rows holding one
of its informative words; the PostgreSQL store scores each with its whole score (the OR of
every word), and past PRUNE_EXACT_ROWS only the rows of the rarest words first. The reference
is that query written out with the store's own ranking statement and nothing restricted
(``full_page``); the other reference is SQLite's page for the same memories.
"""

from __future__ import annotations

import pytest

from agent_memory import query
from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.query import bm25
from agent_memory.query import read as read_query
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.postgres import keyword
from tests.support.clock import Clock
from tests.support.scale_corpus import DAY, fill, ids, keyword_page, the_in_443_of_1000

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture
def pg_service(pg_url: str, clock: Clock):
    svc = MemoryService(open_store(pg_url), clock=clock)
    yield svc
    svc.close()


@pytest.fixture
def scored(monkeypatch) -> list[str | None]:
    """Pruning from the first row on; the rows each ranking statement scores (None: every
    row the query matches), as the tsquery of the scored node."""
    monkeypatch.setattr(bm25, "PRUNE_MIN_ROWS", 1)
    seen: list[str | None] = []
    original = keyword.keyword_ranking_sql

    def spy(node, **kwargs):
        chosen = kwargs.get("scored")
        seen.append(None if chosen is None else " ".join(map(str, _words(chosen))))
        return original(node, **kwargs)

    monkeypatch.setattr(keyword, "keyword_ranking_sql", spy)
    return seen


# The shortcuts must give the engine's full page: the page's end is tested apart.
pytestmark = pytest.mark.usefixtures("no_cut")


def _words(node) -> list[str]:
    return [leaf.phrases[0].terms[0].token for leaf in node.children]


def full_page(service: MemoryService, question: str, now: int | None, limit: int) -> list[int]:
    """The page of a question searched as words, every row scored with every word: the
    rows holding every word first, then those holding an informative word (bm25.informative,
    from the store's own counts), each part by the score of the OR of every word."""
    parsed = query.read(question)
    tree, words = parsed.tree, list(parsed.words)
    assert parsed.several_words, "a question searched as words"

    def ranked(node) -> list[int]:
        statement, params = keyword.keyword_ranking_sql(node, limit=10**9, now=now)
        return [int(i) for i, _ in conn.exec_driver_sql(statement, tuple(params))]

    with service.db._read() as conn:
        statement, params = keyword.word_rows_sql(parsed.leaves)
        total, counts = conn.exec_driver_sql(statement, tuple(params)).one()
        chosen = bm25.informative(words, total, dict(zip(words, counts, strict=True)))
        every = set(ranked(query.parse(" ".join(f'"{w}"' for w in words))))
        some = set(ranked(query.parse(" OR ".join(f'"{w}"' for w in words if w in chosen))))
        order = ranked(tree)
    first = [i for i in order if i in every]
    return (first + [i for i in order if i in some - every])[:limit]


@pytest.mark.parametrize("limit", [1, 3, 10])
@pytest.mark.parametrize(
    "question",
    ["what is the sqlite cache?", "the kafka retry, again?", "the docker-oauth note, again?"],
)
def test_common_words_are_left_out_and_the_page_is_the_full_querys(
    pg_service, service, clock, scored, question, limit
):
    start = clock.now
    fill(pg_service, clock, 300)
    clock.now = start  # the same ages on both engines
    fill(service, clock, 300)
    clock.advance(DAY)
    expected = full_page(pg_service, question, clock.now, limit)
    scored.clear()
    assert keyword_page(pg_service, question, limit) == expected
    assert scored[-1] is not None and "the" not in scored[-1].split()  # "the" left out
    assert keyword_page(service, question, limit) == expected


def test_a_row_the_left_out_words_lift_past_the_page_is_not_missed(pg_service, clock, scored):
    # "the" in 443 of 1,002 rows (IDF about 0.23): left out ("kafka", in no row, keeps any
    # row from holding every word). A and B tie on "vec"; B's four "the" put it first. The
    # rows scored hold "vec" or "kafka" and get "the" counted too, so B leads.
    the_in_443_of_1000(pg_service)
    a = pg_service.store({"content": "vec alpha beta gamma delta", "type": "TODO"})["id"]
    b = pg_service.store({"content": "vec the the the the", "type": "TODO"})["id"]
    assert full_page(pg_service, "vec the kafka?", clock.now, 2) == [b, a]
    scored.clear()
    found = pg_service.search({"query": "vec the kafka?", "limit": 2})["results"]
    assert ids(found) == [b, a]
    # Every word's rows (none), then the kept words' ("kafka", in no row, adds 0 to every
    # score and matches no row: left out of the statement).
    assert scored == [None, "vec"]


def test_rows_holding_only_left_out_words_are_not_matched(pg_service, service, clock, scored):
    # One row holds "vec": the 443 rows holding only "the" do not fill the page of two.
    for svc in (pg_service, service):
        the_in_443_of_1000(svc)
    only = pg_service.store({"content": "vec alpha", "type": "TODO"})["id"]
    service.store({"content": "vec alpha", "type": "TODO"})
    expected = full_page(pg_service, "vec the kafka?", clock.now, 2)
    scored.clear()
    found = pg_service.search({"query": "vec the kafka?", "limit": 2})["results"]
    assert ids(found) == expected == [only]
    assert scored == [None, "vec"]
    assert ids(service.search({"query": "vec the kafka?", "limit": 2})["results"]) == [only]


def test_past_the_exact_rows_only_the_rarest_words_rows_are_scored(
    pg_service, service, clock, scored, monkeypatch
):
    """The documented price, the same on both engines: a fresh short row with two of the
    commoner words beats an old long row with the rare one in the full query, but only
    rows with "zebra" are scored."""
    monkeypatch.setattr(bm25, "PRUNE_EXACT_ROWS", 100)
    monkeypatch.setattr(bm25, "PRUNE_SCORED_SHARE", 1 / 6)
    made = {}
    for name, svc in (("postgres", pg_service), ("sqlite", service)):
        start = clock.now
        fill(svc, clock, 300, tagged=False)  # the word counts it was built on
        old = svc.store({"content": "zebra " + "filler " * 40, "type": "TODO"})["id"]
        clock.advance(400 * DAY)
        fresh = svc.store({"content": "sqlite cache", "type": "TODO"})["id"]
        made[name] = (old, fresh)
        if name == "postgres":
            clock.now = start  # the same ages on both engines
    question = "the zebra sqlite cache?"
    old, fresh = made["postgres"]
    assert full_page(pg_service, question, clock.now, 1) == [fresh]
    scored.clear()
    assert ids(pg_service.search({"query": question, "limit": 1})["results"]) == [old]
    assert scored == [None, "zebra"]  # every word's rows (none), then the rarest word's
    assert ids(service.search({"query": question, "limit": 1})["results"]) == [made["sqlite"][0]]


def test_the_hybrid_keyword_leg_leaves_common_words_out_too(pg_service, clock, scored):
    fill(pg_service, clock, 300, tagged=False)  # "sqlite", "cache" rare
    toy = Embedding.of(Pin("toy", 4, "none", "ollama"), [1.0, 0.0, 0.0, 0.0])
    pg_service.db.repin(toy.pin)  # a database pinned to the query's model searches hybrid

    found = pg_service.db.search(
        read_query("what is the sqlite cache?"),
        toy,
        now=clock.now,
        limit=10,
        filters=Filters(),
        floor=False,
    )
    assert found.mode == "hybrid" and len(found.results) == 10
    assert scored[-1] is not None and "the" not in scored[-1].split()
    # No memory has a vector: every result comes from the keyword leg, and holds one of
    # the informative words, not "the" alone (in every row).
    assert all({"sqlite", "cache"} & set(m["content"].split()) for m in found.results)


@pytest.mark.parametrize("engine", ["postgres", "sqlite"])
def test_the_hybrid_leg_takes_only_words_of_weight_on_a_tiny_store(
    pg_service, service, clock, engine
):
    # "the" is in 1 of 2 memories: keyword mode, which must not come back empty, takes it
    # (the few-rows floor); the keyword leg of a hybrid search, where the model answers
    # what no word finds, takes only words of IDF above ln 3, so the filler does not join
    # the fusion (no memory has a vector here: the page is the keyword leg's).
    svc = pg_service if engine == "postgres" else service
    svc.store({"content": "We chose PostgreSQL as our datastore.", "type": "DECISION"})
    login = svc.store({"content": "The login page crashed.", "type": "ERROR"})["id"]
    question = "which relational database did the team pick"
    assert ids(svc.search({"query": question}, record_use=False)["results"]) == [login]
    toy = Embedding.of(Pin("toy", 4, "none", "ollama"), [1.0, 0.0, 0.0, 0.0])
    svc.db.repin(toy.pin)
    found = svc.db.search(read_query(question), toy, now=clock.now, limit=10, filters=Filters())
    assert found.mode == "hybrid" and ids(found.results) == []
