"""doctor on a SQLite store: the SQL of its checks and of its repairs.

What is checked: the file itself (``PRAGMA integrity_check``, which also compares every
index with its table); the relations' foreign keys (a memory deleted from a ``sqlite3``
shell, where foreign keys are off, leaves its relations behind); the FTS5 keyword index
against the memories (FTS5's ``integrity-check`` with rank 1 compares it with the content
table); and the vectors: the pin and its two tables exist together, every vector belongs to
a memory and has the pin's size, every memory marked embedded has both its vector rows,
and a memory waiting for a vector holds none.

What a repair rebuilds: the indexes (REINDEX) when only they disagree with their tables,
the keyword index ('rebuild'), relations to memories that are gone (removed), vectors
without a memory or of the wrong size (removed), a memory whose vector is missing
(pending again, for the sweep or ``agent-memory embed``). A memory is never removed.
"""

from __future__ import annotations

import re

import sqlalchemy
import sqlean

from agent_memory.contract.models import Pin
from agent_memory.storage.checks import Vectors, vector_repairs
from agent_memory.storage.sqlite import database, vectors

# integrity_check's first lines shown (it gives up to 100).
SHOWN_PROBLEMS = 5
# integrity_check's complaints that REINDEX answers: an index out of step with its table.
_INDEX_PROBLEM = re.compile(r"(missing from|wrong # of entries in) index ")

INTEGRITY = "PRAGMA integrity_check"
# integrity_check's part for FTS5 trusts the connection's cached view of the index: after
# another connection rebuilt it, a connection that only ran integrity_check since reports
# "malformed inverted index" until a query reloads that view (SQLite 3.50). This query does.
_FTS_RELOAD = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'a' LIMIT 1"
REINDEX = "REINDEX"
DANGLING_LINKS = "SELECT count(*) FROM pragma_foreign_key_check('memory_links')"
_DROP_DANGLING_LINKS = (
    "DELETE FROM memory_links WHERE from_id NOT IN (SELECT id FROM memories)"
    " OR to_id NOT IN (SELECT id FROM memories)"
)
KEYWORD_CHECK = "INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)"
KEYWORD_REBUILD = "INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')"
_VECTOR_TABLES = (
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
    f"({', '.join(repr(table) for table in vectors.TABLES)})"
)
_FLOATS, _BITS = vectors.TABLES
_ORPHANS = " UNION ".join(
    f"SELECT memory_id FROM {table} AS v"
    " WHERE NOT EXISTS (SELECT 1 FROM memories AS m WHERE m.id = v.memory_id)"
    for table in vectors.TABLES
)
# ?1: a vector's bytes (float32), ?2: its sign bits' bytes.
_MISFITS = (
    f"SELECT memory_id FROM {_FLOATS} WHERE length(vector) <> ?1"
    f" UNION SELECT memory_id FROM {_BITS} WHERE length(bits) <> ?2"
)
_HAS_VECTOR = (
    f"EXISTS (SELECT 1 FROM {_FLOATS} AS f WHERE f.memory_id = m.id)"
    f" AND EXISTS (SELECT 1 FROM {_BITS} AS b WHERE b.memory_id = m.id)"
)
_WITHOUT_VECTOR = f"SELECT id FROM memories AS m WHERE embedding_status = 1 AND NOT ({_HAS_VECTOR})"
_STALE = " UNION ".join(
    f"SELECT memory_id FROM {table} AS v"
    " WHERE EXISTS (SELECT 1 FROM memories AS m WHERE m.id = v.memory_id"
    " AND m.embedding_status = 0)"
    for table in vectors.TABLES
)
_EMBEDDED = "SELECT id FROM memories WHERE embedding_status = 1"


def _count_sql(query: str) -> str:
    return f"SELECT count(*) FROM ({query})"


def integrity(conn: sqlalchemy.Connection) -> list[str]:
    """integrity_check's complaints ([] when the file checks out); a file too damaged to be
    read at all is one complaint, SQLite's own words."""
    try:
        conn.exec_driver_sql(_FTS_RELOAD).all()
        found = [str(row[0]) for row in conn.exec_driver_sql(INTEGRITY)]
    except (sqlalchemy.exc.DatabaseError, sqlean.DatabaseError) as exc:
        return [str(getattr(exc, "orig", None) or exc)]
    return [] if found == ["ok"] else found


