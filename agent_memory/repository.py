"""All of agent-memory's SQL, and nothing else.

Plain rows go through the SQLAlchemy Core tables of :mod:`agent_memory.schema`; the FTS5
index and the vec0 vector table are raw SQL. Every write is one short ``BEGIN IMMEDIATE``
transaction (the serialized writer shared by every process on the file); reads run in a
deferred ``BEGIN`` so that a multi-statement read sees one snapshot. Arguments arrive
already validated.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import struct
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy
import sqlalchemy.dialects.sqlite
import sqlean
from sqlalchemy import bindparam, delete, func, insert, literal_column, select, update
from sqlalchemy.engine import Engine

from agent_memory import decay
from agent_memory.embedder import Embedding, Pin
from agent_memory.schema import memories, memory_links, meta
from agent_memory.vocabulary import MAX_EXPANDED_LINKS, PINNED_TYPES, SQLITE_INT_MAX

log = logging.getLogger(__name__)

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
# An unfiltered keyword search ranks the best KEYWORD_CANDIDATES rows by bm25 in the index
# alone (no join to memories for every match), then blends decay into those only; see
# Repository.keyword_search.
KEYWORD_CANDIDATES = 1_000
# Rows per INSERT statement of an import (12 values each, well under SQLite's 32,766
# bound parameters); see _insert_rows.
IMPORT_ROWS_PER_STATEMENT = 1_000
# After an import, the FTS5 index is merged down by this many pages per transaction (see
# Repository.merge_index).
MERGE_STEP_PAGES = 64
# The writer's page cache during bulk(), and SQLite's default it returns to, in KiB.
BULK_CACHE_KIB = 16_384
DEFAULT_CACHE_KIB = 2_000
# Commits between two background WAL checkpoints (a store writes about ten pages).
CHECKPOINT_EVERY_WRITES = 32
# SQLite's generic SQLITE_ERROR: what a MATCH expression FTS5 cannot parse raises
# (busy, I/O, full and corrupt databases have codes of their own).
_SQLITE_ERROR = 1
# What a statement stopped by the progress handler raises.
_SQLITE_INTERRUPT = 9
# SQLite VM instructions between two looks at a read's deadline (see Repository.deadline):
# about a millisecond of work, and no measurable cost.
PROGRESS_STEPS = 10_000
# Document frequencies of query words (for pruning the OR-of-words retry) are reused
# for this long, and while the number of indexed rows moves by less than this fraction:
# counting a word in every row costs 8 ms at 100,000 rows, and common words repeat.
FREQUENCY_CACHE_SECS = 60.0
FREQUENCY_CACHE_DRIFT = 0.01
FREQUENCY_CACHE_WORDS = 4_096
# FTS5's bm25 parameters (fixed in SQLite): term-frequency saturation and length weight.
BM25_K1 = 1.2
BM25_B = 0.75
# The embedding model pin, in meta: vectors of two pins never share the vector table.
PIN_KEYS = ("embedding_model", "embedding_dim", "embedding_prefixes")

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
# A keyword query "within" another MATCH expression scores only the rows that match it
# too (see Repository.keyword_search). The unary + keeps SQLite from handing the IN to
# FTS5 as a rowid constraint, which FTS5 answers with one seek per id (28 s instead of
# 40 ms for 8,000 ids at 100,000 memories); as a filter, bm25() runs for those rows only.
_WITHIN = sqlalchemy.text(
    "+memories_fts.rowid IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH :within)"
)
_LN2 = math.log(2)


# Called by the sweep between two batches, outside the write lock; True means stop now.
Pause = Callable[[], bool]


class DeadlinePassed(Exception):
    """A read ran past the deadline set with Repository.deadline, and was interrupted"""


class FtsQueryError(Exception):
    """FTS5 could not parse the MATCH expression"""

    def __init__(self, error: sqlean.OperationalError) -> None:
        super().__init__(str(error))
        self.error = error


def _decay() -> sqlalchemy.ColumnElement[float]:
    """The decay formula of :mod:`agent_memory.decay` at ``:now``, evaluated per row by SQLite.

    Written as ``exp(age * rate)`` with ``rate = -ln 2 / half_life`` folded into a constant:
    a search computes it for every matching row, and the division cost a third of the time
    (measured at 10,000 rows: 15.8 ms -> 12.9 ms for a question that matches them all).
    """
    rate = sqlalchemy.case(
        (
            memories.c.type.in_([literal_column(f"'{t}'") for t in sorted(PINNED_TYPES)]),
            literal_column(repr(-_LN2 / decay.PINNED_HALF_LIFE_SECS)),
        ),
        else_=literal_column(repr(-_LN2 / decay.HALF_LIFE_SECS)),
    )
    age = func.max(bindparam("now") - memories.c.last_accessed, literal_column("0"))
    return func.exp(age * rate)


def content_hash(content: str) -> int:
    """The 64-bit key under which imports look a memory's content up (memories.content_hash).

    A stored format: every row written since revision 0005 carries it, so changing it needs
    a revision that rewrites them. Equal hashes are only candidates; the caller compares
    (type, content, source) exactly.
    """
    digest = hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _memory(row: sqlalchemy.Row[Any]) -> dict[str, Any]:
    out = dict(zip(MEMORY_COLUMNS, row, strict=False))
    out["tags"] = json.loads(out["tags"])
    return out


def _filters(by_type: bool, by_tag: bool, by_scope: bool) -> list[Any]:
    """WHERE clauses bound to :type, :tag and :scope; a tag matches a whole tag exactly."""
    clauses: list[Any] = []
    if by_type:
        clauses.append(memories.c.type == bindparam("type"))
    if by_scope:
        clauses.append(memories.c.scope == bindparam("scope"))
    if by_tag:
        each = func.json_each(memories.c.tags).table_valued("value")
        clauses.append(select(1).select_from(each).where(each.c.value == bindparam("tag")).exists())
    return clauses


def _filter_params(
    memory_type: str | None, tag: str | None, scope: str | None
) -> tuple[tuple[bool, bool, bool], dict[str, Any]]:
    params = {"type": memory_type, "tag": tag, "scope": scope}
    key = (memory_type is not None, tag is not None, scope is not None)
    return key, {name: value for name, value in params.items() if value is not None}


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
    .values(decay_score=_decay())
)
_MAX_ID = select(func.max(memories.c.id))
_PING = select(memories.c.id).limit(1)
_FTS_PROBE = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT 1"
# FTS5's "averages" record (rowid 1 of its data table) starts with the number of rows
# indexed, the N of bm25's IDF; a phrase's row count is its n.
_FTS_AVERAGES = "SELECT block FROM memories_fts_data WHERE id = 1"
_PHRASE_ROWS = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?"
# Per row among a JSON array of ids: how often the phrase occurs (highlight() inserts one
# character before each occurrence). FTS5 walks the phrase's rows once (about 7 ns a row)
# and highlights only the ids; bm25() would have counted the phrase's rows all over again
# for every id. Lengths are counted in bytes: length() of text stops at a NUL, which FTS5
# indexes past (issue 18). _DOC_SIZES gives those rows' lengths in tokens (bm25's D).
_OCCURRENCES = (
    "SELECT rowid, length(CAST(highlight(memories_fts, 0, 'x', '') AS BLOB))"
    " - length(CAST(content AS BLOB)) "
    "FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))"
)
_MERGE_STEP = "INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', ?)"
_DOC_SIZES = "SELECT id, sz FROM memories_fts_docsize WHERE id IN (SELECT value FROM json_each(?))"

# Vectors live in three tables, made with the pin (the dimension is the model's), so they
# exist exactly when a pin does:
# - memory_vectors, vec0 with cosine distance: the float vectors, searched exactly (brute
#   force) while there are at most EXACT_KNN_MAX_VECTORS of them (about 40 ms at 20,000);
# - memory_vector_bits, one sign bit per dimension (96 bytes at 768): a Hamming scan of this
#   small table picks the candidates when there are more;
# - memory_vector_int8, the vector scaled to int8 by its own largest component (cosine does
#   not care about scale): the candidates are re-ranked by cosine over these. vec0 reads one
#   stored vector in about 0.4 ms, far too slow to re-rank hundreds, a plain table in ~5 us.
# One trigger takes a row's vector out of all three on forget and TTL expiry.
EXACT_KNN_MAX_VECTORS = 20_000
# Candidates the Hamming scan keeps for re-ranking: COARSE_FACTOR x the leg, at least
# COARSE_MIN_CANDIDATES (recall@10 against exact KNN is measured in bench/bench_hybrid.py).
COARSE_FACTOR = 10
COARSE_MIN_CANDIDATES = 500
_VECTOR_TABLES = ("memory_vectors", "memory_vector_bits", "memory_vector_int8")
_CREATE_VECTORS = (
    "CREATE VIRTUAL TABLE memory_vectors USING vec0("
    "memory_id integer primary key, embedding float[{dimension}] distance_metric=cosine)",
    "CREATE TABLE memory_vector_bits (memory_id INTEGER PRIMARY KEY, bits BLOB NOT NULL)",
    "CREATE TABLE memory_vector_int8 (memory_id INTEGER PRIMARY KEY, vector BLOB NOT NULL)",
    "CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN"
    + "".join(f" DELETE FROM {table} WHERE memory_id = old.id;" for table in _VECTOR_TABLES)
    + " END",
)
_DROP_VECTORS = (
    "DROP TRIGGER IF EXISTS memory_vectors_delete",
    *(f"DROP TABLE IF EXISTS {table}" for table in _VECTOR_TABLES),
)
_INSERT_VECTOR = "INSERT INTO memory_vectors (memory_id, embedding) VALUES (?, ?)"
_INSERT_BITS = "INSERT INTO memory_vector_bits (memory_id, bits) VALUES (?, vec_quantize_binary(?))"
_INSERT_INT8 = "INSERT INTO memory_vector_int8 (memory_id, vector) VALUES (?, ?)"
_DELETE_VECTOR = tuple(f"DELETE FROM {table} WHERE memory_id = ?" for table in _VECTOR_TABLES)
_VECTOR_COUNT = "SELECT count(*) FROM memory_vector_bits"
_VECTOR_KNN = "SELECT memory_id, distance FROM memory_vectors WHERE embedding MATCH ? AND k = ?"
_VECTOR_COARSE = """
    WITH candidates AS (
        SELECT memory_id FROM memory_vector_bits
        ORDER BY vec_distance_hamming(vec_bit(bits), vec_quantize_binary(?1)), memory_id
        LIMIT ?2
    )
    SELECT memory_id, vec_distance_cosine(vec_int8(vector), vec_int8(?3)) AS distance
    FROM candidates JOIN memory_vector_int8 USING (memory_id)
    ORDER BY distance, memory_id
    LIMIT ?4
