"""Vectors in a PostgreSQL store: the pin in ``meta``, a pgvector table made with it, and the
vector leg (HNSW, cosine).

The table's dimension is the pinned model's, so it is made together with the pin (as on
SQLite) under an advisory lock: two servers storing a first vector at once pin once. Its
HNSW index answers the vector leg approximately; ``hnsw.ef_search`` is raised to the leg's
size (the default 40 returns at most 40 rows).

Type, tag and scope filters apply before the leg's cut, by one of two plans:
- exact: the distance of every passing memory's vector, no index; its cost grows with the
  memories that pass;
- the index: the filters sit in the WHERE clause of the HNSW query, and pgvector's iterative
  scan (0.8; ``hnsw.iterative_scan = relaxed_order``, the rows sorted again after) goes on
  through the graph until the leg is full of passing memories. It visits about
  leg x vectors / passing tuples, so its cost falls as more memories pass.
The leg is exact when few enough pass that the exact plan costs less (see _exact_bound),
counted up to that bound by the filters' own indexes; else the index, and exact after all
should the scan end short of the leg (the filters' rows are rarer than counted, or lie far
from the query beyond ITERATIVE_MAX_TUPLES). PostgreSQL's planner may still choose a bitmap
scan of the filters and a sort: that is exact too.
"""

from __future__ import annotations

import logging
import math
import struct
from typing import Any

import sqlalchemy

from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.storage.base import PIN_KEYS, PROVIDER_KEY, pin_of
from agent_memory.storage.postgres.rows import filters_sql

log = logging.getLogger(__name__)

# pg_advisory_xact_lock key taken before a first pin ("agent-mp").
PIN_LOCK = 0x6167656E742D6D70
# pgvector indexes vectors of up to 2,000 dimensions with HNSW; beyond, the leg is exact.
HNSW_MAX_DIMENSIONS = 2_000
# hnsw.ef_search: at least the leg's size (pgvector's limit is 1,000), and at least this.
EF_SEARCH_MIN = 100
EF_SEARCH_MAX = 1_000
# A filtered leg: exact when at most EXACT_MIN_ROWS memories pass, or at most
# sqrt(ITERATIVE_COST x leg x vectors), where the two plans cost the same if a tuple the
# iterative scan visits costs ITERATIVE_COST times a passing memory's exact distance. That
# ratio depends on what is cached: above 1 on a cached table, below it on one read through
# the OS cache. 1 leans to the index, where the planner can still choose to sort the few
# rows exactly itself.
EXACT_MIN_ROWS = 1_000
ITERATIVE_COST = 1
# hnsw.max_scan_tuples of a filtered leg's iterative scan (pgvector's default: 20,000).
ITERATIVE_MAX_TUPLES = 100_000

_READ_PIN = "SELECT key, value FROM meta WHERE key = ANY(%s)"
_PIN_NAMES = [*PIN_KEYS, PROVIDER_KEY]
_WRITE = (
    "INSERT INTO memory_vectors (memory_id, embedding) VALUES (%s, %s::vector)"
    " ON CONFLICT (memory_id) DO UPDATE SET embedding = excluded.embedding"
)
_REMOVE = "DELETE FROM memory_vectors WHERE memory_id = %s"
_NEAREST = """
SELECT memory_id, distance FROM (
    SELECT memory_id, embedding <=> %(q)s::vector AS distance FROM memory_vectors
    ORDER BY embedding <=> %(q)s::vector LIMIT %(limit)s
) AS nearest ORDER BY distance, memory_id
"""


# The planner's count of the vectors (-1 before the table's first ANALYZE).
_VECTORS_ESTIMATE = "SELECT reltuples FROM pg_class WHERE oid = 'memory_vectors'::regclass"
# Filtered: the conditions of rows.filters_sql (each from AND) go in at {where}.
_PASSING_COUNT = (
    "SELECT count(*) FROM (SELECT 1 FROM memories AS m WHERE true{where} LIMIT %s) AS p"
)
_NEAREST_PASSING = """
SELECT memory_id, distance FROM (
    SELECT v.memory_id, v.embedding <=> %s::vector AS distance
    FROM memory_vectors AS v JOIN memories AS m ON m.id = v.memory_id
    WHERE true{where}
    ORDER BY v.embedding <=> %s::vector LIMIT %s
) AS nearest ORDER BY distance, memory_id
"""
_EXACT_PASSING = """
WITH passing AS MATERIALIZED (
    SELECT v.memory_id, v.embedding <=> %s::vector AS distance
    FROM memories AS m JOIN memory_vectors AS v ON v.memory_id = m.id
    WHERE true{where}
)
SELECT memory_id, distance FROM passing ORDER BY distance, memory_id LIMIT %s
"""


def literal(vector: bytes) -> str:
    """pgvector's text form of a float32 vector (each value round-trips exactly)."""
    values = struct.unpack(f"<{len(vector) // 4}f", vector)
    return "[" + ",".join(repr(v) for v in values) + "]"


def stored_pin(conn: sqlalchemy.Connection) -> Pin | None:
    return pin_of(dict(conn.exec_driver_sql(_READ_PIN, (_PIN_NAMES,)).all()))


