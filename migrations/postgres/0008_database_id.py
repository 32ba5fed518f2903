"""PostgreSQL: a random id kept in the database, as SQLite's revision 0007 keeps it.

A daemon proves which database it serves by proving it can read this id
(contract/identity.py): its URL cannot tell, since two libpq services, or a ``hostaddr``
or an ``options`` setting, lead different databases behind URLs that look alike. 128 random
bits as 32 hex digits in ``meta``, made once, by this revision.

Revision ID: 0008
Revises: 0007
"""

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
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
