"""Who wrote what: every memory records who stored it and who last changed it (a token's
name, or ``local``), on both engines; export writes it, import keeps it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent_memory import storage
from agent_memory.contract.errors import UnknownField
from agent_memory.service.actor import acting_as
from agent_memory.service.core import MemoryService
from agent_memory.transfer.portable import jsonl_reader
from tests.support.clock import Clock
from tests.support.fake_ollama import embedder_for
from tests.support.rest_client import Client
from tests.support.terminal import am

pytest_plugins = ["tests.support.pg_fixtures"]


def opened(location: str) -> MemoryService:
    return MemoryService(storage.open_store(location), clock=Clock())


def writers(memory: dict) -> tuple[str, str]:
    return memory["created_by"], memory["updated_by"]


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


def exported_records(location: str) -> list[dict]:
    """The export of a store where alice stored a memory and bob changed it."""
    service = opened(location)
    try:
        with acting_as("alice"):
            first = service.store({"content": "first", "type": "DECISION"})["id"]
        with acting_as("bob"):
            service.update({"id": first, "tags": ["x"]})
        lines: list[str] = []
        service.export(lines.append)
    finally:
        service.close()
    return [json.loads(line) for line in lines]


def imported_by(name: str, records: list[dict], tmp_path) -> list[tuple[str, str]]:
    """The writers of the memories ``name`` imports from ``records``."""
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    target = opened(str(tmp_path / "target.db"))
    try:
        reader = jsonl_reader(path)
        reader.check()
        with acting_as(name):
            target.import_jsonl(reader)
        return [writers(m) for m in target.list({})]
    finally:
        target.close()


def test_export_writes_the_writers_and_import_keeps_them(location, tmp_path):
    records = exported_records(location)
    assert [writers(r) for r in records if r["record"] == "memory"] == [("alice", "bob")]
    assert imported_by("carol", records, tmp_path) == [("alice", "bob")]


def test_a_file_older_than_the_field_imports_as_whoever_imports_it(tmp_path):
    records = exported_records(str(tmp_path / "source.db"))
    for record in records:  # as a version before the fields wrote it
        record.pop("created_by", None)
        record.pop("updated_by", None)
    assert imported_by("carol", records, tmp_path) == [("carol", "carol")]


def test_a_writer_is_not_an_argument(tmp_path):
    service = opened(str(tmp_path / "m.db"))
    try:
        with pytest.raises(UnknownField) as stored:
            service.store({"content": "x", "type": "TODO", "created_by": "mallory"})
        with pytest.raises(UnknownField) as updated:
            service.update({"id": 1, "updated_by": "mallory"})
    finally:
        service.close()
    assert "created_by" in str(stored.value) and "updated_by" in str(updated.value)


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


def test_the_command_line_shows_and_filters_by_writer(tmp_path):
    db_path = tmp_path / "m.db"
    service = opened(str(db_path))
    try:
        with acting_as("alice"):
            service.store({"content": "stored by alice", "type": "TODO"})
        service.store({"content": "stored here", "type": "TODO"})
    finally:
        service.close()
    shown = am(db_path, "show", "1").stdout
    listed = json.loads(am(db_path, "list", "--by", "alice", "--json").stdout)
    assert "stored by  alice" in shown and "changed by alice" in shown
    assert [m["id"] for m in listed["memories"]] == [1]


def test_the_rest_api_answers_and_filters_the_writers(service):
    from agent_memory.http.rest import create_app

    with acting_as("alice"):
        hers = service.store({"content": "ferry timetable by alice", "type": "TODO"})["id"]
    service.store({"content": "ferry timetable kept here", "type": "TODO"})
    http = Client(create_app(service))
    listed = http("GET", "/api/memories?by=alice")[1]
    searched = http("POST", "/api/search", body={"query": "ferry", "by": "alice"})[1]
    one = http("GET", f"/api/memories/{hers}")[1]
    assert [m["id"] for m in listed] == [hers]
    assert [r["id"] for r in searched["results"]] == [hers]
    assert (one["created_by"], one["updated_by"]) == ("alice", "alice")


def test_an_upgraded_file_says_its_memories_were_written_locally(tmp_path):
    """Every write before revision 0010 was made without a token."""
    path = tmp_path / "memory.db"
    shutil.copyfile(Path(__file__).resolve().parent / "fixtures" / "memory-0008.db", path)
    service = MemoryService(storage.open_store(path))
    try:
        before = {writers(m) for m in service.list({})}
        with acting_as("alice"):
            service.update({"id": 1, "tags": ["after"]})
        changed = writers(service.get({"id": 1}))
    finally:
        service.close()
    assert before == {("local", "local")} and changed == ("local", "alice")


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


def test_the_writer_follows_a_call_into_a_worker_thread(tmp_path):
    """MCP over HTTP runs the service in anyio's worker threads: who acts goes along."""
    import anyio
    import anyio.to_thread

    service = opened(str(tmp_path / "m.db"))

    async def main() -> dict:
        with acting_as("alice"):
            stored = await anyio.to_thread.run_sync(
                service.store, {"content": "from a worker", "type": "TODO"}
            )
        return service.get(stored)

    try:
        assert writers(anyio.run(main)) == ("alice", "alice")
    finally:
        service.close()
