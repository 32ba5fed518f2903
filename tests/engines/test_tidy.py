"""``agent-memory tidy``: clusters of near-duplicates (the store-time hints' signal: the
local model's cosine, or keyword overlap without an embedder), superseded memories still
treated as current, memories not used in N days. A dry run writes nothing; a merge links
and unites tags in one transaction per cluster. Both engines, in process; REST once."""

from __future__ import annotations

import pytest

from agent_memory.contract.errors import InvalidArgument, InvalidType, UnknownField
from agent_memory.embedders.local import Local
from agent_memory.http.rest import create_app
from agent_memory.service.core import MemoryService
from agent_memory.service.hygiene import similar, tidy
from agent_memory.storage import open_store
from tests.support.clock import Clock
from tests.support.local_model import needs_model
from tests.support.rest_client import Client
from tests.support.tidy import AGAIN, FIRST, SHORT, WITH_OPS, WITH_OWNER

pytest_plugins = ["tests.support.pg_fixtures"]


def store(svc, clock, content, memory_type="DECISION", **more) -> int:
    clock.advance(60)  # each memory newer than the last
    return svc.store({"content": content, "type": memory_type, **more})["id"]


DAY = 86_400


OTHER = "The design system uses an 8 pixel spacing grid."
# The same fact in other words, and the same topic with another decision (test_similar's).
FACT = "We chose PostgreSQL as the primary datastore for the billing service."
REWORDED = (
    "The billing service stores its data in PostgreSQL; that was our pick for the main database."
)
RELATED = "We chose MongoDB as the primary datastore for the analytics service."


@pytest.fixture
def clock() -> Clock:
    return Clock()


def exported(svc) -> list[str]:
    lines: list[str] = []
    svc.export(lines.append)
    return lines[1:]  # the header names the export's time


def shape(report) -> list[tuple[int, list[int]]]:
    return [(c["keep"]["id"], [m["id"] for m in c["merge"]]) for c in report["clusters"]]


def test_without_an_embedder_clusters_are_by_keyword_and_the_dry_run_writes_nothing(svc, clock):
    first = store(svc, clock, FIRST, tags=["deploy"])
    other = store(svc, clock, OTHER, "PATTERN")
    again = store(svc, clock, AGAIN, tags=["api"])
    before = exported(svc)
    report = svc.tidy({})
    assert (report["signal"], report["threshold"]) == ("keyword", similar.KEYWORD_THRESHOLD)
    assert "signal_note" in report
    assert shape(report) == [(again, [first])]  # the newest is kept
    assert report["clusters"][0]["tags"] == ["api", "deploy"]
    assert report["memories"] == 3 and other not in report["clusters"][0]["merge"]
    assert exported(svc) == before  # no link, no tag, not even a use


def test_apply_supersedes_the_older_and_unites_the_tags(svc, clock):
    first = store(svc, clock, FIRST, tags=["deploy", "ops"])
    again = store(svc, clock, AGAIN, tags=["api", "ops"])
    report = svc.tidy({})
    applied = svc.tidy_merge(report["clusters"])
    assert applied == [{"keep": again, "merge": [first], "tags": ["api", "ops", "deploy"]}]
    kept = svc.get({"id": again})
    assert kept["tags"] == ["api", "ops", "deploy"]
    assert [(r["id"], r["kind"]) for r in kept["related"]] == [(first, "supersedes")]
    assert [m["id"] for m in svc.list({})] == [again]  # the older leaves the list
    assert svc.get({"id": first})["content"] == FIRST  # and stays reachable
    assert svc.tidy({})["clusters"] == []  # nothing left to merge
    versions = svc.history({"id": again})["versions"]
    assert [v["tags"] for v in versions] == [["api", "ops"], ["api", "ops", "deploy"]]


def test_a_cluster_whose_memory_went_meanwhile_is_skipped_whole(svc, clock):
    first = store(svc, clock, FIRST)
    again = store(svc, clock, AGAIN)
    report = svc.tidy({})
    svc.forget({"id": first})
    [entry] = svc.tidy_merge(report["clusters"])
    assert entry["skipped"] == f"memory {first} is gone; nothing was written"
    assert svc.get({"id": again})["related"] == []


def test_clusters_stay_in_their_scope_and_the_scope_filters(svc, clock):
    a = store(svc, clock, FIRST, scope="one")
    store(svc, clock, AGAIN, scope="two")
    b = store(svc, clock, AGAIN, scope="one")
    assert shape(svc.tidy({})) == [(b, [a])]
    assert shape(svc.tidy({"scope": "two"})) == []
    assert svc.tidy({"scope": "two"})["memories"] == 1


