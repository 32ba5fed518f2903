"""Vectors in a SQLite store: the pin in ``meta``, the vector tables, and the SQL vector leg.

Two tables, made together with the pin (their dimension is the model's), so they exist
exactly when a pin does:
- memory_vector_floats: each vector as float32 in a plain table (a row is read by id in a
  few microseconds), for exact cosine;
- memory_vector_bits: one sign bit per dimension (48 bytes at 384): a Hamming scan of this
  small table picks candidates when there are too many vectors to compare exactly in SQL.
Every insert into or delete from memory_vector_floats appends the memory's id to
``vector_changes`` (revision 0006), in the same transaction: each process's in-memory index
(vector_index.py) catches up from that log. One trigger takes a row's vectors out of both
tables on forget and TTL expiry.

The SQL leg here serves until a process's index is loaded (and always, should numpy, a
dependency, be missing): exact up to EXACT_KNN_MAX_VECTORS vectors, then sign bits and an
exact re-rank. Type, tag and scope filters apply before either cut: the leg ranks only the
memories that pass them (exact when at most EXACT_KNN_MAX_VECTORS do), so a filtered search
recalls as well as an unfiltered one.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

import sqlalchemy
from sqlalchemy import (
    bindparam,
    column,
    delete,
    func,
    insert,
    literal_column,
    or_,
    select,
    table,
)

from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.storage.base import PIN_KEYS, PROVIDER_KEY, pin_of
from agent_memory.storage.sqlite import rows
from agent_memory.storage.sqlite.schema import memories, meta

log = logging.getLogger(__name__)

# Exact cosine over every stored vector up to this many: past it, a full scan costs more than
# the coarse pass and its re-rank.
EXACT_KNN_MAX_VECTORS = 20_000
# Candidates the Hamming scan keeps for the exact re-rank: COARSE_FACTOR x the leg, at least
# COARSE_MIN_CANDIDATES. Sign bits of raw vectors are a poor guide for a real model's
# anisotropic vectors (this leg finds few of their true ten nearest): it is the fallback
# until the process's vector index is loaded.
COARSE_FACTOR = 10
COARSE_MIN_CANDIDATES = 500

TABLES = ("memory_vector_floats", "memory_vector_bits")
_CREATE = (
    "CREATE TABLE memory_vector_floats (memory_id INTEGER PRIMARY KEY, vector BLOB NOT NULL)",
    "CREATE TABLE memory_vector_bits (memory_id INTEGER PRIMARY KEY, bits BLOB NOT NULL)",
    "CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN"
    + "".join(f" DELETE FROM {table} WHERE memory_id = old.id;" for table in TABLES)
    + " END",
    "CREATE TRIGGER vector_logged_insert AFTER INSERT ON memory_vector_floats BEGIN"
    " INSERT INTO vector_changes (memory_id) VALUES (new.memory_id); END",
    "CREATE TRIGGER vector_logged_delete AFTER DELETE ON memory_vector_floats BEGIN"
    " INSERT INTO vector_changes (memory_id) VALUES (old.memory_id); END",
)
_DROP = (
    "DROP TRIGGER IF EXISTS memory_vectors_delete",
    "DROP TRIGGER IF EXISTS vector_logged_insert",
    "DROP TRIGGER IF EXISTS vector_logged_delete",
    *(f"DROP TABLE IF EXISTS {table}" for table in TABLES),
    "DELETE FROM vector_changes",
)
_INSERT_FLOATS = "INSERT INTO memory_vector_floats (memory_id, vector) VALUES (?, ?)"
_INSERT_BITS = "INSERT INTO memory_vector_bits (memory_id, bits) VALUES (?, vec_quantize_binary(?))"
_DELETE_VECTOR = tuple(f"DELETE FROM {table} WHERE memory_id = ?" for table in TABLES)
COUNT = "SELECT count(*) FROM memory_vector_floats"
_EXACT = """
    SELECT memory_id, vec_distance_cosine(vector, ?1) AS distance FROM memory_vector_floats
    ORDER BY distance, memory_id LIMIT ?2
"""
_COARSE = """
    WITH candidates AS (
        SELECT memory_id FROM memory_vector_bits
        ORDER BY vec_distance_hamming(vec_bit(bits), vec_quantize_binary(?1)), memory_id
        LIMIT ?2
    )
    SELECT memory_id, vec_distance_cosine(vector, ?1) AS distance
    FROM candidates JOIN memory_vector_floats USING (memory_id)
    ORDER BY distance, memory_id
    LIMIT ?3
