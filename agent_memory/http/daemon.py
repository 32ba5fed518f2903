"""The HTTP daemon: REST, the web page and MCP (Streamable HTTP) on one port, one process.

It joins two transports, which may not import each other, so it sits above both, beside
the wiring (app.py), and below the command line that starts it. What serves HTTP is the
REST transport's waitress server (:mod:`rest.daemon`), with its header-time guards, for
every route; ``/mcp`` is the SDK's Streamable HTTP app (:mod:`mcp.http`), run in one event
loop thread that waitress's workers hand each request to (:mod:`rest.asgi`).

In front of both stands the token gate (:class:`Gate`): once the database requires tokens,
every request but the page's files and /health must carry ``Authorization: Bearer <token>``,
or (API routes only) the session cookie of a page signed in with a token (rest.signin), or
(/mcp only) an OAuth access token a token approved (mcp.oauth, whose endpoints the gate lets
through), and is served by the service as that token may use it (service.access). A 401 from
/mcp names the resource metadata that starts a client's OAuth flow. On loopback, on a
database that never had a token, every request is served without one, as ``local``.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from anyio.from_thread import start_blocking_portal
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from agent_memory.contract.errors import StorageError
from agent_memory.http import mcp as mcp_http
from agent_memory.http import oauth
from agent_memory.http.asgi import AsgiMount
from agent_memory.http.server import (
    GRANT,
    SERVICE,
    SIGN_IN_PATH,
    CrossSite,
    DaemonServer,
    SignIn,
    create_server,
)
from agent_memory.service.access import Granted
from agent_memory.service.core import MemoryService
from agent_memory.service.oauth import ACCESS_PREFIX
from agent_memory.service.tokens import FULL, Grant, Tokens, Unauthorized

log = logging.getLogger(__name__)

# Served to anyone: the page's own files (no data: the page asks the API, with a token) and
# the liveness check (no data either; `ui` proves with it which database a daemon serves).
OPEN_PATHS = frozenset({"/", "/health", "/openapi.json"})
OPEN_PREFIXES = ("/assets/",)
REALM = "agent-memory"
# environ key: who an MCP session is bound to, when not the token's name (an OAuth grant).
PRINCIPAL = "agent_memory.principal"


class Gate:
    """A WSGI app: ``app`` for requests whose token is good, 401 for the others. A request
    goes on with the service as its token may use it in ``environ[SERVICE]``, and its
    grant in ``environ[GRANT]``. The token is a Bearer header's, or on an API route the
    one a signed-in page's session cookie stands for (``sign_in``: rest.signin)."""

    def __init__(
        self,
        app: Callable[..., Any],
        service: MemoryService,
        *,
        open_: bool,
        sign_in: SignIn | None = None,
        authorization: oauth.Authorization | None = None,
    ) -> None:
        self.app = app
        self.service = service
        self.tokens = Tokens(service)
        # loopback: no token needed while the database requires none (it never had a token,
        # or was reopened: a database that has had one keeps requiring one)
        self.open = open_
        self.sign_in = sign_in
        self.authorization = authorization

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) or _signs_in(environ):
            return self.app(environ, start_response)
        if self.authorization is not None and path in oauth.PATHS:
            return self.app(environ, start_response)  # OAuth's endpoints: each checks its own
        try:
            grant = self.grant(environ)
        except Unauthorized as exc:
            invalid = environ.get("HTTP_AUTHORIZATION") is not None
            challenge = f'Bearer realm="{REALM}"' + (', error="invalid_token"' if invalid else "")
            if self.authorization is not None:
                challenge += self.authorization.challenge(environ)
            return _json(start_response, 401, f"unauthorized: {exc}", challenge)
        except CrossSite as exc:
            return _json(start_response, 403, str(exc))
        except StorageError as exc:
            return _json(start_response, 500, str(exc))
        environ[GRANT] = grant
        environ[SERVICE] = self.service if grant is FULL else Granted(self.service, grant)
        return self.app(environ, start_response)

    def grant(self, environ: dict[str, Any]) -> Grant:
        """The request's grant: its Bearer token's, else its session's, else (loopback, on a
        database that never had a token or was reopened) FULL. A session that ended counts as
        none on an open daemon."""
        header = environ.get("HTTP_AUTHORIZATION")
        if header is not None:
            return self.bearer(header, environ)
        ended: Unauthorized | None = None
        try:
            found = self.sign_in.grant(environ) if self.sign_in is not None else None
        except Unauthorized as exc:
            found, ended = None, exc
        if found is not None:
            return found
        if self.open and not self.tokens.required():
            return FULL
        # the page's routes take a session; /mcp takes a token only
        on_page = environ.get("PATH_INFO", "").startswith("/api/")
        page = ", or sign in on the page" if on_page else ""
        raise ended or Unauthorized(f"a token is required (Authorization: Bearer <token>{page})")

    def bearer(self, header: str, environ: dict[str, Any]) -> Grant:
        scheme, _, value = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized("expected the header Authorization: Bearer <token>")
        if self.authorization is not None and value.strip().startswith(ACCESS_PREFIX):
            access = self.authorization.check(value.strip(), environ)
            environ[PRINCIPAL] = f"oauth:{access.id}"  # its MCP sessions are the grant's own
            return access.grant
        return self.tokens.check(value.strip())


