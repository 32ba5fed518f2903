"""Relations between memories: memory_links.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

One row per edge from_id -[kind]-> to_id. relates_to is symmetric and stored with the
smaller id first; supersedes and caused_by keep the direction they were given. Edges go
with either endpoint (ON DELETE CASCADE; the connection enables foreign keys).
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE memory_links (
            from_id    INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            to_id      INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            kind       TEXT    NOT NULL CHECK (kind IN ('relates_to', 'supersedes', 'caused_by')),
            created_at INTEGER NOT NULL,
            PRIMARY KEY (from_id, to_id, kind),
            CHECK (from_id <> to_id)
        ) WITHOUT ROWID
        """
    )
    op.execute("CREATE INDEX memory_links_to ON memory_links (to_id)")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
