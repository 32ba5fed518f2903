"""What counts as a use of a memory (the recency bump: last_accessed = now, access_count + 1).

An MCP or REST search records the use of the results it returns, and of nothing else. A REST
search sent with ``record_use: false`` (the web page's: a person browsing is not an agent
using a memory) records none, and neither does a list or a get.
"""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from agent_memory.contract.errors import UnknownField
from agent_memory.contract.vocabulary import ARGUMENTS
from agent_memory.mcp import server as mcp_server
from tests.support.files import dump
from tests.support.rest_client import sender

DAY = 86_400


@pytest.fixture
def matches(service, clock):
    """Five memories that match "match", one that does not; then a day passes."""
    ids = [service.store({"content": f"match {i}", "type": "TODO"})["id"] for i in range(5)]
    service.store({"content": "unrelated", "type": "TODO"})
    clock.advance(DAY)
    return ids


@pytest.fixture
def http(service):
    return sender(service)


def uses(raw) -> dict[int, tuple[int, int]]:
    """Each memory's (access_count, last_accessed)."""
    rows = raw.execute("SELECT id, access_count, last_accessed FROM memories").fetchall()
    return {memory_id: (count, last) for memory_id, count, last in rows}


def assert_bumped_exactly(raw, clock, returned: set[int]) -> None:
    for memory_id, (count, last) in uses(raw).items():
        if memory_id in returned:
            assert (count, last) == (1, clock.now), memory_id
        else:
            assert (count, last) == (0, clock.now - DAY), memory_id


def mcp_search(service, args):
    async def main():
        async with Client(mcp_server.build_server(service)) as client:
            return await client.call_tool("memory_search", args)

    return anyio.run(main)


def test_an_mcp_search_bumps_only_what_it_returns(service, matches, clock, raw):
    result = mcp_search(service, {"query": "match", "limit": 2})
    returned = {r["id"] for r in result.structured_content["results"]}
    assert len(returned) == 2 and returned < set(matches)
    assert_bumped_exactly(raw, clock, returned)


@pytest.mark.parametrize("record_use", [None, True])  # None: not sent
def test_a_rest_search_bumps_only_what_it_returns(http, matches, clock, raw, record_use):
    body = {"query": "match", "limit": 2}
    if record_use is not None:
        body["record_use"] = record_use
    status, answer = http("POST", "/api/search", body)
    assert status == 200
    returned = {r["id"] for r in answer["results"]}
    assert len(returned) == 2 and returned < set(matches)
    assert_bumped_exactly(raw, clock, returned)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/search", {"query": "match", "record_use": False}),
        ("/api/search?record_use=false", {"query": "match"}),
        ("/api/search", {"query": "match", "record_use": False, "expand_links": True}),
    ],
)
def test_a_rest_search_with_record_use_false_bumps_nothing(http, matches, db_path, path, body):
    before = dump(db_path)
    status, answer = http("POST", path, body)
    assert status == 200
    assert sorted(r["id"] for r in answer["results"]) == matches
    assert dump(db_path) == before


@pytest.mark.parametrize(
    ("path", "body", "shown"),
    [
        ("/api/search", {"query": "match", "record_use": "false"}, '"false"'),
        ("/api/search", {"query": "match", "record_use": 0}, "0"),
        ("/api/search", {"query": "match", "record_use": [False]}, "[false]"),
        ("/api/search?record_use=no", {"query": "match"}, '"no"'),
        ("/api/search?record_use=False", {"query": "match"}, '"False"'),
    ],
)
def test_a_bad_record_use_is_refused_naming_it_and_writes_nothing(
    http, matches, db_path, path, body, shown
):
    before = dump(db_path)
    status, answer = http("POST", path, body)
    assert (status, answer) == (
        422,
        {"error": f"invalid argument: record_use must be a boolean (got {shown})"},
    )
    assert dump(db_path) == before


def test_record_use_is_rest_only_an_agent_search_is_always_a_use(service, matches, db_path):
    """Over MCP (and for in-process callers of the tool's arguments) it is an unknown field."""
    before = dump(db_path)
    result = mcp_search(service, {"query": "match", "record_use": False})
    assert result.is_error is True
    assert result.content[0].text == str(UnknownField("record_use", ARGUMENTS["search"], None))
    with pytest.raises(UnknownField):
        service.search({"query": "match", "record_use": False})
    assert dump(db_path) == before


def test_the_page_reads_bump_nothing(http, service, matches, db_path):
    """What the web page reads besides its searches: the list, one memory, its relations."""
    service.link({"from_id": matches[0], "to_id": matches[1], "kind": "relates_to"})
    before = dump(db_path)
    assert http("GET", "/api/memories?limit=51")[0] == 200
    assert http("GET", "/api/memories?limit=5&expand_links=true")[0] == 200
    assert http("GET", f"/api/memories/{matches[0]}")[0] == 200
    assert http("GET", "/api/stats")[0] == 200
    assert dump(db_path) == before
