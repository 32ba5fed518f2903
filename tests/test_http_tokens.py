"""End to end: the real daemon once tokens exist. REST, the page and MCP (both eras, the
SDK's client) take ``Authorization: Bearer``; refusals are 401 with WWW-Authenticate, 403
for a read-only token writing; a scope-bound token sees its scope only; a revoked token
stops at its next request."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import Tokens
from agent_memory.storage import open_store
from tests.support.rest_daemon import RestDaemon

MODES = ["legacy", "2026-07-28"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "r"}},
}


def make_tokens(db_path) -> dict[str, str]:
    service = MemoryService(open_store(db_path))
    try:
        service.store({"content": "alpha plan", "type": "DECISION", "scope": "alpha"})
        service.store({"content": "beta plan", "type": "DECISION", "scope": "beta"})
        service.link({"from_id": 1, "to_id": 2, "kind": "relates_to"})
        tokens = Tokens(service)
        return {
            "rw": tokens.create("rw"),
            "ro": tokens.create("ro", read_only=True),
            "alpha": tokens.create("alpha", scope="alpha"),
        }
    finally:
        service.close()


def revoke(db_path, name: str) -> None:
    service = MemoryService(open_store(db_path))
    try:
        assert Tokens(service).revoke(name)
    finally:
        service.close()


@pytest.fixture
def team(db_path):
    tokens = make_tokens(db_path)
    with RestDaemon(db_path) as daemon:
        daemon.drain_stderr()
        yield daemon, tokens


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


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


def mcp_client(daemon: RestDaemon, token: str | None, mode: str) -> Client:
    headers = bearer(token) if token else None
    http = create_mcp_http_client(headers=headers)
    return Client(streamable_http_client(daemon.url + "/mcp", http_client=http), mode=mode)


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
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
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


def test_a_revoked_token_stops_at_once(team, db_path):
    daemon, tokens = team

    async def main():
        async with mcp_client(daemon, tokens["rw"], "legacy") as mcp:
            before = await mcp.call_tool("memory_list", {})
            revoke(db_path, "rw")
            with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401
                await mcp.call_tool("memory_list", {})
            return before

    assert len(anyio.run(main).structured_content["memories"]) == 2
    assert daemon.request("GET", "/api/memories", headers=bearer(tokens["rw"])).status_code == 401
    assert daemon.request("GET", "/api/memories", headers=bearer(tokens["ro"])).status_code == 200
