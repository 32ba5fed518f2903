"""Import and export on a SQLite store: the batch writes an import makes, and the snapshot an
export reads. The orchestration (batches, counts, taking a failed import out again) is the
service's, the same for every store; these are the statements it runs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy
from sqlalchemy import func, select

from agent_memory import ranking
from agent_memory.contract import fields
from agent_memory.contract.models import Pin, content_hash
from agent_memory.query import indexed_tags, indexed_text, tag_text
from agent_memory.storage import common
from agent_memory.storage.base import EXPORT_MEMORY_COLUMNS
from agent_memory.storage.hygiene import duplicates, history
from agent_memory.storage.sqlite import vectors
from agent_memory.storage.sqlite.schema import memories, memory_links

# Rows per INSERT statement of an import (a value per import column each: the statement
# must stay under SQLite's 32,766 bound parameters); see _insert_rows.
IMPORT_ROWS_PER_STATEMENT = 1_000
# After an import, the FTS5 index is merged down by this many pages per transaction.
MERGE_STEP_PAGES = 64
# Rows an export reads from the cursor at a time (memory stays flat).
EXPORT_BATCH_ROWS = 1_000
# Export: every row (expired ones too) in key order, every edge in (from, to, kind) order.
# content_hash 0: not known. A process still running code older than revision 0005 inserts
# rows without it, and a trigger resets it when such a process rewrites a row's content.
UNKNOWN_HASH = 0

# Rows whose content hash is one of a batch's, given as one JSON array: an expanding IN of
# 2,000 bound values cost more to compile than to run. The caller compares exactly.
_IDENTITIES = (
    "SELECT id, type, content, scope, tags, expires_at, content_hash FROM memories"
    " WHERE content_hash IN (SELECT value FROM json_each(?))"
)
_MERGE = "UPDATE memories SET tags = ?, keyword_tags = ?, expires_at = ? WHERE id = ?"
_SET_HASH = "UPDATE memories SET content_hash = ? WHERE id = ?"
# Under the write lock, with AUTOINCREMENT, an import batch's rows take consecutive ids
# after the sequence's current value (checked after the insert).
_SEQUENCE = "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0)"
_IMPORT_COLUMNS = (
    *fields.column_names(),
    "base_weight",
    "embedding_status",
    "content_hash",
    "keyword_text",
    "keyword_tags",
)
# Raw SQL, so that an import passes all its links in one executemany: through SQLAlchemy,
# each edge would be a statement of its own.
LINK = (
    "INSERT INTO memory_links (from_id, to_id, kind, created_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT DO NOTHING"  # a repeat keeps the relation's original created_at
)
# Which of an import batch's edges, given as one JSON array of [from, to, kind], are there
# already (json_each first: one primary-key probe per edge).
_PRESENT_LINKS = (
    "SELECT l.from_id, l.to_id, l.kind FROM json_each(?) AS e CROSS JOIN memory_links AS l"
    " ON l.from_id = e.value ->> 0 AND l.to_id = e.value ->> 1 AND l.kind = e.value ->> 2"
)
# Taking a failed import out again: its rows by id range (their links go with them, ON
# DELETE CASCADE), and the edges it added between rows that were there before it.
_DELETE_ID_RANGE = "DELETE FROM memories WHERE id BETWEEN ? AND ?"
_DELETE_EDGE = "DELETE FROM memory_links WHERE from_id = ? AND to_id = ? AND kind = ?"
_MERGE_STEP = "INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', ?)"
_COUNT_MEMORIES = select(func.count()).select_from(memories)
_COUNT_LINKS = select(func.count()).select_from(memory_links)


def _exported(column: sqlalchemy.Column[Any]) -> sqlalchemy.ColumnElement[Any]:
    """An integer column as an integer, whatever the row holds: SQLite's CAST clamps a REAL
    to the 64-bit range (an access_count an older version overflowed), and the format's
    integers must read back as integers."""
    if isinstance(column.type, sqlalchemy.Integer):
        return sqlalchemy.cast(column, sqlalchemy.Integer)
    return column


_EXPORT_MEMORIES = select(
    *(_exported(memories.c[name]) for name in EXPORT_MEMORY_COLUMNS)
).order_by(memories.c.id)
_EXPORT_LINKS = select(
    *(_exported(memory_links.c[name]) for name in ("from_id", "to_id", "kind", "created_at"))
).order_by(memory_links.c.from_id, memory_links.c.to_id, memory_links.c.kind)


@functools.lru_cache(maxsize=8)
def _insert_rows(n: int) -> str:
    """One INSERT of ``n`` rows: FTS5 flushes its pending terms to a new segment at every
    statement's savepoint, so a row per statement wrote one segment per row."""
    row = f"({', '.join('?' for _ in _IMPORT_COLUMNS)})"
    return f"INSERT INTO memories ({', '.join(_IMPORT_COLUMNS)}) VALUES {', '.join([row] * n)}"