def test_superseded_memories_that_nothing_current_replaces_or_that_are_still_related(svc, clock):
    old = store(svc, clock, "The API timeout is 30 seconds.", "CONSTRAINT")
    store(svc, clock, "The API timeout is 90 seconds.", "CONSTRAINT", supersedes=[old], ttl_secs=5)
    fine = store(svc, clock, "Retries back off exponentially.", "PATTERN")
    newer = store(svc, clock, "Retries back off linearly now.", "PATTERN", supersedes=[fine])
    user = store(svc, clock, "The client library wraps retries.", "ARCHITECTURE")
    svc.link({"from_id": user, "to_id": fine, "kind": "relates_to"})
    clock.advance(10)  # the 90 seconds have expired; the sweep has not run
    found = {m["id"]: m for m in svc.tidy({})["superseded"]}
    assert found[old]["problems"] == ["no_current_replacement"]
    assert found[old]["current_replacements"] == []
    assert found[fine]["problems"] == ["still_related"]
    assert found[fine]["current_replacements"] == [newer]
    assert found[fine]["related"] == [{"id": user, "kind": "relates_to"}]


def test_memories_replacing_each_other_in_a_circle_are_listed(svc, clock):
    a = store(svc, clock, "Cache entries live one hour.", "CONSTRAINT")
    b = store(svc, clock, "Cache entries live two hours.", "CONSTRAINT", supersedes=[a])
    svc.link({"from_id": a, "to_id": b, "kind": "supersedes"})
    found = svc.tidy({})["superseded"]
    assert [(m["id"], m["problems"]) for m in found] == [
        (a, ["no_current_replacement"]),
        (b, ["no_current_replacement"]),
    ]


def test_unused_memories_are_those_not_used_in_n_days(svc, clock):
    old = store(svc, clock, "Old knowledge about the build cache.", "PATTERN")
    used = store(svc, clock, "Knowledge about the kiwi parser.", "PATTERN")
    clock.advance(40 * DAY)
    recent = store(svc, clock, "Fresh knowledge about the linter.", "PATTERN")
    svc.search({"query": "kiwi parser"})  # a use of ``used``
    report = svc.tidy({"unused_days": 30})
    assert report["unused_days"] == 30
    assert report["unused"]["count"] == 1
    [memory] = report["unused"]["memories"]
    assert (memory["id"], memory["access_count"]) == (old, 0)
    assert svc.tidy({})["unused"]["count"] == 0  # the default, 90 days
    assert {used, recent}.isdisjoint(m["id"] for m in report["unused"]["memories"])


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, InvalidArgument, "unused_days must be between 1 and 36500 (got 0)"),
        (36_501, InvalidArgument, "unused_days must be between 1 and 36500 (got 36501)"),
        ("7", InvalidType, 'unused_days must be an integer (got "7")'),
        (True, InvalidType, "unused_days must be an integer (got true)"),
    ],
)
def test_unused_days_is_checked_and_nothing_is_written(svc, clock, value, error, message):
    store(svc, clock, FIRST)
    before = exported(svc)
    with pytest.raises(error) as refused:
        svc.tidy({"unused_days": value})
    assert message in str(refused.value)
    assert exported(svc) == before


def test_an_unknown_argument_is_refused(svc):
    with pytest.raises(UnknownField, match="unused_dys"):
        svc.tidy({"unused_dys": 3})


@needs_model
def test_with_the_local_model_clusters_are_by_cosine(location, clock):
    svc = MemoryService(open_store(location), clock=clock, embedder=Local())
    try:
        fact = store(svc, clock, FACT)
        store(svc, clock, RELATED)
        store(svc, clock, OTHER, "PATTERN")
        reworded = store(svc, clock, REWORDED)
        report = svc.tidy({})
        assert report["signal"] == "cosine"
        assert report["threshold"] == similar.COSINE_THRESHOLDS["multilingual-e5-small-q4"]
        assert shape(report) == [(reworded, [fact])]
        assert report["clusters"][0]["merge"][0]["similarity"] >= report["threshold"]
        assert report["not_compared"] == 0
    finally:
        svc.close()
    off = MemoryService(open_store(location), clock=clock, embedding_off=True)
    try:  # --embedder none: the keyword signal, which does not see this rewording
        report = off.tidy({})
        assert (report["signal"], shape(report)) == ("keyword", [])
    finally:
        off.close()