"""
# The vector tables, for the filtered statements (built with the filters of rows.py).
_floats = table("memory_vector_floats", column("memory_id"), column("vector"))
_bits = table("memory_vector_bits", column("memory_id"), column("bits"))
_PIN_NAMES = (*PIN_KEYS, PROVIDER_KEY)
_READ_PIN = f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' * len(_PIN_NAMES))})"
_DELETE_PIN = delete(meta).where(meta.c.key.in_(_PIN_NAMES))


def write(conn: sqlalchemy.Connection, memory_id: int, vector: bytes) -> None:
    conn.exec_driver_sql(_INSERT_FLOATS, (memory_id, vector))
    conn.exec_driver_sql(_INSERT_BITS, (memory_id, vector))


def remove(conn: sqlalchemy.Connection, memory_id: int) -> None:
    for statement in _DELETE_VECTOR:
        conn.exec_driver_sql(statement, (memory_id,))


def stored_pin(conn: sqlalchemy.Connection) -> Pin | None:
    """The pin, read on the driver: every store and search reads it, and SQLAlchemy's
    execution layer costs more than the read. In the
    caller's transaction, begun here if it was not, as conn.execute would."""
    if not conn.in_transaction():
        conn.begin()
    found = conn.connection.driver_connection.execute(_READ_PIN, _PIN_NAMES).fetchall()
    return pin_of(dict(found))


def create(conn: sqlalchemy.Connection, pin: Pin) -> None:
    """The pin and its vector tables, together (inside the caller's write transaction)."""
    conn.execute(
        insert(meta),
        [
            {"key": "embedding_model", "value": pin.model},
            {"key": "embedding_dim", "value": str(pin.dimension)},
            {"key": "embedding_prefixes", "value": pin.prefixes},
            {"key": PROVIDER_KEY, "value": pin.provider},
        ],
    )
    for ddl in _CREATE:
        conn.exec_driver_sql(ddl)


def drop(conn: sqlalchemy.Connection) -> None:
    """Every vector and the pin (inside the caller's write transaction)."""
    for ddl in _DROP:
        conn.exec_driver_sql(ddl)
    conn.execute(_DELETE_PIN)


def pinned(conn: sqlalchemy.Connection, pin: Pin) -> bool:
    """True when vectors of ``pin`` belong in this database, pinning it if it has no pin yet."""
    stored = stored_pin(conn)
    if stored is None:
        create(conn, pin)
        log.info("embedding model pinned: %s", pin.describe())
        return True
    return stored == pin


def ranking(
    conn: sqlalchemy.Connection, embedding: Embedding, limit: int, filters: Filters | None = None
) -> list[tuple[int, float]] | None:
    """The ``limit`` nearest (id, cosine similarity), by cosine distance (ties by id), among
    the memories that pass ``filters``; None if another pin.

    Exact up to EXACT_KNN_MAX_VECTORS vectors (or passing memories), then a Hamming pass over
    the passing memories' sign bits and an exact re-rank.
    """
    stored = stored_pin(conn)
    if stored is None:
        return []
    if stored != embedding.pin:
        return None
    vector = embedding.vector
    candidates = max(COARSE_FACTOR * limit, COARSE_MIN_CANDIDATES)
    if filters:
        key, params = _passing(filters)
        params.update(q=vector, limit=limit, candidates=candidates)
        bound = {**params, "bound": EXACT_KNN_MAX_VECTORS + 1}
        few = conn.execute(_passing_count(key), bound).scalar_one() <= EXACT_KNN_MAX_VECTORS
        statement = _filtered_exact(key) if few else _filtered_coarse(key)
        found = conn.execute(statement, params).all()
    elif conn.exec_driver_sql(COUNT).scalar_one() <= EXACT_KNN_MAX_VECTORS:
        found = conn.exec_driver_sql(_EXACT, (vector, limit)).all()
    else:
        found = conn.exec_driver_sql(_COARSE, (vector, candidates, limit)).all()
    # A zero vector has no cosine (NULL): it is nobody's neighbour.
    return [(memory_id, 1.0 - distance) for memory_id, distance in found if distance is not None]


_SIMILARITIES = (
    "SELECT memory_id, vec_distance_cosine(vector, ?) FROM memory_vector_floats"
    " WHERE memory_id IN (SELECT value FROM json_each(?))"
)


def similarities(
    conn: sqlalchemy.Connection, embedding: Embedding, ids: list[int]
) -> dict[int, float]:
    """The cosine similarity to ``embedding`` of each of ``ids`` that has a vector (in a
    store pinned to its model): what the fusion reads of a candidate the vector leg did not
    bring."""
    if not ids:
        return {}
    found = conn.exec_driver_sql(_SIMILARITIES, (embedding.vector, json.dumps(ids)))
    return {memory_id: 1.0 - d for memory_id, d in found if d is not None}


