"""The access tokens' rows: one row each in the ``meta`` table every engine has, under the
key ``token:NAME``, its value a JSON object (hash, rights, scope, dates; never the token);
and the mark ``tokens_required`` that the first token leaves (a database that has had tokens
keeps requiring one until it is reopened on purpose).

A handful of rows read by key: the meta table holds them on both engines with the plain SQL
both read alike, so they need no table and no migration of their own. Every check reads
its row again, so a token revoked by another process stops at its next request. A check's
write of the token's use changes the row only if it is still the one the check read: it
never brings back a token revoked meanwhile, nor the old secret of one made again.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text

from agent_memory.storage import oauth
from agent_memory.storage.faults import guarded

PREFIX = "token:"
_ONE = text("SELECT value FROM meta WHERE key = :key")
_ALL = text("SELECT key, value FROM meta WHERE key LIKE 'token:%' ORDER BY key")
REQUIRED = "tokens_required"
_TOUCH = text("UPDATE meta SET value = :value WHERE key = :key AND value = :read")
_ADD = text("INSERT INTO meta (key, value) VALUES (:key, :value) ON CONFLICT (key) DO NOTHING")
_DELETE = text("DELETE FROM meta WHERE key = :key")
_ANY = text("SELECT 1 FROM meta WHERE key LIKE 'token:%' LIMIT 1")
_REQUIRED = text(f"SELECT 1 FROM meta WHERE key = '{REQUIRED}' OR key LIKE 'token:%' LIMIT 1")
_REQUIRE = text(
    f"INSERT INTO meta (key, value) VALUES ('{REQUIRED}', '1') ON CONFLICT (key) DO NOTHING"
)
_REOPEN = text(
    f"DELETE FROM meta WHERE key = '{REQUIRED}'"
    " AND NOT EXISTS (SELECT 1 FROM meta WHERE key LIKE 'token:%')"
)


class TokenRows:
    """The Store's token methods, for CommonStore (which supplies ``_read`` and ``_write``)."""

    _read: Any
    _write: Any

    @guarded
    def token(self, name: str) -> dict[str, Any] | None:
        with self._read() as conn:
            value = conn.execute(_ONE, {"key": PREFIX + name}).scalar()
        return None if value is None else json.loads(value)

    @guarded
    def tokens(self) -> list[tuple[str, dict[str, Any]]]:
        with self._read() as conn:
            rows = conn.execute(_ALL).all()
        return [(key[len(PREFIX) :], json.loads(value)) for key, value in rows]

    @guarded
    def any_token(self) -> bool:
        with self._read() as conn:
            return conn.execute(_ANY).first() is not None

    @guarded
    def tokens_required(self) -> bool:
        """Whether a token exists or ever did (until :meth:`reopen_tokens`)."""
        with self._read() as conn:
            return conn.execute(_REQUIRED).first() is not None

    @guarded
    def add_token(self, name: str, row: dict[str, Any]) -> bool:
        """False when a token of that name exists already. The database requires a token
        from then on."""
        with self._write() as conn:
            done = conn.execute(_ADD, {"key": PREFIX + name, "value": json.dumps(row)})
            conn.execute(_REQUIRE)
        return bool(done.rowcount)

    @guarded
    def touch_token(self, name: str, read: dict[str, Any], row: dict[str, Any]) -> bool:
        """Writes ``row`` over the token's row only if that is still ``read`` (what the
        caller read): an update that can insert nothing, nor overwrite another secret."""
        key = PREFIX + name
        with self._write() as conn:
            done = conn.execute(
                _TOUCH, {"key": key, "value": json.dumps(row), "read": json.dumps(read)}
            )
        return bool(done.rowcount)

    @guarded
    def reopen_tokens(self) -> bool:
        """Drops the mark that requires a token, unless a token exists (False then)."""
        with self._write() as conn:
            conn.execute(_REOPEN)
            return conn.execute(_ANY).first() is None

    @guarded
    def delete_token(self, name: str) -> bool:
        """Revokes the token ``name``, and with it the OAuth grants it approved."""
        with self._write() as conn:
            done = conn.execute(_DELETE, {"key": PREFIX + name})
            oauth.forget_token(conn, name)
        return bool(done.rowcount)
