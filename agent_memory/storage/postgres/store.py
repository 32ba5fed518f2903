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
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
import sqlalchemy

from agent_memory import ranking
from agent_memory.errors import SearchTimedOut
from agent_memory.models import (
    Embedding,
    Filters,
    KeywordScale,
    Noise,
    Pin,
    SearchPage,
    content_hash,
)
from agent_memory.query import Node, Or, ParsedQuery, bm25
from agent_memory.query import read as read_query
from agent_memory.storage import faults
from agent_memory.storage.base import Finding, NewMemory, Pause
from agent_memory.storage.checks import vector_findings
from agent_memory.storage.postgres import checks, keyword, portable, rows, vectors
from agent_memory.storage.postgres.database import Database
from agent_memory.vocabulary import MAX_EXPANDED_LINKS, count

log = logging.getLogger(__name__)

# The sweep's batches: rows per transaction (short, so a store waits for one batch at most).
SWEEP_BATCH_ROWS = 500
# Every this many stores by one process, the keyword totals log is folded, on a thread (also
# by the sweep): a search reads the log (its N, and each word's row count), about 0.3 ms a
# word per 500 rows of it; a fold of 200 stores' rows takes about 20 ms (100,000 memories).
COMPACT_EVERY_STORES = 250
DECAY_DONE_KEY = "decay_materialized_at"
# Rows an export reads from the server-side cursor at a time (memory stays flat).
_guarded = faults.guard((sqlalchemy.exc.SQLAlchemyError, psycopg.Error))


