"""An MCP client that connects with OAuth alone (no header), as a web or desktop client does:
the SDK's OAuthClientProvider, with a person's sign-in and consent played over HTTP (or by a
browser: the ``person`` callable), and the pieces the bad-input tests send by hand."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import queue
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio.to_thread
import requests
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from agent_memory.http.oauth.pages import CONSENT_PATH
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.rest_daemon import START_TIMEOUT_SECS, RestDaemon
from tests.support.team import ACCEPT, bearer

MODERN = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
DISCOVER = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}
CALLBACK = "http://127.0.0.1:9/callback"  # nothing listens: the code is read off the redirect
_HIDDEN = re.compile(r'name="(request|consent)" value="([^"]+)"')


def hidden(html: str, name: str) -> str:
    """The value of the page's hidden field ``name``."""
    values = dict(_HIDDEN.findall(html))
    assert name in values, html
    return values[name]


def redirect_query(answer: requests.Response) -> dict[str, str]:
    """The query of a redirect to the client (the code and state, or the error)."""
    assert answer.status_code in (302, 303), answer.text
    query = parse_qs(urlsplit(answer.headers["Location"]).query)
    return {k: v[0] for k, v in query.items()}


def consent_in(http: requests.Session, url: str, credential: str) -> requests.Response:
    """A person opens the authorization URL and signs in: the consent page (or the sign-in
    page again, 401, when the credential is refused)."""
    page = http.get(url, timeout=START_TIMEOUT_SECS)
    assert page.status_code == 200, page.text
    form = {"request": hidden(page.text, "request"), "credential": credential}
    return http.post(page.url, data=form, timeout=START_TIMEOUT_SECS)


def person(credential: str, decision: str = "allow") -> Callable[[str], dict[str, str]]:
    """A person who signs in with ``credential`` and answers ``decision``: what the client's
    redirect then carries."""

    def act(url: str) -> dict[str, str]:
        with requests.Session() as http:
            consent = consent_in(http, url, credential)
            assert consent.status_code == 200, consent.text
            answer = http.post(
                urljoin(consent.url, CONSENT_PATH),
                data={"consent": hidden(consent.text, "consent"), "decision": decision},
                allow_redirects=False,
                timeout=START_TIMEOUT_SECS,
            )
            return redirect_query(answer)

    return act


@dataclass
class Memory:
    """The SDK client's token storage, in memory (what a client keeps between requests)."""

    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None
    urls: list[str] = field(default_factory=list)

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def oauth_provider(
    server_url: str,
    act: Callable[[str], dict[str, str]],
    storage: Memory | None = None,
    redirect_uri: str = CALLBACK,
) -> OAuthClientProvider:
    """The SDK's OAuth for ``server_url``: discovery, registration, the authorization code
    with PKCE (``act`` plays the person at the URL it is sent to), tokens and refresh."""
    storage = storage or Memory()
    answers: list[dict[str, str]] = []

    async def redirect(url: str) -> None:
        storage.urls.append(url)
        answers.append(await anyio.to_thread.run_sync(act, url))

    async def callback() -> AuthorizationCodeResult:
        answer = answers.pop()
        return AuthorizationCodeResult(
            code=answer["code"], state=answer.get("state"), iss=answer.get("iss")
        )

    metadata = OAuthClientMetadata(
        client_name="Test connector",
        redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
    )
    return OAuthClientProvider(server_url, metadata, storage, redirect, callback)


def oauth_client(url: str, provider: OAuthClientProvider, mode: str) -> Client:
    """The SDK's Streamable HTTP client at ``url`` (a daemon's /mcp), with OAuth only."""
    http = create_mcp_http_client(auth=provider)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


def register(daemon: RestDaemon, redirect_uri: str = CALLBACK, name: str = "Hand") -> str:
    """A client registered by hand: its id."""
    answer = daemon.request(
        "POST", "/register", json={"redirect_uris": [redirect_uri], "client_name": name}
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["client_id"]


def authorize_url(daemon: RestDaemon, client_id: str, challenge: str, **extra: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "xyz",
        "resource": daemon.url + "/mcp",
        **extra,
    }
    return requests.Request("GET", daemon.url + "/authorize", params=params).prepare().url


def code_for(daemon: RestDaemon, client_id: str, credential: str, **extra: str) -> tuple[str, str]:
    """A code for ``client_id`` approved with ``credential``, and its PKCE verifier."""
    verifier, challenge = pkce()
    answer = person(credential)(authorize_url(daemon, client_id, challenge, **extra))
    assert answer["state"] == "xyz"
    return answer["code"], verifier


def token_request(daemon: RestDaemon, **form: str) -> requests.Response:
    return daemon.request("POST", "/token", data=form)


def mcp_answers(
    daemon: RestDaemon,
    access: str,
    host: str | None = None,
    http: requests.Session | None = None,
) -> int:
    """The status of a 2026-era request to /mcp with this access token (at ``host``; on
    ``http``'s connection when given)."""
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, **MODERN, **bearer(access)}
    if host is not None:
        headers["Host"] = host
    caller = http or daemon.session
    answer = caller.post(
        daemon.url + "/mcp", data=json.dumps(DISCOVER), headers=headers, timeout=START_TIMEOUT_SECS
    )
    return answer.status_code


def tokens_for(daemon: RestDaemon, client_id: str, credential: str) -> dict:
    code, verifier = code_for(daemon, client_id, credential)
    answer = token_request(
        daemon,
        grant_type="authorization_code",
        code=code,
        code_verifier=verifier,
        client_id=client_id,
        redirect_uri=CALLBACK,
        resource=daemon.url + "/mcp",
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


class Callback:
    """A native client's loopback redirect URI: a small HTTP server on a free port that
    answers every request and keeps each one's query (for a browser that follows the
    redirect to it)."""

    def __init__(self) -> None:
        queries: queue.Queue[dict[str, str]] = queue.Queue()

        class Answer(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                queries.put({k: v[0] for k, v in query.items()})
                body = b"connected"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.queries = queries
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Callback:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def with_service(location: str, work, clock=time.time):
    """``work(service)`` on a service of its own at ``location``, closed after it: to look at
    what a daemon wrote without keeping the database open."""
    service = MemoryService(open_store(location), clock=clock)
    try:
        return work(service)
    finally:
        service.close()
