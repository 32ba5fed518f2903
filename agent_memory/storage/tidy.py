"""What ``agent-memory tidy`` (service/tidy.py) reads and writes, the same on every engine:
every memory of a scope with its uses, every relation with the expiry of both ends, and the
stored vectors, from one snapshot; and the merge of one cluster into its newest member, in
one write transaction. Mixed into CommonStore, whose connections and vectors module it uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import sqlalchemy
from sqlalchemy import text

from agent_memory.contract.models import Pin
from agent_memory.storage import history
from agent_memory.storage.base import MissingMemory
from agent_memory.storage.duplicates import merged_tags, tag_list
from agent_memory.storage.faults import guarded

_COLUMNS = "id, type, scope, content, tags, created_at, last_accessed, access_count, expires_at"
_MEMORIES = text(f"SELECT {_COLUMNS} FROM memories ORDER BY id")
_SCOPE_MEMORIES = text(f"SELECT {_COLUMNS} FROM memories WHERE scope = :scope ORDER BY id")
_LINKS = text(
    "SELECT l.from_id, l.to_id, l.kind, f.expires_at, t.expires_at FROM memory_links AS l"
    " JOIN memories AS f ON f.id = l.from_id JOIN memories AS t ON t.id = l.to_id"
    " ORDER BY l.from_id, l.to_id, l.kind"
)
_MEMBERS = "SELECT id, tags, expires_at FROM memories WHERE id IN :ids"
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


@dataclass(frozen=True)
class TidyRead:
    """One snapshot for tidy: the memories (of the scope asked, expired ones too), each a
    dict of _COLUMNS with its tags as a list; the relations as (from_id, to_id, kind,
    from's expires_at, to's expires_at); the pin; and, when asked and pinned, each
    memory's vector (float32 bytes) by id."""

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
            for memory in memories:
                memory["tags"] = tag_list(memory["tags"])
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
        now: int,
        actor: str,
        max_tags: int,
        scope: str | None = None,
    ) -> list[str] | None:
        """One transaction: ``keep`` supersedes each of ``others`` and takes their tags it
        lacks (after its own, ``others`` in their order, at most ``max_tags``); the merge
        counts as a change of ``keep`` (updated_by, a use, as an update). MissingMemory,
        writing nothing, when one of them is gone or expired; None, writing nothing, when
        ``keep`` is superseded itself by now. The tags ``keep`` has after."""
        ids = [keep, *others]
        with self._write() as conn:
            statement = text(_MEMBERS + self.LOCK_ROWS).bindparams(
                sqlalchemy.bindparam("ids", expanding=True)
            )
            rows = {int(i): (tag_list(t), e) for i, t, e in conn.execute(statement, {"ids": ids})}
            for memory_id in ids:
                expiry = rows[memory_id][1] if memory_id in rows else now
                if expiry is not None and expiry <= now:
                    raise MissingMemory(memory_id)
            if conn.execute(_SUPERSEDED_KEEP, {"keep": keep, "scope": scope}).scalar_one():
                return None
            tags = rows[keep][0]
            for other in others:
                tags = merged_tags(tags, rows[other][0])
            tags = tags[:max_tags] if len(rows[keep][0]) <= max_tags else rows[keep][0]
            for old in others:
                conn.execute(_SUPERSEDE, {"a": keep, "b": old, "now": now})
            changes: dict[str, Any] = {"updated_by": actor}
            if tags != rows[keep][0]:
                changes["tags"] = tags
                history.record(conn, keep, now, actor)  # the tags before, as an update keeps them
            self._update_row(conn, keep, changes, now, False)
        return tags
