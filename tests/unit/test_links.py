"""Relations: memory_link, memory_unlink, cascade on forget and expiry, expand_links."""

from __future__ import annotations

import pytest

from agent_memory.contract.errors import InvalidArgument
from agent_memory.service.lifecycle import sweep
from tests.support.files import dump


@pytest.fixture
def three(service):
    for text in ("old maven decision", "new maven decision", "an error about maven"):
        service.store({"content": text, "type": "DECISION", "tags": ["maven"]})
    return service


def links(raw):
    return raw.execute(
        "SELECT from_id, to_id, kind, created_at FROM memory_links ORDER BY 1, 2, 3"
    ).fetchall()


def test_link_echoes_the_request(three):
    assert three.link({"from_id": 2, "to_id": 1, "kind": "supersedes"}) == {
        "from_id": 2,
        "to_id": 1,
        "kind": "supersedes",
        "linked": True,
    }


def test_relates_to_is_stored_smaller_id_first_and_echoed_as_sent(three, raw, clock):
    assert three.link({"from_id": 3, "to_id": 1, "kind": "relates_to"}) == {
        "from_id": 3,
        "to_id": 1,
        "kind": "relates_to",
        "linked": True,
    }
    assert links(raw) == [(1, 3, "relates_to", clock.now)]


def test_link_is_idempotent_and_keeps_the_first_created_at(three, raw, clock):
    three.link({"from_id": 1, "to_id": 3, "kind": "relates_to"})
    first = links(raw)
    clock.advance(100)
    assert three.link({"from_id": 1, "to_id": 3, "kind": "relates_to"})["linked"] is True
    assert three.link({"from_id": 3, "to_id": 1, "kind": "relates_to"})["linked"] is True  # b -> a
    assert links(raw) == first


def test_directed_kinds_are_two_relations_and_kinds_are_separate(three, raw, clock):
    three.link({"from_id": 1, "to_id": 2, "kind": "caused_by"})
    three.link({"from_id": 2, "to_id": 1, "kind": "caused_by"})
    three.link({"from_id": 1, "to_id": 2, "kind": "supersedes"})
    three.link({"from_id": 1, "to_id": 2, "kind": "relates_to"})
    assert links(raw) == [
        (1, 2, "caused_by", clock.now),
        (1, 2, "relates_to", clock.now),
        (1, 2, "supersedes", clock.now),
        (2, 1, "caused_by", clock.now),
    ]


@pytest.mark.parametrize(
    "args,missing",
    [
        ({"from_id": 42, "to_id": 1, "kind": "supersedes"}, 42),
        ({"from_id": 1, "to_id": 42, "kind": "supersedes"}, 42),
        ({"from_id": 41, "to_id": 42, "kind": "relates_to"}, 41),  # both unknown: from_id
        ({"from_id": 42, "to_id": 41, "kind": "relates_to"}, 42),
    ],
)
def test_unknown_ids_are_a_clean_not_found(three, raw, db_path, args, missing):
    before = dump(db_path)
    assert three.link(args) == {
        **args,
        "linked": False,
        "reason": "not_found",
        "missing_id": missing,
    }
    assert links(raw) == []
    assert dump(db_path) == before


