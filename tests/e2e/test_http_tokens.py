"""End to end: the real daemon once tokens exist, on SQLite and on PostgreSQL. REST, the page
and MCP (both eras, the SDK's client) take ``Authorization: Bearer``; a missing, wrong,
expired or revoked token is 401 with WWW-Authenticate on every surface (on /mcp it names the
OAuth resource metadata too: tests/e2e/test_oauth.py), a read-only token writing is 403 (an
``isError`` result over MCP) and changes nothing; a scope-bound token sees its scope only
(tests/e2e/test_http_scopes.py has every read path); a revoked token stops at its next request."""

from __future__ import annotations

import json

import anyio
import pytest

from agent_memory.http import mcp as mcp_http
from tests.support.mcp_frames import INITIALIZE
from tests.support.oauth import register, tokens_for
from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import run_agent_memory
from tests.support.team import ACCEPT, MODES, bearer, make_tokens, mcp_client, revoke

pytest_plugins = ["tests.support.pg_fixtures"]

MODERN = "2026-07-28"
DISCOVER = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}
REALM = 'Bearer realm="agent-memory"'


@pytest.fixture
def team(location):
    tokens = make_tokens(location)
    with RestDaemon(location) as daemon:
        daemon.drain_stderr()
        yield daemon, tokens


def test_rest_and_the_page_behind_tokens(team):
    daemon, tokens = team
    missing = daemon.request("GET", "/api/memories")
    wrong = daemon.request("GET", "/api/memories", headers=bearer("amt_rw.nope"))
    basic = daemon.request("GET", "/api/memories", headers={"Authorization": "Basic eDp5"})
    assert [r.status_code for r in (missing, wrong, basic)] == [401, 401, 401]
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="agent-memory"'
    assert wrong.headers["WWW-Authenticate"].endswith('error="invalid_token"')
    assert "token is wrong" in wrong.json()["error"]
    for path in ("/", "/assets/app.js", "/health"):  # no memory in them
        assert daemon.request("GET", path).status_code == 200
    written = daemon.request(
        "POST",
        "/api/memories",
        json={"content": "ro?", "type": "TODO"},
        headers=bearer(tokens["ro"]),
    )
    assert written.status_code == 403
    assert written.json()["error"] == "forbidden: the token 'ro' is read-only and cannot store"
    read = daemon.request(
        "POST", "/api/search", json={"query": "plan"}, headers=bearer(tokens["ro"])
    )
    assert read.status_code == 200 and len(read.json()["results"]) == 2
    alpha = bearer(tokens["alpha"])
    assert [m["id"] for m in daemon.request("GET", "/api/memories", headers=alpha).json()] == [1]
    assert daemon.request("GET", "/api/memories/2", headers=alpha).status_code == 404
    assert daemon.request("GET", "/api/memories/1", headers=alpha).json()["related"] == []
    assert daemon.request("GET", "/api/stats", headers=alpha).json()["memories"] == 1
    stored = daemon.request(
        "POST", "/api/memories", json={"content": "a", "type": "TODO"}, headers=alpha
    )
    assert (
        daemon.request("GET", f"/api/memories/{stored.json()['id']}", headers=alpha).json()["scope"]
        == "alpha"
    )


@pytest.mark.parametrize("mode", MODES)
def test_mcp_behind_tokens_in_each_era(team, mode):
    daemon, tokens = team

    async def main():
        async with mcp_client(daemon, tokens["ro"], mode) as reader:
            refused = await reader.call_tool("memory_store", {"content": "x", "type": "TODO"})
            everything = await reader.call_tool("memory_list", {})
        async with mcp_client(daemon, tokens["alpha"], mode) as alpha:
            stored = await alpha.call_tool(
                "memory_store", {"content": "alpha note", "type": "TODO"}
            )
            found = await alpha.call_tool("memory_search", {"query": "plan", "expand_links": True})
            other = await alpha.call_tool("memory_forget", {"id": 2})
            stats = await alpha.read_resource("memory://stats")
        return refused, everything, stored, found, other, stats

    refused, everything, stored, found, other, stats = anyio.run(main)
    assert refused.is_error
    assert refused.content[0].text == "forbidden: the token 'ro' is read-only and cannot store"
    assert len(everything.structured_content["memories"]) == 2
    assert stored.structured_content == {"id": 3}
    results = found.structured_content["results"]
    assert [r["id"] for r in results] == [1] and results[0]["related"] == []
    assert other.structured_content == {"id": 2, "deleted": False, "reason": "not_found"}
    assert json.loads(stats.contents[0].text)["memories"] == 2


