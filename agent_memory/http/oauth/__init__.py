"""OAuth 2.1 for /mcp: the daemon as its own authorization server, on the MCP SDK's handlers.

An MCP client that meets a 401 at /mcp reads the ``resource_metadata`` of its
``WWW-Authenticate`` header (the daemon's token gate adds it), fetches this resource's
metadata (RFC 9728) and then the authorization server's (RFC 8414), registers (RFC 7591),
sends the person to /authorize with a PKCE S256 challenge and the resource it wants
(RFC 8707), and exchanges the code at /token for an access token bound to that resource and
a refresh token it rotates. The SDK's handlers parse and check those requests (client,
redirect URI, PKCE, expiry, client authentication) and answer with the RFCs' errors;
:class:`Provider` is their storage, over service.oauth; the sign-in and consent pages
(oauth_pages) are ours.

Which issuer: the address the client reached, by its Host header. A ``--public-host`` is
served over TLS by the proxy in front, so its issuer is ``https://NAME``; the daemon's own
loopback names are ``http://``, as OAuth allows for loopback only. Any other address offers
no OAuth (a token sent over plain HTTP off loopback could be read on the way). An access
token opens /mcp at the address it was issued for, and nothing else.

Registration is open to anyone, as MCP clients expect; a client is registered as public
(``token_endpoint_auth_method`` ``none``, no secret to keep: RFC 7591 lets the server
replace what a client asked for), since PKCE binds its code to it, and its redirect URIs
follow oauth_redirects' rules. /authorize sends the browser to a client only once a person
signed in (oauth_pages), and every such redirect names its issuer (RFC 9207).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio.to_thread
from mcp.server.auth.handlers.authorize import AuthorizationErrorResponse, AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenErrorResponse, TokenHandler
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import (
    AUTHORIZATION_PATH,
    REGISTRATION_PATH,
    REVOCATION_PATH,
    TOKEN_PATH,
    cors_middleware,
)
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import resource_url_from_server_url
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response

from agent_memory.http.mcp import PATH as MCP_PATH
from agent_memory.http.oauth import pages
from agent_memory.http.oauth.redirects import Registered, refusal_of
from agent_memory.service import oauth as service_oauth
from agent_memory.service.core import MemoryService
from agent_memory.service.oauth import OAuth
from agent_memory.service.tokens import Unauthorized

log = logging.getLogger(__name__)

AUTHORIZATION_SERVER_METADATA = "/.well-known/oauth-authorization-server"
RESOURCE_METADATA = "/.well-known/oauth-protected-resource" + MCP_PATH
# Every path the authorization server answers; the token gate lets them through unasked.
PATHS = frozenset(
    {
        AUTHORIZATION_SERVER_METADATA,
        RESOURCE_METADATA,
        AUTHORIZATION_PATH,
        TOKEN_PATH,
        REGISTRATION_PATH,
        REVOCATION_PATH,
        pages.SIGN_IN_PATH,
        pages.CONSENT_PATH,
    }
)
# The endpoints a client calls itself, from its own web page when it runs in one (the MCP
# Inspector): they answer any Origin (CORS, no cookie read). /authorize and the sign-in and
# consent pages are the person's, and keep the daemon's Origin rule.
CROSS_ORIGIN_PATHS = PATHS - {AUTHORIZATION_PATH, pages.SIGN_IN_PATH, pages.CONSENT_PATH}
METHODS = ("GET", "POST", "OPTIONS")
# The largest body an OAuth request may have (a registration is the longest).
MAX_BODY_BYTES = 64 * 1024
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
# scope key (ASGI) of the issuer a request reached
ISSUER = "agent_memory.issuer"


def issuers(hosts: Iterable[str], public: Iterable[str]) -> dict[str, str]:
    """Which issuer each Host header names: ``https://NAME`` for a public host behind its
    TLS proxy, ``http://NAME`` for a loopback name, none for the rest."""
    public = {name.lower() for name in public}
    found = {}
    for host in {h.lower() for h in hosts} | public:
        loopback = host.rsplit(":", 1)[0] in LOOPBACK_NAMES or host in LOOPBACK_NAMES
        if loopback:
            found[host] = f"http://{host}"
        elif host in public:
            found[host] = f"https://{host}"
    return found


