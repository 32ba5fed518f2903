"""Looking at a SQLite file from outside the store: to prove what was written, or that nothing was."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import platformdirs
import sqlean

from agent_memory.storage.sqlite.database import create_engine


def real_data_dir() -> Path:
    """Where the user's real data lives (read before a test points HOME elsewhere)."""
    return Path(platformdirs.user_data_dir("agent-memory", appauthor=False))


# Computed when conftest first imports this module, before any test changes HOME or XDG.
REAL_DATA_DIR = real_data_dir()


def listing(directory: Path) -> list[tuple[str, int, int]] | None:
    """Name, size and mtime of each entry: a directory's state to compare before and after."""
    if not directory.is_dir():
        return None
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in directory.iterdir())


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


@contextmanager
def reading(db_path: Path) -> Iterator:
    """A read snapshot of the file through a SQLite store's own engine (sqlite-vec, pragmas):
    for tests of the SQLite store's modules (keyword.py, vectors.py) on their own."""
    engine = create_engine(db_path)
    try:
        with engine.connect() as conn, conn.begin():
            yield conn
    finally:
        engine.dispose()
