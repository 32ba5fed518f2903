"""OAuth 2.1 on the spawned daemon, end to end on SQLite and PostgreSQL: the SDK's OAuth
client connects with no header (discovery from a 401, registration, authorization with PKCE,
token, MCP calls in both eras, refresh, revocation); every bad request of the protocol is
refused with its RFC's error and grants nothing; a grant has exactly its token's rights, is
listed under it and ends with it."""

from __future__ import annotations

import json
import time

import anyio
import pytest
import requests

from agent_memory.http import mcp as mcp_http
from agent_memory.service.core import MemoryService
from agent_memory.service.oauth import OAuth, Request
from agent_memory.service.tokens import DAY_SECS, Tokens
from tests.support.clock import Clock
from tests.support.mcp_frames import INITIALIZE
from tests.support.oauth import (
    CALLBACK,
    Memory,
    authorize_url,
    code_for,
    consent_in,
    mcp_answers,
    oauth_client,
    oauth_provider,
    person,
    pkce,
    register,
    token_request,
    tokens_for,
    with_service,
)
from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import run_agent_memory
from tests.support.team import ACCEPT, MODES, bearer, make_tokens, mcp_client, revoke

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture
def team(location):
    tokens = make_tokens(location)
    with RestDaemon(location) as daemon:
        # the first sweep has run: it would delete a code a test made expired on purpose
        daemon.read_stderr_until("sweep: ")
        daemon.drain_stderr()
        yield daemon, tokens


def grants(location: str) -> list[dict]:
    return with_service(location, lambda service: OAuth(service).grants())


