"""Shared fixtures: a temp database per test, a controllable clock, MCP clients.

In-process tests call the service (or the MCP server through the SDK's in-process
client); end-to-end tests spawn the installed ``agent-memory`` executable.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlean
import sqlite_vec
from sqlalchemy import event
from sqlalchemy.engine import Engine

from agent_memory.embedders.ollama import Ollama
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.sqlite.database import create_engine
from tests.support.fake_ollama import FakeOllama
from tests.support.spawned import (  # noqa: F401  (the tests import them from here)
    NO_OLLAMA_URL,
    executable,
    run_agent_memory,
    server_env,
)

START = 1_767_225_600  # 2026-01-01T00:00:00Z


class Clock:
    def __init__(self, now: int = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return float(self.now)

    def advance(self, seconds: int) -> None:
        self.now += seconds


# Where the user's real data lives, read before the session points HOME and XDG elsewhere.
def _real_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("agent-memory", appauthor=False))


def _listing(directory: Path) -> list[tuple[str, int, int]] | None:
    if not directory.is_dir():
        return None
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in directory.iterdir())


REAL_DATA_DIR = _real_data_dir()
_REAL_DATA_BEFORE = _listing(REAL_DATA_DIR)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """No test may read or write the user's real data: each test gets its own HOME and XDG
    directories (spawned servers inherit them), and AGENT_MEMORY_* is cleared. Commands run
    in process embed with Ollama (which is not there) unless a test chooses otherwise: the
    local model is for the tests about it."""
    home = tmp_path_factory.mktemp("home")
    for name in [k for k in os.environ if k.startswith("AGENT_MEMORY_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AGENT_MEMORY_EMBEDDER", "ollama")
    monkeypatch.setenv("HOME", str(home))
    for name, sub in (
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        monkeypatch.setenv(name, str(home / sub))
    return home


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The whole run fails if the real data directory changed while it ran."""
    if _listing(REAL_DATA_DIR) != _REAL_DATA_BEFORE:
        print(f"\nthe test run changed the real data directory {REAL_DATA_DIR}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(db_path: Path, clock: Clock):
    svc = MemoryService(open_store(db_path), clock=clock)
    yield svc
    svc.close()


@pytest.fixture
def ollama():
    with FakeOllama() as fake:
        yield fake


def embedder_for(url: str, model: str = "nomic-embed-text") -> Ollama:
    """No retry window, so tests see each switch of the fake at once; timeouts generous
    enough for the pure-Python fake embedding a batch on a busy machine."""
    return Ollama(url, model, connect_timeout=5.0, read_timeout=60.0, retry_after=0.0)


@pytest.fixture
def hybrid(db_path: Path, clock: Clock, ollama: FakeOllama):
    """A service whose embedder is the fake Ollama: searches are hybrid."""
    svc = MemoryService(open_store(db_path), clock=clock, embedder=embedder_for(ollama.url))
    yield svc
    svc.close()


@pytest.fixture
def no_floor(monkeypatch):
    """Hybrid pages without the relevance floor: for tests of what the legs find."""
    from agent_memory.search import ranking

    monkeypatch.setattr(ranking, "FLOOR", False)


@pytest.fixture
def raw(db_path: Path, service: MemoryService):
    """A plain sqlean connection (with sqlite-vec) on the same file, to check what was written."""
    conn = sqlean.connect(str(db_path))
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    yield conn
    conn.close()


def file_hashes(path: Path) -> dict[str, str | None]:
    """sha256 of the database and its -wal and -shm (None when absent)."""
    out = {}
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{path}{suffix}")
        out[suffix] = hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
    return out


def check_consistent(db_path: Path) -> sqlean.Connection:
    """A connection to a file whose b-trees and FTS5 index check out (the caller closes it)."""
    conn = sqlean.connect(str(db_path))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
    return conn


def dump(db_path: Path) -> list[tuple]:
    """Every column of every row: compare before/after to prove nothing was written."""
    conn = sqlean.connect(str(db_path))
    try:
        return conn.execute("SELECT * FROM memories ORDER BY id").fetchall()
    finally:
        conn.close()


class WriteWatch:
    """The write transactions of every SQLite store in this process, seen through
    SQLAlchemy's public connection events: how many are open now, and an action run with the
    driver connection at the start of each (to inject a fault into the writer)."""

    def __init__(self) -> None:
        self.open = 0
        self.action: Callable[[sqlean.Connection], object] | None = None

    @staticmethod
    def _writing(conn) -> bool:
        return bool(conn.get_execution_options().get("sqlite_write"))

    def begin(self, conn) -> None:
        if self._writing(conn):
            self.open += 1
            if self.action is not None:
                self.action(conn.connection.driver_connection)

    def end(self, conn) -> None:
        if self._writing(conn):
            self.open -= 1


@pytest.fixture
def writes():
    watch = WriteWatch()
    hooks = (("begin", watch.begin), ("commit", watch.end), ("rollback", watch.end))
    for name, hook in hooks:
        event.listen(Engine, name, hook)
    yield watch
    for name, hook in hooks:
        event.remove(Engine, name, hook)


@contextmanager
def reading(db_path: Path):
    """A read snapshot of the file through a SQLite store's own engine (sqlite-vec, pragmas):
    for tests of the SQLite store's modules (keyword.py, vectors.py) on their own."""
    engine = create_engine(db_path)
    try:
        with engine.connect() as conn, conn.begin():
            yield conn
    finally:
        engine.dispose()