"""
# When decay scores were last rewritten (unix seconds), shared by every process on the file.
DECAY_DONE_KEY = "decay_materialized_at"
_READ_DECAY_DONE = select(meta.c.value).where(meta.c.key == DECAY_DONE_KEY)
_WRITE_DECAY_DONE = (
    sqlalchemy.dialects.sqlite.insert(meta)
    .values(key=DECAY_DONE_KEY, value=bindparam("now"))
    .on_conflict_do_update(index_elements=["key"], set_={"value": bindparam("now")})
)
_READ_PIN = select(meta.c.key, meta.c.value).where(meta.c.key.in_(PIN_KEYS))
_DELETE_PIN = delete(meta).where(meta.c.key.in_(PIN_KEYS))
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
# Export: every row (expired ones too) in key order, every edge in (from, to, kind) order.
EXPORT_MEMORY_COLUMNS = (
    "id",
    "type",
    "content",
    "tags",
    "source",
    "scope",
    "created_at",
    "last_accessed",
    "access_count",
    "expires_at",
)


def _exported(column: sqlalchemy.Column[Any]) -> sqlalchemy.ColumnElement[Any]:
    """An integer column as an integer, whatever the row holds: SQLite's CAST clamps a REAL
    to the 64-bit range (an access_count an older version overflowed), and the format's
    integers must read back as integers."""
    if isinstance(column.type, sqlalchemy.Integer):
        return sqlalchemy.cast(column, sqlalchemy.Integer)
    return column


_EXPORT_MEMORIES = select(
    *(_exported(memories.c[name]) for name in EXPORT_MEMORY_COLUMNS)
).order_by(memories.c.id)
_EXPORT_LINKS = select(
    *(_exported(memory_links.c[name]) for name in ("from_id", "to_id", "kind", "created_at"))
).order_by(memory_links.c.from_id, memory_links.c.to_id, memory_links.c.kind)
# Rows whose content hash is one of a batch's, given as one JSON array: an expanding IN of
# 2,000 bound values cost more to compile than to run. The caller compares exactly.
_IDENTITIES = (
    "SELECT id, type, content, source, content_hash FROM memories WHERE content_hash IN "
    "(SELECT value FROM json_each(?))"
)
# content_hash 0: not known. A process still running code older than revision 0005 inserts
# rows without it, and a trigger resets it when such a process rewrites a row's content.
UNKNOWN_HASH = 0
_SET_HASH = "UPDATE memories SET content_hash = ? WHERE id = ?"
# Under the write lock, with AUTOINCREMENT, an import batch's rows take consecutive ids
# after the sequence's current value (checked after the insert).
_IMPORT_COLUMNS = (
    "type",
    "content",
    "tags",
    "source",
    "scope",
    "base_weight",
    "decay_score",
    "access_count",
    "created_at",
    "last_accessed",
    "expires_at",
    "embedding_status",
    "content_hash",
)


@functools.lru_cache(maxsize=8)
def _insert_rows(n: int) -> str:
    """One INSERT of ``n`` rows: FTS5 flushes its pending terms to a new segment at every
    statement's savepoint, so a row per statement wrote one segment per row."""
    row = f"({', '.join('?' for _ in _IMPORT_COLUMNS)})"
    return f"INSERT INTO memories ({', '.join(_IMPORT_COLUMNS)}) VALUES {', '.join([row] * n)}"


