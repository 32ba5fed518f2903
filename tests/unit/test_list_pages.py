"""A list read page by page: the ``before`` cursor (CREATED_AT:ID of a page's last memory),
through the service, REST and MCP."""

from __future__ import annotations

import json

from agent_memory.http.rest import create_app
from tests.support.mcp_session import run
from tests.support.rest_client import Client


def cursor(memory: dict) -> str:
    return f"{memory['created_at']}:{memory['id']}"


def fill(service, clock, count: int) -> None:
    """Memories in bunches sharing a created_at, so pages end inside a tie."""
    for i in range(count):
        if i % 3 == 0:
            clock.advance(1)
        service.store({"content": f"memory {i}", "type": "TODO" if i % 2 else "ERROR"})


def pages(fetch, size: int) -> list[list[int]]:
    out, before = [], None
    while True:
        page = fetch({"limit": size, **({"before": before} if before else {})})
        if not page:
            return out
        out.append([m["id"] for m in page])
        before = cursor(page[-1])


def test_pages_walk_the_whole_list_once_in_order(service, clock):
    fill(service, clock, 17)
    whole = [m["id"] for m in service.list({})]
    walked = pages(service.list, 4)
    assert [len(p) for p in walked] == [4, 4, 4, 4, 1]
    assert [i for page in walked for i in page] == whole


def test_pages_keep_their_filters(service, clock):
    fill(service, clock, 17)
    errors = [m["id"] for m in service.list({"type": "ERROR"})]
    walked = pages(lambda a: service.list({**a, "type": "ERROR"}), 2)
    assert [i for page in walked for i in page] == errors


def test_a_cursor_outlives_the_memory_it_was_made_from(service, clock):
    """The page after a memory that was forgotten meanwhile is the same page."""
    fill(service, clock, 6)
    first = service.list({"limit": 3})
    after = service.list({"before": cursor(first[-1])})
    service.forget({"id": first[-1]["id"]})
    assert service.list({"before": cursor(first[-1])}) == after


def test_rest_pages_with_the_query_cursor(service, clock):
    fill(service, clock, 7)
    http = Client(create_app(service))
    status, first = http("GET", "/api/memories?limit=3")
    status, second = http("GET", f"/api/memories?limit=3&before={cursor(first[-1])}")
    assert status == 200
    assert [m["id"] for m in first + second] == [m["id"] for m in service.list({"limit": 6})]
    status, body = http("GET", "/api/memories?before=yesterday")
    assert (status, body["error"].split(" (got")[0]) == (
        400,
        'invalid argument: before must be "CREATED_AT:ID", the created_at and id of the last '
        'memory of the previous page, e.g. "1767225600:42"',
    )


def test_mcp_list_pages_with_the_same_cursor(service, clock):
    fill(service, clock, 5)
    first = service.list({"limit": 2})
    (result,) = run(service, ("memory_list", {"limit": 2, "before": cursor(first[-1])}))
    listed = json.loads(result.content[0].text)["memories"]
    assert listed == service.list({"limit": 2, "before": cursor(first[-1])})
    assert [m["id"] for m in listed] == [m["id"] for m in service.list({"limit": 4})][2:]
