"""Embeddings: memories.embedding_status, and a partial index over the rows still to embed.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

embedding_status is 1 when the row's vector (in memory_vectors) was made from its current
content, 0 while an embedding is pending. Rows that exist before this revision have no
vector, so they start pending and the sweep backfills them.

The vec0 table itself is not created here: its dimension is the embedding model's, which
is learned from the model's first answer. The repository creates it, with the model pin
in ``meta``, in the transaction that writes the first vector.
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE memories ADD COLUMN embedding_status INTEGER NOT NULL DEFAULT 0"
        " CHECK (embedding_status IN (0, 1))"
    )
    op.execute("CREATE INDEX memories_pending ON memories (id) WHERE embedding_status = 0")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