_SEQUENCE = "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0)"
_COUNT_MEMORIES = select(func.count()).select_from(memories)
_COUNT_LINKS = select(func.count()).select_from(memory_links)
_EMBEDDING_COUNTS = select(func.count(), func.count().filter(memories.c.embedding_status == 0))


_EXISTING = select(memories.c.id).where(memories.c.id.in_(bindparam("ids", expanding=True)))
# Raw SQL, so that an import passes all its links in one executemany: through SQLAlchemy,
# a statement per edge cost 1.3 s of a 100,000-memory import's 12 (10,000 links).
_LINK = (
    "INSERT INTO memory_links (from_id, to_id, kind, created_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT DO NOTHING"  # a repeat keeps the relation's original created_at
)
# Which of an import batch's edges, given as one JSON array of [from, to, kind], are there
# already (json_each first: one primary-key probe per edge).
_PRESENT_LINKS = (
    "SELECT l.from_id, l.to_id, l.kind FROM json_each(?) AS e CROSS JOIN memory_links AS l"
    " ON l.from_id = e.value ->> 0 AND l.to_id = e.value ->> 1 AND l.kind = e.value ->> 2"
)
# Taking a failed import out again: its rows by id range (their links go with them, ON
# DELETE CASCADE), and the edges it added between rows that were there before it.
_DELETE_ID_RANGE = "DELETE FROM memories WHERE id BETWEEN ? AND ?"
_DELETE_EDGE = "DELETE FROM memory_links WHERE from_id = ? AND to_id = ? AND kind = ?"
_UNLINK = delete(memory_links).where(
    memory_links.c.from_id == bindparam("a"),
    memory_links.c.to_id == bindparam("b"),
    memory_links.c.kind == bindparam("k"),
)


def _neighbours_statement() -> sqlalchemy.Select[Any]:
    """Every relation touching any of :ids, seen from that end, newest first, cut per result."""
    ids = bindparam("ids", expanding=True)
    links = memory_links.c

    def seen_from(end: Any, other: Any, direction: str) -> sqlalchemy.Select[Any]:
        return select(
            end.label("self"),
            other.label("other"),
            links.kind,
            literal_column(f"'{direction}'").label("direction"),
            links.created_at,
        ).where(end.in_(ids))

    edges = sqlalchemy.union_all(
        seen_from(links.from_id, links.to_id, "out"), seen_from(links.to_id, links.from_id, "in")
    ).subquery("edges")
    rank = (
        func.row_number()
        .over(
            partition_by=edges.c.self,
            order_by=(edges.c.created_at.desc(), edges.c.other.desc(), edges.c.kind),
        )
        .label("rank")
    )
    ranked = select(edges, rank).subquery("ranked")
    return (
        select(
            ranked.c.self,
            ranked.c.other,
            ranked.c.kind,
            ranked.c.direction,
            memories.c.type,
            memories.c.content,
            memories.c.tags,
        )
        .join_from(ranked, memories, memories.c.id == ranked.c.other)
        .where(ranked.c.rank <= bindparam("per_result"))
        .order_by(ranked.c.self, ranked.c.rank)
    )


_NEIGHBOURS = _neighbours_statement()


@functools.cache
def _list_statement(filters: tuple[bool, bool, bool], limited: bool) -> sqlalchemy.Select[Any]:
    stmt = (
        select(*_SELECT_MEMORY)
        .where(*_filters(*filters))
        .order_by(memories.c.created_at.desc(), memories.c.id.desc())
    )
    return stmt.limit(bindparam("limit")) if limited else stmt


def _matching(within: bool) -> list[Any]:
    """WHERE clauses: the rows matching :match (and :within, when ``within``)."""
    match = literal_column("memories_fts").op("MATCH")(bindparam("match"))
    return [match, _WITHIN] if within else [match]


@functools.cache
def _keyword_statement(filters: tuple[bool, bool, bool], within: bool) -> sqlalchemy.Select[Any]:
    current = _decay()
    score = (current - _BM25).label("score")
    return (
        select(*_SELECT_MEMORY, current.label("current_decay"), score)
        .select_from(_FTS.join(memories, memories.c.id == _FTS.c.rowid))
        .where(*_matching(within), *_filters(*filters))
        .order_by(score.desc(), memories.c.id.asc())
        .limit(bindparam("limit"))
    )


@functools.cache
def _keyword_ranking_statement(
    filters: tuple[bool, bool, bool], within: bool
) -> sqlalchemy.Select[Any]:
    """(id, bm25) by bm25 alone (best first, ties by id): the keyword leg of a hybrid search.

    With no filter, the index alone answers: no join to memories for every match (at
    100,000 memories a keyword's leg fell from 21 ms to 6 ms).
    """
    if not any(filters):
        return (
            select(_FTS.c.rowid, _BM25)
            .where(*_matching(within))
            .order_by(_BM25.asc(), _FTS.c.rowid.asc())
            .limit(bindparam("limit"))
        )
    return (
        select(memories.c.id, _BM25)
        .select_from(_FTS.join(memories, memories.c.id == _FTS.c.rowid))
        .where(*_matching(within), *_filters(*filters))
        .order_by(_BM25.asc(), memories.c.id.asc())
        .limit(bindparam("limit"))
    )


