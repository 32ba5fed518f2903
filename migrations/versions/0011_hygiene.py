"""Memory hygiene: the content hash is of the whitespace-normalised text.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05

A store whose content equals an existing memory's once whitespace is normalised, with the
same type and scope, is an exact duplicate (decisions, "Content"): it is looked up by
memories.content_hash, which is now agent_memory.contract.models.content_hash of the
normalised text. Every row is hashed again here. The trigger of 0005 stays: a whitespace-only
edit keeps the hash and is reset to 0 ("not known"), and lookups take such rows as candidates.
"""

from alembic import op

from agent_memory.contract.models import content_hash

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

BATCH_ROWS = 10_000


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, content FROM memories WHERE id > ? ORDER BY id LIMIT ?", (last, BATCH_ROWS)
        ).fetchall()
        if not rows:
            break
        conn.executemany(
            "UPDATE memories SET content_hash = ? WHERE id = ?",
            [(content_hash(content), memory_id) for memory_id, content in rows],
        )
        last = rows[-1][0]


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
