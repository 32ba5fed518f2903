"""A memory's earlier versions, as every engine keeps and reads them, in plain SQL
both read alike: ``memory_history`` holds one row per version that an update (or a store
that duplicated the memory and merged into it) replaced, with who wrote it and when, and
who replaced it and when. Rows go with their memory (ON DELETE CASCADE): forget and the
sweep delete them.

A memory as of T: absent when created after T; else the first version replaced after T,
or, when none was, the memory as it is; absent too when that version had expired by T.
Replacing at T counts as done by T (as_of T shows the new version).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy
from sqlalchemy import bindparam, text

from agent_memory.storage.base import MEMORY_COLUMNS, AsOf
from agent_memory.storage.faults import guarded

UPDATE, DUPLICATE = "update", "duplicate"
# A version's fields as memory_history keeps them, and as a memory's row names them.
VERSION_COLUMNS = ("content", "tags", "scope", "expires_at")
HISTORY_COLUMNS = (
    *VERSION_COLUMNS,
    *("written_by", "written_at", "replaced_at", "replaced_by", "change", "change_source"),
)

_RECORD = text(
    "INSERT INTO memory_history (memory_id, content, tags, scope, expires_at, written_by,"
    " written_at, replaced_at, replaced_by, change, change_source)"
    " SELECT m.id, m.content, m.tags, m.scope, m.expires_at, m.updated_by,"
    " coalesce((SELECT max(h.replaced_at) FROM memory_history AS h WHERE h.memory_id = m.id),"
    " m.created_at), :now, :by, :change, :source FROM memories AS m WHERE m.id = :memory_id"
)
_VERSIONS = text(
    f"SELECT {', '.join(HISTORY_COLUMNS)} FROM memory_history"
    " WHERE memory_id = :memory_id ORDER BY replaced_at, id"
)
_CURRENT = text(f"SELECT {', '.join(MEMORY_COLUMNS)} FROM memories WHERE id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)
_REPLACED_AFTER = text(
    f"SELECT memory_id, {', '.join(VERSION_COLUMNS)}, written_by FROM memory_history"
    " WHERE memory_id IN :ids AND replaced_at > :at ORDER BY memory_id, replaced_at, id"
).bindparams(bindparam("ids", expanding=True))
# The text then of the memories changed since a moment: each one's first version replaced
# after it (the newest memories first).
_CHANGED_AFTER = text(
    "SELECT h.memory_id, h.content, h.tags FROM memory_history AS h"
    " WHERE h.replaced_at > :at AND h.id = (SELECT f.id FROM memory_history AS f"
    " WHERE f.memory_id = h.memory_id AND f.replaced_at > :at ORDER BY f.replaced_at, f.id"
    " LIMIT 1) ORDER BY h.memory_id DESC LIMIT :limit"
)
_SUPERSEDED_AT = text(
    "SELECT to_id, from_id FROM memory_links WHERE kind = 'supersedes' AND created_at <= :at"
    " ORDER BY to_id, from_id"
)
# Those made by a memory of the scope :scope (its scope now, the one a token's view is
# bound by): a view filtered by a scope counts only them; looked up per link, as
# common.SCOPE_SUPERSEDED_SQL.
_SCOPE_SUPERSEDED_AT = text(
    "SELECT l.to_id, l.from_id FROM memory_links AS l"
    " WHERE l.kind = 'supersedes' AND l.created_at <= :at"
    " AND (SELECT m.scope FROM memories AS m WHERE m.id = l.from_id) = :scope"
    " ORDER BY l.to_id, l.from_id"
)
_LINKS_AT = text(
    "SELECT from_id, to_id, kind FROM memory_links"
    " WHERE (from_id = :memory_id OR to_id = :memory_id) AND created_at <= :at"
)
_EXPORT = text(
    f"SELECT memory_id, {', '.join(HISTORY_COLUMNS)} FROM memory_history"
    " ORDER BY memory_id, replaced_at, id"
)
_COUNT = text("SELECT count(*) FROM memory_history")
_EXISTS = text("SELECT id FROM memories WHERE id = :memory_id")
_PURGE = text("DELETE FROM memory_history WHERE memory_id = :memory_id")


def tag_list(tags: Any) -> list[str]:
    """Tags as a row holds them (SQLite: a JSON text; PostgreSQL: a list)."""
    return json.loads(tags) if isinstance(tags, str) else list(tags)


def record(
    conn: sqlalchemy.Connection,
    memory_id: int,
    now: int,
    by: str,
    change: str = UPDATE,
    source: str | None = None,
) -> None:
    """Keep the memory as it stands (nothing when there is none), replaced at ``now`` by
    ``by``; in the caller's write transaction, before it changes the row."""
    params = {"memory_id": memory_id, "now": now, "by": by, "change": change, "source": source}
    conn.execute(_RECORD, params)


def _version(row: Sequence[Any]) -> dict[str, Any]:
    out = dict(zip(HISTORY_COLUMNS, row, strict=True))
    out["tags"] = tag_list(out["tags"])
    return out