@pytest.mark.parametrize(
    "operation,args,message",
    [
        (
            "link",
            {"from_id": 57, "to_id": 57, "kind": "supersedes"},
            "invalid argument: from_id and to_id must differ (got 57)",
        ),
        (
            "link",
            {"from_id": 1, "to_id": 2, "kind": "blocks"},
            "invalid argument: kind must be one of relates_to, supersedes, caused_by (got 'blocks')",
        ),
        (
            "link",
            {"from_id": 1, "to_id": 2, "kind": "Supersedes"},
            "invalid argument: kind must be one of relates_to, supersedes, caused_by (got 'Supersedes')",
        ),
        (
            "link",
            {"from_id": 1, "to_id": 2, "kind": 3},
            "invalid argument: kind must be a string (got 3)",
        ),
        ("link", {"from_id": 1, "to_id": 2}, "invalid argument: kind is required"),
        ("link", {"to_id": 2, "kind": "relates_to"}, "invalid argument: from_id is required"),
        (
            "link",
            {"from_id": "1", "to_id": 2, "kind": "relates_to"},
            'invalid argument: from_id must be an integer (got "1")',
        ),
        (
            "link",
            {"from_id": 1, "to_id": True, "kind": "relates_to"},
            "invalid argument: to_id must be an integer (got true)",
        ),
        (
            "unlink",
            {"from_id": 1, "to_id": 2, "kind": "blocks"},
            "invalid argument: kind must be one of relates_to, supersedes, caused_by (got 'blocks')",
        ),
        (
            "unlink",
            {"from_id": 1.5, "to_id": 2, "kind": "relates_to"},
            "invalid argument: from_id must be an integer (got 1.5)",
        ),
        (
            "search",
            {"query": "x", "expand_links": "true"},
            'invalid argument: expand_links must be a boolean (got "true")',
        ),
        (
            "search",
            {"query": "x", "expand_links": 1},
            "invalid argument: expand_links must be a boolean (got 1)",
        ),
        (
            "list",
            {"expand_links": True},
            "invalid argument: limit is required when expand_links is true; pass a limit between 1 and 200",
        ),
        (
            "list",
            {"limit": 5, "expand_links": "yes"},
            'invalid argument: expand_links must be a boolean (got "yes")',
        ),
    ],
)
def test_rejected_relation_arguments(three, raw, db_path, operation, args, message):
    three.link({"from_id": 1, "to_id": 2, "kind": "relates_to"})
    before = (dump(db_path), links(raw))
    with pytest.raises(InvalidArgument) as raised:
        getattr(three, operation)(args)
    assert str(raised.value) == message
    assert (dump(db_path), links(raw)) == before


def test_unlink_directed_needs_the_stored_direction(three, raw):
    three.link({"from_id": 2, "to_id": 1, "kind": "supersedes"})
    assert three.unlink({"from_id": 1, "to_id": 2, "kind": "supersedes"}) == {
        "from_id": 1,
        "to_id": 2,
        "kind": "supersedes",
        "unlinked": False,
        "reason": "not_found",
    }
    assert three.unlink({"from_id": 2, "to_id": 1, "kind": "caused_by"})["unlinked"] is False
    assert len(links(raw)) == 1
    assert three.unlink({"from_id": 2, "to_id": 1, "kind": "supersedes"}) == {
        "from_id": 2,
        "to_id": 1,
        "kind": "supersedes",
        "unlinked": True,
    }
    assert links(raw) == []


@pytest.mark.parametrize("ends", [(1, 3), (3, 1)])
def test_relates_to_unlinks_from_either_end(three, raw, ends):
    three.link({"from_id": 3, "to_id": 1, "kind": "relates_to"})
    assert three.unlink({"from_id": ends[0], "to_id": ends[1], "kind": "relates_to"}) == {
        "from_id": ends[0],
        "to_id": ends[1],
        "kind": "relates_to",
        "unlinked": True,
    }
    assert links(raw) == []


def test_unlink_of_a_missing_edge_or_memory_is_not_found(three):
    assert three.unlink({"from_id": 1, "to_id": 99, "kind": "relates_to"})["reason"] == "not_found"
    assert three.unlink({"from_id": 2, "to_id": 2, "kind": "relates_to"})["unlinked"] is False


def test_forget_removes_every_relation_touching_the_memory(three, raw):
    three.link({"from_id": 2, "to_id": 1, "kind": "supersedes"})
    three.link({"from_id": 1, "to_id": 3, "kind": "caused_by"})
    three.link({"from_id": 2, "to_id": 3, "kind": "relates_to"})
    three.forget({"id": 1})
    assert [row[:3] for row in links(raw)] == [(2, 3, "relates_to")]


def test_ttl_expiry_removes_relations_too(three, raw, clock):
    short = three.store({"content": "short lived", "type": "TODO", "ttl_secs": 10})["id"]
    three.link({"from_id": short, "to_id": 1, "kind": "caused_by"})
    three.link({"from_id": 2, "to_id": short, "kind": "relates_to"})
    three.link({"from_id": 2, "to_id": 1, "kind": "supersedes"})
    clock.advance(10)
    assert sweep(three)["expired"] == 1
    assert [row[:3] for row in links(raw)] == [(2, 1, "supersedes")]


