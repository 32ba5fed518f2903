"""OAuth 2.1 for MCP clients that sign in rather than send a header: what a grant is, and
its life from the authorization request to revocation (rows: storage.oauth; the protocol's
endpoints: transports.mcp.oauth, on the SDK's handlers).

A grant is a token's, never more: a person signs in with one of the existing access tokens
(or a one-time code ``agent-memory token approve NAME`` prints for one), sees what the client
will be allowed, and consents. The grant keeps the token's name and the SHA-256 of its
secret, as a page's session does, and every use re-checks that token
(Tokens.check_key): what the grant may do is exactly the token's :class:`Grant`, a
revoked or expired token ends its grants at their next request in every process, and a
token made again under the name has another secret, so the old grants stay ended.

Every secret (request ids, consent ids, codes, access and refresh tokens, approval codes)
is 32 random bytes (the approval code a person types: 12 letters), and only its SHA-256
is kept. Each is single-use where the protocol wants it: a row in flight is taken by the
request that uses it, a code becomes a grant once, and a refresh rotates both tokens. A code
or a replaced refresh token presented again revokes the grant it led to (someone else holds
a copy). Clients register as public clients (no secret; PKCE protects the code).
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

from agent_memory.contract.errors import InvalidArgument
from agent_memory.service.context import Context
from agent_memory.service.tokens import (
    DAY_SECS,
    LAST_USED_EVERY_SECS,
    PREFIX,
    Grant,
    Tokens,
    Unauthorized,
    key,
)
from agent_memory.storage.base import REPLACED

log = logging.getLogger(__name__)

ACCESS_PREFIX = "amoa_"
REFRESH_PREFIX = "amor_"
SECRET_BYTES = 32
# A secret as written: SECRET_BYTES in URL-safe base64, unpadded. Redaction knows an access
# or refresh token by its prefix and this length, and an approval code by its alphabet and
# groups (service/redact/rules.py).
SECRET_CHARS = -(-SECRET_BYTES * 4 // 3)
# A person has this long to sign in and consent once a client asked.
SIGN_IN_SECS = 10 * 60
# A code must be exchanged this soon after consent (OAuth 2.1 advises at most 10 minutes).
CODE_SECS = 60
# An access token lives this long; its client refreshes it with the refresh token.
ACCESS_TOKEN_SECS = 3600
# A refresh token unused for this long expires, and its grant with it.
REFRESH_TOKEN_SECS = 30 * DAY_SECS
# `token approve`'s one-time code: its life, and its letters (no 0/O, 1/I/L to misread).
APPROVAL_SECS = 10 * 60
APPROVAL_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
APPROVAL_GROUPS = 3
APPROVAL_GROUP_LETTERS = 4
# Registration is open to anyone: at most this many clients are kept (the least recently
# used without a grant go first), and one without a grant goes after this long unused (its
# last authorization, grant or refresh): longer than a refresh token lives, so that a client
# whose grant expired can still ask a person again under the id it keeps.
MAX_CLIENTS = 1000
CLIENT_IDLE_SECS = 90 * DAY_SECS
# Authorization requests waiting for a person, at most (the oldest go first).
MAX_WAITING = 1000


class Ended(Exception):
    """A sign-in or consent that expired, or was used already: start again from the client."""


class Refused(Exception):
    """A token request refused: ``error`` is the RFC 6749 error code."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error


@dataclass(frozen=True)
class Request:
    """An authorization request as /authorize checked it: where the code goes, its PKCE
    challenge, the resource it is for (RFC 8707), the scopes and state the client sent."""

    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    resource: str
    scopes: list[str]
    state: str | None


@dataclass(frozen=True)
class Flight:
    """A row in flight: a request waiting for sign-in or consent, or a code."""

    client_id: str
    client: dict[str, Any]
    request: Request
    token_name: str | None
    expires_at: int
    token_digest: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Issued:
    """What a token request answers."""

    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]


@dataclass(frozen=True)
class Access:
    """An access token's grant, for one request: the token's rights, and which OAuth grant
    (by id) and client it came through."""

    grant: Grant
    id: int
    client_id: str


@dataclass(frozen=True)
class Held:
    """A grant found by one of its tokens (for the token endpoint and revocation)."""

    id: int
    client_id: str
    resource: str
    scopes: list[str]
    access_expires_at: int
    refresh_expires_at: int


