"""The PostgreSQL store: every operation the service needs, each one transaction or one snapshot.

What replaces SQLite's ``BEGIN IMMEDIATE`` (one writer at a time): writes run under READ
COMMITTED with row locks where a read decides a write (``FOR KEY SHARE`` on a link's ends),
``ON CONFLICT DO NOTHING`` for idempotent links, a table lock for an import batch (its new
rows take consecutive ids and its duplicate check sees every committed row), and the sweep
in short batches that skip rows another transaction holds (``FOR UPDATE SKIP LOCKED``). A
read is one REPEATABLE READ, READ ONLY transaction: a multi-statement read sees one snapshot.

Keyword search is FTS5's bm25 computed in SQL (:mod:`.keyword`), over the query tree
agent_memory.query makes of the text, so the same corpus ranks the same way on both
backends; vectors live in pgvector (:mod:`.vectors`). Whatever the engine raises leaves as
StorageFault (its text as the detail, for the log), a read past its deadline as
SearchTimedOut.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
import sqlalchemy
from sqlalchemy import Connection, text

from agent_memory import ranking
from agent_memory.contract.errors import SearchTimedOut
from agent_memory.contract.models import (
    Embedding,
    Filters,
    WordCounts,
    content_hash,
)
from agent_memory.contract.vocabulary import count
from agent_memory.query import ParsedQuery
from agent_memory.storage import common, faults, neighbours
from agent_memory.storage.base import Finding, NewMemory, Pause
from agent_memory.storage.checks import vector_findings
from agent_memory.storage.common import CommonStore, Leg, Legs
from agent_memory.storage.hygiene.near import NearPlan
from agent_memory.storage.postgres import checks, keyword, portable, rows, vectors
from agent_memory.storage.postgres import near as near_rows
from agent_memory.storage.postgres import ranked as ranked_search
from agent_memory.storage.postgres.database import Database

log = logging.getLogger(__name__)

# The sweep's batches: rows per transaction (short, so a store waits for one batch at most).
SWEEP_BATCH_ROWS = 500
# Every this many stores by one process, the keyword totals log is folded, on a thread (also
# by the sweep): every search reads the whole log (its N, and each word's row count), so its
# cost grows with the rows left unfolded, while a fold is short enough to run off the path
# of any store.
COMPACT_EVERY_STORES = 250
# pg_advisory_xact_lock's first key (of the two-int space, apart from the one-bigint locks)
# for stores of one content, the second being its hash folded ("amdu").
DEDUP_LOCK = 0x616D_6475
_guarded = faults.guard((sqlalchemy.exc.SQLAlchemyError, psycopg.Error))
_NEIGHBOURS = text(neighbours.NEIGHBOURS.format(member="= ANY(:ids)", per_result=":per_result"))


class PostgresStore(CommonStore):
    """The store over one PostgreSQL database (see storage.base.Store for the promises;
    common.CommonStore holds what is the same on every engine)."""

    ENGINE_ERRORS = (sqlalchemy.exc.SQLAlchemyError, psycopg.Error)
    VECTORS = vectors
    NEIGHBOURS_SQL = _NEIGHBOURS
    TAGS_VALUE = "CAST(:tags AS jsonb)"
    LOCK_ROWS = " FOR UPDATE"
    read_only = False

    def __init__(self, database: Database) -> None:
        self.database = database
        self.schema_version = database.schema_version
        self.location = database.location
        self.identity_key = database.identity_key
        self._engine = database.engine
        self._stores = 0  # by this process (a lost increment between threads costs nothing)
        self._folding: threading.Thread | None = None  # the fold of the log, when running

    def close(self) -> None:
        folding = self._folding
        if folding is not None:
            folding.join()
        self.database.close()

    @contextmanager
    def _write(self) -> Iterator[sqlalchemy.Connection]:
        with self._engine.begin() as conn:
            yield conn

    @contextmanager
    def _statement(self) -> Iterator[sqlalchemy.Connection]:
        """For a write that is one statement: its own transaction, without the BEGIN and
        COMMIT round trips (set on the driver's connection: SQLAlchemy's isolation option
        costs round trips of its own); and for VACUUM and ANALYZE, which run in none."""
        with self._engine.connect() as conn:
            driver = conn.connection.driver_connection
            driver.autocommit = True
            try:
                yield conn
            finally:
                driver.autocommit = False

    @contextmanager
    def _read(self, deadline: float | None = None) -> Iterator[sqlalchemy.Connection]:
        """One snapshot; with ``deadline`` (time.monotonic()), SearchTimedOut past it.

        The transaction starts, with its isolation and its deadline, in one round trip (on
        the driver's connection, in autocommit: the driver would send a BEGIN of its own),
        and ends in one."""
        settings = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        if deadline is not None:
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                raise SearchTimedOut()
            settings += f"; SET LOCAL statement_timeout = {left_ms}"
        with self._engine.connect() as conn:
            driver = conn.connection.driver_connection
            driver.autocommit = True
            try:
                driver.execute(settings)
                yield conn
            except sqlalchemy.exc.OperationalError as exc:
                if deadline is not None and isinstance(exc.orig, psycopg.errors.QueryCanceled):
                    raise SearchTimedOut() from exc
                raise
            finally:
                try:
                    driver.rollback()  # a read-only snapshot: nothing to commit
                    driver.autocommit = False
                except psycopg.Error:
                    conn.invalidate()  # a broken connection leaves the pool

    # -- memories (the flow around them: common.CommonStore) ------------------------------

    def _lock_content(self, conn: Connection, memory: NewMemory) -> None:
        # Writers run side by side under READ COMMITTED: two stores of one content wait
        # for each other here, so the second sees the first's row.
        folded = content_hash(memory.content) & 0x7FFF_FFFF
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s, %s)", (DEDUP_LOCK, folded))

    def _lock_row(self, conn: Connection, memory_id: int) -> None:
        # READ COMMITTED: the version kept is the one this write replaces.
        conn.exec_driver_sql("SELECT id FROM memories WHERE id = %s FOR UPDATE", (memory_id,))

    def _insert_transaction(self, embedded: bool) -> AbstractContextManager[Connection]:
        return self._write() if embedded else self._statement()

    def _insert_row(self, conn: Connection, memory: NewMemory, embedded: bool) -> int:
        found = keyword.document(memory.content, memory.tags)
        row = (
            *rows.field_values(common.inserted(memory)),
            ranking.base_weight(memory.memory_type),
            int(embedded),
            content_hash(memory.content),
            *found,
        )
        return int(conn.exec_driver_sql(rows.INSERT, row).scalar_one())

    def _inserted(self) -> None:
        self._stores += 1
        if self._stores % COMPACT_EVERY_STORES == 0:
            self._fold_soon()

    def _update_row(
        self,
        conn: Connection,
        memory_id: int,
        changes: dict[str, Any],
        now: int,
        embedded: bool,
    ) -> dict[str, Any] | None:
        sets, params = ["last_accessed = %s", rows.USED], [now]
        for name in sorted(changes):
            value = changes[name]
            if name == "tags":
                sets.append("tags = %s::jsonb")
                value = json.dumps(list(value), ensure_ascii=False)
            else:
                sets.append(f"{name} = %s")
            params.append(value)
        new_content = changes.get("content")
        if new_content is not None:
            sets.append("content_hash = %s")
            params.append(content_hash(new_content))
        if new_content is not None or "tags" in changes:
            sets += rows.KEYWORD_SETS
            params += self._document(conn, memory_id, new_content, changes.get("tags"))
        if new_content is not None:
            sets.append("embedding_status = %s")
            params.append(int(embedded))
        statement = (
            f"UPDATE memories SET {', '.join(sets)} WHERE id = %s"
            f" RETURNING {rows.SELECT}, embedding_status"
        )
        row = conn.exec_driver_sql(statement, (*params, memory_id)).one_or_none()
        if row is None:
            return None
        updated = rows.memory(row)
        updated["embedding_status"] = row[-1]
        return updated

    @staticmethod
    def _document(
        conn: sqlalchemy.Connection,
        memory_id: int,
        content: str | None,
        tags: Sequence[str] | None,
    ) -> keyword.Document:
        """The keyword columns of a memory whose content or tags change (the other one as
        stored, read under the write's lock; a missing memory's are never written)."""
        if content is None or tags is None:
            row = conn.exec_driver_sql(rows.CONTENT_AND_TAGS, (memory_id,)).one_or_none()
            if row is not None:
                content = row.content if content is None else content
                tags = row.tags if tags is None else tags
        return keyword.document(content or "", tags or ())

    @_guarded
    def bump(self, uses: Mapping[int, tuple[int, int]]) -> None:
        if not uses:
            return
        ids = sorted(uses)
        with self._write() as conn:
            conn.exec_driver_sql(rows.BUMP_LOCK, (ids,))
            counts, times = [uses[i][0] for i in ids], [uses[i][1] for i in ids]
            conn.exec_driver_sql(rows.BUMP, (ids, counts, times))

    def _legs(self, conn: Connection, query: ParsedQuery, embedding: Embedding, leg: Leg) -> Legs:
        nearest = vectors.nearest(conn, embedding, leg.limit, leg.filters)
        scored = ranked_search.scored(conn, query, leg.limit, leg.filters)
        return scored, nearest, ranked_search.counts(conn, query)

    def _nearest(
        self, conn: Connection, embedding: Embedding, limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        return vectors.nearest(conn, embedding, limit, filters)

    def _near_counts(self, conn: sqlalchemy.Connection, words: Sequence[str]) -> list[int]:
        return near_rows.counts(conn, words)

    def _near_rows(
        self, conn: sqlalchemy.Connection, planned: NearPlan, scope: str | None
    ) -> list[tuple[int, str]]:
        return near_rows.rows(conn, planned, scope)

    def _keyword_page(
        self, conn: Connection, query: ParsedQuery, now: int, limit: int, filters: Filters
    ) -> tuple[list[tuple[dict[str, Any], float]], WordCounts | None]:
        found = ranked_search.page(conn, query, limit, filters, now)
        return found, ranked_search.counts(conn, query) if found else None

    def _rows(
        self, conn: sqlalchemy.Connection, ids: list[int], now: int, filters: Filters
    ) -> dict[int, dict[str, Any]]:
        """The memories among ``ids`` that pass the filters, decay_score as of ``now``."""
        if not ids:
            return {}
        where, params = rows.filters_sql(filters)
        statement = (
            f"SELECT {rows.SELECT}, {keyword.decay_sql('m')} FROM memories AS m"
            f" WHERE m.id = ANY(%s){where}"
        )
        out = {}
        for row in conn.exec_driver_sql(statement, (now, ids, *params)):
            memory = rows.memory(row)
            memory["decay_score"] = row[-1]
            out[memory["id"]] = memory
        return out

    @_guarded
    def memories(
        self, filters: Filters, limit: int | None, before: tuple[int, int] | None = None
    ) -> Generator[dict[str, Any], None, None]:
        where, params = rows.filters_sql(filters)
        if before is not None:
            where += " AND (m.created_at, m.id) < (%s, %s)"
            params += list(before)
        statement = f"SELECT {rows.SELECT} FROM memories AS m WHERE TRUE{where}"
        statement += " ORDER BY m.created_at DESC, m.id DESC"
        if limit is not None:
            statement += " LIMIT %s"
            params.append(limit)
        with self._read() as conn:
            found = conn.execution_options(yield_per=rows.EXPORT_BATCH_ROWS).exec_driver_sql(
                statement, tuple(params)
            )
            for row in found:
                yield rows.memory(row)

    @_guarded
    def get(
        self, memory_id: int, relations: int
    ) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        with self._read() as conn:
            row = conn.exec_driver_sql(rows.GET, (memory_id,)).one_or_none()
            if row is None:
                return None
            found = rows.memory(row)
            found.update(access_count=int(row[-2]), embedding_status=row[-1])
            return found, self._neighbours(conn, [memory_id], relations)

    # -- the session brief (storage.base.Reader) ------------------------------------------

    @_guarded
    def recent(
        self, *, scope: str | None, types: Sequence[str], now: int, limit: int, window: int
    ) -> list[dict[str, Any]]:
        params = {
            "scope": scope,
            "types": list(types),
            "now": now,
            "window": window,
            "limit": limit,
        }
        with self._read() as conn:
            found = [rows.memory(row) for row in conn.exec_driver_sql(rows.RECENT, params)]
        for memory in found:
            memory["decay_score"] = ranking.decay(memory["type"], memory["last_accessed"], now)
        return found

    # -- relations ------------------------------------------------------------------------

    @_guarded
    def link(self, a: int, b: int, kind: str, now: int, *, ids: tuple[int, int]) -> int | None:
        with self._write() as conn:
            # FOR KEY SHARE: neither end can be deleted before this transaction commits.
            found = set(
                conn.exec_driver_sql(
                    "SELECT id FROM memories WHERE id = ANY(%s) FOR KEY SHARE", (list(ids),)
                ).scalars()
            )
            for memory_id in ids:
                if memory_id not in found:
                    return memory_id
            conn.exec_driver_sql(rows.LINK, (a, b, kind, now))
        return None

    # -- embeddings (the rest: common.CommonStore) ----------------------------------------

    def _replace_vector(self, conn: Connection, memory_id: int, vector: bytes) -> None:
        vectors.write(conn, memory_id, vector)  # an upsert

    # -- import and export ----------------------------------------------------------------

    @_guarded
    def import_memories(self, batch: Sequence[dict[str, Any]], now: int) -> list[Any]:
        with self._write() as conn:
            return portable.import_memories(conn, batch, now)

    @_guarded
    def import_links(
        self, edges: Sequence[tuple[int, int, str, int]]
    ) -> list[tuple[int, int, str]]:
        with self._write() as conn:
            return portable.import_links(conn, edges)

    @_guarded
    def remove_imported(
        self, ranges: Sequence[tuple[int, int]], edges: Sequence[tuple[int, int, str]]
    ) -> int:
        removed = 0
        with self._write() as conn:
            for a, b, kind in edges:
                conn.exec_driver_sql(
                    "DELETE FROM memory_links WHERE from_id = %s AND to_id = %s AND kind = %s",
                    (a, b, kind),
                )
            for first, last in ranges:
                removed += conn.exec_driver_sql(
                    "DELETE FROM memories WHERE id BETWEEN %s AND %s", (first, last)
                ).rowcount
        return removed

    @_guarded
    def after_import(self) -> int:
        """The keyword totals folded and fresh planner statistics after a bulk load."""
        self._compact_totals()
        with self._statement() as conn:
            conn.exec_driver_sql("ANALYZE memories")
        return 1

    @contextmanager
    def bulk(self) -> Iterator[None]:
        yield

    @contextmanager
    @_guarded
    def snapshot(self) -> Iterator[portable.Snapshot]:
        with self._read() as conn:
            yield portable.Snapshot(conn)

    # -- the sweep (its loop: common.CommonStore) -----------------------------------------

    def _delete_expired(self, conn: Connection, now: int, size: int) -> int:
        return conn.exec_driver_sql(rows.DELETE_EXPIRED, (now, size)).rowcount

    def _decay_window(self, conn: Connection, now: int, after: int, upto: int) -> int:
        return conn.exec_driver_sql(rows.DECAY_WINDOW, (now, after, upto)).rowcount

    def _first_batch_size(self) -> int:
        return SWEEP_BATCH_ROWS

    def merge_index(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        """Nothing to merge (FTS5's segments are SQLite's): no transaction is opened."""
        return 0, 0.0

    def _after_expiry(self) -> None:
        self._compact_totals()

    def _after_decay(self) -> None:
        """A VACUUM of the table: PostgreSQL wrote a new version of every row (and of its
        index entries), which searches read too until a vacuum. It holds no lock that stores
        or searches wait for."""
        with self._statement() as conn:
            conn.exec_driver_sql("VACUUM memories")

    def _fold_soon(self) -> None:
        """Fold the log on a thread of its own: no store should wait for a fold. One at a
        time; a failed fold leaves the log as it was (the next one, or the sweep's, folds
        it)."""
        if self._folding is not None and self._folding.is_alive():
            return

        def fold() -> None:
            try:
                self._compact_totals()
            except (sqlalchemy.exc.SQLAlchemyError, psycopg.Error) as exc:
                log.warning("folding the keyword totals log failed: %s", exc)

        self._folding = threading.Thread(target=fold, name="keyword-fold", daemon=True)
        self._folding.start()

    def _compact_totals(self) -> None:
        """Fold the keyword totals log (one row per write since the last fold), then vacuum
        it; when another process is folding it, that fold will do.

        Every search reads the whole log, dead rows included until a vacuum, so the log is
        kept short and vacuumed.
        """
        with self._write() as conn:
            folded = conn.exec_driver_sql(
                "SELECT pg_try_advisory_xact_lock(%s)", (keyword.COMPACT_LOCK,)
            ).scalar()
            if folded:
                conn.exec_driver_sql(keyword.COMPACT_TOTALS)
        if folded:
            with self._statement() as conn:  # VACUUM runs in no transaction
                conn.exec_driver_sql("VACUUM keyword_totals")

    # -- doctor (the SQL: checks.py) -------------------------------------------------------

    @_guarded
    def check(self) -> list[Finding]:
        with self._read() as conn:
            totals = checks.keyword_totals_match(conn)
            words = checks.wrong_word_counts(conn)
            state = checks.vector_state(conn)
        return [
            Finding(
                "PostgreSQL's own pages and indexes",
                True,
                "not checked here: the server checks its pages as it reads them, and "
                "pg_amcheck checks them all",
            ),
            Finding(
                "keyword totals match the memories (bm25's N and lengths)",
                totals,
                "" if totals else "the totals differ from the memories'",
                True,
            ),
            Finding(
                "each word's row count matches the memories",
                not words,
                f"{count(words, 'word')} counted wrong" if words else "",
                True,
            ),
            *vector_findings(state),
        ]

    @_guarded
    def repair(self) -> list[str]:
        done: list[str] = []
        with self._read() as conn:
            rebuild = not checks.keyword_totals_match(conn) or checks.wrong_word_counts(conn)
        with self._write() as conn:
            if rebuild:
                checks.rebuild_keyword_totals(conn)
                done.append("rebuilt the keyword totals and word counts from the memories")
            done += checks.repair_vectors(conn)
        return done