def test_expansion_names_kinds_from_the_results_side(three):
    three.link({"from_id": 2, "to_id": 1, "kind": "supersedes"})
    three.link({"from_id": 3, "to_id": 1, "kind": "caused_by"})
    three.link({"from_id": 1, "to_id": 3, "kind": "relates_to"})
    listed = three.list({"limit": 10, "expand_links": True, "include_superseded": True})
    by_id = {m["id"]: m for m in listed}
    assert sorted((r["id"], r["kind"], r["direction"]) for r in by_id[1]["related"]) == [
        (2, "superseded_by", "in"),
        (3, "caused", "in"),
        (3, "relates_to", "out"),
    ]
    assert [(r["id"], r["kind"], r["direction"]) for r in by_id[2]["related"]] == [
        (1, "supersedes", "out")
    ]
    assert sorted((r["id"], r["kind"], r["direction"]) for r in by_id[3]["related"]) == [
        (1, "caused_by", "out"),
        (1, "relates_to", "in"),
    ]
    first = by_id[2]["related"][0]
    assert first == {
        "id": 1,
        "kind": "supersedes",
        "direction": "out",
        "type": "DECISION",
        "snippet": "old maven decision",
        "tags": ["maven"],
    }


def test_without_the_flag_there_is_no_related_key(three):
    three.link({"from_id": 2, "to_id": 1, "kind": "supersedes"})
    assert all("related" not in m for m in three.list({}))
    assert all("related" not in m for m in three.search({"query": "maven"})["results"])
    assert all(
        "related" not in m
        for m in three.search({"query": "maven", "expand_links": False})["results"]
    )


def test_a_result_without_relations_gets_an_empty_list(three):
    results = three.search({"query": "maven", "expand_links": True})["results"]
    assert [r["related"] for r in results] == [[], [], []]


def test_at_most_ten_neighbours_newest_relations_first(service, clock):
    hub = service.store({"content": "hub", "type": "ARCHITECTURE"})["id"]
    spokes = []
    for i in range(12):
        spokes.append(service.store({"content": f"spoke {i}", "type": "PATTERN"})["id"])
    for spoke in spokes:  # linked oldest first, one second apart
        clock.advance(1)
        service.link({"from_id": spoke, "to_id": hub, "kind": "relates_to"})
    (result,) = service.search({"query": "hub", "expand_links": True})["results"]
    assert [r["id"] for r in result["related"]] == list(reversed(spokes))[
        :10
    ]  # the 2 oldest dropped


def test_snippets_are_cut_at_160_characters_not_bytes(service):
    long_text = "é" * 150 + "🧠" * 20  # multi-byte characters
    service.store({"content": long_text, "type": "TODO"})
    service.store({"content": "x" * 160, "type": "TODO"})
    service.store({"content": "anchor", "type": "TODO"})
    service.link({"from_id": 3, "to_id": 1, "kind": "relates_to"})
    service.link({"from_id": 3, "to_id": 2, "kind": "relates_to"})
    (anchor,) = service.search({"query": "anchor", "expand_links": True})["results"]
    snippets = {r["id"]: r["snippet"] for r in anchor["related"]}
    assert snippets[1] == "é" * 150 + "🧠" * 10 + "…"
    assert len(snippets[1]) == 161
    assert snippets[2] == "x" * 160  # exactly 160: not cut, no ellipsis


def test_expansion_is_a_pure_read(three, db_path, clock):
    three.link({"from_id": 2, "to_id": 1, "kind": "supersedes"})
    clock.advance(1000)
    before = {row[0]: row for row in dump(db_path)}
    three.search({"query": "new", "expand_links": True})  # returns 2; neighbour 1 untouched
    after = {row[0]: row for row in dump(db_path)}
    assert after[1] == before[1]
    assert after[2] != before[2]  # the result itself is bumped
    three.list({"limit": 3, "expand_links": True})
    assert {row[0]: row for row in dump(db_path)} == after


def test_expansion_fetches_a_page_in_one_query(three, monkeypatch):
    calls = []
    original = three.db.neighbours
    monkeypatch.setattr(three.db, "neighbours", lambda ids: calls.append(ids) or original(ids))
    three.list({"limit": 50, "expand_links": True})
    assert calls == [[3, 2, 1]]
