"""End to end: a scope-bound token on the real daemon (SQLite and PostgreSQL) sees its scope
and nothing else on every read path: REST's list (paged and the unlimited streamed one, which
is the export over HTTP), search, get (the page's detail and graph: a memory and its
neighbours), history, stats (the page's counts) and tidy; MCP's tools, resources and
completions in both eras. Another scope's memories, their ids included, never appear: not as
results, not as ``expand_links`` neighbours, not in ``superseded_by``."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceTemplateReference

from tests.support.rest_daemon import RestDaemon
from tests.support.team import MODES, bearer, make_tokens, mcp_client

pytest_plugins = ["tests.support.pg_fixtures"]

ALPHA_IDS = {1, 3}  # 1 and 3 are alpha's; 2 and 4 are beta's
BETA_IDS = {2, 4}


@pytest.fixture
def team(location):
    """make_tokens's two memories, plus 3 (alpha) and 4 (beta), written by the full token
    over REST: 1 -> 2 and 1 -> 3 relate, 3 -> 2 is caused by, 4 supersedes 3."""
    tokens = make_tokens(location)
    with RestDaemon(location) as daemon:
        daemon.drain_stderr()
        rw = bearer(tokens["rw"])
        for body in (
            {"content": "alpha pattern plan", "type": "PATTERN", "scope": "alpha"},
            {"content": "beta replaces the alpha pattern plan", "type": "PATTERN", "scope": "beta"},
        ):
            assert daemon.request("POST", "/api/memories", json=body, headers=rw).ok
        for edge in ((1, 3, "relates_to"), (3, 2, "caused_by"), (4, 3, "supersedes")):
            body = dict(zip(("from_id", "to_id", "kind"), edge, strict=True))
            assert daemon.request("POST", "/api/links", json=body, headers=rw).ok
        yield daemon, tokens


def ids_in(value) -> set[int]:
    """Every memory id an answer names: rows' ids, their neighbours', what supersedes them."""
    found: set[int] = set()
    if isinstance(value, list):
        for item in value:
            found |= ids_in(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in ("id", "from_id", "to_id", "missing_id") and isinstance(item, int):
                found.add(item)
            elif key in ("superseded_by", "current_replacements"):
                found |= set(item)
            else:
                found |= ids_in(item)
    return found


def test_the_team_data_has_every_kind_of_cross_scope_edge(team):
    """The full token sees what the scoped token must not: otherwise the test proves little."""
    daemon, tokens = team
    rw = bearer(tokens["rw"])
    three = daemon.request("GET", "/api/memories/3", headers=rw).json()
    assert {r["id"] for r in three["related"]} == {1, 2, 4}
    listed = daemon.request(
        "GET", "/api/memories?include_superseded=true&expand_links=true&limit=50", headers=rw
    ).json()
    assert ids_in(listed) == ALPHA_IDS | BETA_IDS
    stats = daemon.request("GET", "/api/stats", headers=rw).json()
    assert {"scope": "alpha", "memories": 2} in stats["by_scope"]  # 3 counts, superseded


REST_READS = [
    ("GET", "/api/memories", None),  # unlimited: streamed, the export over HTTP
    ("GET", "/api/memories?include_superseded=true", None),
    ("GET", "/api/memories?include_superseded=true&expand_links=true&limit=50", None),
    ("GET", "/api/memories?type=PATTERN&include_superseded=true&limit=50", None),
    ("GET", "/api/memories?by=rw&include_superseded=true", None),
    ("POST", "/api/search", {"query": "plan", "expand_links": True, "include_superseded": True}),
    ("POST", "/api/search", {"query": "beta replaces", "include_superseded": True}),
    ("GET", "/api/memories/1", None),  # the graph's center, and its neighbours' own
    ("GET", "/api/memories/3", None),
    ("GET", "/api/memories/1/history", None),
    ("GET", "/api/tidy", None),
]


def test_rest_reads_show_only_the_tokens_scope(team):
    daemon, tokens = team
    alpha = bearer(tokens["alpha"])
    for method, path, body in REST_READS:
        answer = daemon.request(method, path, json=body, headers=alpha)
        assert answer.status_code == 200, (path, answer.text)
        assert ids_in(answer.json()) <= ALPHA_IDS, (path, answer.json())
    graph = daemon.request("GET", "/api/memories/3", headers=alpha).json()
    assert [r["id"] for r in graph["related"]] == [1]
    listed = daemon.request("GET", "/api/memories?include_superseded=true", headers=alpha).json()
    assert {m["id"] for m in listed} == ALPHA_IDS
    stats = daemon.request("GET", "/api/stats", headers=alpha).json()
    assert (stats["memories"], stats["by_type"]) == (2, {"DECISION": 1, "PATTERN": 1})
    assert stats["by_scope"] == [{"scope": "alpha", "memories": 2}]
    for hidden in BETA_IDS:
        for path in (f"/api/memories/{hidden}", f"/api/memories/{hidden}/history"):
            answer = daemon.request("GET", path, headers=alpha)
            assert answer.status_code == 404 and ids_in(answer.json()) == {hidden}
    other = daemon.request("GET", "/api/memories?scope=beta", headers=alpha)
    assert other.status_code == 403 and "only in scope 'alpha'" in other.json()["error"]


def test_a_memory_only_another_scope_supersedes_stays_in_the_tokens_view(team):
    """4 (beta) supersedes 3 (alpha): alpha's token still finds 3 by default (issue 35),
    with nothing superseding it; the full token's unscoped reads leave 3 out."""
    daemon, tokens = team
    alpha, rw = bearer(tokens["alpha"]), bearer(tokens["rw"])
    search = {"query": "alpha pattern plan"}
    for headers, expected in ((alpha, True), (rw, False)):
        listed = daemon.request("GET", "/api/memories?limit=50", headers=headers).json()
        assert (3 in {m["id"] for m in listed}) is expected
        found = daemon.request("POST", "/api/search", json=search, headers=headers).json()
        assert (3 in {r["id"] for r in found["results"]}) is expected
    marked = daemon.request("GET", "/api/memories?include_superseded=true", headers=alpha).json()
    assert {m["id"]: m["superseded_by"] for m in marked}[3] == []


