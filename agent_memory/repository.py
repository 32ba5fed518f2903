"""All of agent-memory's SQL, and nothing else.

Plain rows go through the SQLAlchemy Core tables of :mod:`agent_memory.schema`; the FTS5
index needs ``text()``. Every write is one short ``BEGIN IMMEDIATE`` transaction (the
serialized writer shared by every process on the file); reads run in a deferred ``BEGIN``
so that a multi-statement read sees one snapshot. Arguments arrive already validated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy
from sqlalchemy import delete, func, insert, literal, select, update
from sqlalchemy.engine import Engine

from agent_memory import decay
from agent_memory.schema import PINNED_TYPES, memories

# Rows per transaction when the sweep rewrites decay scores, so that no single
# transaction holds the write lock for long on a large database.
DECAY_BATCH_ROWS = 5_000
# SQLite's generic SQLITE_ERROR: what a MATCH expression FTS5 cannot parse raises
# (busy, I/O, full and corrupt databases have codes of their own).
_SQLITE_ERROR = 1

MEMORY_COLUMNS = (
    "id",
    "content",
    "type",
    "tags",
    "source",
    "scope",
    "decay_score",
    "created_at",
    "last_accessed",
    "expires_at",
)
_SELECT_MEMORY = [memories.c[name] for name in MEMORY_COLUMNS]
_FTS = sqlalchemy.table("memories_fts", sqlalchemy.column("rowid"))
_BM25 = sqlalchemy.literal_column("bm25(memories_fts)")
_LN2 = math.log(2)


class FtsQueryError(Exception):
    """FTS5 could not parse the MATCH expression"""

    def __init__(self, error: sqlalchemy.exc.OperationalError) -> None:
        super().__init__(str(error.orig))
        self.error = error


def _decay(now: int) -> sqlalchemy.ColumnElement[float]:
    """The decay formula of :mod:`agent_memory.decay`, evaluated by SQLite per row."""
    half_life = sqlalchemy.case(
        (memories.c.type.in_(sorted(PINNED_TYPES)), float(decay.PINNED_HALF_LIFE_SECS)),
        else_=float(decay.HALF_LIFE_SECS),
    )
    age = func.max(literal(now) - memories.c.last_accessed, literal(0))
    return func.exp(literal(-_LN2) * age / half_life)


def _memory(row: sqlalchemy.Row[Any], decay_score: float | None = None) -> dict[str, Any]:
    out = {name: row._mapping[name] for name in MEMORY_COLUMNS}
    out["tags"] = json.loads(out["tags"])
    if decay_score is not None:
        out["decay_score"] = decay_score
    return out


def _filters(memory_type: str | None, tag: str | None, scope: str | None) -> list[Any]:
    clauses: list[Any] = []
    if memory_type is not None:
        clauses.append(memories.c.type == memory_type)
    if scope is not None:
        clauses.append(memories.c.scope == scope)
    if tag is not None:
        each = func.json_each(memories.c.tags).table_valued("value")
        clauses.append(select(1).select_from(each).where(each.c.value == tag).exists())
    return clauses


class Repository:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def _write(self) -> Iterator[sqlalchemy.Connection]:
        with self.engine.connect().execution_options(sqlite_write=True) as conn, conn.begin():
            yield conn

    @contextmanager
    def _read(self) -> Iterator[sqlalchemy.Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    # -- memories -------------------------------------------------------------------------

    def insert_memory(
        self,
        *,
        memory_type: str,
        content: str,
        tags: Sequence[str],
        source: str | None,
        scope: str | None,
        now: int,
        expires_at: int | None,
    ) -> int:
        stmt = insert(memories).values(
            type=memory_type,
            content=content,
            tags=json.dumps(list(tags), ensure_ascii=False),
            source=source,
            scope=scope,
            base_weight=decay.base_weight(memory_type),
            decay_score=1.0,
            access_count=0,
            created_at=now,
            last_accessed=now,
            expires_at=expires_at,
        )
        with self._write() as conn:
            return int(conn.execute(stmt).inserted_primary_key[0])

    def get_memory(self, memory_id: int) -> dict[str, Any] | None:
        with self._read() as conn:
            row = conn.execute(
                select(*_SELECT_MEMORY).where(memories.c.id == memory_id)
            ).one_or_none()
        return None if row is None else _memory(row)

    def list_memories(
        self,
        *,
        memory_type: str | None = None,
        tag: str | None = None,
        scope: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        stmt = (
            select(*_SELECT_MEMORY)
            .where(*_filters(memory_type, tag, scope))
            .order_by(memories.c.created_at.desc(), memories.c.id.desc())
        )
        if limit is not None:
            stmt = stmt.limit(limit)
        with self._read() as conn:
            return [_memory(row) for row in conn.execute(stmt)]

    def keyword_search(
        self,
        match: str,
        *,
        now: int,
        limit: int,
        memory_type: str | None = None,
        tag: str | None = None,
        scope: str | None = None,
    ) -> list[dict[str, Any]]:
        """Rank by ``-bm25 + decay`` (descending, ties by id); FtsQueryError on bad syntax."""
        current = _decay(now)
        stmt = (
            select(*_SELECT_MEMORY, current.label("current_decay"))
            .select_from(_FTS.join(memories, memories.c.id == _FTS.c.rowid))
            .where(sqlalchemy.literal_column("memories_fts").op("MATCH")(match))
            .where(*_filters(memory_type, tag, scope))
            .order_by((current - _BM25).desc(), memories.c.id.asc())
            .limit(limit)
        )
        with self._read() as conn:
            try:
                rows = conn.execute(stmt).all()
            except sqlalchemy.exc.OperationalError as exc:
                if getattr(exc.orig, "sqlite_errorcode", None) == _SQLITE_ERROR:
                    raise FtsQueryError(exc) from exc
                raise
        return [_memory(row, row.current_decay) for row in rows]

    def bump(self, ids: Sequence[int], now: int) -> None:
        """Mark rows as just used: the recency bump of returned search results."""
        if not ids:
            return
        stmt = (
            update(memories)
            .where(memories.c.id.in_(list(ids)))
            .values(
                last_accessed=now,
                access_count=memories.c.access_count + 1,
                decay_score=1.0,
            )
        )
        with self._write() as conn:
            conn.execute(stmt)

    def update_memory(
        self, memory_id: int, changes: dict[str, Any], now: int
    ) -> dict[str, Any] | None:
        """Apply ``changes`` (column -> value) and count it as a use; None if no such row."""
        values = dict(changes)
        if "tags" in values:
            values["tags"] = json.dumps(list(values["tags"]), ensure_ascii=False)
        stmt = (
            update(memories)
            .where(memories.c.id == memory_id)
            .values(
                **values,
                last_accessed=now,
                access_count=memories.c.access_count + 1,
                decay_score=1.0,
            )
            .returning(*_SELECT_MEMORY)
        )
        with self._write() as conn:
            row = conn.execute(stmt).one_or_none()
        return None if row is None else _memory(row)

    def delete_memory(self, memory_id: int) -> bool:
        with self._write() as conn:
            return conn.execute(delete(memories).where(memories.c.id == memory_id)).rowcount > 0

    # -- lifecycle ------------------------------------------------------------------------

    def delete_expired(self, now: int) -> int:
        """Remove every row whose expiry has come (``expires_at <= now``)."""
        stmt = delete(memories).where(
            memories.c.expires_at.is_not(None), memories.c.expires_at <= now
        )
        with self._write() as conn:
            return conn.execute(stmt).rowcount

    def materialize_decay(self, now: int) -> int:
        """Rewrite every stored decay_score, a batch of rows per short transaction."""
        with self._read() as conn:
            top = conn.execute(select(func.max(memories.c.id))).scalar() or 0
        done = 0
        for after in range(0, top, DECAY_BATCH_ROWS):
            stmt = (
                update(memories)
                .where(memories.c.id > after, memories.c.id <= after + DECAY_BATCH_ROWS)
                .values(decay_score=_decay(now))
            )
            with self._write() as conn:
                done += conn.execute(stmt).rowcount
        return done

    # -- health -----------------------------------------------------------------------

    def count_memories(self) -> int:
        with self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(memories)).scalar_one())
