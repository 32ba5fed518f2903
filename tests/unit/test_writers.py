"""Who wrote what, on SQLite and its surfaces: a file older than the field, the writer is
not an argument, the command line and REST show and filter it, an upgraded file says
``local``, the writer follows a call into a worker thread."""

from __future__ import annotations

import json
import shutil

import pytest

from agent_memory import storage
from agent_memory.contract.errors import UnknownField
from agent_memory.service.actor import acting_as
from agent_memory.service.core import MemoryService
from tests.support.paths import FIXTURES
from tests.support.rest_client import Client
from tests.support.terminal import am
from tests.support.writers import exported_records, imported_by, opened, writers


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
    shutil.copyfile(FIXTURES / "memory-0008.db", path)
    service = MemoryService(storage.open_store(path))
    try:
        before = {writers(m) for m in service.list({})}
        with acting_as("alice"):
            service.update({"id": 1, "tags": ["after"]})
        changed = writers(service.get({"id": 1}))
    finally:
        service.close()
    assert before == {("local", "local")} and changed == ("local", "alice")


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