def canonical(url: str) -> str:
    """A resource URL as compared (RFC 8707): scheme and host in lower case, no fragment, no
    final slash."""
    return resource_url_from_server_url(url).rstrip("/")


class Code(AuthorizationCode):
    """A code as the token handler checks it."""


class HeldRefresh(RefreshToken):
    grant_id: int


class HeldAccess(AccessToken):
    grant_id: int


@dataclass
class Provider:
    """The SDK's OAuthAuthorizationServerProvider over service.oauth, for one issuer. Its
    methods run the service's blocking calls in a worker thread."""

    oauth: OAuth
    issuer: str

    @property
    def resource(self) -> str:
        return self.issuer + MCP_PATH

    async def _run(self, call: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(call, *args)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        found = await self._run(self.oauth.client, client_id)
        return None if found is None else Registered.model_validate(found)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or []:
            refusal = refusal_of(str(uri))
            if refusal is not None:
                raise RegistrationError("invalid_redirect_uri", refusal)
        # a public client: the answer the SDK sends is this record, with no secret in it
        client_info.token_endpoint_auth_method = "none"
        client_info.client_secret = None
        client_info.client_secret_expires_at = None
        record = client_info.model_dump(mode="json", exclude_none=True)
        await self._run(self.oauth.register, client_info.client_id, record)

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        if params.resource is not None and canonical(params.resource) != self.resource:
            raise AuthorizeError(
                "invalid_target", f"this server's resource is {self.resource} only"
            )
        request = service_oauth.Request(
            redirect_uri=str(params.redirect_uri),
            redirect_uri_explicit=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge,
            resource=self.resource,
            scopes=params.scopes or [],
            state=params.state,
        )
        request_id = await self._run(self.oauth.open_request, client.client_id, request)
        return construct_redirect_uri(self.issuer + pages.SIGN_IN_PATH, request=request_id)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> Code | None:
        flight = await self._run(self.oauth.code, authorization_code)
        if flight is None:
            return None
        return Code(
            code=authorization_code,
            scopes=flight.request.scopes,
            expires_at=flight.expires_at,
            client_id=flight.client_id,
            code_challenge=flight.request.code_challenge,
            redirect_uri=flight.request.redirect_uri,
            redirect_uri_provided_explicitly=flight.request.redirect_uri_explicit,
            resource=flight.request.resource,
            subject=flight.token_name,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: Code
    ) -> OAuthToken:
        if authorization_code.resource != self.resource:
            raise TokenError("invalid_grant", "the code was issued for another resource")
        try:
            issued = await self._run(self.oauth.exchange, authorization_code.code, client.client_id)
        except service_oauth.Refused as exc:
            raise TokenError(exc.error, str(exc)) from None  # type: ignore[arg-type]
        return _answer(issued)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> HeldRefresh | None:
        held = await self._run(self.oauth.refreshable, refresh_token)
        if held is None:
            return None
        return HeldRefresh(
            token=refresh_token,
            client_id=held.client_id,
            scopes=held.scopes,
            expires_at=held.refresh_expires_at,
            resource=held.resource,
            grant_id=held.id,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: HeldRefresh, scopes: list[str]
    ) -> OAuthToken:
        if refresh_token.resource != self.resource:
            raise TokenError("invalid_grant", "the refresh token is for another resource")
        try:
            issued = await self._run(
                self.oauth.refresh, refresh_token.grant_id, refresh_token.token
            )
        except service_oauth.Refused as exc:
            raise TokenError(exc.error, str(exc)) from None  # type: ignore[arg-type]
        return _answer(issued)

    async def load_access_token(self, token: str) -> HeldAccess | None:
        held = await self._run(self.oauth.holding, token)
        if held is None:
            return None
        return HeldAccess(
            token=token,
            client_id=held.client_id,
            scopes=held.scopes,
            expires_at=held.access_expires_at,
            resource=held.resource,
            grant_id=held.id,
        )

    async def revoke_token(self, token: HeldAccess | HeldRefresh) -> None:
        await self._run(self.oauth.revoke, token.grant_id)

    async def exchange_identity_assertion(self, client: Any, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "only authorization_code and refresh_token")


def _answer(issued: service_oauth.Issued) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        token_type="Bearer",
        expires_in=issued.expires_in,
        scope=" ".join(issued.scopes) or None,
        refresh_token=issued.refresh_token,
    )


