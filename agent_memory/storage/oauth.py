"""OAuth's rows (service.oauth says what they mean), in plain SQL both engines read alike:
``oauth_clients`` (a client's registration), ``oauth_codes`` (sign-ins, consents, codes and
one-time approvals in flight, each under the SHA-256 of its secret), ``oauth_grants`` (what a
consent gave a client, with the hashes of its current tokens) and ``oauth_replaced`` (the
hashes of the refresh tokens a grant replaced, until they would have expired).

Whatever must not happen twice is one statement or one transaction: a row in flight is
taken (deleted and returned) by whoever uses it first, a code becomes a grant in the
transaction that takes it, and a refresh rotates a grant only if its refresh token is still
the one presented, so two requests racing with one secret never both succeed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import sqlalchemy
from sqlalchemy import text

from agent_memory.storage.base import REPLACED, Pause
from agent_memory.storage.faults import guarded

CODE_COLUMNS = ("stage", "client_id", "request", "token_name", "token_digest", "expires_at")
GRANT_COLUMNS = (
    *("id", "client_id", "token_name", "token_digest", "resource", "scopes", "code_key"),
    *("access_key", "access_expires_at", "refresh_key", "refresh_expires_at"),
    *("created_at", "used_at"),
)
# The columns a grant is found by: each holds the SHA-256 of a secret (or the grant's id).
GRANT_KEYS = ("id", "access_key", "refresh_key", "code_key")
# What else finds a grant: the SHA-256 of a refresh token it replaced.
# The stages that wait for a person (sign-in, consent): those the cap on rows in flight trims.
WAITING = ("sign_in", "consent")

_ADD_CLIENT = text(
    "INSERT INTO oauth_clients (client_id, client, created_at, used_at)"
    " VALUES (:client_id, :client, :now, :now)"
)
# The least recently used clients past the cap, among those that hold no grant, never the
# one just registered.
_TRIM_CLIENTS = text(
    "DELETE FROM oauth_clients WHERE client_id <> :client_id AND client_id NOT IN"
    " (SELECT client_id FROM oauth_clients WHERE client_id <> :client_id"
    " ORDER BY used_at DESC, created_at DESC, client_id LIMIT :cap - 1)"
    " AND NOT EXISTS (SELECT 1 FROM oauth_grants AS g WHERE g.client_id = oauth_clients.client_id)"
)
_CLIENT = text("SELECT client, used_at FROM oauth_clients WHERE client_id = :client_id")
_TOUCH_CLIENT = text("UPDATE oauth_clients SET used_at = :now WHERE client_id = :client_id")
# A grant made or refreshed is its client's use: a client is swept only long after its last.
_TOUCH_GRANTS_CLIENT = text(
    "UPDATE oauth_clients SET used_at = :now"
    " WHERE client_id = (SELECT client_id FROM oauth_grants WHERE id = :id)"
)
_ADD_CODE = text(
    f"INSERT INTO oauth_codes (key, {', '.join(CODE_COLUMNS)})"
    " VALUES (:key, :stage, :client_id, :request, :token_name, :token_digest, :expires_at)"
)
_TRIM_WAITING = text(
    "DELETE FROM oauth_codes WHERE stage IN ('sign_in', 'consent') AND key NOT IN"
    " (SELECT key FROM oauth_codes WHERE stage IN ('sign_in', 'consent')"
    " ORDER BY expires_at DESC, key LIMIT :cap)"
)
_CODE = text(
    f"SELECT {', '.join('c.' + c for c in CODE_COLUMNS)}, k.client FROM oauth_codes AS c"
    " LEFT JOIN oauth_clients AS k ON k.client_id = c.client_id"
    " WHERE c.key = :key AND c.stage = :stage"
)
_TAKE_CODE = text(
    "DELETE FROM oauth_codes WHERE key = :key AND stage = :stage"
    f" RETURNING {', '.join(CODE_COLUMNS)}"
)
# A code is taken only by the client it was issued to.
_TAKE_CLIENTS_CODE = text(
    "DELETE FROM oauth_codes WHERE key = :key AND stage = 'code' AND client_id = :client_id"
    f" RETURNING {', '.join(CODE_COLUMNS)}"
)
_ADD_GRANT = text(
    f"INSERT INTO oauth_grants ({', '.join(GRANT_COLUMNS[1:])})"
    f" VALUES ({', '.join(':' + c for c in GRANT_COLUMNS[1:])}) RETURNING id"
)
_GRANTS_BY = {
    column: text(f"SELECT {', '.join(GRANT_COLUMNS)} FROM oauth_grants WHERE {column} = :key")
    for column in GRANT_KEYS
} | {
    REPLACED: text(
        f"SELECT {', '.join('g.' + c for c in GRANT_COLUMNS)} FROM oauth_grants AS g"
        " JOIN oauth_replaced AS r ON r.grant_id = g.id WHERE r.key = :key"
    )
}
_REPLACED = text(
    "INSERT INTO oauth_replaced (key, grant_id, expires_at)"
    " VALUES (:old_refresh_key, :id, :old_expires_at)"
)
_ROTATE = text(
    "UPDATE oauth_grants SET access_key = :access_key, access_expires_at = :access_expires_at,"
    " refresh_key = :refresh_key, refresh_expires_at = :refresh_expires_at, used_at = :now"
    " WHERE id = :id AND refresh_key = :old_refresh_key"
)
_TOUCH_GRANT = text("UPDATE oauth_grants SET used_at = :now WHERE id = :id")
_DELETE_GRANT = text("DELETE FROM oauth_grants WHERE id = :id")
_LIST_GRANTS = text(
    f"SELECT {', '.join('g.' + c for c in GRANT_COLUMNS)}, k.client FROM oauth_grants AS g"
    " JOIN oauth_clients AS k ON k.client_id = g.client_id ORDER BY g.token_name, g.id"
)
# A token revoked takes every grant it approved, and everything it signed in, with it.
_DELETE_TOKEN_GRANTS = text("DELETE FROM oauth_grants WHERE token_name = :name")
_DELETE_TOKEN_CODES = text("DELETE FROM oauth_codes WHERE token_name = :name")
_SWEEP = (
    text("DELETE FROM oauth_codes WHERE expires_at <= :now"),
    text("DELETE FROM oauth_grants WHERE refresh_expires_at <= :now"),
    text("DELETE FROM oauth_replaced WHERE expires_at <= :now"),
    text(
        "DELETE FROM oauth_clients WHERE used_at <= :idle_before AND NOT EXISTS"
        " (SELECT 1 FROM oauth_grants AS g WHERE g.client_id = oauth_clients.client_id)"
    ),
)


def forget_token(conn: sqlalchemy.Connection, name: str) -> None:
    """In the transaction that revokes the token ``name``: its grants and sign-ins go too."""
    conn.execute(_DELETE_TOKEN_GRANTS, {"name": name})
    conn.execute(_DELETE_TOKEN_CODES, {"name": name})


class OAuthRows:
    """The Store's OAuth methods, for CommonStore (which supplies ``_read`` and ``_write``)."""

    _read: Any
    _write: Any

    @guarded
    def add_oauth_client(self, client_id: str, client: str, now: int, cap: int) -> None:
        """Registers a client; past ``cap`` clients, the least recently used without a grant
        go."""
        with self._write() as conn:
            conn.execute(_ADD_CLIENT, {"client_id": client_id, "client": client, "now": now})
            conn.execute(_TRIM_CLIENTS, {"client_id": client_id, "cap": cap})

    @guarded
    def oauth_client(self, client_id: str) -> dict[str, Any] | None:
        with self._read() as conn:
            row = conn.execute(_CLIENT, {"client_id": client_id}).mappings().first()
        return None if row is None else dict(row)

    @guarded
    def touch_oauth_client(self, client_id: str, now: int) -> None:
        with self._write() as conn:
            conn.execute(_TOUCH_CLIENT, {"client_id": client_id, "now": now})

    @guarded
    def add_oauth_code(self, key: str, row: Mapping[str, Any], cap: int) -> None:
        """Puts a row in flight; past ``cap`` rows waiting for a person, the oldest go."""
        with self._write() as conn:
            conn.execute(_ADD_CODE, {"key": key, **row})
            conn.execute(_TRIM_WAITING, {"cap": cap})

    @guarded
    def oauth_code(self, key: str, stage: str) -> dict[str, Any] | None:
        """The row in flight under ``key`` at ``stage``, with its client's registration."""
        with self._read() as conn:
            row = conn.execute(_CODE, {"key": key, "stage": stage}).mappings().first()
        return None if row is None else dict(row)

    @guarded
    def take_oauth_code(
        self, key: str, stage: str, then: tuple[str, Mapping[str, Any]] | None = None
    ) -> dict[str, Any] | None:
        """Deletes and returns the row under ``key`` at ``stage`` (None: another request took
        it first, or there is none); with ``then`` (a key and a row), puts that row in flight
        in the same transaction, once the first was taken."""
        with self._write() as conn:
            row = conn.execute(_TAKE_CODE, {"key": key, "stage": stage}).mappings().first()
            if row is not None and then is not None:
                conn.execute(_ADD_CODE, {"key": then[0], **then[1]})
        return None if row is None else dict(row)

    @guarded
    def exchange_oauth_code(
        self, key: str, grant: Mapping[str, Any]
    ) -> tuple[dict[str, Any], int] | None:
        """Takes the code under ``key`` and adds ``grant`` for it, in one transaction: the
        code's row and the new grant's id, or None when the code was taken already (or was
        issued to another client than the grant's)."""
        with self._write() as conn:
            taken = {"key": key, "client_id": grant["client_id"]}
            row = conn.execute(_TAKE_CLIENTS_CODE, taken).mappings().first()
            if row is None:
                return None
            grant_id = conn.execute(_ADD_GRANT, dict(grant)).scalar_one()
            conn.execute(_TOUCH_GRANTS_CLIENT, {"id": grant_id, "now": grant["created_at"]})
        return dict(row), int(grant_id)

    @guarded
    def oauth_grant(self, column: str, key: str | int) -> dict[str, Any] | None:
        """The grant whose ``column`` (one of GRANT_KEYS) holds ``key``, or (REPLACED) that
        replaced the refresh token of SHA-256 ``key``."""
        with self._read() as conn:
            row = conn.execute(_GRANTS_BY[column], {"key": key}).mappings().first()
        return None if row is None else dict(row)

    @guarded
    def rotate_oauth_grant(
        self, grant_id: int, old: tuple[str, int], tokens: Mapping[str, Any], now: int
    ) -> bool:
        """New tokens for the grant, if ``old`` (the SHA-256 of a refresh token and its
        expiry) is still its refresh token (False: another refresh took it first, or the
        grant is gone); the old one is kept among those it replaced, in that transaction."""
        params = {"id": grant_id, "old_refresh_key": old[0], "old_expires_at": old[1]}
        params |= {"now": now, **tokens}
        with self._write() as conn:
            if not conn.execute(_ROTATE, params).rowcount:
                return False
            conn.execute(_REPLACED, params)
            conn.execute(_TOUCH_GRANTS_CLIENT, params)
        return True

    @guarded
    def touch_oauth_grant(self, grant_id: int, now: int) -> None:
        with self._write() as conn:
            conn.execute(_TOUCH_GRANT, {"id": grant_id, "now": now})

    @guarded
    def delete_oauth_grant(self, grant_id: int) -> bool:
        with self._write() as conn:
            done = conn.execute(_DELETE_GRANT, {"id": grant_id})
        return bool(done.rowcount)

    @guarded
    def oauth_grants(self) -> list[dict[str, Any]]:
        """Every grant with its client's registration, by token name."""
        with self._read() as conn:
            return [dict(row) for row in conn.execute(_LIST_GRANTS).mappings()]

    @guarded
    def sweep_oauth(
        self, now: int, pause: Pause | None = None, *, client_idle_secs: int
    ) -> tuple[int, float]:
        """Deletes what has expired: rows in flight, grants whose refresh token has, the
        refresh tokens replaced that would have, and clients unused for
        ``client_idle_secs`` that hold no grant. How many rows went, and how long the one
        transaction held the write lock."""
        began = time.perf_counter()
        with self._write() as conn:
            params = {"now": now, "idle_before": now - client_idle_secs}
            gone = sum(conn.execute(statement, params).rowcount for statement in _SWEEP)
        return gone, time.perf_counter() - began
