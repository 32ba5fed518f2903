"""Who wrote a memory: ``created_by`` and ``updated_by``.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05

The name of the token that stored a memory and of the one that last changed it, or
``local`` for stdio, the command line and the daemon without tokens (service.actor). Every
row written before this revision was written without a token: it holds ``local``. A
process still running code older than this revision writes ``local`` too (the default).
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for column in ("created_by", "updated_by"):
        op.execute(f"ALTER TABLE memories ADD COLUMN {column} TEXT NOT NULL DEFAULT 'local'")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