@dataclass
class SignInFirst(AuthorizationHandler):
    """The SDK's authorization endpoint, except that it never sends the browser to a client
    before a person signed in: a request it refuses is answered here (400, the RFC's error
    and the state) instead of redirected. Registration is open, so whoever registers a
    redirect URI could send bad requests on purpose to make this server redirect a person
    to it (the OAuth security BCP, RFC 9700, forbids such an open redirector)."""

    sign_in: str = ""  # the sign-in page's URL, where an accepted request is sent

    async def handle(self, request: Request) -> Response:
        answer = await super().handle(request)
        target = answer.headers.get("location")
        if target is None or target.startswith(self.sign_in + "?request="):
            return answer
        # the SDK appends its fields after the redirect URI's own query: the last are its
        fields = {k: v[-1] for k, v in parse_qs(urlsplit(target).query).items()}
        refusal = AuthorizationErrorResponse(
            error=fields.get("error", "server_error"),  # type: ignore[arg-type]
            error_description=fields.get("error_description"),
            state=fields.get("state"),
        )
        return PydanticJSONResponse(refusal, status_code=400, headers={"Cache-Control": "no-store"})


@dataclass
class ResourceBoundTokens(TokenHandler):
    """The SDK's token endpoint, refusing a request that names another resource than this
    server's (RFC 8707: ``invalid_target``); the SDK's own handler does not compare it."""

    resource: str = ""

    async def handle(self, request: Request) -> Response:
        named = (await request.form()).get("resource")  # the form is read once, then cached
        if isinstance(named, str) and canonical(named) != self.resource:
            return self.response(
                TokenErrorResponse(
                    error="invalid_target",
                    error_description=f"this server's resource is {self.resource} only",
                )
            )
        return await super().handle(request)


@dataclass
class Revocation:
    """Token revocation (RFC 7009) for public clients: the client names itself, and a token
    it holds (access or refresh) ends its grant; anything else is answered 200 all the same.
    The SDK's handler would want a ``client_secret`` field, which a public client has none
    of, and answers a client that is not one with ``unauthorized_client``, where RFC 7009
    means RFC 6749's ``invalid_client``; its client authentication and the provider's
    loaders are used as they are."""

    provider: Provider
    clients: ClientAuthenticator

    async def handle(self, request: Request) -> Response:
        try:
            client = await self.clients.authenticate_request(request)
        except AuthenticationError as exc:
            refusal = TokenErrorResponse(error="invalid_client", error_description=exc.message)
            return PydanticJSONResponse(refusal, status_code=401)
        token = pages.form_text(await request.form(), "token")
        if not token:
            refusal = TokenErrorResponse(
                error="invalid_request", error_description="token: required"
            )
            return PydanticJSONResponse(refusal, status_code=400)
        found = await self.provider.load_access_token(
            token
        ) or await self.provider.load_refresh_token(client, token)
        if found is not None and found.client_id == client.client_id:
            await self.provider.revoke_token(found)
        return Response(status_code=200, headers={"Cache-Control": "no-store"})


def metadata(issuer: str) -> OAuthMetadata:
    """This authorization server's metadata (RFC 8414): code flow with PKCE S256, refresh
    tokens, open registration of public clients, revocation, and the issuer named in every
    redirect to a client (RFC 9207)."""
    return OAuthMetadata(
        issuer=issuer,
        authorization_endpoint=issuer + AUTHORIZATION_PATH,
        token_endpoint=issuer + TOKEN_PATH,
        registration_endpoint=issuer + REGISTRATION_PATH,
        revocation_endpoint=issuer + REVOCATION_PATH,
        response_types_supported=["code"],
        grant_types_supported=["authorization_code", "refresh_token"],
        token_endpoint_auth_methods_supported=["none"],
        revocation_endpoint_auth_methods_supported=["none"],
        code_challenge_methods_supported=["S256"],
        authorization_response_iss_parameter_supported=True,
    )


