"""The relation rules again, this time through the MCP tools (in process)."""

from __future__ import annotations

from agent_memory.service.lifecycle import sweep
from tests.support.files import dump
from tests.support.mcp_session import run


def edges(raw):
    return raw.execute("SELECT from_id, to_id, kind FROM memory_links ORDER BY 1, 2, 3").fetchall()


def store(service, n, **extra):
    return [
        service.store({"content": f"memory {i}", "type": "DECISION", **extra})["id"]
        for i in range(n)
    ]


def test_ten_newest_neighbours_over_mcp(service, clock):
    hub, *spokes = store(service, 13)
    for spoke in spokes:
        clock.advance(1)
        run(service, ("memory_link", {"from_id": spoke, "to_id": hub, "kind": "relates_to"}))
    (result,) = run(service, ("memory_list", {"limit": 20, "expand_links": True}))
    by_id = {m["id"]: m for m in result.structured_content["memories"]}
    assert [r["id"] for r in by_id[hub]["related"]] == list(reversed(spokes))[:10]


def test_multibyte_snippet_over_mcp(service):
    service.store({"content": "ж" * 159 + "🧠🧠", "type": "TODO"})
    service.store({"content": "anchor", "type": "TODO"})
    (found,) = run(
        service,
        ("memory_link", {"from_id": 2, "to_id": 1, "kind": "caused_by"}),
        ("memory_search", {"query": "anchor", "expand_links": True}),
    )[1:]
    (related,) = found.structured_content["results"][0]["related"]
    assert related["snippet"] == "ж" * 159 + "🧠" + "…"
    assert (related["kind"], related["direction"]) == ("caused_by", "out")


def test_symmetry_direction_and_kind_names_over_mcp(service, raw):
    store(service, 3)
    results = run(
        service,
        ("memory_link", {"from_id": 3, "to_id": 1, "kind": "relates_to"}),
        ("memory_link", {"from_id": 1, "to_id": 3, "kind": "relates_to"}),  # the same relation
        ("memory_link", {"from_id": 2, "to_id": 1, "kind": "caused_by"}),
        ("memory_unlink", {"from_id": 1, "to_id": 2, "kind": "caused_by"}),  # wrong direction
        ("memory_list", {"limit": 5, "expand_links": True}),
    )
    assert [r.structured_content["linked"] for r in results[:3]] == [True, True, True]
    assert results[3].structured_content == {
        "from_id": 1,
        "to_id": 2,
        "kind": "caused_by",
        "unlinked": False,
        "reason": "not_found",
    }
    assert edges(raw) == [(1, 3, "relates_to"), (2, 1, "caused_by")]
    related = {
        m["id"]: sorted((r["id"], r["kind"]) for r in m["related"])
        for m in results[4].structured_content["memories"]
    }
    assert related == {
        1: [(2, "caused"), (3, "relates_to")],
        2: [(1, "caused_by")],
        3: [(1, "relates_to")],
    }
    (removed,) = run(service, ("memory_unlink", {"from_id": 1, "to_id": 3, "kind": "relates_to"}))
    assert removed.structured_content["unlinked"] is True
    assert edges(raw) == [(2, 1, "caused_by")]


def test_expiry_and_forget_take_their_edges_over_mcp(service, raw, clock):
    results = run(
        service,
        ("memory_store", {"content": "short", "type": "TODO", "ttl_secs": 5}),
        ("memory_store", {"content": "kept", "type": "TODO"}),
        ("memory_store", {"content": "forgotten", "type": "TODO"}),
        ("memory_link", {"from_id": 1, "to_id": 2, "kind": "supersedes"}),
        ("memory_link", {"from_id": 3, "to_id": 2, "kind": "caused_by"}),
        ("memory_forget", {"id": 3}),
    )
    assert results[-1].structured_content == {"id": 3, "deleted": True}
    assert edges(raw) == [(1, 2, "supersedes")]
    clock.advance(5)
    sweep(service)
    assert edges(raw) == []


def test_expansion_is_a_pure_read_and_shapes_over_mcp(service, db_path, clock):
    store(service, 3)
    run(service, ("memory_link", {"from_id": 2, "to_id": 1, "kind": "supersedes"}))
    clock.advance(100)
    before = {row[0]: row for row in dump(db_path)}
    plain, expanded = run(
        service,
        ("memory_search", {"query": "memory", "include_superseded": True}),
        ("memory_search", {"query": "memory 1", "expand_links": True, "limit": 1}),
        ("memory_search", {"query": "memory 2", "expand_links": True, "limit": 1}),
    )[:2]
    assert all("related" not in r for r in plain.structured_content["results"])
    (result,) = expanded.structured_content["results"]
    assert result["id"] == 2 and [r["id"] for r in result["related"]] == [1]
    after = {row[0]: row for row in dump(db_path)}
    assert after[1][8] == before[1][8] + 1  # bumped by the plain search only, not as a neighbour
    assert after[2][8] == before[2][8] + 2
    (lonely,) = run(
        service, ("memory_search", {"query": "memory 2", "expand_links": True, "limit": 1})
    )
    assert lonely.structured_content["results"][0]["related"] == []


def test_link_storage_fault_over_mcp(service, raw):
    store(service, 2)
    raw.execute("ALTER TABLE memory_links RENAME TO gone")
    raw.commit()
    (error,) = run(service, ("memory_link", {"from_id": 1, "to_id": 2, "kind": "relates_to"}))
    assert (error.code, error.message) == (
        -32603,
        "link failed due to a storage error (details are in the server log)",
    )