def _key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _held(row: dict[str, Any]) -> Held:
    return Held(
        int(row["id"]),
        row["client_id"],
        row["resource"],
        json.loads(row["scopes"]),
        int(row["access_expires_at"]),
        int(row["refresh_expires_at"]),
    )


class OAuth:
    """Clients, sign-ins, codes and grants of ``service``'s database, on its clock."""

    def __init__(self, service: Context) -> None:
        self._service = service
        self._db = service.db
        self._tokens = Tokens(service)

    def _now(self) -> int:
        return int(self._service.now())

    # -- clients ------------------------------------------------------------------------
    def register(self, client_id: str, client: dict[str, Any]) -> None:
        """Keeps a client's registration (its metadata, no secret)."""
        with self._service.storage("oauth register"):
            self._db.add_oauth_client(client_id, json.dumps(client), self._now(), MAX_CLIENTS)

    def client(self, client_id: str) -> dict[str, Any] | None:
        with self._service.storage("oauth client"):
            row = self._db.oauth_client(client_id)
        return None if row is None else json.loads(row["client"])

    # -- a person signs in and consents ----------------------------------------------------
    def open_request(self, client_id: str, request: Request) -> str:
        """The id of a new sign-in for ``request`` (it goes in the sign-in page's address)."""
        request_id = secrets.token_urlsafe(SECRET_BYTES)
        now = self._now()
        row = self._row("sign_in", client_id, request, None, None, now + SIGN_IN_SECS)
        with self._service.storage("oauth authorize"):
            self._db.add_oauth_code(_key(request_id), row, MAX_WAITING)
            self._db.touch_oauth_client(client_id, now)
        return request_id

    def waiting(self, request_id: str) -> Flight | None:
        """The sign-in of this id, while it waits (None: unknown, used or expired)."""
        return self._flight(request_id, "sign_in")

    def sign_in(self, request_id: str, credential: str) -> tuple[str, Flight, Grant]:
        """Signs the request in with an access token or an approval code: the consent id,
        the request, and the grant the client would have. Ended when the request is gone;
        Unauthorized when the credential is wrong, expired or revoked (the request waits on)."""
        flight = self.waiting(request_id)
        if flight is None:
            raise Ended("this sign-in has expired or was used already")
        name, digest = self._signer(credential.strip())
        grant = self._tokens.check_key(name, digest)
        consent_id = secrets.token_urlsafe(SECRET_BYTES)
        row = self._row(
            "consent", flight.client_id, flight.request, name, digest, self._now() + SIGN_IN_SECS
        )
        with self._service.storage("oauth sign-in"):
            taken = self._db.take_oauth_code(_key(request_id), "sign_in", (_key(consent_id), row))
        if taken is None:
            raise Ended("this sign-in has expired or was used already")
        return consent_id, flight, grant

    def _signer(self, credential: str) -> tuple[str, str]:
        """The token a credential stands for: its name and its secret's SHA-256."""
        if credential.startswith(PREFIX):
            return key(credential)
        code = credential.upper().replace("-", "").replace(" ", "")
        with self._service.storage("oauth sign-in"):
            row = self._db.take_oauth_code(_key(code), "approval")
        if row is None or row["expires_at"] <= self._now():
            raise Unauthorized("the token or code is wrong, expired or revoked")
        return row["token_name"], row["token_digest"]

    def consenting(self, consent_id: str) -> Flight | None:
        """The consent of this id, while it waits (None: unknown, used or expired)."""
        return self._flight(consent_id, "consent")

    def decide(self, consent_id: str, allow: bool) -> tuple[Flight, str | None]:
        """The person's answer: the request and, when allowed, its code (None: denied).
        Ended when the consent is gone; Unauthorized when its token was revoked meanwhile."""
        flight = self.consenting(consent_id)
        if flight is None:
            raise Ended("this sign-in has expired or was used already")
        with self._service.storage("oauth consent"):
            row = self._db.take_oauth_code(_key(consent_id), "consent")
        if row is None:
            raise Ended("this sign-in has expired or was used already")
        if not allow:
            return flight, None
        self._tokens.check_key(row["token_name"], row["token_digest"])
        code = secrets.token_urlsafe(SECRET_BYTES)
        code_row = self._row(
            "code",
            flight.client_id,
            flight.request,
            row["token_name"],
            row["token_digest"],
            self._now() + CODE_SECS,
        )
        with self._service.storage("oauth consent"):
            self._db.add_oauth_code(_key(code), code_row, MAX_WAITING)
        return flight, code

    def approval(self, name: str) -> str:
        """A one-time code that signs in as the token ``name`` (``token approve``): typed on
        the sign-in page instead of the token. InvalidArgument when no such token is live."""
        with self._service.storage("token approve"):
            row = self._db.token(name)
        now = self._now()
        if row is None or (row["expires_at"] is not None and now >= row["expires_at"]):
            raise InvalidArgument(f"no live token named {name!r} (agent-memory token list)")
        size = APPROVAL_GROUP_LETTERS
        code = "".join(secrets.choice(APPROVAL_ALPHABET) for _ in range(APPROVAL_GROUPS * size))
        approval = {
            "stage": "approval",
            "client_id": None,
            "request": "{}",
            "token_name": name,
            "token_digest": row["hash"],
            "expires_at": now + APPROVAL_SECS,
        }
        with self._service.storage("token approve"):
            self._db.add_oauth_code(_key(code), approval, MAX_WAITING)
        return "-".join(code[i : i + size] for i in range(0, len(code), size))

    # -- the token endpoint ------------------------------------------------------------------
    def code(self, code: str) -> Flight | None:
        """The code's request (None: unknown or used). A code used already revokes the grant
        it led to: whoever presents it again holds a copy."""
        found = self._flight(code, "code", expired_too=True)
        if found is None:
            self._reused(code)
        return found

    def exchange(self, code: str, client_id: str) -> Issued:
        """Tokens for a code the token endpoint checked (client, redirect, PKCE, expiry);
        Refused when another request took it first (which ends the grant it made, as any
        reuse does) or its token was revoked meanwhile."""
        flight = self._flight(code, "code", expired_too=True)
        if flight is None or flight.token_name is None or flight.token_digest is None:
            raise self._reused(code)
        try:
            self._tokens.check_key(flight.token_name, flight.token_digest)
        except Unauthorized:
            raise Refused("invalid_grant", "the token that approved it was revoked") from None
        now = self._now()
        access, refresh = _secret(ACCESS_PREFIX), _secret(REFRESH_PREFIX)
        grant = {
            "client_id": client_id,
            "token_name": flight.token_name,
            "token_digest": flight.token_digest,
            "resource": flight.request.resource,
            "scopes": json.dumps(flight.request.scopes),
            "code_key": _key(code),
            "created_at": now,
            "used_at": now,
            **self._fresh(access, refresh, now),
        }
        with self._service.storage("oauth token"):
            done = self._db.exchange_oauth_code(_key(code), grant)
        if done is None:
            raise self._reused(code)
        return Issued(access, refresh, ACCESS_TOKEN_SECS, flight.request.scopes)

    def _reused(self, code: str) -> Refused:
        """A code presented once it was used: the grant it made ends (whoever presents it
        again holds a copy); the refusal to answer with."""
        self._revoke_by("code_key", _key(code), "an authorization code was used twice")
        return Refused("invalid_grant", "the authorization code was used already")

    def refreshable(self, refresh_token: str) -> Held | None:
        """The grant of a refresh token (None: unknown). Any refresh token the grant replaced
        revokes it: whoever presents one again holds a copy."""
        with self._service.storage("oauth token"):
            row = self._db.oauth_grant("refresh_key", _key(refresh_token))
        if row is None:
            self._revoke_by(REPLACED, _key(refresh_token), "a refresh token was used twice")
            return None
        return _held(row)

    def refresh(self, grant_id: int, refresh_token: str) -> Issued:
        """New access and refresh tokens for the grant (the old ones stop at once);
        Refused when another refresh took it first or its token was revoked."""
        with self._service.storage("oauth token"):
            row = self._db.oauth_grant("id", grant_id)
        if row is None:
            raise Refused("invalid_grant", "the refresh token was revoked")
        try:
            self._tokens.check_key(row["token_name"], row["token_digest"])
        except Unauthorized:
            raise Refused("invalid_grant", "the token that approved it was revoked") from None
        now = self._now()
        access, refresh = _secret(ACCESS_PREFIX), _secret(REFRESH_PREFIX)
        tokens = self._fresh(access, refresh, now)
        with self._service.storage("oauth token"):
            old = (_key(refresh_token), int(row["refresh_expires_at"]))
            rotated = self._db.rotate_oauth_grant(grant_id, old, tokens, now)
        if not rotated:
            raise Refused("invalid_grant", "the refresh token was used already")
        return Issued(access, refresh, ACCESS_TOKEN_SECS, json.loads(row["scopes"]))

    def holding(self, access_token: str) -> Held | None:
        """The grant of an access token, expired or not (None: unknown)."""
        with self._service.storage("oauth token"):
            row = self._db.oauth_grant("access_key", _key(access_token))
        return None if row is None else _held(row)

    def revoke(self, grant_id: int) -> bool:
        """Ends a grant: both its tokens stop at once."""
        with self._service.storage("oauth revoke"):
            return self._db.delete_oauth_grant(grant_id)

    # -- a request to /mcp -------------------------------------------------------------------
    def check(self, access_token: str, resource: str) -> Access:
        """The access a request with this access token has at ``resource`` (its audience);
        Unauthorized when the token is wrong, expired, revoked or for another resource, or
        the token that approved it was revoked or has expired."""
        with self._service.storage("token check"):
            row = self._db.oauth_grant("access_key", _key(access_token))
        now = self._now()
        if row is None:
            raise Unauthorized("the access token is wrong or was revoked")
        if now >= row["access_expires_at"]:
            raise Unauthorized("the access token has expired")
        if row["resource"] != resource:
            raise Unauthorized("the access token was issued for another resource")
        try:
            grant = self._tokens.check_key(row["token_name"], row["token_digest"])
        except Unauthorized:
            raise Unauthorized("the token that approved this access was revoked") from None
        if now - row["used_at"] >= LAST_USED_EVERY_SECS:
            with self._service.storage("token check"):
                self._db.touch_oauth_grant(row["id"], now)
        return Access(grant, int(row["id"]), row["client_id"])

    # -- what an administrator sees ----------------------------------------------------------
    def grants(self) -> list[dict[str, Any]]:
        """Every grant: its id, the token that approved it, the client (id, name, where its
        codes go), when it was approved and last used, and when it expires unless refreshed."""
        with self._service.storage("token list"):
            rows = self._db.oauth_grants()
        listed = []
        for row in rows:
            client = json.loads(row["client"])
            listed.append(
                {
                    "id": int(row["id"]),
                    "token": row["token_name"],
                    "client_id": row["client_id"],
                    "client_name": client.get("client_name"),
                    "redirect_uris": client.get("redirect_uris") or [],
                    "created_at": int(row["created_at"]),
                    "last_used_at": int(row["used_at"]),
                    "expires_at": int(row["refresh_expires_at"]),
                }
            )
        return listed

    # -- helpers -----------------------------------------------------------------------------
    def _flight(self, secret: str, stage: str, *, expired_too: bool = False) -> Flight | None:
        with self._service.storage("oauth"):
            row = self._db.oauth_code(_key(secret), stage)
        if row is None or (not expired_too and row["expires_at"] <= self._now()):
            return None
        return Flight(
            row["client_id"],
            json.loads(row["client"]) if row["client"] else {},
            Request(**json.loads(row["request"])),
            row["token_name"],
            int(row["expires_at"]),
            row["token_digest"],
        )

    def _revoke_by(self, column: str, secret_key: str, why: str) -> None:
        with self._service.storage("oauth revoke"):
            row = self._db.oauth_grant(column, secret_key)
            if row is not None:
                self._db.delete_oauth_grant(row["id"])
        if row is not None:
            log.warning("%s: grant %s of token %r revoked", why, row["id"], row["token_name"])

    @staticmethod
    def _row(
        stage: str,
        client_id: str,
        request: Request,
        name: str | None,
        digest: str | None,
        expires_at: int,
    ) -> dict[str, Any]:
        return {
            "stage": stage,
            "client_id": client_id,
            "request": json.dumps(asdict(request)),
            "token_name": name,
            "token_digest": digest,
            "expires_at": expires_at,
        }

    @staticmethod
    def _fresh(access: str, refresh: str, now: int) -> dict[str, Any]:
        return {
            "access_key": _key(access),
            "access_expires_at": now + ACCESS_TOKEN_SECS,
            "refresh_key": _key(refresh),
            "refresh_expires_at": now + REFRESH_TOKEN_SECS,
        }


def _secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(SECRET_BYTES)