def server(oauth: OAuth, issuer: str) -> Starlette:
    """The authorization server of ``issuer``: the SDK's handlers and ours, on one app."""
    provider = Provider(oauth, issuer)
    clients = ClientAuthenticator(provider)  # type: ignore[arg-type]
    resource = ProtectedResourceMetadata(
        resource=provider.resource,
        authorization_servers=[issuer],
        resource_name="agent-memory",
    )
    page = pages.Pages(oauth, issuer)

    def posted(handler: Callable[..., Any]) -> Any:
        """A POST endpoint other sites' scripts may call (CORS, with the headers the SDK's
        own allow), its body bounded."""
        limited = RequestBodyLimitMiddleware(request_response(handler), MAX_BODY_BYTES)
        return CORSMiddleware(
            limited,
            allow_origins="*",
            allow_methods=["POST", "OPTIONS"],
            allow_headers=[MCP_PROTOCOL_VERSION_HEADER],
        )

    tokens = ResourceBoundTokens(provider, clients, resource=provider.resource)  # type: ignore[arg-type]
    registration = RegistrationHandler(provider, ClientRegistrationOptions(enabled=True))  # type: ignore[arg-type]
    revocation = Revocation(provider, clients)
    routes = [
        Route(
            AUTHORIZATION_SERVER_METADATA,
            cors_middleware(MetadataHandler(metadata(issuer)).handle, ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        ),
        Route(
            RESOURCE_METADATA,
            cors_middleware(ProtectedResourceMetadataHandler(resource).handle, ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        ),
        Route(
            AUTHORIZATION_PATH,
            SignInFirst(provider, sign_in=issuer + pages.SIGN_IN_PATH).handle,  # type: ignore[arg-type]
            methods=["GET", "POST"],
        ),
        Route(TOKEN_PATH, posted(tokens.handle), methods=["POST", "OPTIONS"]),
        Route(REGISTRATION_PATH, posted(registration.handle), methods=["POST", "OPTIONS"]),
        Route(REVOCATION_PATH, posted(revocation.handle), methods=["POST", "OPTIONS"]),
        Route(pages.SIGN_IN_PATH, page.sign_in, methods=["GET", "POST"]),
        Route(pages.CONSENT_PATH, page.consent, methods=["POST"]),
    ]
    return Starlette(routes=routes)


class Authorization:
    """OAuth on the daemon: which issuer a request reached, the authorization servers (an
    ASGI app for PATHS), the ``WWW-Authenticate`` parameter that points a client at them,
    and the check of an access token sent to /mcp."""

    def __init__(self, service: MemoryService, hosts: dict[str, str]) -> None:
        self.oauth = OAuth(service)
        self.hosts = hosts  # Host header -> issuer (see issuers)
        self._servers: dict[str, Starlette] = {}

    def issuer(self, environ: dict[str, Any]) -> str | None:
        """The issuer of the address a request reached (None: no OAuth there)."""
        return self.hosts.get(environ.get("HTTP_HOST", "").lower())

    def challenge(self, environ: dict[str, Any]) -> str:
        """What a 401 from /mcp adds to its ``WWW-Authenticate``, so that a client finds the
        resource metadata by itself (RFC 9728); nothing where no OAuth is offered."""
        issuer = self.issuer(environ)
        if issuer is None or environ.get("PATH_INFO", "").rstrip("/") != MCP_PATH:
            return ""
        return f', resource_metadata="{issuer}{RESOURCE_METADATA}"'

    def check(self, token: str, environ: dict[str, Any]) -> service_oauth.Access:
        """The access an OAuth access token gives this request; Unauthorized unless it is
        sent to /mcp at the address it was issued for, and live."""
        issuer = self.issuer(environ)
        if issuer is None or environ.get("PATH_INFO", "").rstrip("/") != MCP_PATH:
            raise Unauthorized("an OAuth access token opens only /mcp at the address it names")
        return self.oauth.check(token, issuer + MCP_PATH)

    def scope_issuer(self, scope: dict[str, Any], environ: dict[str, Any]) -> None:
        """For the ASGI mount: puts the request's issuer in its scope."""
        scope[ISSUER] = self.issuer(environ)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        issuer = scope.get(ISSUER)
        if issuer is None:
            answer = JSONResponse(
                {"error": "not found: OAuth is offered only at a loopback or --public-host name"},
                status_code=404,
            )
            await answer(scope, receive, send)
            return
        app = self._servers.get(issuer)
        if app is None:
            app = self._servers[issuer] = server(self.oauth, issuer)
        await app(scope, receive, send)
