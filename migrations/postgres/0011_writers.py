"""PostgreSQL, as SQLite's 0010: who wrote a memory: ``created_by`` and ``updated_by``.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05

As SQLite's 0010 (migrations/versions/0010_writers.py): rows written before this revision
were written without a token and hold ``local``, the default an older process writes too.
A column with a constant default is added without rewriting the table.
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for column in ("created_by", "updated_by"):
        op.execute(f"ALTER TABLE memories ADD COLUMN {column} TEXT NOT NULL DEFAULT 'local'")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
