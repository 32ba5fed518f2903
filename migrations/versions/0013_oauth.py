"""OAuth 2.1 on the daemon: the clients that registered, the sign-ins and codes in
flight, and the grants an access token approved.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-20

``oauth_clients``: a client's registration (its RFC 7591 metadata as JSON; public clients,
so no secret). ``oauth_codes``: what is in flight, each row under the SHA-256 of its secret,
never the secret: an authorization request waiting for a sign-in, then for consent, the code
it ends in, and the one-time codes ``agent-memory token approve`` prints. ``oauth_grants``:
what a consent gave a client, as the token that approved it (its name and the SHA-256 of its
secret, re-checked at every use), with the hashes of the current access and refresh tokens
and of the refresh token they replaced. A client's codes and grants go with it (ON DELETE
CASCADE); the sweep deletes what has expired.
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE oauth_clients (
            client_id  TEXT    PRIMARY KEY,
            client     TEXT    NOT NULL,
            created_at INTEGER NOT NULL,
            used_at    INTEGER NOT NULL
        )
        """
    )
    op.execute(
        """
        CREATE TABLE oauth_codes (
            key          TEXT    PRIMARY KEY,
            stage        TEXT    NOT NULL
                CHECK (stage IN ('sign_in', 'consent', 'code', 'approval')),
            client_id    TEXT    REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
            request      TEXT    NOT NULL,
            token_name   TEXT,
            token_digest TEXT,
            expires_at   INTEGER NOT NULL
        )
        """
    )
    op.execute("CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at)")
    op.execute(
        """
        CREATE TABLE oauth_grants (
            id                   INTEGER PRIMARY KEY,
            client_id            TEXT    NOT NULL
                REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
            token_name           TEXT    NOT NULL,
            token_digest         TEXT    NOT NULL,
            resource             TEXT    NOT NULL,
            scopes               TEXT    NOT NULL,
            code_key             TEXT    NOT NULL,
            access_key           TEXT    NOT NULL UNIQUE,
            access_expires_at    INTEGER NOT NULL,
            refresh_key          TEXT    NOT NULL UNIQUE,
            refresh_expires_at   INTEGER NOT NULL,
            previous_refresh_key TEXT,
            created_at           INTEGER NOT NULL,
            used_at              INTEGER NOT NULL
        )
        """
    )
    op.execute("CREATE INDEX oauth_grants_token ON oauth_grants (token_name)")
    op.execute("CREATE INDEX oauth_grants_client ON oauth_grants (client_id)")
    op.execute("CREATE INDEX oauth_grants_code ON oauth_grants (code_key)")
    op.execute("CREATE INDEX oauth_grants_previous ON oauth_grants (previous_refresh_key)")
    op.execute("CREATE INDEX oauth_grants_expiry ON oauth_grants (refresh_expires_at)")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
