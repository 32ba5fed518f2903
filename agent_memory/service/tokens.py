"""Access tokens for the HTTP daemon: who may read, who may write, and in which scope.

A token is ``amt_NAME.SECRET``: the name says which row to read (storage.tokens), and the
secret, 32 random bytes, is kept only as its SHA-256 (a secret that random needs no slow
hash) and compared in constant time. It is shown once, when created. Every check reads the
row again: a revoked token (its row gone) or an expired one is refused at its next request,
by every daemon on the database, with no restart.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

from agent_memory.contract.errors import InvalidArgument
from agent_memory.service import validate
from agent_memory.service.context import Context

PREFIX = "amt_"
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
NAME = re.compile(NAME_PATTERN)
SECRET_BYTES = 32
# The secret as a token writes it: SECRET_BYTES in URL-safe base64, unpadded. Redaction
# knows a token by this shape (service/redact/rules.py).
SECRET_CHARS = -(-SECRET_BYTES * 4 // 3)
MAX_EXPIRES_DAYS = 3650
DAY_SECS = 86_400
# A token's "last used" is written at most this often (a write per request would be a
# write lock per request).
LAST_USED_EVERY_SECS = 60
# Who wrote a memory when no token was presented: stdio, the terminal, loopback without tokens.
LOCAL = "local"


@dataclass(frozen=True)
class Grant:
    """What a request may do: as ``name``; writes unless ``read_only``; only in ``scope``
    when it is set."""

    name: str
    read_only: bool = False
    scope: str | None = None


FULL = Grant(LOCAL)


class Unauthorized(Exception):
    """401: no token, or one that is wrong, expired or revoked (the message says which)."""


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class Tokens:
    """Create, list, revoke and check the tokens of ``service``'s database."""

    def __init__(self, service: Context) -> None:
        self._service = service
        self._db = service.db

    def create(
        self,
        name: str,
        *,
        read_only: bool = False,
        scope: str | None = None,
        days: int | None = None,
    ) -> str:
        """The new token (shown once). InvalidArgument for a bad or taken name, scope or term."""
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise InvalidArgument(
                "name must be 1 to 64 letters, digits, '_' or '-', starting with a letter or "
                f"digit (got {validate.shown(name)})"
            )
        if name.lower() == LOCAL:
            raise InvalidArgument(
                f"name must not be {LOCAL!r}, in any case: it names what is written without a "
                f"token, and this token's writes would look the same (got {name!r})"
            )
        if scope is not None:
            scope = validate.label({"scope": scope}, "scope")
        if days is not None and not 1 <= days <= MAX_EXPIRES_DAYS:
            raise InvalidArgument(
                f"expires must be between 1 and {MAX_EXPIRES_DAYS} days (got {days})"
            )
        now = self._service.now()
        secret = secrets.token_urlsafe(SECRET_BYTES)
        row = {
            "hash": _digest(secret),
            "read_only": read_only,
            "scope": scope,
            "created_at": now,
            "expires_at": None if days is None else now + days * DAY_SECS,
            "last_used_at": None,
        }
        with self._service.storage("token create"):
            added = self._db.add_token(name, row)
        if not added:
            raise InvalidArgument(f"a token named {name!r} exists already (revoke it first)")
        return f"{PREFIX}{name}.{secret}"

    def list(self) -> list[dict[str, Any]]:
        with self._service.storage("token list"):
            rows = self._db.tokens()
        return [{"name": n, **{k: v for k, v in row.items() if k != "hash"}} for n, row in rows]

    def revoke(self, name: str) -> bool:
        with self._service.storage("token revoke"):
            return self._db.delete_token(name)

    def exist(self) -> bool:
        with self._service.storage("token check"):
            return self._db.any_token()

    def required(self) -> bool:
        """Whether a daemon must ask for a token, on loopback too: once a token has been
        created, until :meth:`reopen` (revoking the last one opens nothing)."""
        with self._service.storage("token check"):
            return self._db.tokens_required()

    def reopen(self) -> list[str]:
        """Loopback daemons serve without a token again (every local process, full rights),
        unless a token exists: then nothing changes, and the answer names the tokens that
        must be revoked first."""
        with self._service.storage("token reopen"):
            if self._db.reopen_tokens():
                return []
            return [name for name, _row in self._db.tokens()]

    def check(self, token: str) -> Grant:
        """The grant of ``token``; Unauthorized when it is wrong, expired or revoked."""
        return self.check_key(*key(token))

    def check_key(self, name: str, digest: str) -> Grant:
        """The grant of the token ``name`` whose secret has this SHA-256 (what :func:`key`
        gives): how a signed-in page's session re-checks its token at each request, without
        keeping the secret. Unauthorized when it is wrong, expired or revoked (a token
        revoked and created again under its name has another secret, so it is wrong)."""
        with self._service.storage("token check"):
            row = self._db.token(name)
        # compared even when there is no row, so that a wrong name costs what a wrong secret does
        expected = row["hash"] if row else _digest("")
        if not hmac.compare_digest(digest, expected) or row is None or name.lower() == LOCAL:
            raise Unauthorized("the token is wrong or was revoked")
        now = self._service.now()
        if row["expires_at"] is not None and now >= row["expires_at"]:
            raise Unauthorized("the token has expired")
        if row["last_used_at"] is None or now - row["last_used_at"] >= LAST_USED_EVERY_SECS:
            with self._service.storage("token check"):
                self._db.touch_token(name, row, {**row, "last_used_at": now})
        return Grant(name, bool(row["read_only"]), row["scope"])


def key(token: str) -> tuple[str, str]:
    """The name and the secret's SHA-256 of ``token``; Unauthorized when it is not shaped
    as one of ours."""
    name, dot, secret = token.removeprefix(PREFIX).rpartition(".")
    # ours are ASCII; a lone surrogate (a JSON body may hold one) has no UTF-8 to hash
    if not token.isascii() or not token.startswith(PREFIX) or not dot or not NAME.fullmatch(name):
        raise Unauthorized("the token is not an agent-memory token")
    return name, _digest(secret)
