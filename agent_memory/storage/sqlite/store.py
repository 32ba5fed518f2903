"""The SQLite store: every operation the service needs, each one transaction or one snapshot.

Plain rows go through the SQLAlchemy Core tables of :mod:`.schema`; FTS5 and sqlite-vec are
raw SQL in :mod:`.keyword` and :mod:`.vectors`; imports and exports in :mod:`.portable`.
Arguments arrive already validated. Whatever the engine raises leaves as StorageFault (with
the engine's text as detail, for the log), and a read past its deadline as SearchTimedOut.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import sqlalchemy
import sqlalchemy.dialects.sqlite
import sqlean
from sqlalchemy import (
    Connection,
    bindparam,
    delete,
    func,
    insert,
    literal_column,
    select,
    text,
    update,
)

from agent_memory import ranking
from agent_memory.contract.models import Embedding, Filters, WordCounts, content_hash
from agent_memory.contract.vocabulary import SQLITE_INT_MAX
from agent_memory.query import ParsedQuery, indexed_tags, indexed_text, tag_text
from agent_memory.storage import common, faults, neighbours
from agent_memory.storage.base import Finding, NewMemory
from agent_memory.storage.common import (
    ALL_SUPERSEDED_SQL,
    SCOPE_SUPERSEDED_SQL,
    CommonStore,
    Leg,
    Legs,
)
from agent_memory.storage.hygiene.near import NearPlan
from agent_memory.storage.sqlite import near as near_rows
from agent_memory.storage.sqlite import portable, rows, vectors
from agent_memory.storage.sqlite.connections import Connections
from agent_memory.storage.sqlite.database import Database
from agent_memory.storage.sqlite.doctor import Doctor
from agent_memory.storage.sqlite.keyword import KeywordIndex, driver
from agent_memory.storage.sqlite.rows import SELECT_MEMORY
from agent_memory.storage.sqlite.schema import memories

# A search's candidates' tags, parsed once per distinct JSON text (most memories share a
# few sets of tags).
TAGS_CACHE_ENTRIES = 4_096
# The sweep rewrites decay scores and deletes expired rows in batches, one transaction
# each, sized so that each holds the write lock for about SWEEP_HOLD_TARGET_SECS: the
# next batch's size is scaled by how long the last one took (from SWEEP_FIRST_BATCH_ROWS,
# at most doubling, within 1..SWEEP_MAX_BATCH_ROWS). A store from another process then
# waits for one batch at most.
SWEEP_FIRST_BATCH_ROWS = 16
SWEEP_MAX_BATCH_ROWS = 50_000
# What overshoots the target is a batch's commit, which writes the batch's pages: a longer
# target lets fewer of another process's stores through, a shorter one does not shorten the
# commit.
SWEEP_HOLD_TARGET_SECS = 0.012
# The sweep merges a level of the FTS5 index once it holds this many segments (see
# _merge_index_step); FTS5's own setting, kept in its config table.
INDEX_USERMERGE = 2
_USERMERGE_READ = "SELECT v FROM memories_fts_config WHERE k = 'usermerge'"
_USERMERGE_WRITE = "INSERT INTO memories_fts (memories_fts, rank) VALUES ('usermerge', ?)"

# A use of a row: access_count + 1, saturating at SQLite's largest integer (SQLite turns an
# overflowing sum into a REAL, which an export would then write as 9.223372036854776e+18).
# min() also brings back to that integer a REAL an older version left there.
_USED_COUNT = func.min(memories.c.access_count, literal_column(str(SQLITE_INT_MAX - 1))) + 1
# Statements are built once and reused, so SQLAlchemy compiles each shape only once.
_INSERT = insert(memories)
_BUMP = (
    update(memories)
    .where(memories.c.id == bindparam("memory_id"))
    .values(
        last_accessed=func.max(memories.c.last_accessed, bindparam("at")),
        access_count=func.min(
            memories.c.access_count, literal_column(str(SQLITE_INT_MAX)) - bindparam("uses")
        )
        + bindparam("uses"),
    )
)
_DELETE_EXPIRED = delete(memories).where(
    memories.c.id.in_(
        select(memories.c.id)
        .where(memories.c.expires_at.is_not(None), memories.c.expires_at <= bindparam("now"))
        .limit(bindparam("batch"))
        .scalar_subquery()
    )
)
_DECAY_WINDOW = (
    update(memories)
    .where(memories.c.id > bindparam("after"), memories.c.id <= bindparam("upto"))
    .values(decay_score=rows.decay_sql())
)
_GET = select(*SELECT_MEMORY, memories.c.access_count, memories.c.embedding_status).where(
    memories.c.id == bindparam("memory_id")
)
_EXISTING = select(memories.c.id).where(memories.c.id.in_(bindparam("ids", expanding=True)))
_NEIGHBOURS = text(
    neighbours.NEIGHBOURS.format(
        member="IN (SELECT value FROM json_each(:ids))", per_result=":per_result"
    )
)


@functools.cache
def _update_statement(columns: tuple[str, ...]) -> sqlalchemy.Update:
    return (
        update(memories)
        .where(memories.c.id == bindparam("memory_id"))
        .values(
            {
                **{name: bindparam(f"new_{name}") for name in columns},
                "last_accessed": bindparam("now"),
                "access_count": _USED_COUNT,
            }
        )
        .returning(*SELECT_MEMORY, memories.c.embedding_status)
    )


_guarded = faults.guard((sqlalchemy.exc.SQLAlchemyError, sqlean.Error))


class SqliteStore(CommonStore):
    """The store over one SQLite file (see storage.base.Store for what each method promises;
    common.CommonStore holds what is the same on every engine)."""

    ENGINE_ERRORS = (sqlalchemy.exc.SQLAlchemyError, sqlean.Error)
    VECTORS = vectors
    NEIGHBOURS_SQL = _NEIGHBOURS

    def __init__(self, database: Database) -> None:
        self.database = database
        self.schema_version = database.schema_version
        self.location = str(database.path)
        self.read_only = database.read_only
        self._connections = Connections(database.engine)
        self._keyword = KeywordIndex()
        self._index: Any = None  # a vector_index.VectorIndex, made by _vector_index()
        self._index_made = threading.Lock()

    @functools.cached_property
    def identity_key(self) -> bytes | None:
        """Computed when first asked (a daemon's health, for ``ui``), not on every open."""
        return self.database.identity_key

    def close(self) -> None:
        if self._index is not None:
            self._index.wait()
        self._connections.close()

    def _read(self, deadline: float | None = None) -> AbstractContextManager[Connection]:
        return self._connections.read(deadline)

    def _write(self) -> AbstractContextManager[Connection]:
        return self._connections.write()

    def _ids(self, ids: Sequence[int]) -> str:
        return json.dumps(list(ids))

    def _vector_index(self) -> Any:
        """This process's vector index (None without numpy), made at the first search by
        meaning: importing numpy takes a noticeable while that keyword-only commands need
        not pay."""
        with self._index_made:
            if self._index is None:
                from agent_memory.storage.sqlite import vector_index

                if vector_index.available():
                    self._index = vector_index.VectorIndex(self._connections.read)
            return self._index

    # -- memories (the flow around them: common.CommonStore) ------------------------------

    def _insert_row(self, conn: Connection, memory: NewMemory, embedded: bool) -> int:
        row = {
            **common.inserted(memory),
            "tags": tag_text(memory.tags),
            "base_weight": ranking.base_weight(memory.memory_type),
            "content_hash": content_hash(memory.content),
            "keyword_text": indexed_text(memory.content),
            "keyword_tags": indexed_tags(memory.tags),
        }
        row["embedding_status"] = int(embedded)
        return int(conn.execute(_INSERT, row).inserted_primary_key[0])

    def _update_row(
        self,
        conn: Connection,
        memory_id: int,
        changes: dict[str, Any],
        now: int,
        embedded: bool,
    ) -> dict[str, Any] | None:
        changes = dict(changes)
        params = {f"new_{name}": value for name, value in changes.items()}
        if "tags" in changes:
            params["new_tags"] = tag_text(changes["tags"])
            changes["keyword_tags"] = params["new_keyword_tags"] = indexed_tags(changes["tags"])
        if "content" in changes:
            changes["content_hash"] = params["new_content_hash"] = content_hash(changes["content"])
            text = indexed_text(changes["content"])
            changes["keyword_text"] = params["new_keyword_text"] = text
        params.update(memory_id=memory_id, now=now)
        if "content" in changes:
            params["new_embedding_status"] = int(embedded)
            changes["embedding_status"] = None
        row = conn.execute(_update_statement(tuple(sorted(changes))), params).one_or_none()
        if row is None:
            return None
        updated = rows.memory(row)
        updated["embedding_status"] = row.embedding_status
        return updated

    @_guarded
    def bump(self, uses: Mapping[int, tuple[int, int]]) -> None:
        if not uses:
            return
        params = [{"memory_id": i, "uses": n, "at": at} for i, (n, at) in sorted(uses.items())]
        with self._connections.write() as conn:
            conn.execute(_BUMP, params)

    def _superseded(self, conn: Connection, scope: str | None = None) -> dict[int, list[int]]:
        """As every engine's, on the driver's connection: read on every search, and
        SQLAlchemy's execution would cost as much as the read."""
        found = (
            driver(conn).execute(ALL_SUPERSEDED_SQL)
            if scope is None
            else driver(conn).execute(SCOPE_SUPERSEDED_SQL, {"scope": scope})
        )
        out: dict[int, list[int]] = {}
        for old, new in found:
            out.setdefault(int(old), []).append(int(new))
        return out

    def _legs(self, conn: Connection, query: ParsedQuery, embedding: Embedding, leg: Leg) -> Legs:
        nearest = self._vector_leg(conn, embedding, leg.limit, leg.filters)
        keyword, counts = self._keyword.leg(
            conn, query, now=leg.now, limit=leg.limit, filters=leg.filters
        )
        return keyword, nearest, counts

    def _near_counts(self, conn: sqlalchemy.Connection, words: Sequence[str]) -> list[int]:
        return near_rows.counts(conn, words)

    def _near_rows(
        self, conn: sqlalchemy.Connection, planned: NearPlan, scope: str | None
    ) -> list[tuple[int, str]]:
        return near_rows.rows(conn, planned, scope)

    def _keyword_page(
        self, conn: Connection, query: ParsedQuery, now: int, limit: int, filters: Filters
    ) -> tuple[list[tuple[dict[str, Any], float]], WordCounts | None]:
        return self._keyword.page(conn, query, now=now, limit=limit, filters=filters)

    def _nearest(
        self, conn: Connection, embedding: Embedding, limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        return self._vector_leg(conn, embedding, limit, filters, near=True)

    def _vector_leg(
        self,
        conn: sqlalchemy.Connection,
        embedding: Embedding,
        limit: int,
        filters: Filters,
        *,
        near: bool = False,
    ) -> list[tuple[int, float]]:
        """The nearest (id, similarity) among the memories that pass ``filters`` (filtered
        before the cut), in a store pinned to ``embedding``'s model: from this process's
        index once it is loaded, else by SQL. ``near``: only the very nearest matter (the
        near-duplicate check)."""
        index = self._vector_index()
        if index is not None:
            nearest = index.ranking(conn, embedding, embedding.pin, limit, filters, near=near)
            if nearest is not None:
                return nearest
        return vectors.ranking(conn, embedding, limit, filters)

    def _rows(
        self, conn: sqlalchemy.Connection, ids: list[int], now: int, filters: Filters
    ) -> dict[int, dict[str, Any]]:
        """The memories among ``ids`` that pass the filters, decay_score as of ``now``."""
        if not ids:
            return {}
        params = {**rows.filter_params(filters), "ids": ids, "now": now}
        found = conn.execute(rows.rows_statement(rows.filter_key(filters)), params).all()
        return {row.id: rows.with_decay(row) for row in found}

    def _candidates(
        self, conn: sqlalchemy.Connection, ids: list[int], now: int, filters: Filters
    ) -> dict[int, dict[str, Any]]:
        """Ids, decays, content and tags only: a hybrid search's legs bring up to
        2 x MAX_LEG candidates, and reading each whole row for a page of ten would cost more
        than the fusion."""
        if not ids:
            return {}
        params = {**rows.filter_params(filters), "ids": json.dumps(ids), "now": now}
        found = conn.execute(rows.candidates_statement(rows.filter_key(filters)), params)
        return {
            i: {"id": i, "decay_score": decay, "content": content, "tags": _tags(tags)}
            for i, decay, content, tags in found
        }

    @_guarded
    def memories(
        self, filters: Filters, limit: int | None, before: tuple[int, int] | None = None
    ) -> Generator[dict[str, Any], None, None]:
        params = rows.filter_params(filters)
        if limit is not None:
            params["limit"] = limit
        if before is not None:
            params["before_created"], params["before_id"] = before
        with self._connections.read() as conn:
            key = rows.filter_key(filters)
            statement = rows.list_statement(key, limit is not None, before is not None)
            for row in conn.execute(statement, params):
                yield rows.memory(row)

    @_guarded
    def get(
        self, memory_id: int, relations: int
    ) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        with self._connections.read() as conn:
            row = conn.execute(_GET, {"memory_id": memory_id}).one_or_none()
            if row is None:
                return None
            found = rows.memory(row)
            found.update(access_count=int(row.access_count), embedding_status=row.embedding_status)
            return found, self._neighbours(conn, [memory_id], relations)

    # -- relations ------------------------------------------------------------------------

    @_guarded
    def link(self, a: int, b: int, kind: str, now: int, *, ids: tuple[int, int]) -> int | None:
        with self._connections.write() as conn:
            found = set(conn.execute(_EXISTING, {"ids": list(ids)}).scalars())
            for memory_id in ids:
                if memory_id not in found:
                    return memory_id
            conn.exec_driver_sql(portable.LINK, (a, b, kind, now))
        return None

    # -- import and export ----------------------------------------------------------------

    @_guarded
    def import_memories(
        self, batch: Sequence[dict[str, Any]], now: int
    ) -> list[tuple[str, int | None]]:
        hashes = {  # outside the lock
            i: content_hash(r["content"])
            for i, r in enumerate(batch)
            if r["expires_at"] is None or r["expires_at"] > now
        }
        with self._connections.write() as conn:
            return portable.import_memories(conn, batch, hashes, now)

    @_guarded
    def import_links(
        self, edges: Sequence[tuple[int, int, str, int]]
    ) -> list[tuple[int, int, str]]:
        with self._connections.write() as conn:
            return portable.import_links(conn, edges)

    @_guarded
    def remove_imported(
        self, ranges: Sequence[tuple[int, int]], edges: Sequence[tuple[int, int, str]]
    ) -> int:
        with self._connections.write() as conn:
            return portable.remove_imported(conn, ranges, edges)

    @_guarded
    def after_import(self) -> int:
        """Merge the FTS5 index's segments into one, a step per short transaction.

        An import flushes a segment per batch, and FTS5 leaves such an index half merged:
        left so, each small write after it pays for finishing the merging. Returns the steps
        taken.
        """
        steps = 0
        while True:
            with self._connections.write() as conn:
                done = portable.merge_step(conn)
            steps += 1
            if done:
                return steps

    @contextmanager
    @_guarded
    def bulk(self) -> Iterator[None]:
        with self._connections.bulk():
            yield

    @contextmanager
    @_guarded
    def snapshot(self) -> Iterator[portable.Snapshot]:
        with self._connections.read() as conn:
            yield portable.Snapshot(conn)

    # -- the sweep (its loop: common.CommonStore) -----------------------------------------

    def _delete_expired(self, conn: Connection, now: int, size: int) -> int:
        return conn.execute(_DELETE_EXPIRED, {"now": now, "batch": size}).rowcount

    def _decay_window(self, conn: Connection, now: int, after: int, upto: int) -> int:
        return conn.execute(_DECAY_WINDOW, {"now": now, "after": after, "upto": upto}).rowcount

    def _merge_index_step(self, conn: Connection) -> bool:
        # Each store's transaction adds a segment to the FTS5 index, and FTS5 merges a level
        # only once it holds four, so a store-built index keeps many segments, each looked
        # into by every word of every search. With
        # 'usermerge' at 2, a step merges any level holding two.
        if driver(conn).execute(_USERMERGE_READ).fetchone() != (INDEX_USERMERGE,):
            driver(conn).execute(_USERMERGE_WRITE, (INDEX_USERMERGE,))  # once per database
        return not portable.merge_step(conn, every_segment=False)

    def _first_batch_size(self) -> int:
        return SWEEP_FIRST_BATCH_ROWS

    def _held(self, began: float) -> float:
        return self._connections.last_hold()

    def _after_batch(self, count: int) -> None:
        # A batch writes hundreds of pages: checkpoint them here, outside the lock. Left to
        # every CHECKPOINT_EVERY_WRITES commits, the inline checkpoint would come inside a
        # batch's commit, holding the write lock far past SWEEP_HOLD_TARGET_SECS.
        if count:
            self._connections.checkpoint_now()

    def _next_batch_size(self, size: int, held: float) -> int:
        scaled = int(size * SWEEP_HOLD_TARGET_SECS / max(held, 1e-4))
        return max(1, min(SWEEP_MAX_BATCH_ROWS, scaled, 2 * size))

    # -- doctor (doctor.py) ----------------------------------------------------------------

    @_guarded
    def check(self) -> list[Finding]:
        return Doctor(self._connections, self.database.path, self.read_only).check()

    @_guarded
    def repair(self) -> list[str]:
        return Doctor(self._connections, self.database.path, self.read_only).repair()


@functools.lru_cache(maxsize=TAGS_CACHE_ENTRIES)
def _tags(stored: str) -> tuple[str, ...]:
    """A memory's tags as stored (a JSON array), parsed."""
    return tuple(json.loads(stored))
