"""Import and export on a PostgreSQL store: the batch writes an import makes and the
snapshot an export reads (the orchestration is the service's, the same for every store).

An import batch locks the memories table against other writers (SHARE ROW EXCLUSIVE: reads
go on) for its one transaction, which is what SQLite's write lock gave: the duplicate check
sees every committed row and no concurrent store can slip a copy in between, and the
batch's new rows take consecutive ids (drawn from the sequence under that lock, checked).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy

from agent_memory import ranking
from agent_memory.contract.models import Pin, content_hash
from agent_memory.storage import common
from agent_memory.storage.base import EXPORT_MEMORY_COLUMNS
from agent_memory.storage.hygiene import duplicates, history
from agent_memory.storage.postgres import keyword, rows, vectors

_LOCK = "LOCK TABLE memories IN SHARE ROW EXCLUSIVE MODE"
_IDENTITIES = (
    "SELECT id, type, content, scope, tags, expires_at FROM memories WHERE content_hash = ANY(%s)"
)
_MERGE = (
    f"UPDATE memories SET tags = %s::jsonb, expires_at = %s, {', '.join(rows.KEYWORD_SETS)}"
    " WHERE id = %s"
)
_NEW_IDS = "SELECT nextval(pg_get_serial_sequence('memories', 'id')) FROM generate_series(1, %s)"
_PRESENT_LINKS = (
    "SELECT l.from_id, l.to_id, l.kind FROM memory_links AS l"
    " JOIN unnest(%s::bigint[], %s::bigint[], %s::text[]) AS e(a, b, k)"
    " ON l.from_id = e.a AND l.to_id = e.b AND l.kind = e.k"
)
_LINK = (
    "INSERT INTO memory_links (from_id, to_id, kind, created_at) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT DO NOTHING"
)


def import_memories(
    conn: sqlalchemy.Connection, batch: Sequence[dict[str, Any]], now: int
) -> list[tuple[str, int | None]]:
    """Insert a batch inside the caller's write transaction (see Store.import_memories)."""
    out: list[tuple[str, int | None]] = [("expired", None)] * len(batch)
    hashes = {
        i: content_hash(r["content"])
        for i, r in enumerate(batch)
        if r["expires_at"] is None or r["expires_at"] > now
    }
    if not hashes:
        return out
    conn.exec_driver_sql(_LOCK)
    merges = duplicates.Merges(now)
    for row in conn.exec_driver_sql(_IDENTITIES, (list(set(hashes.values())),)).all():
        merges.know(row)
    first: dict[duplicates.Key, int] = {}  # key -> index among the new rows
    placed: list[tuple[int, duplicates.Key, bool]] = []
    new_records: list[dict[str, Any]] = []
    for i in hashes:
        record = batch[i]
        twin = merges.duplicate(record)
        key = duplicates.key(record)
        if twin is not None:
            out[i] = ("duplicate", twin)
        elif key in first:
            duplicates.merge_record(new_records[first[key]], record)
            placed.append((i, key, False))
        else:
            first[key] = len(new_records)
            placed.append((i, key, True))
            new_records.append(dict(record))
    merges.keep_versions(conn)
    _merge_into_stored(conn, merges)
    ids: list[int] = []
    if new_records:
        ids = [int(i) for i in conn.exec_driver_sql(_NEW_IDS, (len(new_records),)).scalars()]
        if ids != list(range(ids[0], ids[0] + len(ids))):  # never guess
            raise sqlalchemy.exc.InvalidRequestError(f"import: ids {ids[0]}.. not consecutive")
        values = []
        for memory_id, record in zip(ids, new_records, strict=True):
            found = keyword.document(record["content"], record["tags"])
            values.append(
                (
                    memory_id,
                    *rows.field_values(common.imported(record, now)),
                    ranking.base_weight(record["type"]),
                    0,
                    content_hash(record["content"]),
                    *found,
                )
            )
        with conn.connection.driver_connection.cursor() as cursor:
            cursor.executemany(rows.INSERT_WITH_ID, values)
    for i, key, inserted in placed:
        out[i] = ("imported" if inserted else "duplicate", ids[first[key]])
    return out


def _merge_into_stored(conn: sqlalchemy.Connection, merges: duplicates.Merges) -> None:
    """The tags and lifetimes stored memories took from the batch's duplicates of them."""
    changed = [
        (
            json.dumps(t.tags, ensure_ascii=False),
            t.expires_at,
            *keyword.document(t.content, t.tags),
            t.id,
        )
        for t in merges.changed.values()
    ]
    if changed:
        with conn.connection.driver_connection.cursor() as cursor:
            cursor.executemany(_MERGE, changed)


def import_links(
    conn: sqlalchemy.Connection, edges: Sequence[tuple[int, int, str, int]]
) -> list[tuple[int, int, str]]:
    """Insert edges inside the caller's write transaction; the new ones, each once."""
    if not edges:
        return []
    keys = list(dict.fromkeys(edge[:3] for edge in edges))
    present = {
        (int(a), int(b), k)
        for a, b, k in conn.exec_driver_sql(
            _PRESENT_LINKS, ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys])
        )
    }
    new = [key for key in keys if key not in present]
    with conn.connection.driver_connection.cursor() as cursor:
        cursor.executemany(_LINK, list(edges))
    return new


class Snapshot:
    """The database as of one read transaction, streamed row by row (memory stays flat)."""

    def __init__(self, conn: sqlalchemy.Connection) -> None:
        self._conn = conn

    def counts(self) -> tuple[int, int]:
        found = self._conn.exec_driver_sql(
            "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM memory_links)"
        ).one()
        return int(found[0]), int(found[1])

    def pin(self) -> Pin | None:
        return vectors.stored_pin(self._conn)

    def memories(self) -> Iterator[dict[str, Any]]:
        found = self._conn.execution_options(yield_per=rows.EXPORT_BATCH_ROWS).exec_driver_sql(
            f"SELECT {', '.join(EXPORT_MEMORY_COLUMNS)} FROM memories ORDER BY id"
        )
        for row in found:
            yield dict(zip(EXPORT_MEMORY_COLUMNS, row, strict=True))

    def links(self) -> Iterator[tuple[int, int, str, int]]:
        found = self._conn.execution_options(yield_per=rows.EXPORT_BATCH_ROWS).exec_driver_sql(
            "SELECT from_id, to_id, kind, created_at FROM memory_links"
            " ORDER BY from_id, to_id, kind"
        )
        for row in found:
            yield (int(row[0]), int(row[1]), row[2], int(row[3]))

    def versions(self) -> Iterator[dict[str, Any]]:
        """Every kept earlier version (storage.history), by memory then age."""
        return history.exported(self._conn)

    def version_count(self) -> int:
        return history.count(self._conn)
