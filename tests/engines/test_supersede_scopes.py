"""Supersede and scopes: a search or list filtered by a scope counts only the supersessions
made by memories of that scope, so a memory superseded only from outside stays current
there (and ``superseded_by`` names only the scope's own superseders); with no scope filter
every supersession counts. Search, list, their ``as_of``, tidy (its report and its merge)
and the session brief, on both engines."""

from __future__ import annotations

import pytest

from agent_memory.cli import brief
from agent_memory.storage import open_reader

pytest_plugins = ["tests.support.pg_fixtures"]


OLD = {"content": "The API timeout is 30 seconds.", "type": "CONSTRAINT", "scope": "alpha"}
NEW = {"content": "The API timeout is now 90 seconds.", "type": "CONSTRAINT"}


def ids(rows) -> list[int]:
    return [r["id"] for r in rows]


def searched(svc, **args) -> list[int]:
    return ids(svc.search({"query": "API timeout seconds", **args})["results"])


def marked(rows) -> dict[int, list[int]]:
    return {r["id"]: r["superseded_by"] for r in rows}


@pytest.mark.parametrize("outside", ["beta", None])
def test_superseded_only_from_outside_stays_in_the_scope(svc, outside):
    old = svc.store(OLD)["id"]
    new = svc.store({**NEW, "scope": outside, "supersedes": [old]})["id"]
    assert searched(svc, scope="alpha") == [old]
    assert ids(svc.list({"scope": "alpha"})) == [old]
    assert ids(svc.list({"scope": "alpha", "limit": 5})) == [old]
    assert searched(svc) == [new]  # no scope filter: every supersession counts
    assert ids(svc.list({})) == [new]
    scoped = {"scope": "alpha", "include_superseded": True}
    assert marked(svc.search({"query": "API timeout seconds", **scoped})["results"]) == {old: []}
    assert marked(svc.list(scoped)) == {old: []}


def test_superseded_from_inside_the_scope_leaves_it(svc):
    old = svc.store(OLD)["id"]
    new = svc.store({**NEW, "scope": "alpha", "supersedes": [old]})["id"]
    assert searched(svc, scope="alpha") == [new]
    assert ids(svc.list({"scope": "alpha"})) == [new]
    assert searched(svc) == [new]


def test_include_superseded_in_a_scope_names_only_its_superseders(svc):
    old = svc.store(OLD)["id"]
    beta = svc.store({**NEW, "scope": "beta", "supersedes": [old]})["id"]
    alpha = svc.store({**NEW, "content": "API timeout: 60 seconds.", "scope": "alpha"})["id"]
    svc.link({"from_id": alpha, "to_id": old, "kind": "supersedes"})
    scoped = {"scope": "alpha", "include_superseded": True}
    found = svc.search({"query": "API timeout seconds", **scoped})["results"]
    assert marked(found) == {old: [alpha], alpha: []}
    assert marked(svc.list(scoped)) == {old: [alpha], alpha: []}
    every = marked(svc.list({"include_superseded": True}))
    assert every == {old: sorted([alpha, beta]), alpha: [], beta: []}


def test_as_of_counts_only_the_scopes_supersessions_too(svc, clock):
    old = svc.store(OLD)["id"]
    clock.advance(10)
    new = svc.store({**NEW, "scope": "beta", "supersedes": [old]})["id"]
    at = int(clock.now)
    clock.advance(10)
    assert searched(svc, scope="alpha", as_of=at) == [old]
    assert ids(svc.list({"scope": "alpha", "as_of": at})) == [old]
    assert searched(svc, as_of=at) == [new]
    assert ids(svc.list({"as_of": at})) == [new]
    inside = svc.store({**NEW, "scope": "alpha", "supersedes": [old]})["id"]
    clock.advance(10)
    now = int(clock.now)
    assert searched(svc, scope="alpha", as_of=now) == [inside]
    scoped = {"scope": "alpha", "include_superseded": True, "as_of": now}
    assert marked(svc.list(scoped)) == {inside: [], old: [inside]}


