"""Store, search and list: filters, ordering, limits, ranking and the recency bump."""

from __future__ import annotations

import math

import pytest

from tests.support.files import dump

DAY = 86_400


def test_store_returns_sequential_ids_and_every_field(service, clock):
    first = service.store(
        {
            "content": "We chose io.github.unityinflow as the Maven group.",
            "type": "DECISION",
            "tags": ["maven", "release"],
            "source": "chat",
            "scope": "kore-runtime",
            "ttl_secs": None,
        }
    )
    second = service.store({"content": "second", "type": "TODO"})
    assert (first, second) == ({"id": 1}, {"id": 2})
    assert service.list({})[1] == {
        "id": 1,
        "content": "We chose io.github.unityinflow as the Maven group.",
        "type": "DECISION",
        "tags": ["maven", "release"],
        "source": "chat",
        "scope": "kore-runtime",
        "decay_score": 1.0,
        "created_at": clock.now,
        "last_accessed": clock.now,
        "expires_at": None,
        "created_by": "local",
        "updated_by": "local",
    }


def test_ids_are_never_reused_after_forget(service):
    service.store({"content": "one", "type": "TODO"})
    service.forget({"id": 1})
    assert service.store({"content": "two", "type": "TODO"}) == {"id": 2}


def test_content_is_stored_verbatim(service):
    text = "  leading space, émoji 🧠, NUL-free\nnew line\t tab  "
    service.store({"content": text, "type": "PATTERN", "tags": ["Ünï", ""]})
    (row,) = service.list({})
    assert row["content"] == text
    assert row["tags"] == ["Ünï", ""]


def test_list_is_newest_first_with_ties_by_id(service, clock):
    service.store({"content": "a", "type": "TODO"})
    service.store({"content": "b", "type": "TODO"})
    clock.advance(10)
    service.store({"content": "c", "type": "TODO"})
    assert [m["content"] for m in service.list({})] == ["c", "b", "a"]
    assert [m["content"] for m in service.list({"limit": 2})] == ["c", "b"]


@pytest.fixture
def filtered(service):
    rows = [
        ("rust build cache", "DECISION", ["rust"], "kore"),
        ("rust lints", "PATTERN", ["rustling"], "kore"),
        ("rust toolchain", "DECISION", ["Rust"], "other"),
        ("rust release", "TODO", ["rust", "release"], None),
    ]
    for content, kind, tags, scope in rows:
        service.store({"content": content, "type": kind, "tags": tags, "scope": scope})


@pytest.mark.parametrize(
    "filters,expected",
    [
        ({}, {1, 2, 3, 4}),
        ({"type": "DECISION"}, {1, 3}),
        ({"tag": "rust"}, {1, 4}),  # exact: not rustling, not Rust
        ({"tag": "Rust"}, {3}),
        ({"tag": "rus"}, set()),
        ({"scope": "kore"}, {1, 2}),
        ({"type": "DECISION", "tag": "rust", "scope": "kore"}, {1}),
        ({"type": "ERROR"}, set()),
    ],
)
def test_filters_on_search_and_list(service, filtered, filters, expected):
    assert {m["id"] for m in service.list(filters)} == expected
    found = service.search({"query": "rust", **filters})["results"]
    assert {m["id"] for m in found} == expected


def test_search_default_limit_is_50(service):
    for i in range(60):
        service.store({"content": f"shared word {i}", "type": "TODO"})
    assert len(service.search({"query": "shared"})["results"]) == 50
    assert len(service.search({"query": "shared", "limit": 7})["results"]) == 7
    assert len(service.list({})) == 60


def test_search_ranks_by_bm25_plus_decay(service, clock):
    service.store({"content": "alpha beta", "type": "TODO"})
    service.store({"content": "alpha alpha alpha beta gamma delta", "type": "TODO"})
    service.store({"content": "alpha", "type": "TODO"})
    answer = service.search({"query": "alpha"})["results"]
    # the shortest exact document has the best bm25; equal decay everywhere
    assert answer[0]["id"] == 3


def test_decay_breaks_equal_relevance_in_favour_of_fresher(service, clock):
    service.store({"content": "same words here", "type": "TODO"})
    clock.advance(90 * DAY)
    service.store({"content": "same words here", "type": "TODO", "scope": "b"})  # no duplicate
    answer = service.search({"query": "same words"})["results"]
    assert [r["id"] for r in answer] == [2, 1]
    assert answer[0]["decay_score"] == 1.0
    assert answer[1]["decay_score"] == pytest.approx(math.exp(-math.log(2) * 3))


def test_ties_are_broken_by_ascending_id(service):
    for scope in ("a", "b", "c"):  # (in one scope the same text would be a duplicate)
        service.store({"content": "identical", "type": "TODO", "scope": scope})
    assert [r["id"] for r in service.search({"query": "identical"})["results"]] == [1, 2, 3]


def test_only_returned_results_are_bumped(service, clock, db_path):
    for i in range(5):
        service.store({"content": f"match {i}", "type": "TODO"})
    service.store({"content": "unrelated", "type": "TODO"})
    clock.advance(DAY)
    answer = service.search({"query": "match", "limit": 2})["results"]
    returned = {r["id"] for r in answer}
    # results report the decay as of the query, before the bump
    assert all(r["decay_score"] < 1.0 for r in answer)
    rows = {row[0]: row for row in dump(db_path)}
    for memory_id, row in rows.items():
        last_accessed, access_count = row[10], row[8]
        if memory_id in returned:
            assert (last_accessed, access_count) == (clock.now, 1)
        else:
            assert (last_accessed, access_count) == (clock.now - DAY, 0)


def test_list_does_not_bump(service, clock, db_path):
    service.store({"content": "x", "type": "TODO"})
    before = dump(db_path)
    clock.advance(DAY)
    service.list({})
    assert dump(db_path) == before


def test_search_with_no_match_is_empty(service):
    service.store({"content": "x", "type": "TODO"})
    assert service.search({"query": "absent"}) == {"search_mode": "keyword", "results": []}