@functools.cache
def _blended_candidates_statement(within: bool) -> sqlalchemy.Select[Any]:
    """The best :cut rows by bm25 from the index alone, then decay blended into those only.

    Each row also carries how many candidates there were and the last one's bm25, which
    tell whether the page is decided (see keyword_search). At 100,000 memories joining
    every match to its row had cost half of a question's time.
    """
    ranked = (
        select(_FTS.c.rowid.label("rid"), _BM25.label("b"))
        .where(*_matching(within))
        .order_by(_BM25.asc(), _FTS.c.rowid.asc())
        .limit(bindparam("cut"))
        .cte("ranked")  # used three times: SQLite materializes it once
    )
    current = _decay()
    score = (current - ranked.c.b).label("score")
    return (
        select(
            *_SELECT_MEMORY,
            current.label("current_decay"),
            score,
            select(func.count()).select_from(ranked).scalar_subquery().label("candidates"),
            select(func.max(ranked.c.b)).scalar_subquery().label("worst"),
        )
        .select_from(ranked.join(memories, memories.c.id == ranked.c.rid))
        .order_by(score.desc(), memories.c.id.asc())
        .limit(bindparam("limit"))
    )


@functools.cache
def _rows_statement(filters: tuple[bool, bool, bool]) -> sqlalchemy.Select[Any]:
    """The rows among :ids that pass the filters, with their decay as of :now."""
    return select(*_SELECT_MEMORY, _decay().label("current_decay")).where(
        memories.c.id.in_(bindparam("ids", expanding=True)), *_filters(*filters)
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
        .returning(*_SELECT_MEMORY, memories.c.embedding_status)
    )


def _candidates_page(conn: sqlalchemy.Connection, params: dict[str, Any]) -> list[Any] | None:
    """An unfiltered keyword page from the bm25 candidates, or None when they cannot tell.

    Decay lies in (0, 1]: a row past the candidates scores at most the last candidate's
    -bm25 + 1. With every match a candidate, or the page's last score above that, the page
    is exactly the full query's.
    """
    cut = max(KEYWORD_CANDIDATES, params["limit"])
    if _indexed_rows(conn) <= cut:  # every row a candidate: the plain query is cheaper
        return None
    statement = _blended_candidates_statement("within" in params)
    rows = conn.execute(statement, {**params, "cut": cut}).all()
    if not rows or rows[0].candidates < cut:
        return rows
    if len(rows) == params["limit"] and rows[-1].score > 1.0 - rows[0].worst:
        return rows
    return None


def _indexed_rows(conn: sqlalchemy.Connection) -> int:
    """The row count FTS5 keeps in its averages record (what bm25 counts as N)."""
    block = conn.exec_driver_sql(_FTS_AVERAGES).scalar()
    return _varint(block) if block else 0


def _varint(blob: bytes) -> int:
    """SQLite's variable-length integer at the start of ``blob``."""
    return _varints(blob, 1)[0]


def _varints(blob: bytes, count: int) -> list[int]:
    """The first ``count`` of the variable-length integers SQLite wrote one after another."""
    values, at = [], 0
    while len(values) < count:
        value = 0
        for i in range(9):
            byte = blob[at] if at < len(blob) else 0
            at += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values


def bm25_idf(rows: int, hits: int) -> float:
    """The IDF FTS5's bm25 gives a phrase found in ``hits`` of ``rows`` rows.

    A cached count can exceed a row count read in an older snapshot by another thread: it
    is held to ``rows`` (found by the soak: a math domain error one search in 20,000).
    """
    hits = min(hits, rows)
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0 else 1e-6


def _probe(conn: sqlalchemy.Connection, match: str) -> None:
    """Raise FtsQueryError if FTS5 cannot parse ``match``.

    Asked on the driver connection: a statement refused through SQLAlchemy costs 0.3 ms of
    exception wrapping, twenty times the probe.
    """
    try:
        conn.connection.driver_connection.execute(_FTS_PROBE, (match,)).fetchall()
    except sqlean.OperationalError as exc:
        if exc.sqlite_errorcode == _SQLITE_ERROR:
            raise FtsQueryError(exc) from exc
        raise


def _int8(vector: bytes) -> bytes:
    """A float32 vector as int8, scaled so that its largest component is +-127."""
    values = struct.unpack(f"<{len(vector) // 4}f", vector)
    scale = 127.0 / (max(abs(v) for v in values) or 1.0)
    return struct.pack(f"<{len(values)}b", *(round(v * scale) for v in values))


def _write_vector(conn: sqlalchemy.Connection, memory_id: int, vector: bytes) -> None:
    conn.exec_driver_sql(_INSERT_VECTOR, (memory_id, vector))
    conn.exec_driver_sql(_INSERT_BITS, (memory_id, vector))
    conn.exec_driver_sql(_INSERT_INT8, (memory_id, _int8(vector)))


def _delete_vector(conn: sqlalchemy.Connection, memory_id: int) -> None:
    for statement in _DELETE_VECTOR:
        conn.exec_driver_sql(statement, (memory_id,))


def _stored_pin(conn: sqlalchemy.Connection) -> Pin | None:
    found = {key: value for key, value in conn.execute(_READ_PIN)}
    if set(found) != set(PIN_KEYS):
        return None
    return Pin(found["embedding_model"], int(found["embedding_dim"]), found["embedding_prefixes"])


def _create_vectors(conn: sqlalchemy.Connection, pin: Pin) -> None:
    """The pin and its vector table, together (inside the caller's write transaction)."""
    conn.execute(
        insert(meta),
        [
            {"key": "embedding_model", "value": pin.model},
            {"key": "embedding_dim", "value": str(pin.dimension)},
            {"key": "embedding_prefixes", "value": pin.prefixes},
        ],
    )
    for ddl in _CREATE_VECTORS:
        conn.exec_driver_sql(ddl.format(dimension=int(pin.dimension)))


def _pinned(conn: sqlalchemy.Connection, pin: Pin) -> bool:
    """True when vectors of ``pin`` belong in this database, pinning it if it has no pin yet."""
    stored = _stored_pin(conn)
    if stored is None:
        _create_vectors(conn, pin)
        log.info("embedding model pinned: %s", pin.describe())
        return True
    return stored == pin