class PostgresStore:
    """The store over one PostgreSQL database (see storage.base.Store for the promises)."""

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
        """One snapshot; with ``deadline`` (time.monotonic()), SearchTimedOut past it."""
        with self._engine.connect() as conn, conn.begin():
            conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            if deadline is None:
                yield conn
                return
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                raise SearchTimedOut()
            conn.exec_driver_sql(f"SET LOCAL statement_timeout = {left_ms}")
            try:
                yield conn
            except sqlalchemy.exc.OperationalError as exc:
                if isinstance(exc.orig, psycopg.errors.QueryCanceled):
                    raise SearchTimedOut() from exc
                raise

    # -- memories -------------------------------------------------------------------------

    @_guarded
    def insert(self, memory: NewMemory, embedding: Embedding | None) -> int:
        found = keyword.document(memory.content, memory.tags)
        with self._write() if embedding is not None else self._statement() as conn:
            embedded = embedding is not None and vectors.pinned(conn, embedding.pin)
            row = (
                memory.memory_type,
                memory.content,
                json.dumps(list(memory.tags), ensure_ascii=False),
                memory.source,
                memory.scope,
                ranking.base_weight(memory.memory_type),
                1.0,
                0,
                memory.now,
                memory.now,
                memory.expires_at,
                int(embedded),
                content_hash(memory.content),
                *found,
            )
            memory_id = int(conn.exec_driver_sql(rows.INSERT, row).scalar_one())
            if embedded:
                assert embedding is not None
                vectors.write(conn, memory_id, embedding.vector)
        self._stores += 1
        if self._stores % COMPACT_EVERY_STORES == 0:
            self._fold_soon()
        return memory_id

    @_guarded
    def update(
        self, memory_id: int, changes: dict[str, Any], now: int, embedding: Embedding | None
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
        with self._write() as conn:
            if new_content is not None or "tags" in changes:
                sets += rows.KEYWORD_SETS
                params += self._document(conn, memory_id, new_content, changes.get("tags"))
            embedded = False
            if new_content is not None:
                embedded = embedding is not None and vectors.pinned(conn, embedding.pin)
                sets.append("embedding_status = %s")
                params.append(int(embedded))
            statement = (
                f"UPDATE memories SET {', '.join(sets)} WHERE id = %s"
                f" RETURNING {rows.SELECT}, embedding_status"
            )
            row = conn.exec_driver_sql(statement, (*params, memory_id)).one_or_none()
            if row is None:
                return None
            if new_content is not None and vectors.stored_pin(conn) is not None:
                vectors.remove(conn, memory_id)
                if embedded:
                    assert embedding is not None
                    vectors.write(conn, memory_id, embedding.vector)
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
    def delete(self, memory_id: int) -> bool:
        with self._statement() as conn:
            gone = conn.exec_driver_sql("DELETE FROM memories WHERE id = %s", (memory_id,))
            return gone.rowcount > 0

    @_guarded
    def bump(self, ids: Sequence[int], now: int) -> None:
        if not ids:
            return
        with self._statement() as conn:
            conn.exec_driver_sql(rows.BUMP, (now, sorted(set(ids))))

    @_guarded
    def search(
        self,
        query: str | ParsedQuery,
        embedding: Embedding | None,
        *,
        now: int,
        limit: int,
        filters: Filters,
        deadline: float | None = None,
        floor: bool | None = None,
        unrelated: Noise | None = None,
    ) -> SearchPage:
        parsed = read_query(query)
        with self._read(deadline) as conn:
            other = None
            if embedding is not None:
                stored = vectors.stored_pin(conn)
                if stored == embedding.pin:  # else keyword: no vector yet, or another model's
                    leg = ranking.leg_size(limit)
                    nearest = vectors.nearest(conn, embedding, leg, filters)
                    ranked = self._scored(conn, parsed, leg, filters, None)
                    scale = self._scale(conn, parsed) if ranked else None
                    ids = [*dict.fromkeys(i for i, _ in [*ranked, *nearest])]
                    noise = Noise.of(vectors.noise(conn, embedding))
                    fused = ranking.fuse(
                        ranked,
                        nearest,
                        noise,
                        self._rows(conn, ids, now, filters),
                        limit,
                        floor,
                        scale,
                        unrelated,
                    )
                    return SearchPage(
                        ranking.SEARCH_MODE_HYBRID, fused.results, None, fused.why, fused.explain
                    )
                other = stored
            ranked = self._scored(conn, parsed, limit, filters, now)
            found = self._rows(conn, [i for i, _ in ranked], now, Filters())
            page = ranking.keyword_page([(found[i], s) for i, s in ranked if i in found])
            return SearchPage(
                ranking.SEARCH_MODE_KEYWORD, page.results, other, page.why, page.explain
            )

    def _scale(self, conn: sqlalchemy.Connection, parsed: ParsedQuery) -> KeywordScale | None:
        """bm25.scale of a query searched as several words, else None."""
        if not parsed.several_words:
            return None
        statement, params = keyword.word_rows_sql(parsed.leaves)
        total, counts = conn.exec_driver_sql(statement, tuple(params)).one()
        return bm25.scale(parsed.words, total, dict(zip(parsed.words, counts, strict=True)))

    def _scored(
        self,
        conn: sqlalchemy.Connection,
        parsed: ParsedQuery,
        limit: int,
        filters: Filters,
        now: int | None,
    ) -> list[tuple[int, float]]:
        """(id, -bm25 plus decay as of ``now`` when given), best first, filters before the
        cut."""
        if parsed.tree is None:
            return []
        # The GIN index for the phrases' row counts and the matching rows: on a table of a
        # few thousand rows the planner scans it instead, 10 ms a count at 10,000 rows
        # against 0.5 for a rare word by the index (common words cost the same either way).
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        if not parsed.several_words:
            return self._ranking(conn, parsed.tree, limit, filters, now)
        return self._words(conn, parsed, limit, filters, now)

    def _ranking(
        self,
        conn: sqlalchemy.Connection,
        tree: Node,
        limit: int,
        filters: Filters,
        now: int | None,
        scored: Node | None = None,
    ) -> list[tuple[int, float]]:
        statement, params = keyword.keyword_ranking_sql(
            tree,
            limit=limit,
            memory_type=filters.memory_type,
            tag=filters.tag,
            scope=filters.scope,
            now=now,
            scored=scored,
        )
        return [(int(i), float(s)) for i, s in conn.exec_driver_sql(statement, tuple(params))]

    def _words(
        self,
        conn: sqlalchemy.Connection,
        parsed: ParsedQuery,
        limit: int,
        filters: Filters,
        now: int | None,
    ) -> list[tuple[int, float]]:
        """A query searched as words (as on SQLite): the rows holding every word first, then
        the rows holding one of its informative words (query.bm25.plan), every row with the
        whole score of the OR of the words (``parsed.tree``, one leaf per word).

        Past PRUNE_EXACT_ROWS, only the rows of the rarest words are scored first; as on
        SQLite, that is not exact (query.bm25).
        """
        tree, words = parsed.tree, parsed.words
        assert tree is not None
        first = self._ranking(conn, parsed.every_word(), limit, filters, now)
        if len(first) >= limit:
            return first
        statement, params = keyword.word_rows_sql(parsed.leaves)
        total, counts = conn.exec_driver_sql(statement, tuple(params)).one()
        hits = dict(zip(words, counts, strict=True))
        planned = bm25.plan(words, total, hits, never_empty=now is not None)
        if not planned.kept:
            return first
        wanted = limit + len(first)  # the first rows come again: they hold the kept words
        found = None
        if planned.rarest is not None:
            scored = Or(tuple(map(parsed.leaf, dict.fromkeys(planned.rarest))))
            found = self._ranking(conn, tree, wanted, filters, now, scored)
            if len(found) < wanted:
                found = None  # the other kept words' rows are needed to fill the page
        if found is None:
            kept = dict.fromkeys(planned.kept)
            scored = Or(tuple(map(parsed.leaf, kept))) if planned.left_out else None
            found = self._ranking(conn, tree, wanted, filters, now, scored)
        seen = {memory_id for memory_id, _ in first}
        return first + [pair for pair in found if pair[0] not in seen][: limit - len(first)]

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
    def neighbours(
        self, ids: Sequence[int], per_result: int = MAX_EXPANDED_LINKS
    ) -> list[dict[str, Any]]:
        if not ids:
            return []
        with self._read() as conn:
            return self._neighbours(conn, ids, per_result)

    def _neighbours(
        self, conn: sqlalchemy.Connection, ids: Sequence[int], per_result: int
    ) -> list[dict[str, Any]]:
        found = conn.exec_driver_sql(rows.NEIGHBOURS, {"ids": list(ids), "per_result": per_result})
        names = ("self", "id", "kind", "direction", "type", "content", "tags")
        return [dict(zip(names, row, strict=True)) for row in found]

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

    @_guarded
    def stats(self, scopes: int) -> dict[str, Any]:
        with self._read() as conn:
            total, pending = conn.exec_driver_sql(rows.EMBEDDING_COUNTS).one()
            by_type = dict(
                conn.exec_driver_sql("SELECT type, count(*) FROM memories GROUP BY type").all()
            )
            by_scope = conn.exec_driver_sql(
                "SELECT scope, count(*) AS n FROM memories GROUP BY scope"
                " ORDER BY n DESC, scope NULLS FIRST LIMIT %s",
                (scopes,),
            ).all()
            links = conn.exec_driver_sql("SELECT count(*) FROM memory_links").scalar_one()
        return {
            "memories": int(total),
            "by_type": {k: int(v) for k, v in by_type.items()},
            "by_scope": [(scope, int(n)) for scope, n in by_scope],
            "links": int(links),
            "pending_embedding": int(pending),
        }

    @_guarded
    def ping(self) -> None:
        with self._read() as conn:
            conn.exec_driver_sql("SELECT id FROM memories LIMIT 1").all()

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

    @_guarded
    def unlink(self, a: int, b: int, kind: str) -> bool:
        with self._write() as conn:
            gone = conn.exec_driver_sql(
                "DELETE FROM memory_links WHERE from_id = %s AND to_id = %s AND kind = %s",
                (a, b, kind),
            )
            return gone.rowcount > 0

    # -- embeddings -----------------------------------------------------------------------

    @_guarded
    def pin(self) -> Pin | None:
        with self._read() as conn:
            return vectors.stored_pin(conn)

    @_guarded
    def pending(self, limit: int) -> list[tuple[int, str]]:
        with self._read() as conn:
            found = conn.exec_driver_sql(
                "SELECT id, content FROM memories WHERE embedding_status = 0 ORDER BY id LIMIT %s",
                (limit,),
            )
            return [(int(i), content) for i, content in found]

    @_guarded
    def write_vectors(self, made: Sequence[tuple[int, str, Embedding]]) -> int:
        if not made:
            return 0
        written = 0
        with self._write() as conn:
            if not vectors.pinned(conn, made[0][2].pin):
                return 0
            for memory_id, text, embedding in made:
                if conn.exec_driver_sql(rows.MARK_EMBEDDED, (memory_id, text)).rowcount:
                    vectors.write(conn, memory_id, embedding.vector)
                    written += 1
        return written

    @_guarded
    def repin(self, pin: Pin) -> None:
        with self._write() as conn:
            vectors.drop(conn)
            vectors.create(conn, pin)
            conn.exec_driver_sql("UPDATE memories SET embedding_status = 0")

    @_guarded
    def embedding_counts(self) -> tuple[int, int]:
        with self._read() as conn:
            total, pending = conn.exec_driver_sql(rows.EMBEDDING_COUNTS).one()
        return int(total), int(pending)

    @_guarded
    def pending_count(self) -> int:
        with self._read() as conn:
            return int(conn.exec_driver_sql(rows.PENDING_COUNT).scalar_one())

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

    # -- the sweep ------------------------------------------------------------------------

    @_guarded
    def delete_expired(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        def batch(conn: sqlalchemy.Connection) -> tuple[int, bool]:
            gone = conn.exec_driver_sql(rows.DELETE_EXPIRED, (now, SWEEP_BATCH_ROWS)).rowcount
            return gone, gone == SWEEP_BATCH_ROWS

        done = self._in_batches(batch, pause)
        self._compact_totals()
        return done

    def _fold_soon(self) -> None:
        """Fold the log on a thread of its own: a fold of 250 stores' rows takes about 20 ms,
        which no store should wait for. One at a time; a failed fold leaves the log as it
        was (the next one, or the sweep's, folds it)."""
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

        Every search reads the whole log, dead rows included until a vacuum: after an
        import of 100,000 memories the folded batches' maps left 4,943 dead pages, and a
        question took 185 ms instead of 90 until autovacuum came by.
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

    @_guarded
    def refresh_decay(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        """Every row's decay_score, in short batches; then a VACUUM of the table.

        PostgreSQL writes a new version of every row (and of its index entries): until a
        vacuum, searches read the dead ones too, and at 100,000 memories a question took
        90 ms instead of 47 after a refresh. The vacuum (0.6 s there) holds no lock that
        stores or searches wait for.
        """
        with self._read() as conn:
            top = conn.exec_driver_sql("SELECT max(id) FROM memories").scalar() or 0
        after = 0

        def batch(conn: sqlalchemy.Connection) -> tuple[int, bool]:
            nonlocal after
            done = conn.exec_driver_sql(
                rows.DECAY_WINDOW, (now, after, after + SWEEP_BATCH_ROWS)
            ).rowcount
            after += SWEEP_BATCH_ROWS
            if after >= top:  # the last window: say when, for the other processes
                conn.exec_driver_sql(rows.WRITE_DECAY_DONE, (DECAY_DONE_KEY, str(now)))
            return done, after < top

        if not top:
            return 0, 0.0
        done, longest = self._in_batches(batch, pause)
        if after >= top:  # not when stopped early: the server is on its way out
            with self._statement() as conn:
                conn.exec_driver_sql("VACUUM memories")
        return done, longest

    @_guarded
    def decay_refreshed_at(self) -> int | None:
        with self._read() as conn:
            value = conn.exec_driver_sql(
                "SELECT value FROM meta WHERE key = %s", (DECAY_DONE_KEY,)
            ).scalar()
        try:
            return None if value is None else int(value)
        except ValueError:
            return None  # not ours to trust: the next sweep rewrites it

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

    def _in_batches(
        self, batch: Callable[[sqlalchemy.Connection], tuple[int, bool]], pause: Pause | None
    ) -> tuple[int, float]:
        """Run ``batch(conn) -> (done, more)`` one short transaction at a time until done;
        ``pause()`` between two batches returns True to stop early."""
        done, longest = 0, 0.0
        while True:
            began = time.perf_counter()
            with self._write() as conn:
                batched, more = batch(conn)
            longest = max(longest, time.perf_counter() - began)
            done += batched
            if not more or (pause is not None and pause()):
                return done, longest
