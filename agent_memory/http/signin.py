"""Sign-in for the web page once tokens exist: the token is typed once, a cookie does the rest.

A page cannot send ``Authorization: Bearer`` without keeping the token where its scripts
can read it, and so where any injected script could too. So the page posts the token once
(``POST /api/session``); it is checked exactly as a Bearer header is, and the answer sets a
cookie holding a random session id that scripts cannot read (HttpOnly), that no other site's
request carries (SameSite=Strict), and that behind TLS is Secure with the ``__Host-`` prefix
(no sibling subdomain can plant one). ``DELETE /api/session`` signs out.

A session keeps the token's name and its secret's SHA-256, never the token. The token gate
(agent_memory.http.daemon.Gate) turns a session cookie into that token's grant by re-checking the
token at every request (service.tokens.Tokens.check_key): a revoked or expired token ends its
sessions at their next request, and the request is then served exactly as a Bearer request of
that token, read-only and scope rules included. The cookie says who asks; nothing more.

A write the cookie authenticates must also carry the header the page sends (CSRF_HEADER),
which no other site can add without a CORS preflight the daemon never grants, and an Origin,
when there is one, that is this daemon's own. Bearer requests carry no cookie risk and are
unchanged. Sessions live in the database (service.sessions), so that every worker process of
a daemon finds them: they survive a restart, and a sign-out ends one in every worker at once.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app, jsonify, request
from werkzeug.http import dump_cookie, parse_cookie

from agent_memory.contract import wire
from agent_memory.service import access
from agent_memory.service.core import MemoryService
from agent_memory.service.sessions import SESSION_IDLE_SECS as SESSION_IDLE_SECS
from agent_memory.service.sessions import SESSION_MAX_AGE_SECS as SESSION_MAX_AGE_SECS
from agent_memory.service.sessions import Sessions
from agent_memory.service.tokens import FULL, Grant, Tokens, Unauthorized, key

COOKIE = "agent_memory_session"
# Behind TLS: Secure, Path=/ and no Domain, which the prefix makes the browser insist on.
TLS_COOKIE = "__Host-" + COOKIE
# The header the page sends on every write: a custom header no form or cross-site fetch can
# send without a preflight.
CSRF_HEADER = "X-Agent-Memory"
PATH = "/api/session"
# The routes a session cookie may open: the API's (never /mcp: MCP clients send a Bearer).
COOKIE_PATHS = "/api/"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# app.extensions key of the app's SignIn; environ key of the request's grant (set by the gate).
KEY = "agent_memory.signin"
GRANT = "agent_memory.grant"
# One answer for every refused token: which of wrong, expired or revoked is not said.
REFUSED = "unauthorized: the token is wrong, expired or revoked"

routes = Blueprint("signin", __name__)


class CrossSite(Exception):
    """403: a write authenticated by the cookie that the page did not send."""


class SignIn:
    """Sessions over ``service``'s tokens, for the daemon at ``guard``'s addresses."""

    def __init__(self, service: MemoryService, guard: Any) -> None:
        self.tokens = Tokens(service)
        self.sessions = Sessions(service)
        self.guard = guard  # rest.app.AddressGuard: the names and origins of this daemon

    def over_tls(self, environ: dict[str, Any]) -> bool:
        """Whether the browser reached us over TLS: directly, or through the proxy the daemon
        was told of, which says so in X-Forwarded-Proto (its first hop's value)."""
        if environ.get("wsgi.url_scheme") == "https":
            return True
        forwarded = environ.get("HTTP_X_FORWARDED_PROTO", "").split(",")[0].strip().lower()
        return forwarded == "https" and self.guard.behind_proxy()

    def cookie_name(self, environ: dict[str, Any]) -> str:
        return TLS_COOKIE if self.over_tls(environ) else COOKIE

    def session_id(self, environ: dict[str, Any]) -> str | None:
        return parse_cookie(environ).get(self.cookie_name(environ)) or None

    def grant(self, environ: dict[str, Any]) -> Grant | None:
        """The grant of the request's session cookie: None when it has none (or it is not an
        API route); Unauthorized when the session is unknown or ended or its token is
        refused; CrossSite for a write the page did not send."""
        if not environ.get("PATH_INFO", "").startswith(COOKIE_PATHS):
            return None
        session_id = self.session_id(environ)
        if session_id is None:
            return None
        session = self.sessions.find(session_id)
        if session is None:
            raise Unauthorized("the sign-in has ended: sign in again")
        try:
            grant = self.tokens.check_key(session.name, session.digest)
        except Unauthorized:
            self.sessions.close(session_id)
            raise Unauthorized("the sign-in has ended (its token was revoked or expired)") from None
        if environ.get("REQUEST_METHOD", "GET") in WRITES:
            refusal = self.csrf_refusal(environ)
            if refusal is not None:
                raise CrossSite(refusal)
        return grant

    def csrf_refusal(self, environ: dict[str, Any]) -> str | None:
        """Why a write by cookie is refused as possibly another site's (None: it is not)."""
        if environ.get("HTTP_" + CSRF_HEADER.upper().replace("-", "_")) is None:
            return (
                f"forbidden: a signed-in write must carry the header {CSRF_HEADER}: 1 "
                "(the page sends it)"
            )
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and not self._own_origin(origin, environ.get("HTTP_HOST")):
            return f"forbidden: cross-site write from Origin {origin!r}"
        site = environ.get("HTTP_SEC_FETCH_SITE")
        if site is not None and site != "same-origin":
            return f"forbidden: cross-site write (Sec-Fetch-Site: {site})"
        return None

    def _own_origin(self, origin: str, host: str | None) -> bool:
        """An Origin the address guard names, or the page's own (scheme://Host as sent):
        with --allow-remote the guard names none, and a foreign site is still refused."""
        if origin.lower() in self.guard.origins:
            return True
        try:
            netloc = urlsplit(origin).netloc
        except ValueError:
            return False
        return host is not None and netloc != "" and netloc.lower() == host.lower()

    def cookie(self, environ: dict[str, Any], value: str, max_age: int) -> str:
        """The Set-Cookie value: HttpOnly, SameSite=Strict, Path=/; Secure behind TLS."""
        return dump_cookie(
            self.cookie_name(environ),
            value,
            max_age=max_age,
            path="/",
            secure=self.over_tls(environ),
            httponly=True,
            samesite="Strict",
        )


class Refused(Exception):
    """A sign-in route's refusal: its status and message (a JSON ``{"error"}`` answer)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@routes.errorhandler(Refused)
def refused(exc: Refused) -> tuple[Response, int]:
    answer = jsonify(error=str(exc))
    if exc.status == 401:
        answer.headers["WWW-Authenticate"] = 'Bearer realm="agent-memory", error="invalid_token"'
    return answer, exc.status


def _page_only() -> SignIn:
    """The app's SignIn, once the request is known to be the page's own (else 403)."""
    signin: SignIn = current_app.extensions[KEY]
    refusal = signin.csrf_refusal(request.environ)
    if refusal is not None:
        raise Refused(403, refusal)
    return signin


def _identity(grant: Grant, via: str) -> dict[str, Any]:
    """Who the request is, and which operations its token may call (``may``, from the rules
    of service.access): the page offers only those."""
    identity = {"name": grant.name, "read_only": grant.read_only, "scope": grant.scope}
    return {**identity, "via": via, "may": access.may(grant)}


@routes.get(PATH)
def who() -> Response:
    """Who the request is: a session's or a Bearer token's grant, or the open daemon's."""
    grant = request.environ.get(GRANT, FULL)
    if grant is FULL:
        via = "open"
    else:
        via = "bearer" if request.headers.get("Authorization") is not None else "session"
    return jsonify(_identity(grant, via))


@routes.post(PATH)
def sign_in() -> Response:
    signin = _page_only()
    token = _token_of_body()
    try:
        name, digest = key(token)
        grant = signin.tokens.check_key(name, digest)
    except Unauthorized:
        raise Refused(401, REFUSED) from None
    old = signin.session_id(request.environ)
    if old is not None:  # a new id at each sign-in: a planted one is never promoted
        signin.sessions.close(old)
    session_id = signin.sessions.open(name, digest)
    answer = jsonify(_identity(grant, "session"))
    max_age = int(signin.sessions.max_age_secs)
    answer.headers["Set-Cookie"] = signin.cookie(request.environ, session_id, max_age)
    answer.headers["Cache-Control"] = "no-store"
    return answer


def _token_of_body() -> str:
    """The token of a ``{"token": "..."}`` body; Refused (400) for any other body."""
    if not request.is_json:
        raise Refused(400, "expected a JSON request body (Content-Type: application/json)")
    try:
        body = wire.loads(request.get_data(as_text=True))
    except (ValueError, RecursionError) as exc:
        raise Refused(400, f"malformed JSON body: {exc}") from None
    if not isinstance(body, dict) or not isinstance(body.get("token"), str):
        raise Refused(400, 'invalid argument: expected {"token": "<token>"}')
    unknown = sorted(set(body) - {"token"})
    if unknown or request.args:
        names = ", ".join([*unknown, *request.args])
        raise Refused(400, f"unknown field: sign-in takes only token (got {names})")
    return body["token"].strip()


@routes.delete(PATH)
def sign_out() -> Response:
    """Ends the cookie's session (if any) and clears the cookie."""
    signin = _page_only()
    session_id = signin.session_id(request.environ)
    if session_id is not None:
        signin.sessions.close(session_id)
    answer = jsonify(signed_out=True)
    answer.headers["Set-Cookie"] = signin.cookie(request.environ, "", 0)
    return answer
