"""What ``agent-memory tidy`` (service/hygiene/tidy.py) reads and writes, the same on every engine:
every memory of a scope with its uses and its revision, every relation with the expiry of
both ends, and the stored vectors, from one snapshot; and the merge of one cluster into the
member it keeps, in one write transaction that first checks each member's revision again.
Mixed into CommonStore, whose connections and vectors module it uses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import sqlalchemy
from sqlalchemy import text

from agent_memory.contract.models import Pin
from agent_memory.storage.base import ChangedMemory, MissingMemory
from agent_memory.storage.faults import guarded
from agent_memory.storage.hygiene import history
from agent_memory.storage.hygiene.duplicates import merged_tags, tag_list

_COLUMNS = (
    "id, type, scope, content, tags, created_at, last_accessed, access_count, expires_at,"
    " updated_by"
)
_MEMORIES = text(f"SELECT {_COLUMNS} FROM memories ORDER BY id")
_SCOPE_MEMORIES = text(f"SELECT {_COLUMNS} FROM memories WHERE scope = :scope ORDER BY id")
_LINKS = text(
    "SELECT l.from_id, l.to_id, l.kind, f.expires_at, t.expires_at FROM memory_links AS l"
    " JOIN memories AS f ON f.id = l.from_id JOIN memories AS t ON t.id = l.to_id"
    " ORDER BY l.from_id, l.to_id, l.kind"
)
_MEMBERS = (
    "SELECT id, type, scope, content, tags, expires_at, updated_by FROM memories WHERE id IN :ids"
)
# How many earlier versions each memory keeps: part of its revision.
_VERSIONS = text("SELECT memory_id, count(*) FROM memory_history GROUP BY memory_id")
_MEMBER_VERSIONS = text(
    "SELECT memory_id, count(*) FROM memory_history WHERE memory_id IN :ids GROUP BY memory_id"
).bindparams(sqlalchemy.bindparam("ids", expanding=True))
# Whether the kept memory is superseded by now, as the report counted it: by any memory, or
# for a report of one scope by a memory of that scope, as its search counts.
_SUPERSEDED_KEEP = text(
    "SELECT count(*) FROM memory_links AS l JOIN memories AS f ON f.id = l.from_id"
    " WHERE l.kind = 'supersedes' AND l.to_id = :keep"
    " AND (CAST(:scope AS TEXT) IS NULL OR f.scope = :scope)"
)
_SUPERSEDE = text(
    "INSERT INTO memory_links (from_id, to_id, kind, created_at)"
    " VALUES (:a, :b, 'supersedes', :now) ON CONFLICT DO NOTHING"
)


def revision(memory: Mapping[str, Any], versions: int) -> str:
    """A memory as a tidy report shows it, in a short hash: its type, content, tags, scope,
    expiry, last writer and how many earlier versions it keeps. The merge computes it again
    under its lock, so a memory changed after the report (an update, a duplicate store, a
    move to another scope) is never merged away unseen; a use does not change it."""
    shown = [memory[name] for name in ("type", "content", "tags", "scope", "expires_at")]
    payload = json.dumps([*shown, memory["updated_by"], versions])  # ASCII: any text encodes
    return hashlib.blake2b(payload.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True)
class TidyRead:
    """One snapshot for tidy: the memories (of the scope asked, expired ones too), each a
    dict of _COLUMNS with its tags as a list and its ``revision``; the relations as
    (from_id, to_id, kind, from's expires_at, to's expires_at); the pin; and, when asked
    and pinned, each memory's vector (float32 bytes) by id."""

    memories: list[dict[str, Any]]
    links: list[tuple[int, int, str, int | None, int | None]]
    pin: Pin | None
    vectors: dict[int, bytes]


class TidyRows:
    """Mixed into CommonStore (``_read``, ``_write``, ``_update_row``, ``VECTORS``)."""

    # What a write appends to the read of a cluster's rows to lock them until it ends
    # (PostgreSQL's writers run side by side; SQLite's write is the only one).
    LOCK_ROWS: ClassVar[str] = ""
    VECTORS: Any
    ENGINE_ERRORS: ClassVar[tuple[type[BaseException], ...]]

    def _read(self) -> Any:
        raise NotImplementedError

    def _write(self) -> Any:
        raise NotImplementedError

    def _update_row(self, *args: Any) -> Any:
        raise NotImplementedError

    @guarded
    def tidy_read(self, scope: str | None, vectors: bool) -> TidyRead:
        """Every memory (of ``scope``, None: of every scope), every relation, the pin and,
        with ``vectors``, the stored vectors of those memories: one snapshot."""
        with self._read() as conn:
            if scope is None:
                found = conn.execute(_MEMORIES)
            else:
                found = conn.execute(_SCOPE_MEMORIES, {"scope": scope})
            memories = [dict(row._mapping) for row in found]
            versions = {int(i): int(n) for i, n in conn.execute(_VERSIONS)}
            for memory in memories:
                memory["tags"] = tag_list(memory["tags"])
                memory["revision"] = revision(memory, versions.get(memory["id"], 0))
            links = [(int(a), int(b), k, ea, eb) for a, b, k, ea, eb in conn.execute(_LINKS)]
            pin = self.VECTORS.stored_pin(conn)
            stored: dict[int, bytes] = {}
            if vectors and pin is not None:
                stored = dict(self.VECTORS.every(conn, scope))
        return TidyRead(memories, links, pin, stored)

    @guarded
    def merge(
        self,
        keep: int,
        others: Sequence[int],
        revisions: Mapping[int, str],
        now: int,
        actor: str,
        max_tags: int,
        scope: str | None = None,
    ) -> list[str] | None:
        """One transaction: ``keep`` supersedes each of ``others`` and takes their tags it
        lacks (after its own, ``others`` in their order, at most ``max_tags``); the merge
        counts as a change of ``keep`` (updated_by, a use, as an update). Writing nothing:
        MissingMemory when one of them is gone or expired, ChangedMemory when one's revision
        is no longer the one in ``revisions`` (id: the report's), None when ``keep`` is
        superseded itself by now. The tags ``keep`` has after."""
        ids = [keep, *others]
        with self._write() as conn:
            statement = text(_MEMBERS + self.LOCK_ROWS).bindparams(
                sqlalchemy.bindparam("ids", expanding=True)
            )
            rows = {}
            for row in conn.execute(statement, {"ids": ids}):
                rows[int(row.id)] = {**row._mapping, "tags": tag_list(row.tags)}
            versions = {int(i): int(n) for i, n in conn.execute(_MEMBER_VERSIONS, {"ids": ids})}
            for memory_id in ids:
                expiry = rows[memory_id]["expires_at"] if memory_id in rows else now
                if expiry is not None and expiry <= now:
                    raise MissingMemory(memory_id)
            for memory_id in ids:
                if revision(rows[memory_id], versions.get(memory_id, 0)) != revisions[memory_id]:
                    raise ChangedMemory(memory_id)
            if conn.execute(_SUPERSEDED_KEEP, {"keep": keep, "scope": scope}).scalar_one():
                return None
            kept = rows[keep]["tags"]
            tags = kept
            for other in others:
                tags = merged_tags(tags, rows[other]["tags"])
            tags = tags[:max_tags] if len(kept) <= max_tags else kept
            for old in others:
                conn.execute(_SUPERSEDE, {"a": keep, "b": old, "now": now})
            changes: dict[str, Any] = {"updated_by": actor}
            if tags != kept:
                changes["tags"] = tags
                history.record(conn, keep, now, actor)  # the tags before, as an update keeps them
            self._update_row(conn, keep, changes, now, False)
        return tags
