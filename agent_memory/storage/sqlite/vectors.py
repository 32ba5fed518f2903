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
exact re-rank.
"""

from __future__ import annotations

import logging

import sqlalchemy
from sqlalchemy import delete, insert, select

from agent_memory.models import Embedding, Pin
from agent_memory.storage.base import PIN_KEYS, PROVIDER_KEY, pin_of
from agent_memory.storage.sqlite.schema import meta

log = logging.getLogger(__name__)

# Exact cosine over every stored vector up to this many (about 40 ms at 20,000, 384-d).
EXACT_KNN_MAX_VECTORS = 20_000
# Candidates the Hamming scan keeps for the exact re-rank: COARSE_FACTOR x the leg, at least
# COARSE_MIN_CANDIDATES. Sign bits of raw vectors are a poor guide for a real model's
# anisotropic vectors (recall@10 0.22 at 100,000 through this leg): it is the fallback.
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
_READ_PIN = select(meta.c.key, meta.c.value).where(meta.c.key.in_((*PIN_KEYS, PROVIDER_KEY)))
_DELETE_PIN = delete(meta).where(meta.c.key.in_((*PIN_KEYS, PROVIDER_KEY)))


def write(conn: sqlalchemy.Connection, memory_id: int, vector: bytes) -> None:
    conn.exec_driver_sql(_INSERT_FLOATS, (memory_id, vector))
    conn.exec_driver_sql(_INSERT_BITS, (memory_id, vector))


def remove(conn: sqlalchemy.Connection, memory_id: int) -> None:
    for statement in _DELETE_VECTOR:
        conn.exec_driver_sql(statement, (memory_id,))


def stored_pin(conn: sqlalchemy.Connection) -> Pin | None:
    return pin_of({key: value for key, value in conn.execute(_READ_PIN)})


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


def ranking(conn: sqlalchemy.Connection, embedding: Embedding, limit: int) -> list[int] | None:
    """The ``limit`` nearest ids by cosine distance (ties by id); None if another pin.

    Exact up to EXACT_KNN_MAX_VECTORS vectors, then a Hamming pass and an exact re-rank.
    """
    stored = stored_pin(conn)
    if stored is None:
        return []
    if stored != embedding.pin:
        return None
    vector = embedding.vector
    if conn.exec_driver_sql(COUNT).scalar_one() <= EXACT_KNN_MAX_VECTORS:
        found = conn.exec_driver_sql(_EXACT, (vector, limit)).all()
    else:
        candidates = max(COARSE_FACTOR * limit, COARSE_MIN_CANDIDATES)
        found = conn.exec_driver_sql(_COARSE, (vector, candidates, limit)).all()
    return [memory_id for memory_id, _ in found]