class Snapshot:
    """The database as of one read transaction, streamed row by row (memory stays flat)."""

    BATCH_ROWS = 1_000

    def __init__(self, conn: sqlalchemy.Connection) -> None:
        self._conn = conn

    def counts(self) -> tuple[int, int]:
        """(memories, links)."""
        memories_count = self._conn.execute(_COUNT_MEMORIES).scalar_one()
        return int(memories_count), int(self._conn.execute(_COUNT_LINKS).scalar_one())

    def pin(self) -> Pin | None:
        return _stored_pin(self._conn)

    def memories(self) -> Iterator[dict[str, Any]]:
        rows = self._conn.execution_options(yield_per=self.BATCH_ROWS).execute(_EXPORT_MEMORIES)
        for row in rows:
            out = dict(zip(EXPORT_MEMORY_COLUMNS, row, strict=True))
            out["tags"] = json.loads(out["tags"])
            yield out

    def links(self) -> Iterator[tuple[int, int, str, int]]:
        rows = self._conn.execution_options(yield_per=self.BATCH_ROWS).execute(_EXPORT_LINKS)
        for row in rows:
            yield tuple(row)  # type: ignore[misc]


class Repository:
    """One writer connection per process (behind a lock), pooled connections for reads.

    WAL checkpoints fsync, which put a 10 ms stall on every ~90th store when the committing
    connection ran them inline at SQLite's default 1,000 pages. A background thread now
    checkpoints (PASSIVE: it never blocks a writer) every CHECKPOINT_EVERY_WRITES commits,
    and the sweep's batches are checkpointed one by one between them (see _in_batches); the
    inline checkpoint, raised to db.WAL_AUTOCHECKPOINT_PAGES, only finishes the few frames
    left and lets the next write restart the WAL.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._writer: sqlalchemy.Connection | None = None
        self._write_lock = threading.Lock()
        self._writes = 0
        self._checkpoint_due = threading.Event()
        self._closed = False
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop, name="agent-memory-checkpoint", daemon=True
        )
        self._checkpointer.start()
        self._frequencies: dict[str, tuple[int, int, float]] = {}  # word -> (n, N, when)
        self._held = threading.local()  # .last: seconds this thread's last write held the lock
        self._deadline = threading.local()  # .at: time.monotonic() this thread's reads end

    def _writer_connection(self) -> sqlalchemy.Connection:
        """The one writer connection (under the write lock), opened again if it was lost."""
        if self._writer is None or self._writer.invalidated or self._writer.closed:
            self._writer = self.engine.connect().execution_options(sqlite_write=True)
        return self._writer

    @contextmanager
    def _write(self) -> Iterator[sqlalchemy.Connection]:
        with self._write_lock:
            writer = self._writer_connection()
            with writer.begin():  # BEGIN IMMEDIATE: waits for other processes' writes
                started = time.perf_counter()
                yield writer
            self._held.last = time.perf_counter() - started  # from holding the lock to commit
            self._writes += 1
            if self._writes % CHECKPOINT_EVERY_WRITES == 0:
                self._checkpoint_due.set()

    def _checkpoint_loop(self) -> None:
        while True:
            self._checkpoint_due.wait()
            self._checkpoint_due.clear()
            if self._closed:
                return
            self._checkpoint()

    def _checkpoint(self) -> None:
        """Copy the WAL into the file (PASSIVE: it never waits for, nor blocks, a writer)."""
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlalchemy.exc.SQLAlchemyError as exc:  # the next one will catch up
            log.warning("WAL checkpoint failed: %s", getattr(exc, "orig", exc))

    def close(self) -> None:
        self._closed = True
        self._checkpoint_due.set()
        self._checkpointer.join()
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """A larger page cache on the writer for a long run of batches (an import).

        With SQLite's default 2 MiB, the indexes of a 100,000-row table no longer fit and
        every batch spilled and re-read pages: 16 MiB took an import from 16 s to 12 s.
        """
        with self._write_lock:
            self._pragma(f"cache_size = -{BULK_CACHE_KIB}")
        try:
            yield
        finally:
            with self._write_lock:
                self._pragma(f"cache_size = -{DEFAULT_CACHE_KIB}")

    def _pragma(self, pragma: str) -> None:
        """On the driver connection: through SQLAlchemy it would begin a transaction."""
        self._writer_connection().connection.driver_connection.execute(f"PRAGMA {pragma}")

    @contextmanager
    def deadline(self, secs: float) -> Iterator[None]:
        """This thread's reads stop with DeadlinePassed once ``secs`` have passed.

        A read's statements are interrupted by SQLite's progress handler, so that one
        costly search cannot hold a thread (a REST worker) for longer than that.
        """
        self._deadline.at = time.monotonic() + secs
        try:
            yield
        finally:
            self._deadline.at = None

    @contextmanager
    def _read(self) -> Iterator[sqlalchemy.Connection]:
        at = getattr(self._deadline, "at", None)
        with self.engine.connect() as conn:
            if at is None:
                with conn.begin():
                    yield conn
                return
            driver = conn.connection.driver_connection
            driver.set_progress_handler(lambda: time.monotonic() > at, PROGRESS_STEPS)
            try:
                with conn.begin():
                    yield conn
            except (sqlalchemy.exc.OperationalError, sqlean.OperationalError) as exc:
                if (
                    getattr(getattr(exc, "orig", exc), "sqlite_errorcode", None)
                    == _SQLITE_INTERRUPT
                ):
                    raise DeadlinePassed() from exc
                raise
            finally:
                driver.set_progress_handler(None, 0)

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
        embedding: Embedding | None = None,
    ) -> int:
        """Insert a row, and its vector in the same transaction when there is one that fits."""
        row = {
            "type": memory_type,
            "content": content,
            "tags": json.dumps(list(tags), ensure_ascii=False),
            "source": source,
            "scope": scope,
            "base_weight": decay.base_weight(memory_type),
            "decay_score": 1.0,
            "access_count": 0,
            "created_at": now,
            "last_accessed": now,
            "expires_at": expires_at,
            "content_hash": content_hash(content),
        }
        with self._write() as conn:
            embedded = embedding is not None and _pinned(conn, embedding.pin)
            row["embedding_status"] = int(embedded)
            memory_id = int(conn.execute(_INSERT, row).inserted_primary_key[0])
            if embedded:
                assert embedding is not None
                _write_vector(conn, memory_id, embedding.vector)
            return memory_id

    def list_memories(
        self,
        *,
        memory_type: str | None = None,
        tag: str | None = None,
        scope: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        return list(self.iter_memories(memory_type=memory_type, tag=tag, scope=scope, limit=limit))

    def iter_memories(
        self,
        *,
        memory_type: str | None = None,
        tag: str | None = None,
        scope: str | None = None,
        limit: int | None = None,
    ) -> Generator[dict[str, Any], None, None]:
        """The list's rows newest first, fetched one at a time from one read snapshot.

        An unlimited list can be far larger than memory should hold twice: the caller
        consumes a row before the next is read. The read transaction (and its pooled
        connection) stays open until the iterator is exhausted or closed.
        """
        key, params = _filter_params(memory_type, tag, scope)
        if limit is not None:
            params["limit"] = limit
        with self._read() as conn:
            for row in conn.execute(_list_statement(key, limit is not None), params):
                yield _memory(row)

    def keyword_search(
        self,
        match: str,
        *,
        now: int,
        limit: int,
        within: str | None = None,
        memory_type: str | None = None,
        tag: str | None = None,
        scope: str | None = None,
    ) -> list[tuple[dict[str, Any], float]]:
        """(memory, score) by ``score = -bm25 + decay`` descending, ties by id.

        The memory's decay_score is the decay as of ``now``. With ``within`` (a MATCH
        expression), only rows that match it too are scored: bm25 still counts every word
        of ``match``, but costs time only for those rows. FtsQueryError on bad syntax.
        """
        key, params = _filter_params(memory_type, tag, scope)
        params.update(match=match, now=now, limit=limit)
        if within is not None:
            params["within"] = within
        with self._read() as conn:
            _probe(conn, match)
            rows = None if any(key) else _candidates_page(conn, params)
            if rows is None:
                rows = conn.execute(_keyword_statement(key, within is not None), params).all()
        found = []
        for row in rows:
            memory = _memory(row)
            memory["decay_score"] = row.current_decay
            found.append((memory, row.score))
        return found

    def bump(self, ids: Sequence[int], now: int) -> None:
        """Mark rows as just used: the recency bump of returned search results."""
        if not ids:
            return
        with self._write() as conn:
            conn.execute(_BUMP, {"ids": list(ids), "now": now})

    def update_memory(
        self,
        memory_id: int,
        changes: dict[str, Any],
        now: int,
        embedding: Embedding | None = None,
    ) -> dict[str, Any] | None:
        """Apply ``changes`` (column -> value) and count it as a use; None if no such row.

        New content replaces the vector in the same transaction: with ``embedding`` (made
        from the new content) when it fits the pin, else the row is left pending. The
        result carries ``embedding_status``.
        """
        changes = dict(changes)
        params = {f"new_{name}": value for name, value in changes.items()}
        if "tags" in changes:
            params["new_tags"] = json.dumps(list(changes["tags"]), ensure_ascii=False)
        if "content" in changes:
            changes["content_hash"] = params["new_content_hash"] = content_hash(changes["content"])
        params.update(memory_id=memory_id, now=now)
        with self._write() as conn:
            embedded = False
            if "content" in changes:
                embedded = embedding is not None and _pinned(conn, embedding.pin)
                params["new_embedding_status"] = int(embedded)
                changes["embedding_status"] = None
            statement = _update_statement(tuple(sorted(changes)))
            row = conn.execute(statement, params).one_or_none()
            if row is None:
                return None
            if "content" in changes and _stored_pin(conn) is not None:
                _delete_vector(conn, memory_id)
                if embedded:
                    assert embedding is not None
                    _write_vector(conn, memory_id, embedding.vector)
        updated = _memory(row)
        updated["embedding_status"] = row.embedding_status
        return updated

    def delete_memory(self, memory_id: int) -> bool:
        with self._write() as conn:
            return conn.execute(_DELETE, {"memory_id": memory_id}).rowcount > 0

    # -- relations ------------------------------------------------------------------------

    def insert_link(
        self, a: int, b: int, kind: str, now: int, *, ids: tuple[int, int]
    ) -> int | None:
        """Store the edge a -[kind]-> b unless present; return the first of ``ids`` missing."""
        with self._write() as conn:
            found = set(conn.execute(_EXISTING, {"ids": list(ids)}).scalars())
            for memory_id in ids:
                if memory_id not in found:
                    return memory_id
            conn.exec_driver_sql(_LINK, (a, b, kind, now))
        return None

    def delete_link(self, a: int, b: int, kind: str) -> bool:
        with self._write() as conn:
            return conn.execute(_UNLINK, {"a": a, "b": b, "k": kind}).rowcount > 0

    def neighbours(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        """One row per (result, neighbour) edge, at most MAX_EXPANDED_LINKS per result."""
        if not ids:
            return []
        params = {"ids": list(ids), "per_result": MAX_EXPANDED_LINKS}
        with self._read() as conn:
            rows = conn.execute(_NEIGHBOURS, params).all()
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
            for row in rows
        ]

    # -- embeddings -----------------------------------------------------------------------

    def pin(self) -> Pin | None:
        with self._read() as conn:
            return _stored_pin(conn)

    def keyword_ranking(
        self,
        match: str,
        *,
        limit: int,
        within: str | None = None,
        memory_type: str | None = None,
        tag: str | None = None,
        scope: str | None = None,
    ) -> list[tuple[int, float]]:
        """(id, -bm25) best first, filters applied before the cut; ``within`` as in
        keyword_search. FtsQueryError on bad syntax."""
        key, params = _filter_params(memory_type, tag, scope)
        params.update(match=match, limit=limit)
        if within is not None:
            params["within"] = within
        with self._read() as conn:
            _probe(conn, match)
            rows = conn.execute(_keyword_ranking_statement(key, within is not None), params)
            return [(memory_id, -bm25) for memory_id, bm25 in rows]

    def word_rows(
        self, words: Sequence[str], clock: float, min_rows: int = 0
    ) -> tuple[int, dict[str, int]]:
        """(rows indexed, how many rows match each word as the phrase ``"word"``).

        A word's count is cached (see FREQUENCY_CACHE_SECS); ``clock`` is now. Below
        ``min_rows`` rows no word is counted (the counts are left empty). bm25_idf turns a
        count into the word's IDF.
        """
        with self._read() as conn:
            rows = _indexed_rows(conn)
            hits: dict[str, int] = {}
            if rows < min_rows:
                return rows, hits
            for word in set(words):
                cached = self._frequencies.get(word)
                if (
                    cached is None
                    or clock - cached[2] > FREQUENCY_CACHE_SECS
                    or abs(rows - cached[1]) > FREQUENCY_CACHE_DRIFT * cached[1]
                ):
                    found = conn.exec_driver_sql(_PHRASE_ROWS, (f'"{word}"',)).scalar_one()
                    if len(self._frequencies) >= FREQUENCY_CACHE_WORDS:
                        self._frequencies.clear()
                    cached = self._frequencies[word] = (found, rows, clock)
                hits[word] = cached[0]
        return rows, hits

    def term_scores(self, ids: Sequence[int], weights: dict[str, float]) -> dict[int, float]:
        """What the words would add to each row's -bm25, were they in the query.

        bm25 is a sum over the query's phrases of ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b
        + b * D / avgdl))``; ``weights`` gives each word's idf (times its repeats in the
        query), the rest is read here as FTS5 reads it, in one snapshot.
        """
        added = dict.fromkeys(ids, 0.0)
        if not ids or not weights:
            return added
        key = json.dumps(list(ids))
        with self._read() as conn:
            rows, tokens = _varints(conn.exec_driver_sql(_FTS_AVERAGES).scalar() or b"", 2)
            avgdl = tokens / rows  # bm25's own arithmetic, in its order, from here on
            norm = {
                memory_id: BM25_K1 * (1 - BM25_B + BM25_B * _varint(size) / avgdl)
                for memory_id, size in conn.exec_driver_sql(_DOC_SIZES, (key,))
            }
            for word, weight in weights.items():
                for memory_id, tf in conn.exec_driver_sql(_OCCURRENCES, (f'"{word}"', key)):
                    added[memory_id] += weight * ((tf * (BM25_K1 + 1.0)) / (tf + norm[memory_id]))
        return added

    def vector_ranking(self, embedding: Embedding, *, limit: int) -> list[int] | None:
        """The ``limit`` nearest ids by cosine distance (ties by id); None if another pin.

        Exact up to EXACT_KNN_MAX_VECTORS vectors, then a Hamming pass and an int8 re-rank.
        """
        with self._read() as conn:
            stored = _stored_pin(conn)
            if stored is None:
                return []
            if stored != embedding.pin:
                return None
            vector = embedding.vector
            if conn.exec_driver_sql(_VECTOR_COUNT).scalar_one() <= EXACT_KNN_MAX_VECTORS:
                rows = conn.exec_driver_sql(_VECTOR_KNN, (vector, limit)).all()
            else:
                candidates = max(COARSE_FACTOR * limit, COARSE_MIN_CANDIDATES)
                params = (vector, candidates, _int8(vector), limit)
                rows = conn.exec_driver_sql(_VECTOR_COARSE, params).all()
        return [memory_id for memory_id, _ in sorted(rows, key=lambda r: (r[1], r[0]))]

    def rows(
        self,
        ids: Sequence[int],
        *,
        now: int,
        memory_type: str | None = None,
        tag: str | None = None,
        scope: str | None = None,
    ) -> dict[int, dict[str, Any]]:
        """The memories among ``ids`` that pass the filters, decay_score as of ``now``."""
        if not ids:
            return {}
        key, params = _filter_params(memory_type, tag, scope)
        params.update(ids=list(ids), now=now)
        with self._read() as conn:
            found = conn.execute(_rows_statement(key), params).all()
        out = {}
        for row in found:
            memory = _memory(row)
            memory["decay_score"] = row.current_decay
            out[memory["id"]] = memory
        return out

    def pending(self, limit: int) -> list[tuple[int, str]]:
        """Rows whose vector is missing or stale, oldest first: (id, content)."""
        with self._read() as conn:
            return [tuple(r) for r in conn.execute(_PENDING, {"limit": limit}).all()]

    def write_vectors(self, made: Sequence[tuple[int, str, Embedding]]) -> int:
        """Store vectors made by the backfill; skip a row edited or forgotten meanwhile.

        Each item is (id, the text it was made from, its embedding). Returns how many
        were written.
        """
        if not made:
            return 0
        written = 0
        with self._write() as conn:
            if not _pinned(conn, made[0][2].pin):
                return 0
            for memory_id, text, embedding in made:
                marked = conn.execute(_MARK_EMBEDDED, {"memory_id": memory_id, "text": text})
                if marked.rowcount:
                    _delete_vector(conn, memory_id)
                    _write_vector(conn, memory_id, embedding.vector)
                    written += 1
        return written

    def repin(self, pin: Pin) -> None:
        """Start over with another model: drop every vector, pin ``pin``, mark all pending."""
        with self._write() as conn:
            for ddl in _DROP_VECTORS:
                conn.exec_driver_sql(ddl)
            conn.execute(_DELETE_PIN)
            _create_vectors(conn, pin)
            conn.execute(_ALL_PENDING)

    def embedding_counts(self) -> tuple[int, int]:
        """(rows, rows pending embedding)."""
        with self._read() as conn:
            total, pending = conn.execute(_EMBEDDING_COUNTS).one()
        return int(total), int(pending)

    # -- import ---------------------------------------------------------------------------

    def import_memories(
        self, batch: Sequence[dict[str, Any]], now: int
    ) -> list[tuple[str, int | None]]:
        """Insert a batch in one transaction; per record ("imported" | "duplicate", row id)
        or ("expired", None).

        A record already present on (type, content, source), source compared with IS, is
        not inserted; its id is the existing row's. A repeat inside the batch collapses onto
        the first the same way.
        """
        out: list[tuple[str, int | None]] = [("expired", None)] * len(batch)
        live = [
            (i, r) for i, r in enumerate(batch) if r["expires_at"] is None or r["expires_at"] > now
        ]
        hashes = {i: content_hash(r["content"]) for i, r in live}  # outside the lock
        with self._write() as conn:
            known: dict[tuple[str, str, str | None], int] = {}
            if live:
                keys = json.dumps(list({UNKNOWN_HASH, *hashes.values()}))
                found = conn.exec_driver_sql(_IDENTITIES, (keys,)).all()
                for memory_id, memory_type, content, source, _ in found:
                    known.setdefault((memory_type, content, source), memory_id)
                unknown = [(content_hash(r[2]), r[0]) for r in found if r[4] == UNKNOWN_HASH]
                if unknown:  # compared above all the same; hashed now, once
                    conn.connection.driver_connection.executemany(_SET_HASH, unknown)
            rows: list[dict[str, Any]] = []
            first: dict[tuple[str, str, str | None], int] = {}  # identity -> index in rows
            placed: list[tuple[int, tuple[str, str, str | None], bool]] = []
            for i, record in live:
                identity = (record["type"], record["content"], record["source"])
                if identity in known:
                    out[i] = ("duplicate", known[identity])
                    continue
                if identity in first:
                    placed.append((i, identity, False))
                    continue
                first[identity] = len(rows)
                placed.append((i, identity, True))
                rows.append(
                    (
                        record["type"],
                        record["content"],
                        json.dumps(list(record["tags"]), ensure_ascii=False),
                        record["source"],
                        record["scope"],
                        decay.base_weight(record["type"]),
                        1.0,
                        record["access_count"],
                        record["created_at"],
                        now,
                        record["expires_at"],
                        0,
                        hashes[i],
                    )
                )
            ids: list[int] = []
            if rows:
                base = conn.exec_driver_sql(_SEQUENCE).scalar_one()
                for start in range(0, len(rows), IMPORT_ROWS_PER_STATEMENT):
                    chunk = rows[start : start + IMPORT_ROWS_PER_STATEMENT]
                    flat = tuple(value for row in chunk for value in row)
                    conn.exec_driver_sql(_insert_rows(len(chunk)), flat)
                top = conn.exec_driver_sql(_SEQUENCE).scalar_one()
                if top != base + len(rows):  # cannot happen under the write lock; never guess
                    raise sqlalchemy.exc.InvalidRequestError(
                        f"import: ids {base}..{top} are not {len(rows)} consecutive ids"
                    )
                ids = list(range(base + 1, top + 1))
        for i, identity, inserted in placed:
            out[i] = ("imported" if inserted else "duplicate", ids[first[identity]])
        return out

    def merge_index(self) -> int:
        """Merge the FTS5 index's segments into one, a step per short transaction; the steps.

        An import flushes a segment per batch, and FTS5 leaves such an index half merged:
        the stores after a 100,000-row import had a p99 of 15-20 ms (1.5 ms before) while
        each small write finished the merging. A negative 'merge' merges all segments,
        MERGE_STEP_PAGES pages at a time; a step that changes nothing means it is done.
        """
        steps = 0
        while True:
            with self._write() as conn:
                driver = conn.connection.driver_connection
                before = driver.total_changes
                conn.exec_driver_sql(_MERGE_STEP, (-MERGE_STEP_PAGES,))
                done = driver.total_changes - before < 2  # FTS5's own "no work" sign
            steps += 1
            if done:
                return steps

    def import_links(
        self, edges: Sequence[tuple[int, int, str, int]]
    ) -> list[tuple[int, int, str]]:
        """Insert (a, b, kind, created_at) edges in one transaction; the (a, b, kind) of
        those that were new, each once (what remove_imported takes out again)."""
        with self._write() as conn:
            driver = conn.connection.driver_connection
            keys = json.dumps([edge[:3] for edge in edges])
            present = set(driver.execute(_PRESENT_LINKS, (keys,)).fetchall())
            added = driver.executemany(_LINK, edges).rowcount
            new = list(dict.fromkeys(edge[:3] for edge in edges if edge[:3] not in present))
            if len(new) != added:  # cannot happen under the write lock; never guess
                raise sqlalchemy.exc.InvalidRequestError(
                    f"import: {added} links inserted, {len(new)} expected"
                )
        return new

    def remove_imported(
        self, ranges: Sequence[tuple[int, int]], edges: Sequence[tuple[int, int, str]]
    ) -> int:
        """Take a failed import out in one transaction: the rows it inserted, given as
        (first id, last id) ranges, with their links, and the ``edges`` it added between
        rows it did not insert. Returns the rows removed."""
        with self._write() as conn:
            driver = conn.connection.driver_connection
            driver.executemany(_DELETE_EDGE, edges)
            return driver.executemany(_DELETE_ID_RANGE, ranges).rowcount

    # -- export ---------------------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """One read transaction over the whole file: counts and rows agree with each other."""
        with self._read() as conn:
            yield Snapshot(conn)

    def ping(self) -> None:
        """A cheap read that fails when the store cannot be read."""
        with self._read() as conn:
            conn.execute(_PING).all()

    # -- lifecycle ------------------------------------------------------------------------

    def delete_expired(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        """Remove every row whose expiry has come (``expires_at <= now``), in batches.

        Returns (rows removed, the longest a batch held the write lock, in seconds).
        """

        def batch(conn: sqlalchemy.Connection, rows: int) -> tuple[int, bool]:
            gone = conn.execute(_DELETE_EXPIRED, {"now": now, "batch": rows}).rowcount
            return gone, gone == rows

        return self._in_batches(batch, pause)

    def materialize_decay(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        """Rewrite every stored decay_score, walking the ids in windows; as delete_expired."""
        with self._read() as conn:
            top = conn.execute(_MAX_ID).scalar() or 0
        after = 0

        def batch(conn: sqlalchemy.Connection, rows: int) -> tuple[int, bool]:
            nonlocal after
            window = {"now": now, "after": after, "upto": after + rows}
            after += rows
            done = conn.execute(_DECAY_WINDOW, window).rowcount
            if after >= top:  # the last window: say when, for the other processes
                conn.execute(_WRITE_DECAY_DONE, {"now": str(now)})
            return done, after < top

        return self._in_batches(batch, pause) if top else (0, 0.0)

    def decay_materialized_at(self) -> int | None:
        """When any process last finished rewriting the decay scores."""
        with self._read() as conn:
            value = conn.execute(_READ_DECAY_DONE).scalar()
        try:
            return None if value is None else int(value)
        except ValueError:
            return None  # not ours to trust: the next sweep rewrites it

    def _in_batches(
        self, batch: Callable[[sqlalchemy.Connection, int], tuple[int, bool]], pause: Pause | None
    ) -> tuple[int, float]:
        """Run ``batch(conn, rows) -> (done, more)`` one transaction at a time until done.

        Between two batches ``pause()`` runs outside the lock (the sweep waits there so a
        waiting writer gets its turn); it returns True to stop early.
        """
        rows, done, longest = SWEEP_FIRST_BATCH_ROWS, 0, 0.0
        while True:
            with self._write() as conn:
                count, more = batch(conn, rows)
            held = self._held.last
            # A batch writes hundreds of pages: checkpoint them here, outside the lock.
            # Left to every CHECKPOINT_EVERY_WRITES commits, the WAL reached
            # db.WAL_AUTOCHECKPOINT_PAGES every few batches at 1,000,000 memories, and the
            # inline checkpoint held the write lock in a batch's commit for about 200 ms.
            if count:
                self._checkpoint()
            done, longest = done + count, max(longest, held)
            if not more or (pause is not None and pause()):
                return done, longest
            scaled = int(rows * SWEEP_HOLD_TARGET_SECS / max(held, 1e-4))
            rows = max(1, min(SWEEP_MAX_BATCH_ROWS, scaled, 2 * rows))
