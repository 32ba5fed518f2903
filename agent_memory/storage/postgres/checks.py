"""doctor on a PostgreSQL store: the SQL of its checks and of its repairs.

What is checked: the keyword totals (bm25's N and the rows' total length, folded plus the
log) against the memories, each word's row count (lexeme_rows plus the log) against the
rows' tf maps, and the vectors: the pin and its table exist together, every vector belongs
to a memory (its foreign key makes it so: checked all the same), every memory marked
embedded has its vector, and one waiting for a vector holds none. The vector type fixes
a vector's size. Not checked here: the server's own pages and indexes (pg_amcheck does
that), nor a row's terms against its content (written together, by one statement).

What a repair rebuilds: the keyword totals and word counts from the rows (writers wait for
it: the table is locked in SHARE mode), vectors without a memory (removed), a memory whose
vector is missing (pending again). A memory is never removed.
"""

from __future__ import annotations

import sqlalchemy

from agent_memory.storage.checks import Vectors, vector_repairs
from agent_memory.storage.postgres import totals, vectors

_TOTALS = (
    "SELECT t.n = m.n AND t.tokens = m.tokens FROM "
    f"{totals.TOTALS} AS t, "
    "(SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS tokens FROM memories) AS m"
)
_ACTUAL_WORD_ROWS = (
    "SELECT k AS lexeme, count(*) AS rows FROM memories, jsonb_object_keys(tf) k GROUP BY k"
)
_KEPT_WORD_ROWS = (
    "SELECT lexeme, sum(rows) AS rows FROM"
    f" (SELECT lexeme, rows FROM lexeme_rows UNION ALL {totals.LOGGED_LEXEME_ROWS}) AS kept"
    " GROUP BY lexeme"
)
_WRONG_WORD_ROWS = (
    f"SELECT count(*) FROM ({_ACTUAL_WORD_ROWS}) AS a FULL JOIN ({_KEPT_WORD_ROWS}) AS k"
    " USING (lexeme) WHERE coalesce(a.rows, 0) <> coalesce(k.rows, 0)"
)
_REBUILD_KEYWORDS = (
    "LOCK TABLE memories IN SHARE MODE",  # no write meanwhile; reads go on
    f"SELECT pg_advisory_xact_lock({totals.COMPACT_LOCK})",  # nor a fold of the log
    "DELETE FROM keyword_totals",
    "DELETE FROM keyword_folded",
    "INSERT INTO keyword_folded SELECT count(*), coalesce(sum(doc_len), 0) FROM memories",
    "DELETE FROM lexeme_rows",
    f"INSERT INTO lexeme_rows {_ACTUAL_WORD_ROWS}",
)
_HAS_TABLE = "SELECT to_regclass('memory_vectors') IS NOT NULL"
_ORPHANS = (
    "SELECT count(*) FROM memory_vectors AS v"
    " WHERE NOT EXISTS (SELECT 1 FROM memories AS m WHERE m.id = v.memory_id)"
)
_WITHOUT_VECTOR = (
    "SELECT id FROM memories AS m WHERE embedding_status = 1"
    " AND NOT EXISTS (SELECT 1 FROM memory_vectors AS v WHERE v.memory_id = m.id)"
)
_STALE = (
    "SELECT count(*) FROM memory_vectors AS v JOIN memories AS m ON m.id = v.memory_id"
    " WHERE m.embedding_status = 0"
)
_EMBEDDED = "SELECT count(*) FROM memories WHERE embedding_status = 1"
_ALL_PENDING = "UPDATE memories SET embedding_status = 0 WHERE embedding_status = 1"


def keyword_totals_match(conn: sqlalchemy.Connection) -> bool:
    return bool(conn.exec_driver_sql(_TOTALS).scalar_one())


def wrong_word_counts(conn: sqlalchemy.Connection) -> int:
    """How many words' row counts differ from the rows'."""
    return int(conn.exec_driver_sql(_WRONG_WORD_ROWS).scalar_one())


def rebuild_keyword_totals(conn: sqlalchemy.Connection) -> None:
    """The totals and word counts made again from the rows (in the caller's transaction)."""
    for statement in _REBUILD_KEYWORDS:
        conn.exec_driver_sql(statement)


def _scalar(conn: sqlalchemy.Connection, statement: str) -> int:
    return int(conn.exec_driver_sql(statement).scalar_one())


def vector_state(conn: sqlalchemy.Connection) -> Vectors:
    pin = vectors.stored_pin(conn)
    table = bool(conn.exec_driver_sql(_HAS_TABLE).scalar_one())
    paired = table == (pin is not None)
    if pin is None or not paired:
        return Vectors(pin, paired, missing=0 if table else _scalar(conn, _EMBEDDED))
    return Vectors(
        pin,
        paired,
        orphans=_scalar(conn, _ORPHANS),
        missing=_scalar(conn, f"SELECT count(*) FROM ({_WITHOUT_VECTOR}) AS w"),
        stale=_scalar(conn, _STALE),
    )


def repair_vectors(conn: sqlalchemy.Connection) -> list[str]:
    """Put the vectors right (see the module doc), in the caller's transaction."""
    state = vector_state(conn)
    if not state.paired:
        vectors.drop(conn)
        return vector_repairs(
            unpaired=conn.exec_driver_sql("UPDATE memories SET embedding_status = 0").rowcount
        )
    if state.pin is None:
        return vector_repairs(missing=conn.exec_driver_sql(_ALL_PENDING).rowcount)
    orphans = conn.exec_driver_sql(
        "DELETE FROM memory_vectors WHERE memory_id NOT IN (SELECT id FROM memories)"
    ).rowcount
    missing = conn.exec_driver_sql(
        f"UPDATE memories SET embedding_status = 0 WHERE id IN ({_WITHOUT_VECTOR})"
    ).rowcount
    stale = conn.exec_driver_sql(
        "DELETE FROM memory_vectors WHERE memory_id IN"
        " (SELECT id FROM memories WHERE embedding_status = 0)"
    ).rowcount
    return vector_repairs(orphans=orphans, missing=missing, stale=stale)