def test_rest_answers_the_report_and_names_a_bad_unused_days(svc, clock):
    first = store(svc, clock, FIRST, scope="s")
    again = store(svc, clock, AGAIN, scope="s")
    client = Client(create_app(svc))
    status, body = client("GET", "/api/tidy?scope=s&unused_days=5")
    assert status == 200
    assert (shape(body), body["unused_days"], body["scope"]) == ([(again, [first])], 5, "s")
    status, body = client("GET", "/api/tidy?unused_days=-1")
    assert status == 400
    assert body["error"] == "invalid argument: unused_days must be between 1 and 36500 (got -1)"
    assert tidy.MAX_UNUSED_DAYS == 36_500


def test_a_token_bound_to_a_scope_sees_only_its_scope(svc, clock):
    from agent_memory.service.access import Forbidden, Granted
    from agent_memory.service.tokens import Grant

    elsewhere = store(svc, clock, "The API timeout is 90 seconds.", scope="beta")
    old = store(svc, clock, "The API timeout is 30 seconds.", scope="alpha")
    svc.link({"from_id": elsewhere, "to_id": old, "kind": "supersedes"})
    svc.link({"from_id": elsewhere, "to_id": old, "kind": "relates_to"})
    team = Granted(svc, Grant("alpha-team", scope="alpha"))
    report = team.tidy()  # only alpha's supersessions count in alpha (issue 35)
    assert (report["scope"], report["memories"], report["superseded"]) == ("alpha", 1, [])
    gone = store(svc, clock, "Timeout 60 s.", scope="alpha", supersedes=[old], ttl_secs=5)
    store(svc, clock, FIRST, scope="beta")
    store(svc, clock, AGAIN, scope="beta")
    report = team.tidy()
    assert (report["scope"], report["clusters"]) == ("alpha", [])
    [memory] = report["superseded"]
    assert memory["id"] == old
    assert memory["problems"] == ["no_current_replacement", "still_related"]
    assert (memory["superseded_by"], memory["related"]) == ([gone], [])  # beta's left out
    with pytest.raises(Forbidden):
        team.tidy({"scope": "beta"})
    with pytest.raises(Forbidden):
        team.tidy_merge(svc.tidy({})["clusters"])


# The issue's own example: a detailed rule, then a shorter paraphrase of it stored later.
DETAILED = (
    "Never edit a migration that has shipped; add a new Alembic revision instead, and run it "
    "on staging first with a backup of production"
)
PARAPHRASE = "Never edit a shipped migration; add a new Alembic revision instead."


def test_the_member_holding_the_others_words_is_kept_not_the_newest(svc, clock):
    detailed = store(svc, clock, DETAILED, "CONSTRAINT", tags=["db"])
    paraphrase = store(svc, clock, PARAPHRASE, "CONSTRAINT", tags=["alembic"])
    [cluster] = svc.tidy({})["clusters"]
    assert (cluster["keep"]["id"], cluster["keep_reason"]) == (detailed, "holds_the_rest")
    assert [(m["id"], m["missing_words"]) for m in cluster["merge"]] == [(paraphrase, [])]
    [applied] = svc.tidy_merge([cluster])
    assert applied == {"keep": detailed, "merge": [paraphrase], "tags": ["db", "alembic"]}
    found = svc.search({"query": "staging backup of production"})["results"]
    assert [m["id"] for m in found] == [detailed]  # the detail is still found
    assert [m["id"] for m in svc.list({})] == [detailed]


def test_a_cluster_no_member_holds_is_reported_and_left_alone_without_keep(svc, clock):
    ops = store(svc, clock, WITH_OPS)
    owner = store(svc, clock, WITH_OWNER)
    short = store(svc, clock, SHORT)
    before = exported(svc)
    [cluster] = svc.tidy({})["clusters"]
    assert cluster["keep_reason"] is None
    members = [cluster["keep"]["id"], *(m["id"] for m in cluster["merge"])]
    assert sorted(members) == sorted([ops, owner, short])
    missing = {m["id"]: m["missing_words"] for m in cluster["merge"]}
    assert missing[short] == [] and any(missing[i] for i in (ops, owner))
    [applied] = svc.tidy_merge([cluster])
    assert applied["skipped"] == (
        "no member holds every word of the others, and none was named to keep; nothing was written"
    )
    assert exported(svc) == before


