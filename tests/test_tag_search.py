"""Keyword search reads a memory's tags as well as its content (decisions.md, "Tags are
searched along with content"), on both engines alike: a tag finds its memory whose content
lacks the word, in keyword and hybrid mode; retagging and forgetting follow; ``tags:`` and
``content:`` filter by column; an upgraded file finds the tags it already held."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import sqlean
from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.query import bm25
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.base import NewMemory

pytest_plugins = ["tests.support.pg_fixtures"]

T0 = 1_767_225_600
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PIN = Pin("toy", 8, "none", "ollama")


def vector(*values: float) -> Embedding:
    return Embedding.of(PIN, [*values, *[0.0] * (PIN.dimension - len(values))])


def new(content: str, tags: list[str]) -> NewMemory:
    return NewMemory("DECISION", content, tags, None, None, T0, None)


def found(store, text: str, embedding: Embedding | None = None) -> list[int]:
    page = store.search(text, embedding, now=T0, limit=10, filters=Filters())
    assert page.mode == ("hybrid" if embedding is not None else "keyword")
    return [m["id"] for m in page.results]


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


def test_an_upgraded_file_finds_the_tags_it_held(tmp_path):
    """Revision 0009 indexes the tags of the memories already there: the fixture's first
    memory is tagged ``release``, a word its content does not hold."""
    path = tmp_path / "memory.db"
    shutil.copyfile(FIXTURES / "memory-0008.db", path)
    service = MemoryService(open_store(path))
    try:
        assert [r["id"] for r in service.search({"query": "release"})["results"]] == [1]
        assert [r["id"] for r in service.search({"query": "tags:sqlite"})["results"]] == [2]
        service.update({"id": 1, "tags": ["published"]})
        assert service.search({"query": "release"})["results"] == []
    finally:
        service.close()
    conn = sqlean.connect(str(path))
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_a_retag_by_a_process_older_than_0009_leaves_no_old_tags(tmp_path):
    """Such a process writes the tags without their keyword text: the stale text is dropped
    and the index reads the new tags."""
    path = tmp_path / "memory.db"
    store = open_store(path)
    memory_id = store.insert(new("We picked PostgreSQL.", ["数据库"]), None)
    conn = sqlean.connect(str(path))
    conn.execute("UPDATE memories SET tags = '[\"caching\"]' WHERE id = ?", (memory_id,))
    conn.commit()
    assert conn.execute("SELECT keyword_tags FROM memories").fetchall() == [(None,)]
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()
    assert found(store, "数据") == []
    assert found(store, "caching") == [memory_id]
    store.close()


def test_doctor_repair_rebuilds_the_index_with_the_tags(tmp_path):
    path = tmp_path / "memory.db"
    store = open_store(path)
    memory_id = store.insert(new("We picked PostgreSQL.", ["database"]), None)
    store.close()
    conn = sqlean.connect(str(path))
    conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('delete-all')")
    conn.commit()
    conn.close()
    doctor = ["--db", str(path), "--embedder", "none", "doctor"]
    assert CliRunner().invoke(cli, doctor).exit_code == 1
    repaired = CliRunner().invoke(cli, [*doctor, "--repair"])
    assert repaired.exit_code == 0, repaired.output
    assert CliRunner().invoke(cli, doctor).exit_code == 0
    search = ["--db", str(path), "--embedder", "none", "search", "database", "--json"]
    answer = json.loads(CliRunner().invoke(cli, search).stdout)
    assert [r["id"] for r in answer["results"]] == [memory_id]


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
        expected = sqlite.search(text, None, now=T0, limit=10, filters=Filters()).results
        got = postgres.search(text, None, now=T0, limit=10, filters=Filters()).results
        assert [m["id"] for m in got] == [m["id"] for m in expected]
        assert len(expected) == matches
    finally:
        sqlite.close()
        postgres.close()