def test_mcp_without_a_token_is_401_and_a_session_keeps_to_its_token(team):
    daemon, tokens = team
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    refused = daemon.request("POST", "/mcp", data=json.dumps(INITIALIZE), headers=headers)
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
    opened = daemon.request(
        "POST", "/mcp", data=json.dumps(INITIALIZE), headers={**headers, **bearer(tokens["rw"])}
    )
    session = {
        "Mcp-Session-Id": opened.headers["Mcp-Session-Id"],
        "MCP-Protocol-Version": "2025-06-18",
    }
    listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    own = daemon.request(
        "POST", "/mcp", data=listing, headers={**headers, **session, **bearer(tokens["rw"])}
    )
    stolen = daemon.request(
        "POST", "/mcp", data=listing, headers={**headers, **session, **bearer(tokens["ro"])}
    )
    assert (own.status_code, stolen.status_code) == (200, 404)


@pytest.mark.parametrize("mode", MODES)
def test_a_revoked_token_stops_at_once(team, location, mode):
    daemon, tokens = team

    async def main():
        async with mcp_client(daemon, tokens["rw"], mode) as mcp:
            before = await mcp.call_tool("memory_list", {})
            revoke(location, "rw")
            with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401
                await mcp.call_tool("memory_list", {})
            return before

    assert len(anyio.run(main).structured_content["memories"]) == 2
    assert daemon.request("GET", "/api/memories", headers=bearer(tokens["rw"])).status_code == 401
    assert daemon.request("GET", "/api/memories", headers=bearer(tokens["ro"])).status_code == 200


# (what the Authorization header holds, the message's end, the challenge)
REFUSALS = {
    "missing": (None, "a token is required (Authorization: Bearer <token>)", REALM),
    "wrong": ("amt_rw.not-the-secret", "the token is wrong or was revoked", None),
    "unknown": ("amt_nobody.secret", "the token is wrong or was revoked", None),
    "expired": ("expired", "the token has expired", None),
    "revoked": ("revoked", "the token is wrong or was revoked", None),
}


@pytest.mark.parametrize("why", list(REFUSALS))
def test_every_refusal_is_401_with_a_challenge_on_rest_and_mcp(team, why):
    """The same 401 on REST (a read and a write), on the 2025 era's initialize and on the
    2026 era's server/discover; nothing is stored."""
    daemon, tokens = team
    sent, message, challenge = REFUSALS[why]
    auth = {} if sent is None else bearer(tokens.get(sent, sent))
    mcp = {"Content-Type": "application/json", "Accept": ACCEPT, **auth}
    modern = {**mcp, "MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"}
    answers = [
        daemon.request("GET", "/api/memories", headers=auth),
        daemon.request("POST", "/api/search", json={"query": "plan"}, headers=auth),
        daemon.request(
            "POST", "/api/memories", json={"content": "x", "type": "TODO"}, headers=auth
        ),
        daemon.request("GET", "/api/stats", headers=auth),
        daemon.request("POST", "/mcp", data=json.dumps(INITIALIZE), headers=mcp),
        daemon.request("POST", "/mcp", data=json.dumps(DISCOVER), headers=modern),
    ]
    metadata = f'resource_metadata="{daemon.url}/.well-known/oauth-protected-resource/mcp"'
    for k, answer in enumerate(answers):
        assert answer.status_code == 401, answer.text
        expected = challenge or f'{REALM}, error="invalid_token"'
        if k >= 4:  # /mcp points a client at the OAuth flow too
            expected += f", {metadata}"
        assert answer.headers["WWW-Authenticate"] == expected
        if why == "missing" and k < 4:  # the page's routes also take a session
            message = "a token is required (Authorization: Bearer <token>, or sign in on the page)"
        elif why == "missing":
            message = REFUSALS[why][1]
        assert answer.json()["error"] == f"unauthorized: {message}"
        assert "Mcp-Session-Id" not in answer.headers
    listed = daemon.request("GET", "/api/memories", headers=bearer(tokens["rw"])).json()
    assert [m["content"] for m in listed] == ["beta plan", "alpha plan"]


READ_ONLY_WRITES = [
    ("store", "POST", "/api/memories", {"content": "ro?", "type": "TODO"}),
    ("update", "PATCH", "/api/memories/1", {"content": "changed"}),
    ("forget", "DELETE", "/api/memories/1", None),
    ("link", "POST", "/api/links", {"from_id": 2, "to_id": 1, "kind": "supersedes"}),
    ("unlink", "DELETE", "/api/links/1/2/relates_to", None),
]
READ_ONLY_TOOLS = [
    ("store", "memory_store", {"content": "ro?", "type": "TODO"}),
    ("update", "memory_update", {"id": 1, "content": "changed"}),
    ("forget", "memory_forget", {"id": 1}),
    ("link", "memory_link", {"from_id": 2, "to_id": 1, "kind": "supersedes"}),
    ("unlink", "memory_unlink", {"from_id": 1, "to_id": 2, "kind": "relates_to"}),
]


