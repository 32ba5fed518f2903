"""Near-duplicate hints at store time: a store still stores, and its answer names up to three
memories of the same scope that say nearly the same (``similar``), with the signal used
(``similar_by``): the local model's cosine when it runs, keyword overlap without an
embedder. On both engines, in process."""

from __future__ import annotations

import pytest

from agent_memory.embedders.local import Local
from agent_memory.service.core import MemoryService
from agent_memory.service.hygiene import similar
from agent_memory.storage import open_store
from tests.support.local_model import needs_model
from tests.support.similar import FIRST, REWORDED

pytest_plugins = ["tests.support.pg_fixtures"]


RELATED = "We chose MongoDB as the primary datastore for the analytics service."
UNRELATED = "The design system uses an 8 pixel spacing grid."


@pytest.fixture
def local(location):
    svc = MemoryService(open_store(location), embedder=Local())
    yield svc
    svc.close()


@pytest.fixture
def keyword_only(location):
    svc = MemoryService(open_store(location))
    yield svc
    svc.close()


def store(svc, content, memory_type="DECISION", **more) -> dict:
    return svc.store({"content": content, "type": memory_type, **more})


@needs_model
def test_a_reworded_fact_is_stored_and_names_the_first(local):
    first = store(local, FIRST)["id"]
    store(local, UNRELATED, "PATTERN")
    answer = store(local, REWORDED)
    assert answer["id"] != first
    assert answer["similar_by"] == "cosine"
    assert [h["id"] for h in answer["similar"]] == [first]
    hint = answer["similar"][0]
    assert similar.COSINE_THRESHOLDS["multilingual-e5-small-q4"] <= hint["similarity"] <= 1.0
    assert hint["snippet"] == FIRST
    assert local.get({"id": answer["id"]})["content"] == REWORDED  # stored all the same


@needs_model
def test_a_related_but_different_fact_gets_no_hint(local):
    store(local, FIRST)
    store(local, UNRELATED, "PATTERN")
    assert store(local, RELATED) == {"id": 3}


@needs_model
def test_hints_stay_in_the_scope(local):
    store(local, FIRST, scope="billing")
    assert "similar" not in store(local, REWORDED, scope="other")
    assert "similar" not in store(local, REWORDED)  # no scope is a scope of its own
    answer = store(local, REWORDED, scope="billing")
    assert [h["id"] for h in answer["similar"]] == [1]


@needs_model
def test_at_most_three_hints_the_most_similar_first(local):
    for n in range(5):
        store(local, f"Always run the database migrations before deploying the API. ({n})")
    answer = store(local, "Always run the database migrations before deploying the API.")
    scores = [h["similarity"] for h in answer["similar"]]
    assert len(scores) == similar.MAX_SIMILAR
    assert scores == sorted(scores, reverse=True)


def test_without_an_embedder_keyword_overlap_is_the_signal(keyword_only):
    first = store(keyword_only, "Deploys run the database migrations first, then restart the API")
    store(keyword_only, "The design system uses an 8 pixel spacing grid.", "PATTERN")
    answer = store(keyword_only, "Run the database migrations first on deploys; then restart API")
    assert answer["similar_by"] == "keyword"
    assert [h["id"] for h in answer["similar"]] == [first["id"]]
    assert answer["similar"][0]["similarity"] >= similar.KEYWORD_THRESHOLD
    assert "similar" not in store(keyword_only, "Restart the API after each deploy", "PATTERN")


def test_a_memory_written_as_fts5_syntax_is_only_words(keyword_only):
    """The keyword signal searches the memory's words, never its text as a query."""
    first = store(keyword_only, 'deploy AND "api" NOT staging OR migrations* NEAR(a b)')["id"]
    answer = store(keyword_only, 'deploy AND "api" NOT staging OR migrations* NEAR(a b) now')
    assert [h["id"] for h in answer["similar"]] == [first]
    assert store(keyword_only, "AND OR NOT") == {"id": 3}  # only stop words and operators


def test_redaction_markers_are_not_words_in_common(keyword_only):
    """Every memory with a secret of one kind holds the same marker: no hint from it."""
    store(keyword_only, "key AKIAABCDEFGHIJKLMNOP", "ERROR")
    answer = store(keyword_only, "AKIAABCDEFGHIJKLMNOQ again", "ERROR")
    assert answer == {"id": 2, "redacted": ["aws-access-key"]}
