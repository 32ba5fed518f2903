"""PostgreSQL, OAuth: every refresh token a grant replaced, in ``oauth_replaced``, as
SQLite's 0014 (migrations/versions/0014_oauth_replaced.py says why).

Revision ID: 0016
Revises: 0015
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE oauth_replaced (
            key        text   PRIMARY KEY,
            grant_id   bigint NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
            expires_at bigint NOT NULL
        )
        """
    )
    op.execute("CREATE INDEX oauth_replaced_grant ON oauth_replaced (grant_id)")
    op.execute("CREATE INDEX oauth_replaced_expiry ON oauth_replaced (expires_at)")
    op.execute(
        "INSERT INTO oauth_replaced (key, grant_id, expires_at)"
        " SELECT previous_refresh_key, id, refresh_expires_at FROM oauth_grants"
        " WHERE previous_refresh_key IS NOT NULL"
    )
    op.execute("DROP INDEX oauth_grants_previous")
    op.execute("ALTER TABLE oauth_grants DROP COLUMN previous_refresh_key")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