def passing_ids(conn: sqlalchemy.Connection, filters: Filters) -> str:
    """The ids of the memories that pass ``filters`` in this snapshot, comma-separated (one
    string is far cheaper to read than as many rows)."""
    key, params = _passing(filters)
    return conn.execute(_passing_ids(key), params).scalar_one() or ""


PassingKey = tuple[rows.FilterKey, bool]


def _passing(filters: Filters) -> tuple[PassingKey, dict[str, Any]]:
    """The statements' key and parameters (see _passing_clauses)."""
    params = rows.filter_params(filters)
    text = filters.tag is not None and filters.tag.isascii()
    if text:
        quoted = json.dumps(filters.tag)
        params["quoted"] = quoted
        for name, form in _TAG_FORMS.items():
            params[name] = form.format(quoted)
    return (rows.filter_key(filters), text), params


# How a tag's JSON string sits in the tags' JSON text as json.dumps writes a list, which
# every writer of the column uses: alone, first, in the middle, last.
_TAG_FORMS = {"alone": "[{}]", "first": "[{}, ", "middle": ", {}, ", "last": ", {}]"}


def _passing_clauses(key: PassingKey) -> tuple[Any, ...]:
    """The filters of rows.py, with a faster tag test for an ASCII tag (exact all the same).

    The tag's JSON string must occur in the tags' JSON text (for ASCII, json.dumps writes
    it one way, escaped or not); where it does, it is a whole element when it stands between
    the list's brackets and separators (a quote inside a string is escaped, so such a match
    cannot start or end inside one), else json_each decides, on the few rows where the
    tag might be rather than on every row.
    """
    filter_key, text = key
    by_type, by_tag, by_scope, by_writer, by_time = filter_key
    clauses = rows.filter_clauses((by_type, False, by_scope, by_writer, by_time))
    if not by_tag:
        return clauses
    (exact,) = rows.filter_clauses((False, True, False, False, False))
    if not text:
        return (*clauses, exact)
    tags = memories.c.tags
    whole = [func.instr(tags, bindparam(name)) > 0 for name in _TAG_FORMS]
    return (*clauses, func.instr(tags, bindparam("quoted")) > 0, or_(*whole, exact))


@functools.cache
def _passing_ids(key: PassingKey) -> sqlalchemy.Select[Any]:
    return select(func.group_concat(memories.c.id)).where(*_passing_clauses(key))


@functools.cache
def _passing_count(key: PassingKey) -> sqlalchemy.Select[Any]:
    """How many memories pass, counted up to :bound only."""
    passing = select(literal_column("1")).where(*_passing_clauses(key)).limit(bindparam("bound"))
    return select(func.count()).select_from(passing.subquery())


def _cosine() -> Any:
    return func.vec_distance_cosine(_floats.c.vector, bindparam("q")).label("distance")


@functools.cache
def _filtered_exact(key: PassingKey) -> sqlalchemy.Select[Any]:
    """Exact cosine over the vectors of the passing memories."""
    distance = _cosine()
    return (
        select(_floats.c.memory_id, distance)
        .join_from(memories, _floats, _floats.c.memory_id == memories.c.id)
        .where(*_passing_clauses(key))
        .order_by(distance, _floats.c.memory_id)
        .limit(bindparam("limit"))
    )


@functools.cache
def _filtered_coarse(key: PassingKey) -> sqlalchemy.Select[Any]:
    """_COARSE over the passing memories' sign bits only."""
    passing = select(memories.c.id).where(*_passing_clauses(key))
    hamming = func.vec_distance_hamming(
        func.vec_bit(_bits.c.bits), func.vec_quantize_binary(bindparam("q"))
    )
    candidates = (
        select(_bits.c.memory_id)
        .where(_bits.c.memory_id.in_(passing))
        .order_by(hamming, _bits.c.memory_id)
        .limit(bindparam("candidates"))
        .cte("candidates")
    )
    distance = _cosine()
    return (
        select(candidates.c.memory_id, distance)
        .join_from(candidates, _floats, _floats.c.memory_id == candidates.c.memory_id)
        .order_by(distance, candidates.c.memory_id)
        .limit(bindparam("limit"))
    )


_EVERY = (
    "SELECT v.memory_id, v.vector FROM memory_vector_floats AS v"
    " JOIN memories AS m ON m.id = v.memory_id"
)


def every(conn: sqlalchemy.Connection, scope: str | None) -> list[tuple[int, bytes]]:
    """(id, float32 vector) of every memory of ``scope`` (None: of all) that has one."""
    if scope is None:
        found = conn.exec_driver_sql(_EVERY)
    else:
        found = conn.exec_driver_sql(_EVERY + " WHERE m.scope = ?", (scope,))
    return [(int(i), bytes(v)) for i, v in found]