def import_memories(
    conn: sqlalchemy.Connection, batch: Sequence[dict[str, Any]], hashes: dict[int, int], now: int
) -> list[tuple[str, int | None]]:
    """Insert a batch inside the caller's write transaction (see SqliteStore.import_memories).

    ``hashes`` maps the position of each live record (not expired) to its content hash.
    """
    out: list[tuple[str, int | None]] = [("expired", None)] * len(batch)
    merges = duplicates.Merges(now)
    if hashes:
        keys = json.dumps(list({UNKNOWN_HASH, *hashes.values()}))
        found = conn.exec_driver_sql(_IDENTITIES, (keys,)).all()
        for row in found:
            merges.know(row[:6])
        unknown = [(content_hash(r[2]), r[0]) for r in found if r[6] == UNKNOWN_HASH]
        if unknown:  # compared above all the same; hashed now, once
            conn.connection.driver_connection.executemany(_SET_HASH, unknown)
    new_records: list[dict[str, Any]] = []
    new_hashes: list[int] = []
    first: dict[duplicates.Key, int] = {}  # key -> index in new_records
    placed: list[tuple[int, duplicates.Key, bool]] = []
    for i in hashes:
        record = batch[i]
        twin = merges.duplicate(record)
        if twin is not None:
            out[i] = ("duplicate", twin)
            continue
        key = duplicates.key(record)
        if key in first:
            duplicates.merge_record(new_records[first[key]], record)
            placed.append((i, key, False))
            continue
        first[key] = len(new_records)
        placed.append((i, key, True))
        new_records.append(dict(record))
        new_hashes.append(hashes[i])
    merges.keep_versions(conn)
    _merge_into_stored(conn, merges)
    new_rows = [_import_row(r, h, now) for r, h in zip(new_records, new_hashes, strict=True)]
    ids: list[int] = []
    if new_rows:
        base = conn.exec_driver_sql(_SEQUENCE).scalar_one()
        for start in range(0, len(new_rows), IMPORT_ROWS_PER_STATEMENT):
            chunk = new_rows[start : start + IMPORT_ROWS_PER_STATEMENT]
            flat = tuple(value for row in chunk for value in row)
            conn.exec_driver_sql(_insert_rows(len(chunk)), flat)
        top = conn.exec_driver_sql(_SEQUENCE).scalar_one()
        if top != base + len(new_rows):  # cannot happen under the write lock; never guess
            raise sqlalchemy.exc.InvalidRequestError(
                f"import: ids {base}..{top} are not {len(new_rows)} consecutive ids"
            )
        ids = list(range(base + 1, top + 1))
    for i, key, inserted in placed:
        out[i] = ("imported" if inserted else "duplicate", ids[first[key]])
    return out


