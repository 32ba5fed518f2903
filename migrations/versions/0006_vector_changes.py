"""Vectors as plain float32 rows, and a log of vector changes for in-memory indexes.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

Each process may keep an index of the vectors in memory; it must see what other
processes write. ``vector_changes`` logs the memory id of every vector inserted or deleted,
in the same transaction (seq order is commit order: one writer at a time), and an index
catches up from its last seq inside each search's read snapshot.

The vectors move from the vec0 table (slow to read one vector by id) to a plain table of
float32 blobs, read for the exact re-rank of an index's candidates; the int8
copy that re-ranked the SQL leg's candidates goes (the floats are exact). A database
without a pin has no vector tables yet: they are made with the pin, log triggers included.
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TRIGGERS = (
    "CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN"
    " DELETE FROM memory_vector_floats WHERE memory_id = old.id;"
    " DELETE FROM memory_vector_bits WHERE memory_id = old.id; END",
    "CREATE TRIGGER vector_logged_insert AFTER INSERT ON memory_vector_floats BEGIN"
    " INSERT INTO vector_changes (memory_id) VALUES (new.memory_id); END",
    "CREATE TRIGGER vector_logged_delete AFTER DELETE ON memory_vector_floats BEGIN"
    " INSERT INTO vector_changes (memory_id) VALUES (old.memory_id); END",
)


# The log keeps about this many of the latest changes: every 1,024th entry takes out those
# older than that. A process further behind rebuilds its index from the vectors.
LOG_KEEP = 100_000


def upgrade() -> None:
    op.execute(
        "CREATE TABLE vector_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
        " memory_id INTEGER NOT NULL)"
    )
    op.execute(
        "CREATE TRIGGER vector_changes_pruned AFTER INSERT ON vector_changes"
        " WHEN new.seq % 1024 = 0 BEGIN"
        f" DELETE FROM vector_changes WHERE seq <= new.seq - {LOG_KEEP}; END"
    )
    pinned = op.get_bind().exec_driver_sql(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'memory_vectors'"
    )
    if not pinned.scalar():
        return
    op.execute(
        "CREATE TABLE memory_vector_floats (memory_id INTEGER PRIMARY KEY, vector BLOB NOT NULL)"
    )
    op.execute(
        "INSERT INTO memory_vector_floats (memory_id, vector)"
        " SELECT memory_id, embedding FROM memory_vectors ORDER BY memory_id"
    )
    op.execute("DROP TRIGGER memory_vectors_delete")
    op.execute("DROP TABLE memory_vector_int8")
    op.execute("DROP TABLE memory_vectors")
    for ddl in TRIGGERS:
        op.execute(ddl)


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
