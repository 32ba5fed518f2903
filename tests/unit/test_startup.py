"""`serve` answers its first requests before it loads SQLAlchemy and opens the engine.

On a file already at head it only checks the file (storage.ready_to_serve) before serving; the
service is opened in a thread once the server has answered (wiring.OpeningService).
"""

from __future__ import annotations

import threading

import pytest
import sqlean
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR

from agent_memory import app as wiring
from agent_memory.cli import main as cli
from agent_memory.contract.errors import DatabaseOpenError, StorageError
from agent_memory.mcp import server as mcp_server
from agent_memory.service import lifecycle
from agent_memory.settings import Settings
from agent_memory.storage import open_store
from agent_memory.storage.sqlite.database import probe
from tests.support.spawned import NO_OLLAMA_URL


def settings(db_path) -> Settings:
    return Settings(
        db=db_path,
        ollama_url=NO_OLLAMA_URL,
        embed_model="nomic-embed-text",
        sweep_interval=3600,
        max_content_bytes=1024,
    )


def test_a_new_file_is_created_before_serving(db_path, monkeypatch):
    seen = []
    monkeypatch.setattr(
        mcp_server, "serve_stdio", lambda service, answered, outlook: seen.append(service)
    )
    result = cli.cli(["--db", str(db_path), "serve"], standalone_mode=False)
    assert result is None
    assert db_path.exists()
    assert not isinstance(seen[0], wiring.OpeningService)


def test_nothing_is_opened_before_the_first_answer(db_path, monkeypatch):
    open_store(db_path).close()
    monkeypatch.setattr(lifecycle, "STARTUP_GRACE_SECS", 60)
    opened = []
    monkeypatch.setattr(wiring, "build_service", lambda s, **_o: opened.append(s) or object())
    answered = threading.Event()
    service = wiring.OpeningService(settings(db_path), answered)
    assert opened == []
    service.close()  # before any answer: the file is never opened
    assert opened == []


def test_calls_wait_for_the_opening(db_path):
    open_store(db_path).close()
    answered = threading.Event()
    service = wiring.OpeningService(settings(db_path), answered)
    answered.set()
    assert service.store({"content": "waits for the engine", "type": "TODO"}) == {"id": 1}
    assert [m["content"] for m in service.list({})] == ["waits for the engine"]
    service.close()


def test_an_opening_that_fails_answers_with_the_storage_error(db_path, monkeypatch, caplog):
    def fail(_settings, **_options):
        raise OSError("disk vanished")

    monkeypatch.setattr(wiring, "build_service", fail)
    answered = threading.Event()
    answered.set()
    service = wiring.OpeningService(settings(db_path), answered)
    with pytest.raises(MCPError) as raised:
        mcp_server.call_tool(service, "memory_store", {"content": "x", "type": "TODO"})
    assert raised.value.error.code == INTERNAL_ERROR
    assert raised.value.error.message == (
        "store failed due to a storage error (details are in the server log)"
    )
    assert "disk vanished" in caplog.text
    service.close()


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda p: p.write_bytes(b"not a database " * 200), "file is not a database"),
        (lambda p: None, "unable to open database file"),
    ],
    ids=["not a database", "no such directory"],
)
def test_probe_refuses_what_the_engine_could_not_open(tmp_path, make, expected):
    path = (
        tmp_path / "missing" / "memory.db" if expected.startswith("unable") else tmp_path / "x.db"
    )
    make(path)
    with pytest.raises(DatabaseOpenError) as raised:
        probe(path)
    assert expected in str(raised.value)


def test_a_file_migrated_by_a_newer_version_meanwhile_is_one_log_line(db_path, caplog):
    open_store(db_path).close()
    answered = threading.Event()
    answered.set()
    conn = sqlean.connect(str(db_path))  # between the probe and the opening
    conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.commit()
    conn.close()
    service = wiring.OpeningService(settings(db_path), answered)
    with pytest.raises(StorageError):
        service.search({"query": "anything"})
    assert "database schema is version 9999" in caplog.text
    assert "Traceback" not in caplog.text
    service.close()
