"""Faults of the file in process: a full database and a read-only file refuse writes and keep
reading, a corrupt index gives the generic message and the rows stay.

Tests and CI run as root, where file permissions stop nothing, so each fault is provoked in
a way that holds for root too; how is said at each test."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import sqlean
from sqlalchemy import event

from agent_memory.contract.errors import StorageError
from agent_memory.service.core import MemoryService
from agent_memory.service.lifecycle import sweep
from agent_memory.storage import open_store
from agent_memory.storage.sqlite.database import open_database
from agent_memory.storage.sqlite.store import SqliteStore
from tests.support.faults import seeded

GENERIC = "{} failed due to a storage error (details are in the server log)"


def service_with(db_path: Path, clock, *pragmas: str) -> MemoryService:
    """A service whose every connection first runs ``pragmas``."""
    database = open_database(db_path)
    database.engine.dispose()

    def on_connect(dbapi_conn, _record):
        for pragma in pragmas:
            dbapi_conn.execute(pragma)

    event.listen(database.engine, "connect", on_connect)
    return MemoryService(SqliteStore(database), clock=clock)


def test_a_full_database_refuses_writes_and_keeps_reading(db_path, clock, caplog):
    contents = seeded(db_path, clock)
    conn = sqlean.connect(str(db_path))
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    # Provoked with max_page_count at the current size: SQLite answers SQLITE_FULL exactly
    # as it does when the disk is full.
    service = service_with(db_path, clock, f"PRAGMA max_page_count = {pages}")
    try:
        with pytest.raises(StorageError) as raised:
            for i in range(200):  # the first write that needs a new page fails
                service.store({"content": f"overflow {i} " + "x" * 3000, "type": "TODO"})
        assert str(raised.value) == GENERIC.format("store")
        assert "full" in caplog.text
        found = service.search({"query": "kept"})["results"]  # reads keep working
        assert {m["content"] for m in found} == set(contents)
        assert len(service.list({})) >= len(contents)
    finally:
        service.close()
    assert {m["content"] for m in MemoryService(open_store(db_path)).list({})} >= set(contents)


def test_a_read_only_file_refuses_writes_and_keeps_reading(db_path, clock, caplog):
    contents = seeded(db_path, clock)
    # Provoked with query_only, which makes SQLite refuse every write with
    # SQLITE_READONLY, as a read-only file does for a user that is not root.
    service = service_with(db_path, clock, "PRAGMA query_only = 1")
    caplog.set_level(logging.ERROR)
    try:
        for operation, args in [
            ("store", {"content": "new", "type": "TODO"}),
            ("update", {"id": 1, "content": "changed"}),
            ("forget", {"id": 1}),
            ("link", {"from_id": 1, "to_id": 2, "kind": "relates_to"}),
        ]:
            with pytest.raises(StorageError) as raised:
                getattr(service, operation)(args)
            assert str(raised.value) == GENERIC.format(operation)
        assert "readonly" in caplog.text
        listed = service.list({})
        assert sorted(m["content"] for m in listed) == sorted(contents)
        # A search still answers; only its recency bump cannot be written, and is dropped.
        assert service.search({"query": "kept", "limit": 5})["results"]
        assert "could not record the use of 5 search results" in caplog.text
        report = sweep(service)
        assert report["expired"] == 0 and report["decayed"] == 0
    finally:
        service.close()


def corrupt(db_path: Path, table: str) -> None:
    """Overwrite every page of ``table`` with garbage, keeping the file's header."""
    conn = sqlean.connect(str(db_path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    conn.close()
    with db_path.open("r+b") as f:
        f.seek((root[0] - 1) * size)
        f.write(b"\xde\xad\xbe\xef" * (size // 4))


def test_a_corrupt_index_gives_the_generic_message_and_the_rows_stay(db_path, clock, caplog):
    contents = seeded(db_path, clock)
    # Provoked by overwriting the FTS5 index's data pages with garbage.
    corrupt(db_path, "memories_fts_data")
    service = MemoryService(open_store(db_path), clock=clock)
    caplog.set_level(logging.ERROR)
    try:
        with pytest.raises(StorageError) as raised:
            service.search({"query": "kept"})
        assert str(raised.value) == GENERIC.format("search")
        assert "malformed" in caplog.text or "corrupt" in caplog.text
        assert sorted(m["content"] for m in service.list({})) == sorted(contents)
    finally:
        service.close()