def test_tidy_of_a_scope_counts_only_its_supersessions(svc):
    old = svc.store(OLD)["id"]
    svc.store({**NEW, "scope": "beta", "supersedes": [old]})
    assert svc.tidy({"scope": "alpha"})["memories"] == 1  # old is current in alpha
    assert svc.tidy({"scope": "alpha"})["superseded"] == []
    assert svc.tidy({})["memories"] == 1  # every scope: old is superseded


def test_tidy_merges_into_a_memory_superseded_only_from_outside(svc):
    """The scope's report keeps it as current, so its merge does not refuse it as superseded."""
    first = svc.store({**OLD, "content": "Deploys run the database migrations first, then restart"})
    again = svc.store({**OLD, "content": "Run the database migrations first on deploys; restart"})
    svc.store({**NEW, "scope": "beta", "supersedes": [again["id"]]})
    clusters = svc.tidy({"scope": "alpha"})["clusters"]
    assert [c["keep"]["id"] for c in clusters] == [again["id"]]
    [applied] = svc.tidy_merge(clusters, "alpha")
    assert "skipped" not in applied, applied
    assert ids(svc.list({"scope": "alpha"})) == [again["id"]]
    assert first["id"] not in ids(svc.list({}))


def test_tidy_merge_still_refuses_a_memory_its_scope_superseded_since(svc):
    svc.store({**OLD, "content": "Deploys run the database migrations first, then restart"})
    again = svc.store({**OLD, "content": "Run the database migrations first on deploys; restart"})
    clusters = svc.tidy({"scope": "alpha"})["clusters"]
    svc.store({**NEW, "scope": "alpha", "supersedes": [again["id"]]})
    [applied] = svc.tidy_merge(clusters, "alpha")
    assert applied["skipped"] == f"memory {again['id']} is superseded itself; nothing was written"


def test_tidy_merge_of_every_scope_refuses_a_memory_superseded_from_anywhere(svc):
    """A report of every scope counts every supersession, and so does its merge."""
    svc.store({**OLD, "content": "Deploys run the database migrations first, then restart"})
    again = svc.store({**OLD, "content": "Run the database migrations first on deploys; restart"})
    clusters = svc.tidy({})["clusters"]
    assert [c["keep"]["id"] for c in clusters] == [again["id"]]
    svc.store({**NEW, "scope": "beta", "supersedes": [again["id"]]})
    [applied] = svc.tidy_merge(clusters)
    assert applied["skipped"] == f"memory {again['id']} is superseded itself; nothing was written"


@pytest.mark.parametrize("outside", ["beta", None])
def test_the_brief_of_a_scope_counts_only_its_supersessions(svc, location, outside):
    old = svc.store(OLD)["id"]
    new = svc.store({**NEW, "scope": outside, "supersedes": [old]})["id"]
    glob = svc.store({**NEW, "content": "Retries back off for 2 seconds.", "scope": None})["id"]
    svc.store(
        {**NEW, "content": "Retries back off for 5 seconds.", "scope": "beta", "supersedes": [glob]}
    )
    reader = open_reader(location)
    try:
        now = svc.now()
        recent = brief.recent(reader, "alpha", now)
    finally:
        reader.close()
    shown = {s.title: ids(s.candidates) for s in recent if s.candidates}
    alpha = "`alpha`: decisions, constraints and architecture"
    assert shown[alpha] == [old]  # superseded only from outside the scope
    expected = [new] if outside is None else []  # a global one: any supersession counts
    assert shown.get("Global: decisions, constraints and architecture", []) == expected
    relevant = brief.relevant(svc.search, "API timeout seconds", "alpha", now)
    assert ids(relevant[0].candidates) == [old]


def test_the_brief_leaves_out_what_the_scope_superseded(svc, location):
    old = svc.store(OLD)["id"]
    new = svc.store({**NEW, "scope": "alpha", "supersedes": [old]})["id"]
    reader = open_reader(location)
    try:
        recent = brief.recent(reader, "alpha", svc.now())
    finally:
        reader.close()
    assert ids(recent[0].candidates) == [new]
    assert ids(
        brief.relevant(svc.search, "API timeout seconds", "alpha", svc.now())[0].candidates
    ) == [new]