def create(conn: sqlalchemy.Connection, pin: Pin) -> None:
    """The pin and its vector table, together (inside the caller's write transaction)."""
    conn.exec_driver_sql(
        "INSERT INTO meta (key, value) VALUES (%s, %s), (%s, %s), (%s, %s), (%s, %s)",
        (
            "embedding_model", pin.model, "embedding_dim", str(pin.dimension),
            "embedding_prefixes", pin.prefixes, PROVIDER_KEY, pin.provider,
        ),
    )  # fmt: skip
    conn.exec_driver_sql(
        "CREATE TABLE memory_vectors (memory_id bigint PRIMARY KEY"
        " REFERENCES memories (id) ON DELETE CASCADE,"
        f" embedding vector({int(pin.dimension)}) NOT NULL)"
    )
    if pin.dimension <= HNSW_MAX_DIMENSIONS:
        conn.exec_driver_sql(
            "CREATE INDEX memory_vectors_hnsw ON memory_vectors"
            " USING hnsw (embedding vector_cosine_ops)"
        )


def drop(conn: sqlalchemy.Connection) -> None:
    """Every vector and the pin (inside the caller's write transaction)."""
    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PIN_LOCK})")
    conn.exec_driver_sql("DROP TABLE IF EXISTS memory_vectors")
    conn.exec_driver_sql("DELETE FROM meta WHERE key = ANY(%s)", (_PIN_NAMES,))


def pinned(conn: sqlalchemy.Connection, pin: Pin) -> bool:
    """True when vectors of ``pin`` belong in this database, pinning it if it has no pin."""
    stored = stored_pin(conn)
    if stored is None:
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PIN_LOCK})")
        stored = stored_pin(conn)  # another server may have pinned it meanwhile
        if stored is None:
            create(conn, pin)
            log.info("embedding model pinned: %s", pin.describe())
            return True
    return stored == pin


def write(conn: sqlalchemy.Connection, memory_id: int, vector: bytes) -> None:
    conn.exec_driver_sql(_WRITE, (memory_id, literal(vector)))


def remove(conn: sqlalchemy.Connection, memory_id: int) -> None:
    conn.exec_driver_sql(_REMOVE, (memory_id,))


def nearest(
    conn: sqlalchemy.Connection, embedding: Embedding, limit: int, filters: Filters
) -> list[tuple[int, float]]:
    """The ``limit`` nearest (id, cosine similarity) by cosine distance among the memories
    that pass ``filters``, ties by id (inside a read transaction)."""
    q = literal(embedding.vector)
    ef = min(EF_SEARCH_MAX, max(EF_SEARCH_MIN, limit))
    conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {ef}")
    if not filters:
        return _similarities(conn.exec_driver_sql(_NEAREST, {"q": q, "limit": limit}))
    where, params = filters_sql(filters)
    bound = _exact_bound(conn, limit)
    count = _PASSING_COUNT.format(where=where)
    if conn.exec_driver_sql(count, (*params, bound + 1)).scalar_one() > bound:
        conn.exec_driver_sql("SET LOCAL hnsw.iterative_scan = relaxed_order")
        conn.exec_driver_sql(f"SET LOCAL hnsw.max_scan_tuples = {ITERATIVE_MAX_TUPLES}")
        statement = _NEAREST_PASSING.format(where=where)
        found = conn.exec_driver_sql(statement, (q, *params, q, limit)).all()
        if len(found) == limit:
            return _similarities(found)
    statement = _EXACT_PASSING.format(where=where)
    return _similarities(conn.exec_driver_sql(statement, (q, *params, limit)))


_SIMILARITIES = (
    "SELECT memory_id, embedding <=> %s::vector FROM memory_vectors WHERE memory_id = ANY(%s)"
)


def similarities(
    conn: sqlalchemy.Connection, embedding: Embedding, ids: list[int]
) -> dict[int, float]:
    """The cosine similarity to ``embedding`` of each of ``ids`` that has a vector (in a
    store pinned to its model): what the fusion reads of a candidate the vector leg did not
    bring."""
    if not ids:
        return {}
    found = conn.exec_driver_sql(_SIMILARITIES, (literal(embedding.vector), ids))
    return dict(_similarities(found))


def _similarities(found: Any) -> list[tuple[int, float]]:
    # A zero vector has no cosine (pgvector: NaN): it is nobody's neighbour.
    return [
        (int(memory_id), 1.0 - float(distance))
        for memory_id, distance in found
        if not math.isnan(float(distance))
    ]


def _exact_bound(conn: sqlalchemy.Connection, limit: int) -> int:
    """Up to how many passing memories the exact plan costs less than the iterative scan."""
    vectors = max(conn.exec_driver_sql(_VECTORS_ESTIMATE).scalar_one(), 0.0)
    return max(EXACT_MIN_ROWS, int(math.sqrt(ITERATIVE_COST * limit * vectors)))


# vector_send: the dimension and a reserved word (int16 each), then float4s, big-endian.
_EVERY = (
    "SELECT v.memory_id, vector_send(v.embedding) FROM memory_vectors AS v"
    " JOIN memories AS m ON m.id = v.memory_id"
)


def every(conn: sqlalchemy.Connection, scope: str | None) -> list[tuple[int, bytes]]:
    """(id, float32 vector, little-endian as models.Embedding holds it) of every memory of
    ``scope`` (None: of all) that has one."""
    if scope is None:
        found = conn.exec_driver_sql(_EVERY)
    else:
        found = conn.exec_driver_sql(_EVERY + " WHERE m.scope = %s", (scope,))
    out = []
    for memory_id, sent in found:
        raw = bytes(sent)[4:]
        values = struct.unpack(f">{len(raw) // 4}f", raw)
        out.append((int(memory_id), struct.pack(f"<{len(values)}f", *values)))
    return out
