"""What every engine's store does the same way, written once: the flow of a write around the
vector pin, a search's two legs and their fusion, the embedding queue, the counts, the
relations of a memory, and the sweep in batches. An engine's store subclasses
:class:`CommonStore` and supplies its connections, its vectors module, its rankings and the
few statements its SQL dialect writes differently; the shared statements here are plain SQL
that SQLite and PostgreSQL read alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

import sqlalchemy
from sqlalchemy import text

from agent_memory import ranking
from agent_memory.contract import fields
from agent_memory.contract.fields import LOCAL
from agent_memory.contract.models import Embedding, Filters, Noise, Pin, SearchPage, WordCounts
from agent_memory.contract.vocabulary import MAX_EXPANDED_LINKS
from agent_memory.query import ParsedQuery
from agent_memory.ranking.relevance import Words
from agent_memory.storage import oauth
from agent_memory.storage.base import MissingMemory, NewMemory
from agent_memory.storage.faults import guarded
from agent_memory.storage.hygiene import duplicates, history, near
from agent_memory.storage.hygiene import superseded as superseded_rows
from agent_memory.storage.hygiene.history import HistoryRows
from agent_memory.storage.hygiene.tidy import TidyRows
from agent_memory.storage.neighbours import neighbour_edges
from agent_memory.storage.sessions import SessionRows
from agent_memory.storage.sweep import SweepRows
from agent_memory.storage.tokens import TokenRows


def inserted(memory: NewMemory) -> dict[str, Any]:
    """The field columns of the row a store adds, in the table's order; a field the
    write does not give takes its initial value."""
    given = {
        "type": memory.memory_type,
        "content": memory.content,
        "tags": list(memory.tags),
        "source": memory.source,
        "scope": memory.scope,
        "expires_at": memory.expires_at,
        "created_by": memory.actor,
        "updated_by": memory.actor,
    }
    return fields.new_row(given, memory.now)


def imported(record: dict[str, Any], now: int) -> dict[str, Any]:
    """The field columns of the row an import adds for an export record (its ``imported``
    fields; the others as a new row's)."""
    return fields.new_row(record, now, imported=True)


_DELETE = text("DELETE FROM memories WHERE id = :memory_id")
_UNLINK = text("DELETE FROM memory_links WHERE from_id = :a AND to_id = :b AND kind = :kind")
_PING = text("SELECT id FROM memories LIMIT 1")
_PENDING = text(
    "SELECT id, content FROM memories WHERE embedding_status = 0 ORDER BY id LIMIT :limit"
)
# On the partial index of pending rows (memories_pending), not a pass over the table.
_PENDING_COUNT = "SELECT count(*) FROM memories WHERE embedding_status = 0"
_EMBEDDING_COUNTS = text(f"SELECT (SELECT count(*) FROM memories), ({_PENDING_COUNT})")
_MARK_EMBEDDED = text(
    "UPDATE memories SET embedding_status = 1"  # unless edited while it was being embedded
    " WHERE id = :memory_id AND content = :text AND embedding_status = 0"
)
_ALL_PENDING = text("UPDATE memories SET embedding_status = 0")
_BY_TYPE = text("SELECT type, count(*) FROM memories GROUP BY type")
# The most used scopes first (a memory without a scope counts under null).
_BY_SCOPE = text(
    "SELECT scope, count(*) AS n FROM memories GROUP BY scope"
    " ORDER BY n DESC, scope NULLS FIRST LIMIT :top"
)
_LINK_COUNT = text("SELECT count(*) FROM memory_links")
_EXISTING = text("SELECT id FROM memories WHERE id IN :ids").bindparams(
    sqlalchemy.bindparam("ids", expanding=True)
)
_SUPERSEDE = text(
    "INSERT INTO memory_links (from_id, to_id, kind, created_at)"
    " VALUES (:a, :b, 'supersedes', :now) ON CONFLICT DO NOTHING"
)
_SUPERSEDED_SQL = "SELECT to_id, from_id FROM memory_links WHERE kind = 'supersedes'"
# Every supersedes link, as (old, new): an engine may run it without SQLAlchemy.
ALL_SUPERSEDED_SQL = f"{_SUPERSEDED_SQL} ORDER BY to_id, from_id"
_ALL_SUPERSEDED = text(ALL_SUPERSEDED_SQL)
# Those made by a memory of the scope :scope: a view filtered by a scope counts only them,
# so that nothing outside the scope changes it. Looked up per link: as a join, SQLite
# reads every memory of the scope first, even when there is no link.
SCOPE_SUPERSEDED_SQL = (
    "SELECT l.to_id, l.from_id FROM memory_links AS l WHERE l.kind = 'supersedes'"
    " AND (SELECT m.scope FROM memories AS m WHERE m.id = l.from_id) = :scope"
    " ORDER BY l.to_id, l.from_id"
)
_SCOPE_SUPERSEDED = text(SCOPE_SUPERSEDED_SQL)
_SUPERSEDED = text(f"{_SUPERSEDED_SQL} AND to_id IN :ids ORDER BY to_id, from_id").bindparams(
    sqlalchemy.bindparam("ids", expanding=True)
)

Ranked = list[tuple[int, float]]
# (id, -bm25) and (id, cosine similarity), best first; what the index says of the words
Legs = tuple[Ranked, Ranked, WordCounts | None]


@dataclass(frozen=True)
class Leg:
    """What a search, or each leg of a hybrid one, is asked for: its length, its filters
    (applied before the cut), and the time decay is computed at."""

    limit: int
    filters: Filters
    now: int


Connect = Callable[[], AbstractContextManager[sqlalchemy.Connection]]


class CommonStore(TokenRows, SessionRows, oauth.OAuthRows, SweepRows, HistoryRows, TidyRows):
    """The Store methods that are the same on every engine (storage.base.Store says what
    each promises). A subclass supplies:

    - ``_read(deadline=None)`` and ``_write()``: a snapshot, and a write transaction;
    - ``_statement()``: for a write that is one statement (default: ``_write``);
    - ``VECTORS``: its vectors module (pinned, stored_pin, write, remove, drop, create);
    - ``ENGINE_ERRORS``: what its driver raises (leaves as StorageFault);
    - its SQL: ``_insert_row``, ``_update_row``, ``_delete_expired``, ``_decay_window``,
      ``NEIGHBOURS_SQL`` (neighbours.NEIGHBOURS in its dialect) with ``_ids``;
    - its rankings: ``_legs`` (hybrid search) and ``_keyword_page``, each with what the
      index says of a plain query's words, and ``_rows``;
    - the sweep's batch sizes and what follows a batch, an expiry or a refresh.
    """

    ENGINE_ERRORS: ClassVar[tuple[type[BaseException], ...]]
    VECTORS: ClassVar[ModuleType]
    NEIGHBOURS_SQL: ClassVar[sqlalchemy.TextClause]
    TAGS_VALUE: ClassVar[str] = ":tags"  # a JSON text parameter, as the engine keeps tags
    _read: Callable[..., AbstractContextManager[sqlalchemy.Connection]]
    _write: Connect

    def _statement(self) -> AbstractContextManager[sqlalchemy.Connection]:
        return self._write()

    # -- writes around the vector pin ----------------------------------------------------

    @guarded
    def insert(self, memory: NewMemory, embedding: Embedding | None) -> int:
        with self._insert_transaction(embedding is not None) as conn:
            embedded = embedding is not None and self.VECTORS.pinned(conn, embedding.pin)
            memory_id = self._insert_row(conn, memory, embedded)
            if embedded:
                assert embedding is not None
                self.VECTORS.write(conn, memory_id, embedding.vector)
        self._inserted()
        return memory_id

    @guarded
    def update(
        self, memory_id: int, changes: dict[str, Any], now: int, embedding: Embedding | None
    ) -> dict[str, Any] | None:
        with self._write() as conn:
            self._lock_row(conn, memory_id)
            history.record(conn, memory_id, now, changes.get("updated_by", LOCAL))
            embedded = False
            if "content" in changes:
                embedded = embedding is not None and self.VECTORS.pinned(conn, embedding.pin)
            updated = self._update_row(conn, memory_id, changes, now, embedded)
            if updated is None:
                return None
            if "content" in changes and self.VECTORS.stored_pin(conn) is not None:
                self.VECTORS.remove(conn, memory_id)
                if embedded:
                    assert embedding is not None
                    self.VECTORS.write(conn, memory_id, embedding.vector)
        return updated

    @guarded
    def insert_unique(self, memory: NewMemory, embedding: Embedding | None) -> tuple[int, bool]:
        with self._write() as conn:
            self._lock_content(conn, memory)
            twin = duplicates.find(conn, memory)
            if twin is not None:
                taken = duplicates.changes(twin, memory.tags, memory.expires_at)
                self._lock_row(conn, twin.id)
                history.record(
                    conn, twin.id, memory.now, memory.actor, history.DUPLICATE, memory.source
                )
                self._update_row(conn, twin.id, taken, memory.now, False)
                self._supersede(conn, twin.id, memory)
                return twin.id, True
            embedded = embedding is not None and self.VECTORS.pinned(conn, embedding.pin)
            memory_id = self._insert_row(conn, memory, embedded)
            if embedded:
                assert embedding is not None
                self.VECTORS.write(conn, memory_id, embedding.vector)
            self._supersede(conn, memory_id, memory)
        self._inserted()
        return memory_id, False

    def _supersede(self, conn: sqlalchemy.Connection, memory_id: int, memory: NewMemory) -> None:
        """``memory_id`` supersedes what ``memory`` names (MissingMemory if one is gone)."""
        older = [i for i in memory.supersedes if i != memory_id]
        if not older:
            return
        found = set(conn.execute(_EXISTING, {"ids": older}).scalars())
        for missing in (i for i in older if i not in found):
            raise MissingMemory(missing)
        for old in older:
            conn.execute(_SUPERSEDE, {"a": memory_id, "b": old, "now": memory.now})

    @guarded
    def superseded_by(
        self, ids: Sequence[int] | None, scope: str | None = None
    ) -> dict[int, list[int]]:
        if ids is not None and not ids:
            return {}
        with self._read() as conn:
            if ids is None:
                return self._superseded(conn, scope)
            out: dict[int, list[int]] = {}
            for old, new in conn.execute(_SUPERSEDED, {"ids": list(ids)}):
                out.setdefault(int(old), []).append(int(new))
        return out

    def _lock_content(self, conn: sqlalchemy.Connection, memory: NewMemory) -> None:
        """Serialise, until the transaction ends, the stores of this content: a write
        transaction that is not already the only writer takes a lock here."""

    def _lock_row(self, conn: sqlalchemy.Connection, memory_id: int) -> None:
        """Hold the memory's row, until the transaction ends, against other writers (its
        version is kept before it changes)."""

    @guarded
    def import_versions(self, versions: Sequence[dict[str, Any]]) -> int:
        with self._write() as conn:
            return history.imported(conn, versions, self.TAGS_VALUE)

    def _insert_transaction(self, embedded: bool) -> AbstractContextManager[sqlalchemy.Connection]:
        return self._write()

    def _inserted(self) -> None:
        """After each insert has committed."""

    def _insert_row(self, conn: sqlalchemy.Connection, memory: NewMemory, embedded: bool) -> int:
        raise NotImplementedError

    def _update_row(
        self,
        conn: sqlalchemy.Connection,
        memory_id: int,
        changes: dict[str, Any],
        now: int,
        embedded: bool,
    ) -> dict[str, Any] | None:
        """The changed memory (embedding_status included), None when there is none;
        ``embedded``: whether new content's vector is written with it."""
        raise NotImplementedError

    @guarded
    def delete(self, memory_id: int) -> bool:
        with self._statement() as conn:
            return conn.execute(_DELETE, {"memory_id": memory_id}).rowcount > 0

    @guarded
    def unlink(self, a: int, b: int, kind: str) -> bool:
        with self._write() as conn:
            return conn.execute(_UNLINK, {"a": a, "b": b, "kind": kind}).rowcount > 0

    # -- reads ---------------------------------------------------------------------------

    @guarded
    def search(
        self,
        query: ParsedQuery,
        embedding: Embedding | None,
        *,
        now: int,
        limit: int,
        filters: Filters,
        deadline: float | None = None,
        floor: bool | None = None,
        unrelated: Noise | None = None,
        superseded: str = superseded_rows.KEEP,
    ) -> SearchPage:
        with self._read(deadline) as conn:
            keep = superseded == superseded_rows.KEEP
            by = {} if keep else self._superseded(conn, filters.scope)
            asked = Leg(superseded_rows.room(limit, by, superseded), filters, now)
            ranked, mode, other = self._ranked(conn, query, embedding, asked, unrelated)
            hidden = by if superseded == superseded_rows.HIDE else ()
            page = ranking.end(ranked, limit, floor, hidden)
            results = page.results
            if ranked.hybrid and results:  # the candidates are partial rows: now the page whole
                found = self._rows(conn, [row["id"] for row in results], now, filters)
                results = [found[row["id"]] for row in results]
        rows = superseded_rows.current(results, by, limit, superseded)
        return SearchPage(mode, list(rows), other, page.why, page.explain, ranked.weighed)

    def _superseded(
        self, conn: sqlalchemy.Connection, scope: str | None = None
    ) -> dict[int, list[int]]:
        """{old: [new]}; with ``scope``, only what memories of that scope supersede."""
        found = (
            conn.execute(_ALL_SUPERSEDED)
            if scope is None
            else conn.execute(_SCOPE_SUPERSEDED, {"scope": scope})
        )
        out: dict[int, list[int]] = {}
        for old, new in found:
            out.setdefault(int(old), []).append(int(new))
        return out

    def _ranked(
        self, conn: sqlalchemy.Connection, parsed: ParsedQuery, embedding: Embedding | None,
        asked: Leg, unrelated: Noise | None,
    ) -> tuple[ranking.Ranked, str, Pin | None]:  # fmt: skip
        """Every candidate of ``asked.limit`` results, scored and best first (ranking.fuse or
        keyword_ranking), the search mode, and the stored pin when the query's embedding did
        not fit it."""
        stored = None if embedding is None else self.VECTORS.stored_pin(conn)
        now, filters = asked.now, asked.filters
        if embedding is not None and stored == embedding.pin:
            leg = Leg(ranking.leg_size(asked.limit), filters, now)
            keyword, nearest, counts = self._legs(conn, parsed, embedding, leg)
            ids = [*dict.fromkeys(i for i, _ in [*keyword, *nearest])]
            rows = self._candidates(conn, ids, now, filters)
            words = _words(parsed, counts)
            near = dict(nearest)
            missing = [i for i, _ in keyword if i in rows and i not in near]
            similar = self.VECTORS.similarities(conn, embedding, missing)
            fused = ranking.fuse(keyword, nearest, rows, words, unrelated, similar=similar)
            return fused, ranking.SEARCH_MODE_HYBRID, None
        # Keyword mode: no embedding, no vector yet, or another model's (``stored``).
        scored, counts = self._keyword_page(conn, parsed, now, asked.limit, filters)
        words = _words(parsed, counts)
        return ranking.keyword_ranking(scored, words), ranking.SEARCH_MODE_KEYWORD, stored

    @guarded
    def similar_candidates(
        self,
        embedding: Embedding | None,
        words: Callable[[], ParsedQuery | None],
        scope: str | None,
        now: int,
        limit: int,
        at_least: float | None = None,
    ) -> tuple[str | None, list[tuple[int, float | None, str]]]:
        """The memories of ``scope`` (None: those without one) nearest a memory about to be
        stored: ("cosine", (id, similarity, content) best first, only those ``at_least`` this
        similar) by its vector when pinned to its model, else ("keyword", (id, None, content)):
        those that may share enough of ``words()`` (storage.near, unranked), or (None, [])."""
        filters = Filters(scope=scope)
        with self._read() as conn:
            if embedding is not None and self.VECTORS.stored_pin(conn) == embedding.pin:
                ask = lambda n: self._nearest(conn, embedding, n, filters)  # noqa: E731
                nearest = near.widened(ask, limit, scope, at_least)
                nearest = [(i, s) for i, s in nearest if at_least is None or s >= at_least]
                found = self._rows(conn, [i for i, _ in nearest], now, Filters())
                return "cosine", [
                    (i, score, found[i]["content"])
                    for i, score in nearest
                    if i in found and found[i]["scope"] == scope
                ]
            asked = words()
            if asked is None:
                return None, []
            counts = self._near_counts(conn, asked.words)
            planned = near.plan(asked, counts)
            found = [] if planned is None else self._near_rows(conn, planned, scope)
            while len(found) >= near.NEAR_MAX_ROWS and planned is not None:
                planned = near.narrower(asked, counts, planned)
                found = found if planned is None else self._near_rows(conn, planned, scope)
            return "keyword", [(i, None, content) for i, content in found]

    def _near_counts(self, conn: sqlalchemy.Connection, words: Sequence[str]) -> list[int]:
        """How many rows hold each word, as near.plan takes them, counted without touching
        what searches cache."""
        raise NotImplementedError

    def _near_rows(
        self, conn: sqlalchemy.Connection, planned: near.NearPlan, scope: str | None
    ) -> list[tuple[int, str]]:
        """(id, content) of the memories of ``scope`` that ``planned`` names."""
        raise NotImplementedError

    def _nearest(
        self, conn: sqlalchemy.Connection, embedding: Embedding, limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        """The ``limit`` nearest (id, cosine similarity) passing ``filters`` (before the cut)."""
        raise NotImplementedError

    def _legs(
        self, conn: sqlalchemy.Connection, query: ParsedQuery, embedding: Embedding, leg: Leg
    ) -> Legs:
        """The keyword and the vector leg of a hybrid search, in a store pinned to
        ``embedding``'s model."""
        raise NotImplementedError

    def _keyword_page(
        self,
        conn: sqlalchemy.Connection,
        query: ParsedQuery,
        now: int,
        limit: int,
        filters: Filters,
    ) -> tuple[list[tuple[dict[str, Any], float]], WordCounts | None]:
        """The keyword mode's page: (memory, decay - bm25) best first, decay as of ``now``;
        and, for a plain query with a match, what the index says of its words."""
        raise NotImplementedError

    def _rows(
        self, conn: sqlalchemy.Connection, ids: list[int], now: int, filters: Filters
    ) -> dict[int, dict[str, Any]]:
        """The memories among ``ids`` that pass the filters, decay_score as of ``now``."""
        raise NotImplementedError

    def _candidates(
        self, conn: sqlalchemy.Connection, ids: list[int], now: int, filters: Filters
    ) -> dict[int, dict[str, Any]]:
        """What the fusion reads of a hybrid search's candidates that pass the filters: {id:
        {"id", "decay_score", "content", "tags"}} (the page's rows are read whole after)."""
        return self._rows(conn, ids, now, filters)

    @guarded
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
        params = {"ids": self._ids(ids), "per_result": per_result}
        return neighbour_edges(conn.execute(self.NEIGHBOURS_SQL, params))

    def _ids(self, ids: Sequence[int]) -> Any:
        """``ids`` as NEIGHBOURS_SQL takes them."""
        return list(ids)

    @guarded
    def stats(self, scopes: int) -> dict[str, Any]:
        with self._read() as conn:
            total, pending = conn.execute(_EMBEDDING_COUNTS).one()
            by_type = conn.execute(_BY_TYPE).all()
            by_scope = conn.execute(_BY_SCOPE, {"top": scopes}).all()
            links = conn.execute(_LINK_COUNT).scalar_one()
        return {
            "memories": int(total),
            "by_type": {kind: int(n) for kind, n in by_type},
            "by_scope": [(scope, int(n)) for scope, n in by_scope],
            "links": int(links),
            "pending_embedding": int(pending),
        }

    @guarded
    def ping(self) -> None:
        with self._read() as conn:
            conn.execute(_PING).all()

    # -- embeddings ----------------------------------------------------------------------

    @guarded
    def pin(self) -> Pin | None:
        with self._read() as conn:
            return self.VECTORS.stored_pin(conn)

    @guarded
    def pending(self, limit: int) -> list[tuple[int, str]]:
        with self._read() as conn:
            return [(int(i), content) for i, content in conn.execute(_PENDING, {"limit": limit})]

    @guarded
    def write_vectors(self, made: Sequence[tuple[int, str, Embedding]]) -> int:
        if not made:
            return 0
        written = 0
        with self._write() as conn:
            if not self.VECTORS.pinned(conn, made[0][2].pin):
                return 0
            for memory_id, content, embedding in made:
                params = {"memory_id": memory_id, "text": content}
                if conn.execute(_MARK_EMBEDDED, params).rowcount:
                    self._replace_vector(conn, memory_id, embedding.vector)
                    written += 1
        return written

    def _replace_vector(self, conn: sqlalchemy.Connection, memory_id: int, vector: bytes) -> None:
        self.VECTORS.remove(conn, memory_id)
        self.VECTORS.write(conn, memory_id, vector)

    @guarded
    def repin(self, pin: Pin) -> None:
        with self._write() as conn:
            self.VECTORS.drop(conn)
            self.VECTORS.create(conn, pin)
            conn.execute(_ALL_PENDING)

    @guarded
    def embedding_counts(self) -> tuple[int, int]:
        with self._read() as conn:
            total, pending = conn.execute(_EMBEDDING_COUNTS).one()
        return int(total), int(pending)

    @guarded
    def pending_count(self) -> int:
        with self._read() as conn:
            return int(conn.execute(text(_PENDING_COUNT)).scalar_one())


def _words(parsed: ParsedQuery, counts: WordCounts | None) -> Words | None:
    """A plain query's words as the relevance weighs them; None for FTS5 syntax."""
    if counts is None or not parsed.as_words:
        return None
    return Words.of(parsed.words, counts.rows, counts.hits, counts.average_length)
