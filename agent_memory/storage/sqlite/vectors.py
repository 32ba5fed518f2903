"""Vectors in a SQLite store: the pin in ``meta``, three sqlite-vec tables, the vector leg.

Vectors live in three tables, made together with the pin (their dimension is the model's),
so they exist exactly when a pin does:
- memory_vectors, vec0 with cosine distance: the float vectors, searched exactly (brute
  force) while there are at most EXACT_KNN_MAX_VECTORS of them (about 40 ms at 20,000);
- memory_vector_bits, one sign bit per dimension (96 bytes at 768): a Hamming scan of this
  small table picks the candidates when there are more;
- memory_vector_int8, the vector scaled to int8 by its own largest component (cosine does
  not care about scale): the candidates are re-ranked by cosine over these. vec0 reads one
  stored vector in about 0.4 ms, far too slow to re-rank hundreds, a plain table in ~5 us.
One trigger takes a row's vector out of all three on forget and TTL expiry.
"""

from __future__ import annotations

import logging
import struct

import sqlalchemy
from sqlalchemy import delete, insert, select

from agent_memory.models import OLLAMA, Embedding, Pin
from agent_memory.storage.sqlite.schema import meta

log = logging.getLogger(__name__)

EXACT_KNN_MAX_VECTORS = 20_000
# Candidates the Hamming scan keeps for re-ranking: COARSE_FACTOR x the leg, at least
# COARSE_MIN_CANDIDATES (recall@10 against exact KNN is measured in bench/bench_hybrid.py).
COARSE_FACTOR = 10
COARSE_MIN_CANDIDATES = 500
# The pin, in meta. A pin written before providers existed has no provider key: Ollama's.
PIN_KEYS = ("embedding_model", "embedding_dim", "embedding_prefixes")
PROVIDER_KEY = "embedding_provider"

_TABLES = ("memory_vectors", "memory_vector_bits", "memory_vector_int8")
_CREATE = (
    "CREATE VIRTUAL TABLE memory_vectors USING vec0("
    "memory_id integer primary key, embedding float[{dimension}] distance_metric=cosine)",
    "CREATE TABLE memory_vector_bits (memory_id INTEGER PRIMARY KEY, bits BLOB NOT NULL)",
    "CREATE TABLE memory_vector_int8 (memory_id INTEGER PRIMARY KEY, vector BLOB NOT NULL)",
    "CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN"
    + "".join(f" DELETE FROM {table} WHERE memory_id = old.id;" for table in _TABLES)
    + " END",
)
_DROP = (
    "DROP TRIGGER IF EXISTS memory_vectors_delete",
    *(f"DROP TABLE IF EXISTS {table}" for table in _TABLES),
)
_INSERT_VECTOR = "INSERT INTO memory_vectors (memory_id, embedding) VALUES (?, ?)"
_INSERT_BITS = "INSERT INTO memory_vector_bits (memory_id, bits) VALUES (?, vec_quantize_binary(?))"
_INSERT_INT8 = "INSERT INTO memory_vector_int8 (memory_id, vector) VALUES (?, ?)"
_DELETE_VECTOR = tuple(f"DELETE FROM {table} WHERE memory_id = ?" for table in _TABLES)
_COUNT = "SELECT count(*) FROM memory_vector_bits"
_KNN = "SELECT memory_id, distance FROM memory_vectors WHERE embedding MATCH ? AND k = ?"
_COARSE = """
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
_READ_PIN = select(meta.c.key, meta.c.value).where(meta.c.key.in_((*PIN_KEYS, PROVIDER_KEY)))
_DELETE_PIN = delete(meta).where(meta.c.key.in_((*PIN_KEYS, PROVIDER_KEY)))


def int8(vector: bytes) -> bytes:
    """A float32 vector as int8, scaled so that its largest component is +-127."""
    values = struct.unpack(f"<{len(vector) // 4}f", vector)
    scale = 127.0 / (max(abs(v) for v in values) or 1.0)
    return struct.pack(f"<{len(values)}b", *(round(v * scale) for v in values))


def write(conn: sqlalchemy.Connection, memory_id: int, vector: bytes) -> None:
    conn.exec_driver_sql(_INSERT_VECTOR, (memory_id, vector))
    conn.exec_driver_sql(_INSERT_BITS, (memory_id, vector))
    conn.exec_driver_sql(_INSERT_INT8, (memory_id, int8(vector)))


def remove(conn: sqlalchemy.Connection, memory_id: int) -> None:
    for statement in _DELETE_VECTOR:
        conn.exec_driver_sql(statement, (memory_id,))


def stored_pin(conn: sqlalchemy.Connection) -> Pin | None:
    found = {key: value for key, value in conn.execute(_READ_PIN)}
    if not set(PIN_KEYS) <= set(found):
        return None
    return Pin(
        found["embedding_model"],
        int(found["embedding_dim"]),
        found["embedding_prefixes"],
        found.get(PROVIDER_KEY, OLLAMA),
    )


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
        conn.exec_driver_sql(ddl.format(dimension=int(pin.dimension)))


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

    Exact up to EXACT_KNN_MAX_VECTORS vectors, then a Hamming pass and an int8 re-rank.
    """
    stored = stored_pin(conn)
    if stored is None:
        return []
    if stored != embedding.pin:
        return None
    vector = embedding.vector
    if conn.exec_driver_sql(_COUNT).scalar_one() <= EXACT_KNN_MAX_VECTORS:
        rows = conn.exec_driver_sql(_KNN, (vector, limit)).all()
    else:
        candidates = max(COARSE_FACTOR * limit, COARSE_MIN_CANDIDATES)
        params = (vector, candidates, int8(vector), limit)
        rows = conn.exec_driver_sql(_COARSE, params).all()
    return [memory_id for memory_id, _ in sorted(rows, key=lambda r: (r[1], r[0]))]
