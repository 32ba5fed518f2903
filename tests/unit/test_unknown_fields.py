"""Unknown arguments are refused on every operation, tool, REST body and query string:
the field is named, a close known one is suggested, and nothing is written (not even a
search's recency bump)."""

from __future__ import annotations

import anyio
import pytest
import sqlean
from mcp import Client

from agent_memory.contract.errors import UnknownField
from agent_memory.contract.vocabulary import ARGUMENTS, REST_ARGUMENTS
from agent_memory.mcp import server as mcp_server
from tests.support.files import dump
from tests.support.rest_client import sender

# operation, arguments, the unknown field, the suggestion (None: nothing is close)
CASES = [
    ("store", {"content": "x", "type": "TODO", "tag": "oops"}, "tag", "tags"),
    ("store", {"content": "x", "type": "TODO", "priority": "high"}, "priority", None),
    ("search", {"query": "maven", "tags": ["maven"]}, "tags", "tag"),
    ("search", {"query": "maven", "scop": "kore"}, "scop", "scope"),
    ("list", {"typ": "TODO"}, "typ", "type"),
    ("list", {"order": "asc"}, "order", None),
    ("update", {"id": 1, "ttl_sec": 5}, "ttl_sec", "ttl_secs"),
    ("update", {"id": 1, "type": "TODO"}, "type", None),
    ("forget", {"id": 1, "memory_id": 1}, "memory_id", "id"),
    ("link", {"from_id": 2, "to_id": 1, "kind": "relates_to", "knd": "x"}, "knd", "kind"),
    ("unlink", {"from": 2, "to_id": 1, "kind": "supersedes"}, "from", "from_id"),
    ("get", {"id": 1, "ids": [1, 2]}, "ids", "id"),
    ("stats", {"scope": "kore"}, "scope", None),
]
TOOLS = {"store", "search", "list", "update", "forget", "link", "unlink"}


def state(db_path):
    """Every memory column and every relation: equal before and after means nothing was
    written."""
    conn = sqlean.connect(str(db_path))
    try:
        links = conn.execute("SELECT * FROM memory_links ORDER BY 1, 2, 3").fetchall()
    finally:
        conn.close()
    return dump(db_path), links


@pytest.fixture
def seeded(service, db_path):
    """Two memories (1 and 2) and the relation 2 supersedes 1."""
    service.store({"content": "Maven group is io.github", "type": "DECISION", "tags": ["maven"]})
    service.store({"content": "Maven group is com.example", "type": "DECISION", "scope": "kore"})
    service.link({"from_id": 2, "to_id": 1, "kind": "supersedes"})
    return state(db_path)


def expected(operation: str, field: str, suggestion: str | None) -> str:
    return str(UnknownField(field, ARGUMENTS[operation], suggestion))


def test_the_message_names_the_field_the_known_ones_and_the_closest():
    assert expected("store", "tag", "tags") == (
        "failed to deserialize parameters: unknown field `tag`, expected one of `content`, "
        "`type`, `tags`, `source`, `scope`, `ttl_secs`, `supersedes` (did you mean `tags`?)"
    )
    assert expected("forget", "memory_id", "id") == (
        "failed to deserialize parameters: unknown field `memory_id`, expected `id` "
        "(did you mean `id`?)"
    )
    assert expected("stats", "scope", None) == (
        "failed to deserialize parameters: unknown field `scope`, there are no fields"
    )


@pytest.mark.parametrize(("operation", "args", "field", "suggestion"), CASES)
def test_every_operation_refuses_an_unknown_field(
    service, db_path, seeded, operation, args, field, suggestion
):
    with pytest.raises(UnknownField) as raised:
        getattr(service, operation)(args)
    assert str(raised.value) == expected(operation, field, suggestion)
    assert (raised.value.field, raised.value.suggestion) == (field, suggestion)
    assert state(db_path) == seeded


@pytest.mark.parametrize(
    ("operation", "args", "field", "suggestion"), [c for c in CASES if c[0] in TOOLS]
)
def test_every_tool_answers_an_unknown_field_with_an_error_result(
    service, db_path, seeded, operation, args, field, suggestion
):
    async def main():
        async with Client(mcp_server.build_server(service)) as client:
            return await client.call_tool(f"memory_{operation}", args)

    result = anyio.run(main)
    assert result.is_error is True
    assert result.structured_content is None
    assert result.content[0].text == expected(operation, field, suggestion)
    assert state(db_path) == seeded


@pytest.fixture
def http(service):
    return sender(service)


@pytest.mark.parametrize(
    ("method", "path", "body", "operation", "field", "suggestion"),
    [
        (
            "POST",
            "/api/memories",
            {"content": "x", "type": "TODO", "tag": "a"},
            "store",
            "tag",
            "tags",
        ),
        ("POST", "/api/memories?tagz=a", {"content": "x", "type": "TODO"}, "store", "tagz", "tags"),
        ("GET", "/api/memories?typ=TODO", None, "list", "typ", "type"),
        ("GET", "/api/memories?type=TODO&sort=asc", None, "list", "sort", None),
        ("POST", "/api/search", {"query": "maven", "tags": ["maven"]}, "search", "tags", "tag"),
        ("POST", "/api/search?scop=kore", {"query": "maven"}, "search", "scop", "scope"),
        ("POST", "/api/search?use=false", {"query": "maven"}, "search", "use", "record_use"),
        ("GET", "/api/memories/1?verbose=1", None, "get", "verbose", None),
        ("GET", "/api/stats?scope=kore", None, "stats", "scope", None),
        ("PATCH", "/api/memories/1", {"ttl_sec": 5}, "update", "ttl_sec", "ttl_secs"),
        ("PATCH", "/api/memories/1?id=2", {"tags": []}, "update", "id", None),
        ("DELETE", "/api/memories/1?force=true", None, "forget", "force", None),
        (
            "POST",
            "/api/links",
            {"from_id": 2, "to_id": 1, "kind": "relates_to", "knd": 1},
            "link",
            "knd",
            "kind",
        ),
        ("DELETE", "/api/links/2/1/supersedes?cascade=1", None, "unlink", "cascade", None),
    ],
)
def test_every_route_refuses_an_unknown_body_field_or_query_parameter(
    http, db_path, seeded, method, path, body, operation, field, suggestion
):
    known = {**ARGUMENTS, **REST_ARGUMENTS, "update": ARGUMENTS["update"][1:]}[operation]
    status, answer = http(method, path, body)
    assert status == 400
    assert answer == {"error": str(UnknownField(field, known, suggestion))}
    assert state(db_path) == seeded


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/api/memories?tag=a&tag=b", 'invalid argument: tag must be a string (got ["a", "b"])'),
        (
            "/api/memories/1?id=2",
            "invalid argument: id is given twice, in the query string and the path or body",
        ),
    ],
)
def test_a_query_parameter_sent_twice_is_refused(http, db_path, seeded, path, message):
    assert http("GET", path) == (400, {"error": message})
    assert state(db_path) == seeded


def test_known_query_parameters_count_on_every_route(http):
    """The query string is read on body routes too: a filter there is applied, not lost."""
    http("POST", "/api/memories", {"content": "sqlite notes", "type": "TODO", "scope": "a"})
    http("POST", "/api/memories", {"content": "sqlite again", "type": "TODO", "scope": "b"})
    status, found = http("POST", "/api/search?scope=b&limit=5", {"query": "sqlite"})
    assert status == 200
    assert [r["content"] for r in found["results"]] == ["sqlite again"]