def snapshot(daemon: RestDaemon, token: str) -> list[tuple]:
    """Every memory's id, content and relations, as a full token reads them."""
    listed = daemon.request(
        "GET", "/api/memories?expand_links=true&limit=100", headers=bearer(token)
    )
    return [(m["id"], m["content"], json.dumps(m["related"])) for m in listed.json()]


@pytest.mark.parametrize("mode", MODES)
def test_a_read_only_token_is_refused_every_write_and_changes_nothing(team, mode):
    daemon, tokens = team
    before = snapshot(daemon, tokens["rw"])
    ro = bearer(tokens["ro"])
    for operation, method, path, body in READ_ONLY_WRITES:
        answer = daemon.request(method, path, json=body, headers=ro)
        assert answer.status_code == 403, (operation, answer.text)
        assert answer.json()["error"] == (
            f"forbidden: the token 'ro' is read-only and cannot {operation}"
        )

    async def main():
        async with mcp_client(daemon, tokens["ro"], mode) as reader:
            return [(op, await reader.call_tool(name, args)) for op, name, args in READ_ONLY_TOOLS]

    for operation, result in anyio.run(main):
        assert result.is_error
        assert result.content[0].text == (
            f"forbidden: the token 'ro' is read-only and cannot {operation}"
        )
    assert snapshot(daemon, tokens["rw"]) == before


def test_revoking_the_last_token_leaves_a_loopback_daemon_closed(team, location):
    """A database that has had tokens keeps requiring one: revoking every token leaves the
    loopback daemon answering 401, until `token open-loopback` reopens it (refused while a
    token exists)."""
    daemon, _tokens = team
    for name in ("rw", "ro", "alpha"):
        revoke(location, name)
    for path in ("/api/memories", "/api/stats"):
        assert daemon.request("GET", path).status_code == 401, path
    refused = run_agent_memory("--db", str(location), "token", "open-loopback")
    assert refused.returncode == 1 and "tokens exist (expired): revoke it first" in refused.stderr
    assert daemon.request("GET", "/api/memories").status_code == 401
    revoke(location, "expired")
    assert daemon.request("GET", "/api/memories").status_code == 401
    opened = run_agent_memory("--db", str(location), "token", "open-loopback")
    assert opened.returncode == 0, opened.stderr
    assert "serves every request without a token, with full rights" in opened.stderr
    listed = daemon.request("GET", "/api/memories")
    assert listed.status_code == 200 and len(listed.json()) == 2


SESSION_HEADERS = {"Content-Type": "application/json", "Accept": ACCEPT}
LISTING = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})


def opened(daemon: RestDaemon, token: str) -> str:
    """A 2025-era session opened with ``token``: its id."""
    answer = daemon.request(
        "POST", "/mcp", data=json.dumps(INITIALIZE), headers={**SESSION_HEADERS, **bearer(token)}
    )
    assert answer.status_code == 200, answer.text
    return answer.headers["Mcp-Session-Id"]


def status(daemon: RestDaemon, token: str, session: str) -> int:
    """The status of a request in ``session`` sent with ``token``."""
    asked = {**SESSION_HEADERS, **bearer(token), "Mcp-Session-Id": session}
    asked["MCP-Protocol-Version"] = "2025-06-18"
    return daemon.request("POST", "/mcp", data=LISTING, headers=asked).status_code


def test_a_token_past_its_session_cap_ends_only_its_own_oldest_idle_session(team):
    """The 2025 era's sessions are capped per token: a read-only token opening session
    after session ends its own least recently used idle one, never another token's."""
    daemon, tokens = team
    kept = opened(daemon, tokens["rw"])
    flood = [opened(daemon, tokens["ro"]) for _ in range(mcp_http.MAX_SESSIONS_PER_TOKEN + 2)]
    assert status(daemon, tokens["rw"], kept) == 200
    assert [status(daemon, tokens["ro"], s) for s in flood[:2]] == [404, 404]
    assert status(daemon, tokens["ro"], flood[2]) == 200
    assert status(daemon, tokens["ro"], flood[-1]) == 200


def test_the_oauth_grants_of_a_token_share_its_session_cap(team):
    """A token cannot multiply its sessions by approving OAuth grant after grant (each its
    own client, in a second each): the cap counts the sessions of every grant a token
    approved, while each session stays bound to the grant that opened it."""
    daemon, tokens = team
    first, second = (
        tokens_for(daemon, register(daemon), tokens["ro"])["access_token"] for _ in range(2)
    )
    flood = [opened(daemon, first) for _ in range(mcp_http.MAX_SESSIONS_PER_TOKEN)]
    late = [opened(daemon, second) for _ in range(2)]
    assert [status(daemon, first, s) for s in flood[:3]] == [404, 404, 200]
    assert [status(daemon, second, s) for s in late] == [200, 200]
    assert status(daemon, second, flood[2]) == 404  # another grant's session: unknown