MCP_TOOLS = [
    ("memory_list", {"include_superseded": True}),
    ("memory_list", {"include_superseded": True, "expand_links": True, "limit": 50}),
    ("memory_search", {"query": "plan", "expand_links": True, "include_superseded": True}),
    ("memory_search", {"query": "beta replaces", "include_superseded": True}),
    ("memory_history", {"id": 3}),
]
MCP_RESOURCES = ["memory://recent", "memory://type/PATTERN", "memory://scope/alpha", "memory://3"]


@pytest.mark.parametrize("mode", MODES)
def test_mcp_reads_show_only_the_tokens_scope(team, mode):
    daemon, tokens = team

    async def main():
        async with mcp_client(daemon, tokens["alpha"], mode) as mcp:
            tools = [await mcp.call_tool(name, args) for name, args in MCP_TOOLS]
            resources = [await mcp.read_resource(uri) for uri in MCP_RESOURCES]
            stats = await mcp.read_resource("memory://stats")
            refused = []
            for uri in ("memory://2", "memory://4", "memory://scope/beta"):
                try:
                    await mcp.read_resource(uri)
                except MCPError as exc:
                    refused.append(exc.message)
            hidden = await mcp.call_tool("memory_history", {"id": 4})
            ref = ResourceTemplateReference(uri="memory://scope/{scope}")
            scopes = await mcp.complete(ref, {"name": "scope", "value": ""})
        return tools, resources, stats, refused, hidden, scopes

    tools, resources, stats, refused, hidden, scopes = anyio.run(main)
    for (name, args), result in zip(MCP_TOOLS, tools, strict=True):
        assert not result.is_error, result.content
        assert ids_in(result.structured_content) <= ALPHA_IDS, (name, args)
    for uri, result in zip(MCP_RESOURCES, resources, strict=True):
        shown = json.loads(result.contents[0].text)
        assert ids_in(shown) <= ALPHA_IDS, (uri, shown)
    assert [r["id"] for r in json.loads(resources[-1].contents[0].text)["related"]] == [1]
    counts = json.loads(stats.contents[0].text)
    assert (counts["memories"], counts["by_scope"]) == (2, [{"scope": "alpha", "memories": 2}])
    assert refused[:2] == [f"resource not found: no memory has id {n}" for n in (2, 4)]
    assert "only in scope 'alpha'" in refused[2]
    assert hidden.structured_content == {"id": 4, "found": False, "reason": "not_found"}
    assert scopes.completion.values == ["alpha"]


def test_the_two_attacks_of_a_scope_bound_token_are_refused(team):
    """Over the real daemon: alpha's token cannot supersede beta's memory 2 (refused as a
    missing id is, word for word) nor move its own memory 1 out of alpha (`scope: null`
    would make it global); every memory stays as it was."""
    daemon, tokens = team
    alpha, rw = bearer(tokens["alpha"]), bearer(tokens["rw"])
    before = daemon.request("GET", "/api/memories?include_superseded=true", headers=rw).json()
    answers = {}
    for target in (2, 999):
        body = {"content": "Disable TLS verification", "type": "CONSTRAINT", "supersedes": [target]}
        answer = daemon.request("POST", "/api/memories", json=body, headers=alpha)
        answers[target] = (answer.status_code, answer.text.replace(str(target), "ID"))
    assert answers[2] == answers[999] and answers[2][0] == 400
    for scope in (None, "beta"):
        moved = daemon.request("PATCH", "/api/memories/1", json={"scope": scope}, headers=alpha)
        assert moved.status_code == 403 and "only in scope 'alpha'" in moved.json()["error"]
    after = daemon.request("GET", "/api/memories?include_superseded=true", headers=rw).json()
    assert after == before
