"""Who wrote what: every memory records who stored it and who last changed it (a token's
name, or ``local``), on both engines; export writes it, import keeps it, search and list
filter by it."""

from __future__ import annotations

from agent_memory import storage
from agent_memory.service.actor import acting_as
from agent_memory.service.core import MemoryService
from tests.support.clock import Clock
from tests.support.fake_ollama import embedder_for
from tests.support.writers import exported_records, imported_by, opened, writers

pytest_plugins = ["tests.support.pg_fixtures"]


def test_a_store_and_an_update_record_who_made_them(location):
    service = opened(location)
    try:
        mine = service.store({"content": "stored here", "type": "TODO"})["id"]
        with acting_as("alice"):
            hers = service.store({"content": "stored by alice", "type": "TODO"})["id"]
            changed = service.update({"id": mine, "tags": ["seen"]})
        with acting_as("bob"):
            service.update({"id": hers, "content": "stored by alice, fixed by bob"})
        listed = {m["id"]: writers(m) for m in service.list({})}
        found = service.search({"query": "alice bob"})["results"]
        shown = service.get({"id": hers})
    finally:
        service.close()
    assert writers(changed) == ("local", "alice")
    assert listed == {mine: ("local", "alice"), hers: ("alice", "bob")}
    assert [writers(r) for r in found] == [("alice", "bob")]
    assert writers(shown) == ("alice", "bob")


def test_export_writes_the_writers_and_import_keeps_them(location, tmp_path):
    records = exported_records(location)
    assert [writers(r) for r in records if r["record"] == "memory"] == [("alice", "bob")]
    assert imported_by("carol", records, tmp_path) == [("alice", "bob")]


def test_search_and_list_filter_by_writer(location):
    service = opened(location)
    try:
        local = service.store({"content": "deploy notes kept here", "type": "TODO"})["id"]
        with acting_as("alice"):
            hers = service.store({"content": "deploy notes by alice", "type": "TODO"})["id"]
        with acting_as("bob"):
            touched = service.store({"content": "deploy notes by bob", "type": "TODO"})["id"]
        with acting_as("alice"):
            service.update({"id": touched, "tags": ["checked"]})
        listed = {who: [m["id"] for m in service.list({"by": who})] for who in ("alice", "bob")}
        searched = {
            who: sorted(r["id"] for r in service.search({"query": "deploy", "by": who})["results"])
            for who in ("alice", "bob", "local")
        }
        tagged = service.list({"by": "alice", "tag": "checked"})
        nobody = service.search({"query": "deploy", "by": "mallory"})["results"]
    finally:
        service.close()
    assert listed == {"alice": [touched, hers], "bob": [touched]}
    assert searched == {"alice": sorted([hers, touched]), "bob": [touched], "local": [local]}
    assert [m["id"] for m in tagged] == [touched] and nobody == []


def test_a_hybrid_search_filters_by_writer_in_both_legs(location, ollama):
    hybrid = MemoryService(
        storage.open_store(location), clock=Clock(), embedder=embedder_for(ollama.url)
    )
    try:
        with acting_as("alice"):
            hers = hybrid.store({"content": "the build uses gradle caches", "type": "PATTERN"})
        hybrid.store({"content": "the build uses gradle daemons", "type": "PATTERN"})
        found = hybrid.search({"query": "gradle build", "by": "alice"})
    finally:
        hybrid.close()
    assert found["search_mode"] == "hybrid"
    assert [r["id"] for r in found["results"]] == [hers["id"]]


def test_a_postgres_database_of_revision_0010_upgrades_to_local_writers(pg_url, pg):
    from agent_memory.storage.postgres import database

    engine = database.create_engine(pg_url)
    with engine.connect() as conn, conn.begin():
        database._upgrade(conn, 10)
    engine.dispose()
    pg.execute(
        "INSERT INTO memories (type, content, tags, base_weight, decay_score, access_count,"
        " created_at, last_accessed, embedding_status, content_hash, doc_len, terms, tf)"
        " VALUES ('TODO', 'older row', '[]'::jsonb, 1, 1, 0, 1, 1, 0, 1, 2,"
        " 'older:1 row:2'::tsvector, '{}'::jsonb)"
    )
    service = MemoryService(storage.open_store(pg_url))
    try:
        assert [writers(m) for m in service.list({})] == [("local", "local")]
    finally:
        service.close()