def refreshed(daemon: RestDaemon, client_id: str, refresh_token: str):
    return token_request(
        daemon,
        grant_type="refresh_token",
        refresh_token=refresh_token,
        client_id=client_id,
        resource=daemon.url + "/mcp",
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_client_connects_with_oauth_alone_in_each_era(team, location, mode):
    daemon, tokens = team
    server = daemon.url + "/mcp"
    refused = daemon.request("POST", "/mcp", json=INITIALIZE, headers={"Accept": ACCEPT})
    metadata = f"{daemon.url}/.well-known/oauth-protected-resource/mcp"
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == (
        f'Bearer realm="agent-memory", resource_metadata="{metadata}"'
    )
    storage = Memory()
    provider = oauth_provider(server, person(tokens["alpha"]), storage)

    async def main():
        async with oauth_client(server, provider, mode) as mcp:
            listed = await mcp.call_tool("memory_list", {})
            stored = await mcp.call_tool("memory_store", {"content": "by OAuth", "type": "TODO"})
            first = storage.tokens
            provider.context.token_expiry_time = time.time() - 1  # its hour is over: refresh
            again = await mcp.call_tool("memory_list", {})
            return listed, stored, first, again

    listed, stored, first, again = anyio.run(main)
    (url,) = storage.urls  # one authorization: the refresh needed no person
    assert url.startswith(daemon.url + "/authorize?") and "code_challenge_method=S256" in url
    assert "resource=http%3A%2F%2F127.0.0.1" in url
    assert [m["id"] for m in listed.structured_content["memories"]] == [1]  # scope alpha's only
    (mine,) = [m for m in again.structured_content["memories"] if m["content"] == "by OAuth"]
    assert (mine["id"], mine["scope"], mine["created_by"]) == (
        stored.structured_content["id"],
        "alpha",
        "alpha",
    )
    current = storage.tokens
    assert current.access_token != first.access_token
    assert current.refresh_token != first.refresh_token
    assert mcp_answers(daemon, first.access_token) == 401  # rotated: the old one stops at once
    assert mcp_answers(daemon, current.access_token) == 200
    assert daemon.request("GET", "/api/memories", headers=bearer(current.access_token)).json()[
        "error"
    ] == ("unauthorized: an OAuth access token opens only /mcp at the address it names")

    # what an administrator sees: the grant under the token that approved it
    listing = run_agent_memory("--db", location, "token", "list").stdout.splitlines()
    under = listing[[line.split()[0] for line in listing].index("alpha") + 1]
    assert under.split()[:4] == ["oauth", "1", "read-write", "alpha"]
    assert under.endswith(f"Test connector -> {CALLBACK}")
    (grant,) = grants(location)
    assert (grant["token"], grant["client_name"]) == ("alpha", "Test connector")

    client_id = storage.client.client_id
    revoked = daemon.request(
        "POST", "/revoke", data={"token": current.access_token, "client_id": client_id}
    )
    assert revoked.status_code == 200
    assert mcp_answers(daemon, current.access_token) == 401
    assert refreshed(daemon, client_id, current.refresh_token).json()["error"] == "invalid_grant"
    assert grants(location) == []


def test_discovery_documents_name_this_server(team):
    daemon, tokens = team
    resource = daemon.request("GET", "/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == daemon.url + "/mcp"
    assert resource["authorization_servers"] == [daemon.url]
    server = daemon.request("GET", "/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == daemon.url
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert server["token_endpoint_auth_methods_supported"] == ["none"]
    # every redirect to a client names the issuer (RFC 9207), so that a client talking to
    # several servers can tell which one answered
    assert server["authorization_response_iss_parameter_supported"] is True
    client_id = register(daemon)
    for decision in ("allow", "deny"):
        answer = person(tokens["rw"], decision)(authorize_url(daemon, client_id, pkce()[1]))
        assert answer["iss"] == daemon.url, decision
    registered = daemon.request(
        "POST",
        "/register",
        json={
            "redirect_uris": [CALLBACK],
            "client_name": "Confidential?",
            "token_endpoint_auth_method": "client_secret_post",
        },
    ).json()
    assert registered["token_endpoint_auth_method"] == "none"  # public: no secret kept
    assert "client_secret" not in registered


def test_a_browser_client_runs_the_flow_from_its_own_origin(team):
    """A client that runs in a web page (the MCP Inspector) fetches the metadata, registers
    and exchanges its code from its own origin: those endpoints answer another site (CORS),
    as the SDK means them to; the person's pages and /mcp keep refusing one."""
    daemon, tokens = team
    site = {"Origin": "http://localhost:6274"}
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ):
        answer = daemon.request("GET", path, headers=site)
        assert answer.status_code == 200, (path, answer.text)
        assert answer.headers["Access-Control-Allow-Origin"] == "*"
    # the headers a client may add, the MCP protocol version's included, as on the SDK's own
    asked = {**site, "Access-Control-Request-Method": "POST"}
    asked["Access-Control-Request-Headers"] = "content-type, mcp-protocol-version"
    for path in ("/register", "/token", "/revoke"):
        preflight = daemon.request("OPTIONS", path, headers=asked)
        assert preflight.status_code == 200, (path, preflight.text)
    registered = daemon.request(
        "POST",
        "/register",
        json={"redirect_uris": [CALLBACK], "client_name": "In a page"},
        headers=site,
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    code, verifier = code_for(daemon, client_id, tokens["rw"])
    form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier}
    form |= {"client_id": client_id, "redirect_uri": CALLBACK}
    issued = daemon.request("POST", "/token", data=form, headers=site)
    assert issued.status_code == 200, issued.text
    assert issued.headers["Access-Control-Allow-Origin"] == "*"
    # the person's pages and the MCP endpoint still refuse another site
    for method, path in (
        ("POST", "/authorize/sign-in"),
        ("POST", "/authorize/consent"),
        ("POST", "/mcp"),
    ):
        refused = daemon.request(method, path, data={}, headers=site)
        assert refused.status_code == 403, (path, refused.text)
        assert "cross-site request from Origin" in refused.json()["error"]


def test_a_public_host_is_an_https_issuer_and_other_names_offer_no_oauth(tmp_path):
    """Behind a TLS proxy, ``--public-host NAME`` is the issuer ``https://NAME`` (never
    http); a loopback name is ``http://``; any other name the daemon answers (here through
    --allow-remote) offers no OAuth: no metadata, no pointer in a 401, no sign-in."""
    db_path = str(tmp_path / "memory.db")
    tokens = make_tokens(db_path)
    public = {"Host": "memory.example.com"}
    with RestDaemon(db_path, "--public-host", "memory.example.com", "--allow-remote") as daemon:
        daemon.drain_stderr()
        resource = daemon.request(
            "GET", "/.well-known/oauth-protected-resource/mcp", headers=public
        ).json()
        assert resource["resource"] == "https://memory.example.com/mcp"
        assert resource["authorization_servers"] == ["https://memory.example.com"]
        server = daemon.request(
            "GET", "/.well-known/oauth-authorization-server", headers=public
        ).json()
        assert server["issuer"] == "https://memory.example.com"
        assert server["token_endpoint"] == "https://memory.example.com/token"
        refused = daemon.request(
            "POST", "/mcp", json=INITIALIZE, headers={**public, "Accept": ACCEPT}
        )
        assert refused.headers["WWW-Authenticate"].endswith(
            'resource_metadata="https://memory.example.com/.well-known/oauth-protected-resource/mcp"'
        )
        # issued at the loopback address: not an access token for the public name
        access = tokens_for(daemon, register(daemon), tokens["rw"])["access_token"]
        assert mcp_answers(daemon, access) == 200
        assert mcp_answers(daemon, access, host="memory.example.com") == 401

        elsewhere = {"Host": f"lan.example:{daemon.port}"}
        for path in ("/.well-known/oauth-authorization-server", "/register", "/authorize"):
            assert daemon.request("GET", path, headers=elsewhere).status_code == 404, path
        refused = daemon.request(
            "POST", "/mcp", json=INITIALIZE, headers={**elsewhere, "Accept": ACCEPT}
        )
        assert refused.headers["WWW-Authenticate"] == 'Bearer realm="agent-memory"'
        assert mcp_answers(daemon, access, host=elsewhere["Host"]) == 401


@pytest.mark.parametrize(
    "name", ["https://memory.example.com", "memory.example.com/mcp", "memory.example.com:99999"]
)
def test_a_public_host_is_a_name_not_a_url(tmp_path, name):
    """The proxy serves a public host over https: the option takes its name (and port),
    and a URL, a path or a bad port is refused before anything starts."""
    made = run_agent_memory(
        "--db", str(tmp_path / "memory.db"), "serve-rest", "--public-host", name, timeout=30
    )
    assert made.returncode == 2, made.stderr
    assert "--public-host" in made.stderr and "NAME[:PORT]" in made.stderr
    assert repr(name) in made.stderr


def test_codes_refused_with_the_rfc_errors_grant_nothing(team, location):
    daemon, tokens = team
    client_id = register(daemon)
    other = register(daemon, name="Other")
    code, verifier = code_for(daemon, client_id, tokens["rw"])
    common = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK}
    refusals = {
        "wrong verifier": (
            {**common, "client_id": client_id, "code_verifier": pkce()[0]},
            "invalid_grant",
        ),
        "no verifier": ({**common, "client_id": client_id}, "invalid_request"),
        "another client": (
            {**common, "client_id": other, "code_verifier": verifier},
            "invalid_grant",
        ),
        "another resource": (
            {
                **common,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": daemon.url + "/api",
            },
            "invalid_target",
        ),
        "another redirect": (
            {
                **common,
                "client_id": client_id,
                "code_verifier": verifier,
                "redirect_uri": CALLBACK + "2",
            },
            "invalid_request",
        ),
    }
    for why, (form, error) in refusals.items():
        answer = token_request(daemon, **form)
        assert (answer.status_code, answer.json()["error"]) == (400, error), why
    assert grants(location) == []
    # a code issued at one address is not redeemed at another (another issuer and resource)
    elsewhere = daemon.request(
        "POST",
        "/token",
        data={**common, "client_id": client_id, "code_verifier": verifier},
        headers={"Host": f"localhost:{daemon.port}"},
    )
    assert (elsewhere.status_code, elsewhere.json()["error"]) == (400, "invalid_grant")

    # the code is still good after those refusals; used twice, it ends the grant it made
    good = {**common, "client_id": client_id, "code_verifier": verifier}
    issued = token_request(daemon, **good)
    assert issued.status_code == 200, issued.text
    assert mcp_answers(daemon, issued.json()["access_token"]) == 200
    reused = token_request(daemon, **good)
    assert (reused.status_code, reused.json()["error"]) == (400, "invalid_grant")
    assert mcp_answers(daemon, issued.json()["access_token"]) == 401
    assert grants(location) == []

    # a code that expired before it was exchanged
    def expired_code(service: MemoryService) -> str:
        oauth = OAuth(service)
        request = Request(CALLBACK, True, pkce()[1], daemon.url + "/mcp", [], "xyz")
        consent, _, _ = oauth.sign_in(oauth.open_request(client_id, request), tokens["rw"])
        return oauth.decide(consent, True)[1]

    old = with_service(location, expired_code, Clock(int(time.time()) - DAY_SECS))
    answer = token_request(daemon, **{**good, "code": old})
    assert answer.json() == {
        "error": "invalid_grant",
        "error_description": "authorization code has expired",
    }
    assert grants(location) == []


def test_authorization_requests_refused_never_redirect_elsewhere(team, location):
    daemon, tokens = team
    client_id = register(daemon)
    _, challenge = pkce()

    def authorize(**extra):
        return daemon.request(
            "GET",
            "/authorize",
            params=_params(daemon, client_id, challenge, **extra),
            allow_redirects=False,
        )

    # not registered, or no client: a 400 page, never a redirect to where the request says
    for params in (
        {"redirect_uri": "https://evil.example/cb"},
        {"redirect_uri": CALLBACK + "/more"},
        {"client_id": "nobody", "redirect_uri": "https://evil.example/cb"},
    ):
        answer = authorize(**params)
        assert answer.status_code == 400 and "Location" not in answer.headers, params
        assert answer.json()["error"] == "invalid_request"
    # a registered client and redirect: the error is answered here, with its state, never
    # redirected before a person signed in (anyone may register a redirect URI, and would
    # send bad requests on purpose to be redirected to it)
    for params, error in (
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge": None}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"scope": "admin"}, "invalid_scope"),
    ):
        answer = authorize(**params)
        assert answer.status_code == 400 and "Location" not in answer.headers, params
        assert (answer.json()["error"], answer.json()["state"]) == (error, "xyz"), params
    # a registered redirect URI with a query of its own: still no redirect
    own_query = register(daemon, redirect_uri=CALLBACK + "?error=none")
    answer = daemon.request(
        "GET",
        "/authorize",
        params=_params(daemon, own_query, challenge, redirect_uri=CALLBACK + "?error=none")
        | {"response_type": "token"},
        allow_redirects=False,
    )
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert answer.json()["error"] == "unsupported_response_type"
    # redirect URIs that could run or leak something are never registered
    # nor one whose host a person would misread: the consent page shows where codes go
    for uri in (
        "javascript:alert(1)",
        "http://evil.example/cb",
        "https://x.example/cb#frag",
        "https://claude.ai@evil.example/cb",
        "http://127.0.0.1:1@evil.example/cb",
    ):
        answer = daemon.request("POST", "/register", json={"redirect_uris": [uri]})
        assert (answer.status_code, answer.json()["error"]) == (400, "invalid_redirect_uri"), uri
    # a person who denies: the client hears access_denied
    denied = person(tokens["rw"], "deny")(authorize_url(daemon, client_id, challenge))
    assert (denied["error"], denied["state"]) == ("access_denied", "xyz")
    # a wrong token: the sign-in page again, 401, nothing granted
    with requests.Session() as http:
        wrong = consent_in(http, authorize_url(daemon, client_id, challenge), "amt_rw.wrong")
    assert wrong.status_code == 401 and "wrong, expired or revoked" in wrong.text
    assert grants(location) == []


def test_a_loopback_redirect_uri_may_name_any_port(team, location):
    """A native client listens on the port the system gives it at the time (VS Code when its
    usual one is taken): a loopback redirect URI it registered matches at any port (RFC 8252),
    and the code goes to that port; anything else must match exactly."""
    daemon, tokens = team
    client_id = register(daemon)  # http://127.0.0.1:9/callback
    elsewhere = "http://127.0.0.1:4567/callback"
    verifier, challenge = pkce()
    answer = person(tokens["rw"])(
        authorize_url(daemon, client_id, challenge, redirect_uri=elsewhere)
    )
    issued = token_request(
        daemon,
        grant_type="authorization_code",
        code=answer["code"],
        code_verifier=verifier,
        client_id=client_id,
        redirect_uri=elsewhere,
    )
    assert issued.status_code == 200, issued.text
    web = register(daemon, redirect_uri="https://app.example/cb")
    for client, uri in (
        (client_id, "http://127.0.0.1:4567/other"),
        (client_id, "http://localhost:4567/callback"),
        (client_id, "http://127.0.0.1:4567/callback?x=1"),
        (web, "https://app.example:8443/cb"),
    ):
        refused = daemon.request(
            "GET",
            "/authorize",
            params=_params(daemon, client, challenge, redirect_uri=uri),
            allow_redirects=False,
        )
        assert refused.status_code == 400 and "Location" not in refused.headers, uri
    assert [g["client_id"] for g in grants(location)] == [client_id]


def _params(daemon: RestDaemon, client: str, challenge: str, **extra) -> dict:
    params = {
        "response_type": "code",
        "client_id": client,
        "redirect_uri": CALLBACK,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "xyz",
        "resource": daemon.url + "/mcp",
        **extra,
    }
    return {k: v for k, v in params.items() if v is not None}


def test_tokens_refused_elsewhere_and_refresh_tokens_once(team, location):
    daemon, tokens = team
    client_id = register(daemon)
    issued = tokens_for(daemon, client_id, tokens["rw"])
    access = issued["access_token"]
    assert issued["token_type"] == "Bearer" and issued["expires_in"] == 3600
    assert mcp_answers(daemon, access) == 200
    # another audience: the same daemon reached at another name is another resource
    assert mcp_answers(daemon, access, host=f"localhost:{daemon.port}") == 401
    for path in ("/api/memories", "/api/stats"):
        assert daemon.request("GET", path, headers=bearer(access)).status_code == 401
    # the refresh token names another resource, or another client: refused, nothing changes
    other = register(daemon, name="Other")
    wrong = token_request(
        daemon,
        grant_type="refresh_token",
        refresh_token=issued["refresh_token"],
        client_id=client_id,
        resource="https://elsewhere.example/mcp",
    )
    assert wrong.json()["error"] == "invalid_target"
    assert refreshed(daemon, other, issued["refresh_token"]).json()["error"] == "invalid_grant"
    assert mcp_answers(daemon, access) == 200

    rotated = refreshed(daemon, client_id, issued["refresh_token"])
    assert rotated.status_code == 200, rotated.text
    fresh = rotated.json()
    assert mcp_answers(daemon, fresh["access_token"]) == 200
    # the replaced refresh token again: refused, and the grant ends (someone holds a copy)
    reused = refreshed(daemon, client_id, issued["refresh_token"])
    assert (reused.status_code, reused.json()["error"]) == (400, "invalid_grant")
    assert mcp_answers(daemon, fresh["access_token"]) == 401
    assert refreshed(daemon, client_id, fresh["refresh_token"]).json()["error"] == "invalid_grant"
    assert grants(location) == []


def test_revocation_answers_with_the_rfc_errors_and_ends_only_the_clients_own(team, location):
    """RFC 7009 answers with RFC 6749's token errors: a client that is not one is
    ``invalid_client`` (401), a request without a token ``invalid_request``; another
    client's token is answered 200, as an unknown one, and stays good."""
    daemon, tokens = team
    client_id, other = register(daemon), register(daemon, name="Other")
    access = tokens_for(daemon, client_id, tokens["rw"])["access_token"]
    for form in ({"token": access}, {"token": access, "client_id": "nobody"}):
        answer = daemon.request("POST", "/revoke", data=form)
        assert (answer.status_code, answer.json()["error"]) == (401, "invalid_client"), form
    answer = daemon.request("POST", "/revoke", data={"client_id": client_id})
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_request")
    answer = daemon.request("POST", "/revoke", data={"token": access, "client_id": other})
    assert answer.status_code == 200
    assert mcp_answers(daemon, access) == 200 and len(grants(location)) == 1


def test_a_grant_has_exactly_its_tokens_rights_and_ends_with_it(team, location):
    daemon, tokens = team
    client_id = register(daemon)
    reader = tokens_for(daemon, client_id, tokens["ro"])["access_token"]

    async def store(mode: str):
        async with mcp_client(daemon, reader, mode) as mcp:  # the access token as a header
            return await mcp.call_tool("memory_store", {"content": "ro?", "type": "TODO"})

    for mode in MODES:
        result = anyio.run(store, mode)
        assert result.is_error
        assert result.content[0].text == "forbidden: the token 'ro' is read-only and cannot store"

    # made again under its name as a full token: the old grant stays ended, never upgraded
    revoke(location, "ro")
    assert mcp_answers(daemon, reader) == 401
    with_service(location, lambda service: Tokens(service).create("ro"))
    assert mcp_answers(daemon, reader) == 401
    assert [g["token"] for g in grants(location)] == []

    # a one-time code from `token approve` signs in as the token, once
    made = run_agent_memory("--db", location, "token", "approve", "rw")
    assert made.returncode == 0, made.stderr
    code = made.stdout.strip()
    assert len(code) == 14 and code.count("-") == 2
    by_code = tokens_for(daemon, client_id, code.lower())["access_token"]
    assert mcp_answers(daemon, by_code) == 200
    _, challenge = pkce()
    with requests.Session() as http:
        again = consent_in(http, authorize_url(daemon, client_id, challenge), code)
    assert again.status_code == 401
    assert [g["token"] for g in grants(location)] == ["rw"]
    revoke(location, "rw")  # revoking the token ends the grant at its next request
    assert mcp_answers(daemon, by_code) == 401
    assert grants(location) == []


def test_a_tokens_grants_share_its_session_cap(team):
    """The 2025 era's sessions are capped per token, its OAuth grants' included: a token
    cannot open more by approving more grants. Past the cap, the token's least recently used
    idle session ends, whichever of its credentials opened it; each session stays bound to
    the credential that opened it."""
    daemon, tokens = team
    client_id = register(daemon)
    grants = [tokens_for(daemon, client_id, tokens["ro"])["access_token"] for _ in range(2)]
    credentials = [tokens["ro"], *grants]
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})

    def opened(credential: str) -> str:
        answer = daemon.request(
            "POST", "/mcp", data=json.dumps(INITIALIZE), headers={**headers, **bearer(credential)}
        )
        assert answer.status_code == 200, answer.text
        return answer.headers["Mcp-Session-Id"]

    def status(credential: str, session: str) -> int:
        asked = {**headers, **bearer(credential), "Mcp-Session-Id": session}
        asked["MCP-Protocol-Version"] = "2025-06-18"
        return daemon.request("POST", "/mcp", data=listing, headers=asked).status_code

    kept = opened(tokens["rw"])
    count = mcp_http.MAX_SESSIONS_PER_TOKEN + 2
    flood = [(credentials[k % 3], opened(credentials[k % 3])) for k in range(count)]
    assert [status(*pair) for pair in flood[:2]] == [404, 404]
    assert [status(*pair) for pair in flood[2:5]] == [200, 200, 200]
    assert status(tokens["rw"], kept) == 200
    # bound to its credential: the token's own session is not its grant's, nor the reverse
    assert status(grants[0], flood[3][1]) == 404 and status(tokens["ro"], flood[4][1]) == 404


def test_token_list_shows_what_a_client_registered_as_text(svc, location):
    """A client names itself when it registers, which anyone may: `token list` shows its
    name and where it answers as text, never as sequences that act on the terminal."""
    token = Tokens(svc).create("alice")
    oauth = OAuth(svc)
    name = "\x1b]0;pwned\x07Evil\x1b[2J\u202e"
    oauth.register("c", {"client_id": "c", "client_name": name, "redirect_uris": [CALLBACK]})
    request = Request(CALLBACK, True, pkce()[1], "http://127.0.0.1:1/mcp", [], "s")
    consent, _, _ = oauth.sign_in(oauth.open_request("c", request), token)
    oauth.exchange(oauth.decide(consent, True)[1], "c")
    listed = run_agent_memory("--db", location, "token", "list")
    assert listed.returncode == 0, listed.stderr
    assert "\x1b" not in listed.stdout and "\u202e" not in listed.stdout
    assert "\\x1b]0;pwned\\x07Evil\\x1b[2J\\u202e -> " + CALLBACK in listed.stdout
