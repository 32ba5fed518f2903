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
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy
import sqlalchemy.dialects.sqlite
import sqlean
from sqlalchemy import bindparam, delete, func, insert, literal_column, select, update

from agent_memory import ranking
from agent_memory.models import Embedding, Filters, Noise, Pin, SearchPage, content_hash
from agent_memory.query import ParsedQuery, indexed_tags, indexed_text, tag_text
from agent_memory.query import read as read_query
from agent_memory.storage import faults
from agent_memory.storage.base import Finding, NewMemory, Pause
from agent_memory.storage.checks import vector_findings
from agent_memory.storage.sqlite import checks, portable, rows, vectors
from agent_memory.storage.sqlite.connections import Connections
from agent_memory.storage.sqlite.database import Database
from agent_memory.storage.sqlite.keyword import KeywordIndex
from agent_memory.storage.sqlite.rows import SELECT_MEMORY
from agent_memory.storage.sqlite.schema import memories, memory_links, meta
from agent_memory.vocabulary import MAX_EXPANDED_LINKS, SQLITE_INT_MAX, count

# The sweep rewrites decay scores and deletes expired rows in batches, one transaction
# each, sized so that each holds the write lock for about SWEEP_HOLD_TARGET_SECS: the
# next batch's size is scaled by how long the last one took (from SWEEP_FIRST_BATCH_ROWS,
# at most doubling, within 1..SWEEP_MAX_BATCH_ROWS). A store from another process then
# waits for one batch at most.
SWEEP_FIRST_BATCH_ROWS = 16
SWEEP_MAX_BATCH_ROWS = 50_000
# 12 ms, not 20: at 1,000,000 memories, with another process storing throughout, the longest
# hold was 54-82 ms in five runs (98-145 in two at 20 ms; the sweep took 13-15 s instead of
# 11, and let 50-80% more of the other process's stores through). What overshoots is a
# batch's commit, which writes the batch's pages: a 104-row expiry batch spent 11 ms in its
# DELETE and 71 ms in all. Smaller batches do not cure that (8 ms: 41 and 100 ms).
SWEEP_HOLD_TARGET_SECS = 0.012
# When decay scores were last rewritten (unix seconds), shared by every process on the file.
DECAY_DONE_KEY = "decay_materialized_at"