def test_keep_names_the_member_a_merge_keeps(svc, clock):
    ops = store(svc, clock, WITH_OPS)
    owner = store(svc, clock, WITH_OWNER)
    short = store(svc, clock, SHORT)
    [cluster] = svc.tidy({"keep": [ops]})["clusters"]
    assert (cluster["keep"]["id"], cluster["keep_reason"]) == (ops, "named")
    assert svc.tidy({"keep": ops})["clusters"] == [cluster]  # one id alone, as a query gives it
    missing = {m["id"]: m["missing_words"] for m in cluster["merge"]}
    assert missing == {owner: ["page", "owner"], short: []}
    [applied] = svc.tidy_merge([cluster])
    assert (applied["keep"], sorted(applied["merge"]), "skipped" in applied) == (
        ops,
        sorted([owner, short]),
        False,
    )
    assert [m["id"] for m in svc.list({})] == [ops]


@pytest.mark.parametrize(
    ("keep", "error", "message"),
    [
        ([99], InvalidArgument, "keep names memory 99, which is in no cluster of this report"),
        ("one", InvalidType, 'keep must be a memory id or an array of them (got "one")'),
        (["one"], InvalidType, 'keep[0] must be an integer (got "one")'),
        ([1, 2], InvalidArgument, "keep names memories 2 and 1, of one cluster"),
    ],
)
def test_keep_naming_no_member_or_two_of_one_cluster_is_refused(svc, clock, keep, error, message):
    store(svc, clock, FIRST)
    store(svc, clock, AGAIN)
    other = store(svc, clock, OTHER, "PATTERN")  # in no cluster
    before = exported(svc)
    with pytest.raises(error) as refused:
        svc.tidy({"keep": keep})
    assert message in str(refused.value)
    with pytest.raises(InvalidArgument, match=f"keep names memory {other}, which is in no"):
        svc.tidy({"keep": [other]})
    assert exported(svc) == before


def changed_since(svc, clock, memory_id: int, change: str) -> None:
    clock.advance(1)
    if change == "duplicate":  # a store of the same text: a version, the tags it brings
        svc.store({"content": FIRST, "type": "DECISION", "tags": ["more"]})
    else:
        svc.update({"id": memory_id, **CHANGES[change]})


CHANGES = {
    "content": {"content": FIRST + " at once"},
    "tags": {"tags": ["changed"]},
    "scope": {"scope": "elsewhere"},
    "ttl": {"ttl_secs": 3600},
    "same content again": {"content": FIRST},
}


@pytest.mark.parametrize("change", [*CHANGES, "duplicate"])
def test_a_member_changed_after_the_report_is_not_merged(svc, clock, change):
    first = store(svc, clock, FIRST)
    again = store(svc, clock, AGAIN)
    report = svc.tidy({})
    assert shape(report) == [(again, [first])]
    changed_since(svc, clock, first, change)
    before = exported(svc)
    [applied] = svc.tidy_merge(report["clusters"])
    assert applied["skipped"] == f"memory {first} changed since the report; nothing was written"
    assert exported(svc) == before


def test_a_use_after_the_report_is_no_change(svc, clock):
    first = store(svc, clock, FIRST)
    again = store(svc, clock, AGAIN)
    report = svc.tidy({})
    assert [m["id"] for m in svc.search({"query": "migrations"})["results"]] == [again, first]
    [applied] = svc.tidy_merge(report["clusters"])
    assert "skipped" not in applied, applied


def test_a_cluster_not_from_a_report_is_refused(svc, clock):
    first = store(svc, clock, FIRST)
    again = store(svc, clock, AGAIN)
    with pytest.raises(InvalidArgument, match=r"must name keep\.id, keep\.revision"):
        svc.tidy_merge([{"keep": {"id": again}, "merge": [{"id": first}]}])
    assert svc.get({"id": again})["related"] == []


def test_rest_takes_keep_once_or_repeated(svc, clock):
    ops = store(svc, clock, WITH_OPS)
    owner = store(svc, clock, WITH_OWNER)
    store(svc, clock, SHORT)
    client = Client(create_app(svc))
    status, body = client("GET", f"/api/tidy?keep={ops}")
    assert status == 200
    assert (body["clusters"][0]["keep"]["id"], body["clusters"][0]["keep_reason"]) == (ops, "named")
    status, body = client("GET", f"/api/tidy?keep={ops}&keep={owner}")
    assert status == 400
    assert f"keep names memories {owner} and {ops}, of one cluster" in body["error"]