def _import_row(record: dict[str, Any], hashed: int, now: int) -> tuple[Any, ...]:
    row = common.imported(record, now)
    row["tags"] = tag_text(record["tags"])
    return (
        *row.values(),
        ranking.base_weight(record["type"]),
        0,
        hashed,
        indexed_text(record["content"]),
        indexed_tags(record["tags"]),
    )


def _merge_into_stored(conn: sqlalchemy.Connection, merges: duplicates.Merges) -> None:
    """The tags and lifetimes stored memories took from the batch's duplicates of them."""
    changed = [
        (tag_text(t.tags), indexed_tags(t.tags), t.expires_at, t.id)
        for t in merges.changed.values()
    ]
    if changed:
        conn.connection.driver_connection.executemany(_MERGE, changed)


def import_links(
    conn: sqlalchemy.Connection, edges: Sequence[tuple[int, int, str, int]]
) -> list[tuple[int, int, str]]:
    """Insert edges inside the caller's write transaction; the new ones, each once."""
    driver = conn.connection.driver_connection
    keys = json.dumps([edge[:3] for edge in edges])
    present = set(driver.execute(_PRESENT_LINKS, (keys,)).fetchall())
    added = driver.executemany(LINK, edges).rowcount
    new = list(dict.fromkeys(edge[:3] for edge in edges if edge[:3] not in present))
    if len(new) != added:  # cannot happen under the write lock; never guess
        raise sqlalchemy.exc.InvalidRequestError(
            f"import: {added} links inserted, {len(new)} expected"
        )
    return new


def remove_imported(
    conn: sqlalchemy.Connection,
    ranges: Sequence[tuple[int, int]],
    edges: Sequence[tuple[int, int, str]],
) -> int:
    driver = conn.connection.driver_connection
    driver.executemany(_DELETE_EDGE, edges)
    return driver.executemany(_DELETE_ID_RANGE, ranges).rowcount


def merge_step(conn: sqlalchemy.Connection, every_segment: bool = True) -> bool:
    """One step of merging the FTS5 index's segments, MERGE_STEP_PAGES pages of work; True
    when there was nothing left.

    A negative 'merge' merges all segments into one (after an import); a positive one only
    the levels holding at least FTS5's 'usermerge' segments (the sweep). A step that
    changes (almost) nothing is FTS5's own "no work" sign.
    """
    driver = conn.connection.driver_connection
    before = driver.total_changes
    pages = -MERGE_STEP_PAGES if every_segment else MERGE_STEP_PAGES
    driver.execute(_MERGE_STEP, (pages,))
    return driver.total_changes - before < 2


class Snapshot:
    """The database as of one read transaction, streamed row by row (memory stays flat)."""

    def __init__(self, conn: sqlalchemy.Connection) -> None:
        self._conn = conn

    def counts(self) -> tuple[int, int]:
        """(memories, links)."""
        memories_count = self._conn.execute(_COUNT_MEMORIES).scalar_one()
        return int(memories_count), int(self._conn.execute(_COUNT_LINKS).scalar_one())

    def pin(self) -> Pin | None:
        return vectors.stored_pin(self._conn)

    def memories(self) -> Iterator[dict[str, Any]]:
        found = self._conn.execution_options(yield_per=EXPORT_BATCH_ROWS).execute(_EXPORT_MEMORIES)
        for row in found:
            out = dict(zip(EXPORT_MEMORY_COLUMNS, row, strict=True))
            out["tags"] = json.loads(out["tags"])
            yield out

    def links(self) -> Iterator[tuple[int, int, str, int]]:
        found = self._conn.execution_options(yield_per=EXPORT_BATCH_ROWS).execute(_EXPORT_LINKS)
        for row in found:
            yield tuple(row)  # type: ignore[misc]

    def versions(self) -> Iterator[dict[str, Any]]:
        """Every kept earlier version (storage.history), by memory then age."""
        return history.exported(self._conn)

    def version_count(self) -> int:
        return history.count(self._conn)
