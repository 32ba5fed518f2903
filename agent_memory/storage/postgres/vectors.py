"""Vectors in a PostgreSQL store: the pin in ``meta``, a pgvector table made with it, and the
vector leg (HNSW, cosine).

The table's dimension is the pinned model's, so it is made together with the pin (as on
SQLite) under an advisory lock: two servers storing a first vector at once pin once. Its
HNSW index answers the vector leg approximately; ``hnsw.ef_search`` is raised to the leg's
size (the default 40 returns at most 40 rows). The leg is unfiltered (the contract filters
it after its cut), so no iterative scan is needed.
"""

from __future__ import annotations

import logging
import struct

import sqlalchemy

from agent_memory.models import Embedding, Pin
from agent_memory.storage.base import PIN_KEYS, PROVIDER_KEY, pin_of

log = logging.getLogger(__name__)

# pg_advisory_xact_lock key taken before a first pin ("agent-mp").
PIN_LOCK = 0x6167656E742D6D70
# pgvector indexes vectors of up to 2,000 dimensions with HNSW; beyond, the leg is exact.
HNSW_MAX_DIMENSIONS = 2_000
# hnsw.ef_search: at least the leg's size (pgvector's limit is 1,000), and at least this.
EF_SEARCH_MIN = 100
EF_SEARCH_MAX = 1_000

_READ_PIN = "SELECT key, value FROM meta WHERE key = ANY(%s)"
_PIN_NAMES = [*PIN_KEYS, PROVIDER_KEY]
_WRITE = (
    "INSERT INTO memory_vectors (memory_id, embedding) VALUES (%s, %s::vector)"
    " ON CONFLICT (memory_id) DO UPDATE SET embedding = excluded.embedding"
)
_REMOVE = "DELETE FROM memory_vectors WHERE memory_id = %s"
_NEAREST = """
SELECT memory_id FROM (
    SELECT memory_id, embedding <=> %(q)s::vector AS distance FROM memory_vectors
    ORDER BY embedding <=> %(q)s::vector LIMIT %(limit)s
) AS nearest ORDER BY distance, memory_id
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


def nearest(conn: sqlalchemy.Connection, embedding: Embedding, limit: int) -> list[int]:
    """The ``limit`` nearest ids by cosine distance, ties by id (inside a read transaction)."""
    ef = min(EF_SEARCH_MAX, max(EF_SEARCH_MIN, limit))
    conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {ef}")
    found = conn.exec_driver_sql(_NEAREST, {"q": literal(embedding.vector), "limit": limit})
    return [memory_id for (memory_id,) in found]
