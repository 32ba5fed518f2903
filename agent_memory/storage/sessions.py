"""The web page's sign-in sessions' rows: one row each in the ``meta`` table, under the key
``session:KEY`` (KEY: the SHA-256 of the session id, never the id), its value a JSON object
(the token's name and secret digest, created, last seen).

In the database rather than a daemon's memory so that every worker process of one daemon
(``serve-rest --workers N``) finds a session another one opened, and a sign-out in one ends
it in all. The meta table holds them on both engines with the plain SQL both read alike, as
the tokens' rows (storage.tokens): no table and no migration of their own.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, text

from agent_memory.storage.faults import guarded

PREFIX = "session:"
_ONE = text("SELECT value FROM meta WHERE key = :key")
_ALL = text("SELECT key, value FROM meta WHERE key LIKE 'session:%'")
_COUNT = text("SELECT count(*) FROM meta WHERE key LIKE 'session:%'")
_PUT = text(
    "INSERT INTO meta (key, value) VALUES (:key, :value)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_TOUCH = text("UPDATE meta SET value = :value WHERE key = :key")
_DELETE = text("DELETE FROM meta WHERE key IN :keys").bindparams(bindparam("keys", expanding=True))


class SessionRows:
    """The Store's sign-in session methods, for CommonStore (``_read`` and ``_write``)."""

    _read: Any
    _write: Any

    @guarded
    def session(self, key: str) -> dict[str, Any] | None:
        with self._read() as conn:
            value = conn.execute(_ONE, {"key": PREFIX + key}).scalar()
        return None if value is None else json.loads(value)

    @guarded
    def sessions(self) -> list[tuple[str, dict[str, Any]]]:
        with self._read() as conn:
            rows = conn.execute(_ALL).all()
        return [(key[len(PREFIX) :], json.loads(value)) for key, value in rows]

    @guarded
    def count_sessions(self) -> int:
        with self._read() as conn:
            return int(conn.execute(_COUNT).scalar() or 0)

    @guarded
    def put_session(self, key: str, row: dict[str, Any]) -> None:
        with self._write() as conn:
            conn.execute(_PUT, {"key": PREFIX + key, "value": json.dumps(row)})

    @guarded
    def touch_session(self, key: str, row: dict[str, Any]) -> None:
        """Rewrites a session's row if it is still there (never brings back one just closed)."""
        with self._write() as conn:
            conn.execute(_TOUCH, {"key": PREFIX + key, "value": json.dumps(row)})

    @guarded
    def delete_sessions(self, keys: list[str]) -> None:
        if not keys:
            return
        with self._write() as conn:
            conn.execute(_DELETE, {"keys": [PREFIX + key for key in keys]})