def _current(conn: sqlalchemy.Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    found = {}
    for row in conn.execute(_CURRENT, {"ids": list(ids)}):
        memory = dict(zip(MEMORY_COLUMNS, row, strict=True))
        memory["tags"] = tag_list(memory["tags"])
        found[int(memory["id"])] = memory
    return found


def _stood(conn: sqlalchemy.Connection, ids: Sequence[int], at: int) -> dict[int, dict[str, Any]]:
    """Those of ``ids`` that stood at ``at``, as they stood."""
    if not ids:
        return {}
    current = _current(conn, ids)
    earlier: dict[int, dict[str, Any]] = {}
    for memory_id, *values, written_by in conn.execute(
        _REPLACED_AFTER, {"ids": list(current), "at": at}
    ):
        if int(memory_id) not in earlier:
            version = dict(zip(VERSION_COLUMNS, values, strict=True))
            version["tags"] = tag_list(version["tags"])
            earlier[int(memory_id)] = {**version, "updated_by": written_by}
    out = {}
    for memory_id, memory in current.items():
        if memory["created_at"] > at:
            continue
        memory.update(earlier.get(memory_id, {}))
        if memory["expires_at"] is not None and memory["expires_at"] <= at:
            continue
        out[memory_id] = memory
    return out


class HistoryRows:
    """The Store's history methods, for CommonStore (which supplies ``_read``, ``_write``
    and ``_lock_row``)."""

    _read: Any
    _write: Any
    _lock_row: Any

    @guarded
    def history(self, memory_id: int) -> list[dict[str, Any]] | None:
        """The memory's versions, oldest first, the current one last (replaced_at None);
        None when there is no such memory."""
        with self._read() as conn:
            current = _current(conn, [memory_id]).get(memory_id)
            if current is None:
                return None
            versions = [_version(row) for row in conn.execute(_VERSIONS, {"memory_id": memory_id})]
        written_at = versions[-1]["replaced_at"] if versions else current["created_at"]
        now = {name: current[name] for name in VERSION_COLUMNS}
        now.update(written_by=current["updated_by"], written_at=written_at)
        now.update(replaced_at=None, replaced_by=None, change=None, change_source=None)
        return [*versions, now]

    @guarded
    def as_of(
        self, at: int, ids: Sequence[int], changed: int = 0, scope: str | None = None
    ) -> AsOf:
        """The memories among ``ids`` as they stood at ``at``, the text then of up to
        ``changed`` memories changed since, and the supersedes relations made by then (with
        ``scope``, by memories of that scope) (one snapshot)."""
        with self._read() as conn:
            memories = _stood(conn, ids, at)
            more: list[dict[str, Any]] = []
            if changed:
                asked = set(ids)
                found = conn.execute(_CHANGED_AFTER, {"at": at, "limit": changed})
                more = [
                    {"id": int(i), "content": content, "tags": tag_list(tags)}
                    for i, content, tags in found
                    if int(i) not in asked
                ]
            superseded: dict[int, list[int]] = {}
            links = (
                conn.execute(_SUPERSEDED_AT, {"at": at})
                if scope is None
                else conn.execute(_SCOPE_SUPERSEDED_AT, {"at": at, "scope": scope})
            )
            for old, new in links:
                superseded.setdefault(int(old), []).append(int(new))
        return AsOf(memories, more, superseded)

    @guarded
    def purge_history(self, memory_id: int) -> int | None:
        """Delete the memory's earlier versions, the row kept: how many; None when there is
        no such memory (one transaction; an update waiting on the row keeps its version)."""
        with self._write() as conn:
            self._lock_row(conn, memory_id)
            if conn.execute(_EXISTS, {"memory_id": memory_id}).first() is None:
                return None
            return int(conn.execute(_PURGE, {"memory_id": memory_id}).rowcount)

    @guarded
    def links_at(self, memory_id: int, at: int) -> set[tuple[int, int, str]]:
        """The relations touching the memory made by ``at``: (from, to, kind)."""
        with self._read() as conn:
            found = conn.execute(_LINKS_AT, {"memory_id": memory_id, "at": at})
            return {(int(a), int(b), kind) for a, b, kind in found}


def exported(conn: sqlalchemy.Connection) -> Iterator[dict[str, Any]]:
    """Every kept version, with its memory's id, by memory then age (an export's)."""
    for memory_id, *row in conn.execution_options(yield_per=1_000).execute(_EXPORT):
        yield {"memory_id": int(memory_id), **_version(row)}


def count(conn: sqlalchemy.Connection) -> int:
    return int(conn.execute(_COUNT).scalar_one())


def imported(
    conn: sqlalchemy.Connection, versions: Sequence[dict[str, Any]], tags_value: str
) -> int:
    """Insert export records' versions (each with its ``memory_id`` and its tags as JSON
    text, which ``tags_value`` casts as the engine keeps them); how many."""
    if not versions:
        return 0
    names = ("memory_id", *HISTORY_COLUMNS)
    values = ", ".join(tags_value if n == "tags" else f":{n}" for n in names)
    statement = text(f"INSERT INTO memory_history ({', '.join(names)}) VALUES ({values})")
    rows = [{**{n: v[n] for n in names}, "tags": json.dumps(v["tags"])} for v in versions]
    conn.execute(statement, rows)
    return len(versions)
