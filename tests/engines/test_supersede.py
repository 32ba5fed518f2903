"""Supersede that ranks: ``memory_store`` takes ``supersedes: [ids]`` (stored and linked in
one write); a superseded memory leaves search and list, stays reachable by id and with
``include_superseded: true`` (then every result carries ``superseded_by``); unlinking
restores it. On both engines, in process and over MCP in process."""

from __future__ import annotations

import pytest

from agent_memory.contract.errors import InvalidArgument, InvalidType, UnknownField
from tests.support.history import NEW, OLD
from tests.support.mcp_session import run as run_mcp
from tests.support.stores import ids

pytest_plugins = ["tests.support.pg_fixtures"]


def searched(svc, **args) -> list[int]:
    return ids(svc.search({"query": "API timeout seconds", **args})["results"])


def test_a_superseded_memory_leaves_search_and_list_but_not_get(svc):
    old = svc.store(OLD)["id"]
    assert searched(svc) == [old]
    new = svc.store({**NEW, "supersedes": [old]})["id"]
    assert searched(svc) == [new]
    assert ids(svc.list({})) == [new]
    assert ids(svc.list({"tag": "api", "limit": 5})) == [new]
    got = svc.get({"id": old})
    assert got["content"] == OLD["content"]
    assert [(r["id"], r["kind"]) for r in got["related"]] == [(new, "superseded_by")]


def test_include_superseded_shows_them_marked(svc):
    old = svc.store(OLD)["id"]
    new = svc.store({**NEW, "supersedes": [old]})["id"]
    found = svc.search({"query": "API timeout seconds", "include_superseded": True})["results"]
    assert {r["id"]: r["superseded_by"] for r in found} == {old: [new], new: []}
    listed = svc.list({"include_superseded": True})
    assert [(m["id"], m["superseded_by"]) for m in listed] == [(new, []), (old, [new])]
    assert "superseded_by" not in svc.list({})[0]  # only when asked for


def test_unlinking_restores_the_memory(svc):
    old = svc.store(OLD)["id"]
    new = svc.store({**NEW, "supersedes": [old]})["id"]
    svc.unlink({"from_id": new, "to_id": old, "kind": "supersedes"})
    assert sorted(searched(svc)) == [old, new]
    assert ids(svc.list({})) == [new, old]


def test_a_link_made_later_supersedes_as_well(svc):
    old = svc.store(OLD)["id"]
    new = svc.store(NEW)["id"]
    svc.link({"from_id": new, "to_id": old, "kind": "supersedes"})
    assert searched(svc) == [new]


def test_superseded_memories_do_not_eat_the_limit(svc):
    olds = [svc.store({**OLD, "content": f"API timeout seconds, take {n}"})["id"] for n in range(5)]
    news = [
        svc.store({**NEW, "content": f"API timeout seconds, final {n}", "supersedes": [o]})["id"]
        for n, o in enumerate(olds)
    ]
    assert (
        sorted(searched(svc, limit=3)) == sorted(searched(svc, limit=3))
        and len(searched(svc, limit=3)) == 3
    )
    assert set(searched(svc, limit=5)) == set(news)
    assert ids(svc.list({"limit": 2})) == news[::-1][:2]
    page = svc.list({"limit": 2, "before": f"{svc.get({'id': news[-2]})['created_at']}:{news[-2]}"})
    assert ids(page) == [news[-3], news[-4]]


def test_several_at_once_in_one_write(svc):
    a, b = svc.store(OLD)["id"], svc.store({**OLD, "content": "timeout of the API: 30 s"})["id"]
    new = svc.store({**NEW, "supersedes": [a, b, a]})["id"]
    assert ids(svc.list({})) == [new]
    assert svc.list({"include_superseded": True})[1]["superseded_by"] == [new]


def test_an_unknown_id_stores_nothing(svc):
    old = svc.store(OLD)["id"]
    with pytest.raises(InvalidArgument) as caught:
        svc.store({**NEW, "supersedes": [old, 99]})
    assert str(caught.value) == (
        "invalid argument: supersedes names no memory with id 99; nothing was stored"
    )
    assert ids(svc.list({"include_superseded": True})) == [old]
    assert svc.get({"id": old})["related"] == []


def test_a_duplicate_store_can_supersede_too(svc):
    old = svc.store(OLD)["id"]
    new = svc.store(NEW)["id"]
    again = svc.store({**NEW, "supersedes": [old, new]})  # itself is skipped
    assert again == {"id": new, "duplicate_of": new}
    assert ids(svc.list({})) == [new]


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ({"supersedes": 3}, InvalidType, "supersedes must be an array of memory ids (got 3)"),
        ({"supersedes": ["3"]}, InvalidType, 'supersedes[0] must be an integer (got "3")'),
        ({"supersedes": [1, 0]}, InvalidArgument, "supersedes[1] must be between 1 and"),
        ({"supersedes": list(range(1, 52))}, InvalidArgument, "at most 50 memories (got 51)"),
        ({"supersede": [1]}, UnknownField, "unknown field `supersede`"),
    ],
)
def test_bad_supersedes_are_refused_naming_the_field(svc, args, error, message):
    svc.store(OLD)
    with pytest.raises(error) as caught:
        svc.store({**NEW, **args})
    assert message in str(caught.value)
    assert len(svc.list({"include_superseded": True})) == 1


@pytest.mark.parametrize("operation", ["search", "list"])
def test_include_superseded_must_be_a_boolean(svc, operation):
    args = {"include_superseded": "yes"} | ({"query": "x"} if operation == "search" else {})
    with pytest.raises(InvalidType) as caught:
        getattr(svc, operation)(args)
    assert str(caught.value) == 'invalid argument: include_superseded must be a boolean (got "yes")'


def test_over_mcp_in_process(svc):
    _, newer, found, marked = run_mcp(
        svc,
        ("memory_store", OLD),
        ("memory_store", {**NEW, "supersedes": [1]}),
        ("memory_search", {"query": "API timeout"}),
        ("memory_list", {"include_superseded": True}),
    )
    assert newer.structured_content == {"id": 2}
    assert ids(found.structured_content["results"]) == [2]
    assert [m["superseded_by"] for m in marked.structured_content["memories"]] == [[], [2]]
