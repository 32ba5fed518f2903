"""Fetching one memory by id (service.get, GET /api/memories/{id}) and the store's counts
(service.stats, GET /api/stats)."""

from __future__ import annotations

import pytest

from agent_memory.contract.errors import InvalidArgument, UnknownField
from agent_memory.http.rest import create_app
from agent_memory.service.core import EMBEDDING_OFF
from tests.support.clock import START


class client:
    """Flask's test client, addressed to the daemon's own origin."""

    def __init__(self, service):
        self._client = create_app(service).test_client()

    def get(self, path: str):
        return self._client.get(path, base_url="http://127.0.0.1:7437")


def test_get_shows_every_field_and_relations_both_ways(service, clock):
    a = service.store({"content": "We chose SQLite.", "type": "DECISION", "ttl_secs": 60})["id"]
    b = service.store({"content": "We chose Postgres.", "type": "DECISION"})["id"]
    c = service.store({"content": "WAL mode", "type": "PATTERN", "tags": ["db"]})["id"]
    service.link({"from_id": b, "to_id": a, "kind": "supersedes"})
    clock.advance(5)
    service.link({"from_id": a, "to_id": c, "kind": "relates_to"})
    got = service.get({"id": a})
    assert {k: got[k] for k in ("id", "content", "type", "expires_at", "access_count")} == {
        "id": a,
        "content": "We chose SQLite.",
        "type": "DECISION",
        "expires_at": START + 60,
        "access_count": 0,
    }
    assert got["embedding_status"] == 0
    assert [(r["id"], r["kind"], r["direction"]) for r in got["related"]] == [
        (c, "relates_to", "out"),  # newest first
        (b, "superseded_by", "in"),
    ]
    assert service.get({"id": a})["last_accessed"] == START  # a read, not a use


def test_get_of_an_unknown_id_is_not_found(service):
    assert service.get({"id": 7}) == {"id": 7, "found": False, "reason": "not_found"}
    response = client(service).get("/api/memories/7")
    assert response.status_code == 404
    assert response.get_json() == {"id": 7, "found": False, "reason": "not_found"}


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ({}, InvalidArgument, "invalid argument: id is required"),
        ({"id": "1"}, InvalidArgument, 'invalid argument: id must be an integer (got "1")'),
        ({"id": 1, "ids": 2}, UnknownField, "unknown field `ids`"),
    ],
)
def test_get_refuses_bad_arguments(service, args, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        service.get(args)


def test_get_over_rest(service):
    memory_id = service.store({"content": "one", "type": "TODO"})["id"]
    response = client(service).get(f"/api/memories/{memory_id}")
    assert response.status_code == 200
    assert response.get_json()["content"] == "one"
    assert client(service).get("/api/memories/abc").status_code == 400


def test_stats_over_rest(service):
    service.store({"content": "one", "type": "TODO", "scope": "kore"})
    response = client(service).get("/api/stats")
    assert response.status_code == 200
    assert response.get_json() == {
        "memories": 1,
        "by_type": {"TODO": 1},
        "by_scope": [{"scope": "kore", "memories": 1}],
        "links": 0,
        "pending_embedding": 1,
        "embedding": EMBEDDING_OFF,  # this service has no embedder: nothing is on its way
    }
    assert client(service).get("/api/stats?scope=x").status_code == 400
