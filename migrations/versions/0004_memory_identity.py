"""An index on a memory's identity (type, content, source), for import deduplication.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

Imports skip a memory that is already present with the same type, content and source
(source compared with IS, so two NULLs match). Without this index each of those checks
would scan the table.
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX memories_identity ON memories (type, content, source)")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