def _signs_in(environ: dict[str, Any]) -> bool:
    """Signing in or out: the route checks the token itself (a page signs in without one)."""
    return environ.get("PATH_INFO") == SIGN_IN_PATH and environ.get("REQUEST_METHOD") in (
        "POST",
        "DELETE",
    )


_REASONS = {401: "Unauthorized", 403: "Forbidden", 500: "Internal Server Error"}


def _json(start_response: Callable[..., Any], status: int, message: str, challenge: str = ""):
    body = (json.dumps({"error": message}) + "\n").encode("utf-8")
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    if challenge:
        headers.append(("WWW-Authenticate", challenge))
    start_response(f"{status} {_REASONS[status]}", headers)
    return [body]


def _who(scope: dict[str, Any], environ: dict[str, Any]) -> None:
    """The MCP request's service and its sender: a session is bound to the credential that
    opened it, the token or one of its OAuth grants (the SDK answers another's request for
    it as for an unknown session); its subject, the token, is whose session cap it counts
    against."""
    grant = environ.get(GRANT, FULL)
    scope[SERVICE] = environ.get(SERVICE)
    if grant is not FULL:
        principal = environ.get(PRINCIPAL, grant.name)
        token = AccessToken(token="", client_id=principal, scopes=[], subject=grant.name)
        scope["user"] = AuthenticatedUser(token)


def service_of(default: MemoryService) -> Callable[[Any], Any]:
    """For the MCP server: the service a request's token may use, from its scope."""

    def resolve(ctx: Any) -> Any:
        request = getattr(ctx, "request", None)
        scope = getattr(request, "scope", None) or {}
        return scope.get(SERVICE) or default

    return resolve


@contextmanager
def serving(
    service: MemoryService,
    host: str,
    port: int,
    *,
    allow_remote: bool,
    open_: bool,
    extra_hosts: tuple[str, ...] = (),
    outlook: str = "",
    sock: socket.socket | None = None,
    worker: int | None = None,
    least_busy: Callable[[int], bool] | None = None,
) -> Iterator[DaemonServer]:
    """The daemon bound to ``host:port`` with ``/mcp`` mounted and the token gate in front,
    its MCP sessions running until the block ends (call ``.run()`` in it). ``open_``: no
    token is needed while none exists (loopback). OSError when it cannot bind. A worker
    process (``worker``: its number) serves ``sock``, which its parent bound, and MCP
    without sessions (the next request of a client may reach another worker)."""
    server = create_server(
        service,
        host,
        port,
        allow_remote=allow_remote,
        extra_hosts=extra_hosts,
        sock=sock,
        worker=worker,
        least_busy=least_busy,
    )
    try:
        manager = mcp_http.session_manager(
            service,
            max_body_bytes=server.max_body_bytes,
            outlook=outlook,
            service_for=service_of(service),
            stateless=worker is not None,
        )
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(manager.run()),
        ):
            mount = AsgiMount(manager.handle_request, portal, mcp_http.METHODS, _who)
            hosts = oauth.issuers(server.guard.hosts, server.guard.public)
            authorization = oauth.Authorization(service, hosts)
            issued = AsgiMount(authorization, portal, oauth.METHODS, authorization.scope_issuer)
            mounts = {mcp_http.PATH: mount, **dict.fromkeys(oauth.PATHS, issued)}
            server.mount(mounts, any_origin=oauth.CROSS_ORIGIN_PATHS)
            server.application = Gate(
                server.application,
                service,
                open_=open_,
                sign_in=server.sign_in,
                authorization=authorization,
            )
            yield server
    finally:
        server.close()
