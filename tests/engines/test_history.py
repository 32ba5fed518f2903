"""History and as-of (issue 36): every update keeps the version it replaces, memory_history
lists them, and ``as_of`` on search, list and get answers as the store stood then, at every
boundary; forget and the sweep take the history with the memory. On both engines."""

from __future__ import annotations

import pytest

from agent_memory.contract.errors import UnknownField
from tests.support.clock import START

pytest_plugins = ["tests.support.pg_fixtures"]

OLD = {"content": "The API timeout is 30 seconds.", "type": "CONSTRAINT", "tags": ["api"]}
NEW = "The API timeout is 90 seconds."


def contents(rows) -> list[str]:
    return [r["content"] for r in rows]


def updated_at_t(svc, clock) -> tuple[int, int]:
    """A memory stored at START, updated at T = START + 100 (the clock then at T + 50)."""
    memory_id = svc.store(OLD)["id"]
    clock.advance(100)
    svc.update({"id": memory_id, "content": NEW, "tags": ["api", "v2"], "scope": "kore"})
    clock.advance(50)
    return memory_id, START + 100


def test_an_update_keeps_the_version_it_replaces(svc, clock):
    memory_id, t = updated_at_t(svc, clock)
    versions = svc.history({"id": memory_id})["versions"]
    assert [(v["version"], v["content"], v["tags"], v["scope"]) for v in versions] == [
        (1, OLD["content"], ["api"], None),
        (2, NEW, ["api", "v2"], "kore"),
    ]
    first, current = versions
    assert (first["written_at"], first["replaced_at"], first["change"]) == (START, t, "update")
    assert (first["written_by"], first["replaced_by"]) == ("local", "local")
    assert (current["written_at"], current["replaced_at"], current["change"]) == (t, None, None)


def test_history_of_an_unknown_memory_and_unknown_fields(svc):
    assert svc.history({"id": 99}) == {"id": 99, "found": False, "reason": "not_found"}
    with pytest.raises(UnknownField, match="as_of"):
        svc.history({"id": 1, "as_of": START})


@pytest.mark.parametrize(
    "offset,expected",
    [(-1, OLD["content"]), (0, NEW), (1, NEW)],
    ids=["T-1", "T", "T+1"],
)
def test_an_update_at_t_against_as_of_around_it(svc, clock, offset, expected):
    memory_id, t = updated_at_t(svc, clock)
    at = t + offset
    got = svc.get({"id": memory_id, "as_of": at})
    assert got["content"] == expected
    assert got["scope"] == (None if expected == OLD["content"] else "kore")
    assert contents(svc.list({"as_of": at})) == [expected]
    found = svc.search({"query": "API timeout", "as_of": at})["results"]
    assert contents(found) == [expected]


def test_as_of_finds_a_memory_by_what_it_said_then(svc, clock):
    memory_id, t = updated_at_t(svc, clock)
    assert svc.search({"query": "30"})["results"] == []
    assert contents(svc.search({"query": "30", "as_of": t - 1})["results"]) == [OLD["content"]]
    assert svc.search({"query": "30", "as_of": t})["results"] == []
    # as it stood: filters read the version then (its scope was none before T)
    assert contents(svc.list({"scope": "kore", "as_of": t - 1})) == []
    assert contents(svc.list({"scope": "kore", "as_of": t})) == [NEW]
    assert svc.get({"id": memory_id})["content"] == NEW  # the present is unchanged


def test_explain_says_why_as_of_too(svc, clock):
    memory_id, t = updated_at_t(svc, clock)
    found = svc.search({"query": "30", "as_of": t - 1, "explain": True})["results"]
    # found by its words then, which no leg ranks now: its share of them, never a score of 0
    assert [r["id"] for r in found] == [memory_id]
    why = found[0]["why"]
    assert why["keyword"]["rank"] is None and why["vector"] is None
    assert why["keyword"]["share"] > 0 and why["score"] > 0
    assert "as it stood then" in why["reason"]
    ranked = svc.search({"query": "timeout", "as_of": t - 1, "explain": True})["results"]
    assert ranked[0]["why"]["keyword"]["rank"] == 1