# A use of a row: access_count + 1, saturating at SQLite's largest integer (SQLite turns an
# overflowing sum into a REAL, which an export would then write as 9.223372036854776e+18).
# min() also brings back to that integer a REAL an older version left there.
_USED_COUNT = func.min(memories.c.access_count, literal_column(str(SQLITE_INT_MAX - 1))) + 1
# Statements are built once and reused, so SQLAlchemy compiles each shape only once.
_INSERT = insert(memories)
_DELETE = delete(memories).where(memories.c.id == bindparam("memory_id"))
_BUMP = (
    update(memories)
    .where(memories.c.id.in_(bindparam("ids", expanding=True)))
    .values(last_accessed=bindparam("now"), access_count=_USED_COUNT)
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
_MAX_ID = select(func.max(memories.c.id))
_PING = select(memories.c.id).limit(1)
_READ_DECAY_DONE = select(meta.c.value).where(meta.c.key == DECAY_DONE_KEY)
_WRITE_DECAY_DONE = (
    sqlalchemy.dialects.sqlite.insert(meta)
    .values(key=DECAY_DONE_KEY, value=bindparam("now"))
    .on_conflict_do_update(index_elements=["key"], set_={"value": bindparam("now")})
)
_PENDING = (
    select(memories.c.id, memories.c.content)
    .where(memories.c.embedding_status == 0)
    .order_by(memories.c.id)
    .limit(bindparam("limit"))
)
_MARK_EMBEDDED = (
    update(memories)
    .where(
        memories.c.id == bindparam("memory_id"),
        memories.c.content == bindparam("text"),  # not edited while it was being embedded
        memories.c.embedding_status == 0,
    )
    .values(embedding_status=1)
)
_ALL_PENDING = update(memories).values(embedding_status=0)
# Two scalar counts, each on an index (the smallest one, and the partial index of pending
# rows), not one pass over the table: 6 ms instead of 37 at 100,000 memories.
_PENDING_COUNT = select(func.count()).select_from(memories).where(memories.c.embedding_status == 0)
_EMBEDDING_COUNTS = select(
    select(func.count()).select_from(memories).scalar_subquery(),
    _PENDING_COUNT.scalar_subquery(),
)
_GET = select(*SELECT_MEMORY, memories.c.access_count, memories.c.embedding_status).where(
    memories.c.id == bindparam("memory_id")
)
_BY_TYPE = select(memories.c.type, func.count()).group_by(memories.c.type)
# The most used scopes first (a memory without a scope counts under null).
_BY_SCOPE = (
    select(memories.c.scope, func.count().label("n"))
    .group_by(memories.c.scope)
    .order_by(literal_column("n").desc(), memories.c.scope)
    .limit(bindparam("top"))
)
_LINK_COUNT = select(func.count()).select_from(memory_links)
_EXISTING = select(memories.c.id).where(memories.c.id.in_(bindparam("ids", expanding=True)))
_UNLINK = delete(memory_links).where(
    memory_links.c.from_id == bindparam("a"),
    memory_links.c.to_id == bindparam("b"),
    memory_links.c.kind == bindparam("k"),
)


def _size(path: Any) -> str:
    """A file's size for a person (MB, or bytes), or why it cannot be told."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return exc.strerror or "gone"
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size} bytes"


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


class SqliteStore:
    """The store over one SQLite file (see storage.base.Store for what each method promises)."""

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

    def load_vector_index(self) -> None:
        """Load this process's vector index now (benches and tests; a search otherwise
        loads it in the background)."""
        index = self._vector_index()
        if index is not None:
            index.load()

    def _vector_index(self) -> Any:
        """This process's vector index (None without numpy), made at the first search by
        meaning: importing numpy takes 0.1-0.3 s that keyword-only commands need not pay."""
        with self._index_made:
            if self._index is None:
                from agent_memory.storage.sqlite import vector_index

                if vector_index.available():
                    self._index = vector_index.VectorIndex(self._connections.read)
            return self._index

    # -- memories -------------------------------------------------------------------------

    @_guarded
    def insert(self, memory: NewMemory, embedding: Embedding | None) -> int:
        row = {
            "type": memory.memory_type,
            "content": memory.content,
            "tags": tag_text(memory.tags),
            "source": memory.source,
            "scope": memory.scope,
            "base_weight": ranking.base_weight(memory.memory_type),
            "decay_score": 1.0,
            "access_count": 0,
            "created_at": memory.now,
            "last_accessed": memory.now,
            "expires_at": memory.expires_at,
            "content_hash": content_hash(memory.content),
            "keyword_text": indexed_text(memory.content),
            "keyword_tags": indexed_tags(memory.tags),
        }
        with self._connections.write() as conn:
            embedded = embedding is not None and vectors.pinned(conn, embedding.pin)
            row["embedding_status"] = int(embedded)
            memory_id = int(conn.execute(_INSERT, row).inserted_primary_key[0])
            if embedded:
                assert embedding is not None
                vectors.write(conn, memory_id, embedding.vector)
            return memory_id

    @_guarded
    def update(
        self, memory_id: int, changes: dict[str, Any], now: int, embedding: Embedding | None
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
        with self._connections.write() as conn:
            embedded = False
            if "content" in changes:
                embedded = embedding is not None and vectors.pinned(conn, embedding.pin)
                params["new_embedding_status"] = int(embedded)
                changes["embedding_status"] = None
            row = conn.execute(_update_statement(tuple(sorted(changes))), params).one_or_none()
            if row is None:
                return None
            if "content" in changes and vectors.stored_pin(conn) is not None:
                vectors.remove(conn, memory_id)
                if embedded:
                    assert embedding is not None
                    vectors.write(conn, memory_id, embedding.vector)
        updated = rows.memory(row)
        updated["embedding_status"] = row.embedding_status
        return updated

    @_guarded
    def delete(self, memory_id: int) -> bool:
        with self._connections.write() as conn:
            return conn.execute(_DELETE, {"memory_id": memory_id}).rowcount > 0

    @_guarded
    def bump(self, ids: Sequence[int], now: int) -> None:
        if not ids:
            return
        with self._connections.write() as conn:
            conn.execute(_BUMP, {"ids": list(ids), "now": now})

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
        with self._connections.read(deadline) as conn:
            other = None
            if embedding is not None:
                leg = ranking.leg_size(limit)
                nearest = self._vector_leg(conn, embedding, leg, filters)
                if nearest is not None:
                    keyword, scale = self._keyword.leg(
                        conn, parsed, now=now, limit=leg, filters=filters
                    )
                    ids = [*dict.fromkeys(i for i, _ in [*keyword, *nearest])]
                    noise = Noise.of(vectors.noise(conn, embedding))
                    fused = ranking.fuse(
                        keyword,
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
                other = vectors.stored_pin(conn)
            scored = self._keyword.page(conn, parsed, now=now, limit=limit, filters=filters)
            page = ranking.keyword_page(scored)
            return SearchPage(
                ranking.SEARCH_MODE_KEYWORD, page.results, other, page.why, page.explain
            )

    def _vector_leg(
        self,
        conn: sqlalchemy.Connection,
        embedding: Embedding,
        limit: int,
        filters: Filters,
    ) -> list[tuple[int, float]] | None:
        """The nearest (id, similarity) among the memories that pass ``filters`` (filtered
        before the cut): from this process's index once it is loaded, else by SQL; None when
        the store holds no vector of this model (another model's, or none yet)."""
        stored = vectors.stored_pin(conn)
        if stored != embedding.pin:
            return None
        index = self._vector_index()
        if index is not None:
            nearest = index.ranking(conn, embedding, stored, limit, filters)
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
    def neighbours(
        self, ids: Sequence[int], per_result: int = MAX_EXPANDED_LINKS
    ) -> list[dict[str, Any]]:
        if not ids:
            return []
        with self._connections.read() as conn:
            return self._neighbours(conn, ids, per_result)

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

    @_guarded
    def stats(self, scopes: int) -> dict[str, Any]:
        with self._connections.read() as conn:
            total, pending = conn.execute(_EMBEDDING_COUNTS).one()
            by_type = dict(conn.execute(_BY_TYPE).all())
            by_scope = [(scope, n) for scope, n in conn.execute(_BY_SCOPE, {"top": scopes})]
            links = conn.execute(_LINK_COUNT).scalar_one()
        return {
            "memories": int(total),
            "by_type": by_type,
            "by_scope": by_scope,
            "links": int(links),
            "pending_embedding": int(pending),
        }

    def _neighbours(
        self, conn: sqlalchemy.Connection, ids: Sequence[int], per_result: int
    ) -> list[dict[str, Any]]:
        found = conn.execute(rows.NEIGHBOURS, {"ids": list(ids), "per_result": per_result})
        return [
            {
                "self": row.self,
                "id": row.other,
                "kind": row.kind,
                "direction": row.direction,
                "type": row.type,
                "content": row.content,
                "tags": json.loads(row.tags),
            }
            for row in found
        ]

    @_guarded
    def ping(self) -> None:
        with self._connections.read() as conn:
            conn.execute(_PING).all()

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

    @_guarded
    def unlink(self, a: int, b: int, kind: str) -> bool:
        with self._connections.write() as conn:
            return conn.execute(_UNLINK, {"a": a, "b": b, "k": kind}).rowcount > 0

    # -- embeddings -----------------------------------------------------------------------

    @_guarded
    def pin(self) -> Pin | None:
        with self._connections.read() as conn:
            return vectors.stored_pin(conn)

    @_guarded
    def pending(self, limit: int) -> list[tuple[int, str]]:
        with self._connections.read() as conn:
            return [tuple(r) for r in conn.execute(_PENDING, {"limit": limit}).all()]  # type: ignore[misc]

    @_guarded
    def write_vectors(self, made: Sequence[tuple[int, str, Embedding]]) -> int:
        if not made:
            return 0
        written = 0
        with self._connections.write() as conn:
            if not vectors.pinned(conn, made[0][2].pin):
                return 0
            for memory_id, text, embedding in made:
                marked = conn.execute(_MARK_EMBEDDED, {"memory_id": memory_id, "text": text})
                if marked.rowcount:
                    vectors.remove(conn, memory_id)
                    vectors.write(conn, memory_id, embedding.vector)
                    written += 1
        return written

    @_guarded
    def repin(self, pin: Pin) -> None:
        with self._connections.write() as conn:
            vectors.drop(conn)
            vectors.create(conn, pin)
            conn.execute(_ALL_PENDING)

    @_guarded
    def embedding_counts(self) -> tuple[int, int]:
        with self._connections.read() as conn:
            total, pending = conn.execute(_EMBEDDING_COUNTS).one()
        return int(total), int(pending)

    @_guarded
    def pending_count(self) -> int:
        with self._connections.read() as conn:
            return int(conn.execute(_PENDING_COUNT).scalar_one())

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
        the stores after a 100,000-row import had a p99 of 15-20 ms (1.5 ms before) while
        each small write finished the merging. Returns the steps taken.
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

    # -- the sweep ------------------------------------------------------------------------

    @_guarded
    def delete_expired(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        def batch(conn: sqlalchemy.Connection, size: int) -> tuple[int, bool]:
            gone = conn.execute(_DELETE_EXPIRED, {"now": now, "batch": size}).rowcount
            return gone, gone == size

        return self._in_batches(batch, pause)

    @_guarded
    def refresh_decay(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        with self._connections.read() as conn:
            top = conn.execute(_MAX_ID).scalar() or 0
        after = 0

        def batch(conn: sqlalchemy.Connection, size: int) -> tuple[int, bool]:
            nonlocal after
            window = {"now": now, "after": after, "upto": after + size}
            after += size
            done = conn.execute(_DECAY_WINDOW, window).rowcount
            if after >= top:  # the last window: say when, for the other processes
                conn.execute(_WRITE_DECAY_DONE, {"now": str(now)})
            return done, after < top

        return self._in_batches(batch, pause) if top else (0, 0.0)

    @_guarded
    def decay_refreshed_at(self) -> int | None:
        with self._connections.read() as conn:
            value = conn.execute(_READ_DECAY_DONE).scalar()
        try:
            return None if value is None else int(value)
        except ValueError:
            return None  # not ours to trust: the next sweep rewrites it

    # -- doctor (the SQL: checks.py) -------------------------------------------------------

    @_guarded
    def check(self) -> list[Finding]:
        with self._connections.read() as conn:
            problems = checks.integrity(conn)
        shown = "; ".join(problems[: checks.SHOWN_PROBLEMS])
        if len(problems) > checks.SHOWN_PROBLEMS:
            shown += f" (and {len(problems) - checks.SHOWN_PROBLEMS} more)"
        found = [
            Finding(
                "SQLite integrity (PRAGMA integrity_check)",
                not problems,
                shown,
                repairable=checks.only_indexes(problems),
            )
        ]
        for name, look in (
            ("relations join existing memories", self._check_links),
            ("keyword index matches the memories (FTS5 integrity-check)", self._check_keywords),
            ("vectors", self._check_vectors),
        ):
            try:
                found += look()
            except (sqlalchemy.exc.SQLAlchemyError, sqlean.Error) as exc:
                if not problems:
                    raise
                detail = f"not checked: {getattr(exc, 'orig', None) or exc}"
                found.append(Finding(name, False, detail))  # the file is damaged
        return found + self._check_backups()

    def _check_links(self) -> list[Finding]:
        with self._connections.read() as conn:
            dangling = checks.dangling_links(conn)
        detail = f"{count(dangling, 'relation')} to memories that are gone" if dangling else ""
        return [Finding("relations join existing memories", not dangling, detail, True)]

    def _check_keywords(self) -> list[Finding]:
        name = "keyword index matches the memories (FTS5 integrity-check)"
        if self.read_only:  # FTS5 takes its check as an INSERT, which this file refuses
            return [Finding(name, True, "not checked: this user cannot write the file")]
        with self._connections.write() as conn:
            matches = checks.keyword_index_matches(conn)
        detail = "" if matches else "the index does not match the memories' content"
        return [Finding(name, matches, detail, True)]

    def _check_vectors(self) -> list[Finding]:
        with self._connections.read() as conn:
            return vector_findings(checks.vector_state(conn))

    def _check_backups(self) -> list[Finding]:
        """Backups beside the file (backups.py names them). The copies an interrupted backup
        left are removed when the file is opened for writing; one still here is being
        written now, or could not be removed (the log says why)."""
        from agent_memory.storage.sqlite import backups

        done, stray = (
            backups.backups(self.database.path),
            backups.stray_backup_temps(self.database.path),
        )
        found = [
            Finding(
                "no interrupted pre-migration backup",
                not stray,
                "; ".join(f"{path} ({_size(path)})" for path in stray)
                + (
                    ": copies of every memory, forgotten ones too; the next open removes them "
                    "once no migration is writing one"
                    if stray
                    else ""
                ),
            )
        ]
        if done:
            names = ", ".join(f"{path.name} ({_size(path)})" for path in done)
            found.append(Finding("pre-migration backups", True, names))
        return found

    @_guarded
    def repair(self) -> list[str]:
        done: list[str] = []
        with self._connections.read() as conn:
            problems = checks.integrity(conn)
        if checks.only_indexes(problems):
            with self._connections.write() as conn:
                conn.exec_driver_sql(checks.REINDEX)
            done.append("rebuilt the indexes (REINDEX)")
        with self._connections.write() as conn:
            matches = checks.keyword_index_matches(conn)
        with self._connections.write() as conn:
            if not matches:
                conn.exec_driver_sql(checks.KEYWORD_REBUILD)
                done.append("rebuilt the keyword index from the memories")
            dangling = checks.repair_links(conn)
            if dangling:
                done.append(f"removed {count(dangling, 'relation')} to memories that are gone")
            done += checks.repair_vectors(conn)
        return done

    def _in_batches(
        self, batch: Callable[[sqlalchemy.Connection, int], tuple[int, bool]], pause: Pause | None
    ) -> tuple[int, float]:
        """Run ``batch(conn, rows) -> (done, more)`` one transaction at a time until done.

        Between two batches ``pause()`` runs outside the lock (the sweep waits there so a
        waiting writer gets its turn); it returns True to stop early.
        """
        size, done, longest = SWEEP_FIRST_BATCH_ROWS, 0, 0.0
        while True:
            with self._connections.write() as conn:
                count, more = batch(conn, size)
            held = self._connections.last_hold()
            # A batch writes hundreds of pages: checkpoint them here, outside the lock. Left
            # to every CHECKPOINT_EVERY_WRITES commits, the WAL reached the inline checkpoint
            # every few batches at 1,000,000 memories, which then held the write lock in a
            # batch's commit for about 200 ms.
            if count:
                self._connections.checkpoint_now()
            done, longest = done + count, max(longest, held)
            if not more or (pause is not None and pause()):
                return done, longest
            scaled = int(size * SWEEP_HOLD_TARGET_SECS / max(held, 1e-4))
            size = max(1, min(SWEEP_MAX_BATCH_ROWS, scaled, 2 * size))
