"""OAuth: every refresh token a grant replaced, not only the last one.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-21

``oauth_replaced``: the SHA-256 of each refresh token a refresh replaced, the grant it
belonged to, and when it would have expired. Presenting any of them again ends the grant
(someone else holds a copy), however many refreshes came after it; the sweep deletes a row
once that token would have expired, and a grant's rows go with it (ON DELETE CASCADE). It
takes the place of ``oauth_grants.previous_refresh_key``, which remembered one token only:
a thief who refreshed twice before the client did went unnoticed.
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE oauth_replaced (
            key        TEXT    PRIMARY KEY,
            grant_id   INTEGER NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
            expires_at INTEGER NOT NULL
        )
        """
    )
    op.execute("CREATE INDEX oauth_replaced_grant ON oauth_replaced (grant_id)")
    op.execute("CREATE INDEX oauth_replaced_expiry ON oauth_replaced (expires_at)")
    # the last replaced token of each grant: it lived at most as long as the current one
    op.execute(
        "INSERT INTO oauth_replaced (key, grant_id, expires_at)"
        " SELECT previous_refresh_key, id, refresh_expires_at FROM oauth_grants"
        " WHERE previous_refresh_key IS NOT NULL"
    )
    op.execute("DROP INDEX oauth_grants_previous")
    op.execute("ALTER TABLE oauth_grants DROP COLUMN previous_refresh_key")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