def test_a_memory_stored_later_is_absent(svc, clock):
    clock.advance(10)
    memory_id = svc.store(OLD)["id"]
    at = START + 10
    assert svc.get({"id": memory_id, "as_of": at - 1})["found"] is False
    assert svc.list({"as_of": at - 1}) == []
    assert svc.search({"query": "timeout", "as_of": at - 1})["results"] == []
    assert svc.get({"id": memory_id, "as_of": at})["content"] == OLD["content"]
    assert contents(svc.search({"query": "timeout", "as_of": at})["results"]) == [OLD["content"]]


def test_a_memory_superseded_later_is_present_then(svc, clock):
    old = svc.store(OLD)["id"]
    clock.advance(100)
    new = svc.store({**OLD, "content": NEW, "supersedes": [old]})["id"]
    t = START + 100
    assert [m["id"] for m in svc.list({})] == [new]
    assert [m["id"] for m in svc.list({"as_of": t - 1})] == [old]
    assert [r["id"] for r in svc.search({"query": "timeout", "as_of": t - 1})["results"]] == [old]
    assert [m["id"] for m in svc.list({"as_of": t})] == [new]
    marked = svc.list({"as_of": t, "include_superseded": True})
    assert [(m["id"], m["superseded_by"]) for m in marked] == [(new, []), (old, [new])]
    got = svc.get({"id": old, "as_of": t - 1})
    assert got["related"] == []  # the relation was made after
    assert [r["kind"] for r in svc.get({"id": old, "as_of": t})["related"]] == ["superseded_by"]


def test_ttl_expiry_as_of(svc, clock):
    memory_id = svc.store({**OLD, "ttl_secs": 60})["id"]
    clock.advance(200)
    assert svc.get({"id": memory_id, "as_of": START + 59})["content"] == OLD["content"]
    assert svc.get({"id": memory_id, "as_of": START + 60})["found"] is False
    assert contents(svc.list({"as_of": START + 59})) == [OLD["content"]]
    assert svc.list({"as_of": START + 60}) == []


def test_an_update_that_extended_the_ttl_is_undone_as_of_before_it(svc, clock):
    memory_id = svc.store({**OLD, "ttl_secs": 60})["id"]
    clock.advance(30)
    svc.update({"id": memory_id, "ttl_secs": None})
    clock.advance(100)
    assert svc.get({"id": memory_id, "as_of": START + 29})["expires_at"] == START + 60
    assert svc.get({"id": memory_id, "as_of": START + 90})["expires_at"] is None


def test_forget_deletes_the_history_and_the_sweep_too(svc, clock, location):
    memory_id, t = updated_at_t(svc, clock)
    gone = svc.store({**OLD, "content": "short-lived", "ttl_secs": 10})["id"]
    svc.update({"id": gone, "tags": ["x"]})
    svc.forget({"id": memory_id})
    assert svc.history({"id": memory_id})["found"] is False
    assert svc.get({"id": memory_id, "as_of": t - 1})["found"] is False
    clock.advance(20)
    svc.db.delete_expired(clock.now)
    with svc.db.snapshot() as snap:
        assert snap.version_count() == 0


def test_a_duplicate_store_keeps_its_source_in_the_history(svc, clock):
    memory_id = svc.store({**OLD, "source": "chat"})["id"]
    clock.advance(5)
    answer = svc.store({**OLD, "tags": ["timeouts"], "source": "gsd-state"})
    assert answer["duplicate_of"] == memory_id
    first, current = svc.history({"id": memory_id})["versions"]
    assert (first["tags"], first["change"], first["change_source"]) == (
        ["api"],
        "duplicate",
        "gsd-state",
    )
    assert current["tags"] == ["api", "timeouts"]
    assert svc.get({"id": memory_id, "as_of": START + 4})["tags"] == ["api"]


def test_as_of_search_records_no_use(svc, clock):
    memory_id = svc.store(OLD)["id"]
    clock.advance(10)
    svc.search({"query": "timeout", "as_of": START + 5})
    assert svc.get({"id": memory_id})["access_count"] == 0
    svc.search({"query": "timeout"})
    assert svc.get({"id": memory_id})["access_count"] == 1


def test_as_of_as_iso_text(svc, clock):
    memory_id, t = updated_at_t(svc, clock)
    assert svc.get({"id": memory_id, "as_of": "2026-01-01T00:01:39Z"})["content"] == OLD["content"]
    assert svc.get({"id": memory_id, "as_of": "2026-01-01T00:01:40+00:00"})["content"] == NEW
    assert svc.get({"id": memory_id, "as_of": str(t - 1)})["content"] == OLD["content"]
