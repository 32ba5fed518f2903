"""Keyword search reads a memory's tags as well as its content (decisions.md, "Tags are
searched along with content"), on both engines alike: a tag finds its memory whose content
lacks the word, in keyword and hybrid mode; retagging and forgetting follow; ``tags:`` and
``content:`` filter by column."""

from __future__ import annotations

import pytest

from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.query import bm25
from agent_memory.query import read as read_query
from agent_memory.storage import open_store
from tests.support.tags import T0, found, new

pytest_plugins = ["tests.support.pg_fixtures"]


PIN = Pin("toy", 8, "none", "ollama")


def vector(*values: float) -> Embedding:
    return Embedding.of(PIN, [*values, *[0.0] * (PIN.dimension - len(values))])


def test_a_tag_finds_a_memory_whose_content_lacks_the_word(store):
    tagged = store.insert(new("We picked PostgreSQL for the billing service.", ["database"]), None)
    store.insert(new("Deploys go out on Fridays.", ["ops"]), None)
    assert found(store, "database") == [tagged]
    assert found(store, "which database do we use") == [tagged]
    assert found(store, "database AND billing") == [tagged]


def test_a_tag_finds_its_memory_in_a_hybrid_search(store):
    """The keyword leg finds the tagged memory; the vectors point elsewhere."""
    tagged = store.insert(
        new("We picked PostgreSQL for the billing service.", ["database"]),
        vector(0.0, 1.0),
    )
    for i in range(5):
        store.insert(new(f"filler number {i}", []), vector(1.0, 0.1 * i))
    assert tagged in found(store, "database", vector(1.0))[:3]


def test_retagging_changes_what_a_tag_finds(store):
    memory_id = store.insert(new("We picked PostgreSQL.", ["database"]), None)
    store.update(memory_id, {"tags": ["storage", "数据库"]}, T0, None)
    assert found(store, "database") == []
    assert found(store, "storage") == [memory_id]
    assert found(store, "数据") == [memory_id]  # bigrams, as in content
    store.update(memory_id, {"content": "We picked SQLite."}, T0, None)
    assert found(store, "storage") == [memory_id]  # rewriting content keeps the tags
    assert found(store, "PostgreSQL") == []


def test_forgetting_a_memory_takes_its_tags_out_of_the_index(store):
    memory_id = store.insert(new("We picked PostgreSQL.", ["database"]), None)
    assert found(store, "database") == [memory_id]
    assert store.delete(memory_id)
    assert found(store, "database") == []


def test_column_filters_name_content_or_tags(store):
    tagged = store.insert(new("We picked PostgreSQL.", ["database"]), None)
    said = store.insert(new("The database is backed up nightly.", []), None)
    assert found(store, "tags:database") == [tagged]
    assert found(store, "content:database") == [said]
    assert sorted(found(store, "{content tags}: database")) == [tagged, said]
    assert found(store, "-content:database") == [tagged]


def test_a_tag_hit_weighs_the_tag_weight(store):
    """Two memories of the same length, one saying the word in its content, the other in
    its tags: the tag hit scores as TAG_WEIGHT content hits, so it ranks first."""
    assert bm25.TAG_WEIGHT > 1
    said = store.insert(new("redis cache for sessions", ["ops"]), None)
    tagged = store.insert(new("memcached for sessions here", ["redis"]), None)
    assert found(store, "redis") == [tagged, said]


@pytest.mark.parametrize(
    ("text", "matches"),
    [("kafka", 4), ("tags:kafka", 3), ("content:kafka", 2), ("^kafka", 4), ("kafka*", 4)],
)
def test_both_engines_rank_tags_alike(tmp_path, pg_url, text, matches):
    sqlite, postgres = open_store(tmp_path / "memory.db"), open_store(pg_url)
    memories = [
        ("Kafka carries the billing events.", ["kafka"]),
        ("The consumer lag alarm fires at 10,000 messages.", ["kafka", "alerts"]),
        ("Events are kept for seven days.", ["kafka retention"]),
        ("kafka kafka topics per service", []),
    ]
    try:
        for content, tags in memories:
            assert sqlite.insert(new(content, tags), None) == postgres.insert(
                new(content, tags), None
            )
        expected = sqlite.search(
            read_query(text), None, now=T0, limit=10, filters=Filters()
        ).results
        got = postgres.search(read_query(text), None, now=T0, limit=10, filters=Filters()).results
        assert [m["id"] for m in got] == [m["id"] for m in expected]
        assert len(expected) == matches
    finally:
        sqlite.close()
        postgres.close()
