"""A random id kept in the database, so that a daemon can prove which database it serves.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04

``agent-memory ui`` asked a daemon for a hash of the file's path, which any program could
compute and answer; now a daemon proves it can read this id (agent_memory/contract/identity.py). It
is 128 random bits as 32 hex digits in ``meta``, made once: by this revision for an existing
file, with the schema for a new one. A read-only file is opened only at head, so every file
a process serves has it.
"""

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        sa.text("INSERT INTO meta (key, value) VALUES ('database_id', :id)").bindparams(
            id=secrets.token_hex(16)
        )
    )


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
