"""Imports look duplicates up by a 64-bit hash of the content, not by the content itself.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

The index of 0004 held every memory's full text (type, content, source): a third of the
file, and, since the text sorts in no useful order, an import's batch of 1,000 rows changed
pages all over it, every one of which its commit then wrote again. memories.content_hash
(agent_memory.contract.models.content_hash) is eight bytes; rows with an equal hash are only
candidates, compared exactly by the import. Existing rows are hashed here.

0 means "not known": a process that opened the file before this revision and is still
running inserts rows without a hash, and when it rewrites a row's content the trigger below
resets the hash it left behind. Imports compare such rows too, and hash them.
"""

from alembic import op

from agent_memory.contract.models import content_hash

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

BATCH_ROWS = 10_000


def upgrade() -> None:
    op.execute("ALTER TABLE memories ADD COLUMN content_hash INTEGER NOT NULL DEFAULT 0")
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
    op.execute("DROP INDEX memories_identity")
    op.execute("CREATE INDEX memories_content_hash ON memories (content_hash)")
    op.execute(
        """
        CREATE TRIGGER memories_content_hash_stale AFTER UPDATE OF content ON memories
        WHEN new.content_hash = old.content_hash AND new.content IS NOT old.content
        BEGIN
            UPDATE memories SET content_hash = 0 WHERE id = new.id;
        END
        """
    )


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
