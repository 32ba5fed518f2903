"""The session brief's read of a SQLite store, on one plain sqlean connection.

``agent-memory context`` runs at the start of every agent session, so it must answer in
well under a second, and importing SQLAlchemy and building the store's engine alone take a
large share of that. This reader opens one read-only connection (database.read_only_uri: nothing is
written beside the file, no lock is taken), checks the schema version, and asks its two
questions in plain SQL. sqlite-vec is not loaded: the brief reads no vectors. A file another
process holds locked is waited for BUSY_TIMEOUT_MS only, then DatabaseBusy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlean

from agent_memory import ranking
from agent_memory.contract.errors import DatabaseBusy, DatabaseOpenError, SchemaTooNew, StorageFault
from agent_memory.contract.vocabulary import MAX_EXPANDED_LINKS
from agent_memory.storage.base import MEMORY_COLUMNS, READ
from agent_memory.storage.neighbours import NEIGHBOURS, neighbour_edges
from agent_memory.storage.sqlite import database

# Memories of some types in one scope (``IS``: NULL is the global scope), neither expired
# nor superseded (a scope's memory by one of the scope, as the scope's search counts them; a
# global one by any): of the :window newest (the memories_scope index gives them in that
# order, and the scan stops there), the most recently used first. No index holds last_accessed: each
# candidate is a row read, so the window bounds the cost on a large scope.
_RECENT = """
SELECT * FROM (
  SELECT {columns}
  FROM memories AS m
  WHERE m.scope IS ? AND m.type IN (SELECT value FROM json_each(?))
    AND (m.expires_at IS NULL OR m.expires_at > ?)
    AND NOT EXISTS (
      SELECT 1 FROM memory_links AS l WHERE l.to_id = m.id AND l.kind = 'supersedes'
        AND (m.scope IS NULL
          OR (SELECT f.scope FROM memories AS f WHERE f.id = l.from_id) = m.scope)
    )
  ORDER BY m.created_at DESC, m.id DESC
  LIMIT ?
)
ORDER BY last_accessed DESC, created_at DESC, id DESC
LIMIT ?
"""
# The brief's memory: the wire fields, but decay_score, which is computed as of its time.
_RECENT_COLUMNS = tuple(name for name in MEMORY_COLUMNS if name != "decay_score")
_RECENT = _RECENT.format(columns=", ".join(_RECENT_COLUMNS))
# Every relation touching one of the ids (a JSON array), at most per_result per id.
_NEIGHBOURS = NEIGHBOURS.format(member="IN (SELECT value FROM json_each(?1))", per_result="?2")
_VERSION = "SELECT version_num FROM alembic_version"
# How long the brief waits for a lock another process holds (an exclusive locking mode, a
# migration): session-start hooks give it 10 s in all (Claude Code, Codex), and a brief late
# by more than a second is worth less than none. Other commands wait database.BUSY_TIMEOUT_MS.
BUSY_TIMEOUT_MS = 1_000


def _busy(exc: sqlean.Error) -> bool:
    """SQLITE_BUSY, or one of its extended codes (_RECOVERY, _SNAPSHOT, _TIMEOUT)."""
    return database.primary_code(exc) == database.SQLITE_BUSY


def _connect(path: Path) -> sqlean.Connection:
    try:
        conn = sqlean.connect(database.read_only_uri(path), uri=True, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    except sqlean.Error as exc:
        raise DatabaseOpenError(path, database.cause(path, str(exc))) from exc
    return conn


def _version(conn: sqlean.Connection, path: Path) -> int | None:
    """The schema version the file holds; None when it has no schema yet."""
    try:
        row = conn.execute(_VERSION).fetchone()
    except sqlean.Error as exc:
        if "no such table" in str(exc):
            return None
        if _busy(exc):
            raise DatabaseBusy(path, BUSY_TIMEOUT_MS / 1000) from exc
        raise DatabaseOpenError(path, database.cause(path, str(exc))) from exc
    return None if row is None else int(row[0])


class SqliteReader:
    """See storage.base.Reader."""

    def __init__(self, conn: sqlean.Connection, path: Path) -> None:
        self._conn = conn
        self._path = path
        self.location = str(path.absolute())

    def close(self) -> None:
        self._conn.close()

    def recent(
        self, *, scope: str | None, types: Sequence[str], now: int, limit: int, window: int
    ) -> list[dict[str, Any]]:
        rows = self._read(_RECENT, (scope, json.dumps(list(types)), now, window, limit))
        found = []
        for row in rows:
            read = dict(zip(_RECENT_COLUMNS, row, strict=True))
            read["tags"] = json.loads(read["tags"])
            read["decay_score"] = ranking.decay(read["type"], read["last_accessed"], now)
            found.append({name: read[name] for name in MEMORY_COLUMNS})
        return found

    def neighbours(
        self, ids: Sequence[int], per_result: int = MAX_EXPANDED_LINKS
    ) -> list[dict[str, Any]]:
        if not ids:
            return []
        return neighbour_edges(self._read(_NEIGHBOURS, (json.dumps(list(ids)), per_result)))

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlean.Error as exc:
            if _busy(exc):
                raise DatabaseBusy(self._path, BUSY_TIMEOUT_MS / 1000) from exc
            raise StorageFault(str(exc)) from exc


def open_reader(location: str | os.PathLike[str] | None = None) -> SqliteReader:
    """See storage.open_reader."""
    path = database.existing_path(location)
    if path.is_dir():
        raise DatabaseOpenError(path, "is a directory")
    head = database.head_revision()
    conn = _connect(path)
    try:
        version = _version(conn, path)
    except DatabaseOpenError:
        conn.close()
        raise
    if version is not None and version > head:
        conn.close()
        raise SchemaTooNew(version, head)
    if version != head:  # migrated (or refused) as any command would, once
        conn.close()
        database.open_database(path, mode=READ).close()
        conn = _connect(path)
    return SqliteReader(conn, path)