def only_indexes(problems: list[str]) -> bool:
    """Whether REINDEX answers every complaint: only indexes disagree with their tables."""
    return bool(problems) and all(_INDEX_PROBLEM.search(problem) for problem in problems)


def dangling_links(conn: sqlalchemy.Connection) -> int:
    return int(conn.exec_driver_sql(DANGLING_LINKS).scalar_one())


def keyword_index_matches(conn: sqlalchemy.Connection) -> bool:
    """FTS5's own check of the index against the memories (inside a write transaction:
    FTS5 takes its commands as INSERTs). A mismatch is SQLITE_CORRUPT_VTAB (primary code
    SQLITE_CORRUPT)."""
    try:
        conn.exec_driver_sql(KEYWORD_CHECK)
    except (sqlalchemy.exc.DatabaseError, sqlean.DatabaseError) as exc:
        if database.primary_code(exc) == database.SQLITE_CORRUPT:
            return False
        raise
    return True


def _sizes(pin: Pin) -> tuple[int, int]:
    """A vector's bytes (float32), and its sign bits' bytes."""
    return 4 * pin.dimension, (pin.dimension + 7) // 8


def _counted(conn: sqlalchemy.Connection, query: str, params: tuple[int, ...] = ()) -> int:
    return int(conn.exec_driver_sql(_count_sql(query), params).scalar_one())


def vector_state(conn: sqlalchemy.Connection) -> Vectors:
    pin = vectors.stored_pin(conn)
    tables = int(conn.exec_driver_sql(_VECTOR_TABLES).scalar_one())
    paired = tables == (len(vectors.TABLES) if pin is not None else 0)
    if pin is None or not paired:
        missing = _counted(conn, _EMBEDDED) if tables == 0 else 0
        return Vectors(pin, paired, missing=missing)
    return Vectors(
        pin,
        paired,
        orphans=_counted(conn, _ORPHANS),
        misfits=_counted(conn, _MISFITS, _sizes(pin)),
        missing=_counted(conn, _WITHOUT_VECTOR),
        stale=_counted(conn, _STALE),
    )


def repair_links(conn: sqlalchemy.Connection) -> int:
    """Remove relations whose memory is gone; how many."""
    return conn.exec_driver_sql(_DROP_DANGLING_LINKS).rowcount


def repair_vectors(conn: sqlalchemy.Connection) -> list[str]:
    """Put the vectors right (see the module doc), in the caller's write transaction; one
    line per thing done."""
    state = vector_state(conn)
    if not state.paired:
        vectors.drop(conn)
        pending = conn.exec_driver_sql("UPDATE memories SET embedding_status = 0").rowcount
        return vector_repairs(unpaired=pending)
    if state.pin is None:
        marked = conn.exec_driver_sql(
            "UPDATE memories SET embedding_status = 0 WHERE embedding_status = 1"
        ).rowcount
        return vector_repairs(missing=marked)
    orphans = _counted(conn, _ORPHANS)
    for table in vectors.TABLES:
        conn.exec_driver_sql(
            f"DELETE FROM {table} WHERE memory_id NOT IN (SELECT id FROM memories)"
        )
    misfits = conn.exec_driver_sql(
        f"UPDATE memories SET embedding_status = 0 WHERE id IN ({_MISFITS})", _sizes(state.pin)
    ).rowcount
    missing = conn.exec_driver_sql(
        f"UPDATE memories SET embedding_status = 0 WHERE id IN ({_WITHOUT_VECTOR})"
    ).rowcount
    stale = _counted(conn, _STALE)  # their leftover rows included
    for table in vectors.TABLES:
        conn.exec_driver_sql(
            f"DELETE FROM {table} WHERE memory_id IN"
            " (SELECT id FROM memories WHERE embedding_status = 0)"
        )
    return vector_repairs(orphans=orphans, misfits=misfits, missing=missing, stale=stale)
