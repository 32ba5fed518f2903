"""Exact duplicates at store time (decisions, "Content"): the same content once whitespace
is normalised, of the same type and scope, stores nothing new. The answer names the existing
memory (``duplicate_of``), whose use is refreshed, which takes the new tags and the longer
lifetime. On both engines, in process and over MCP."""

from __future__ import annotations

import json

import pytest

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.clock import Clock
from tests.support.mcp_session import run as run_mcp

pytest_plugins = ["tests.support.pg_fixtures"]


FIRST = {"content": "Deploys go through the staging cluster first.", "type": "DECISION"}


@pytest.fixture
def svc(location):
    clock = Clock()
    service = MemoryService(open_store(location), clock=clock)
    service.test_clock = clock
    yield service
    service.close()


def test_same_content_type_and_scope_stores_nothing_new(svc):
    first = svc.store({**FIRST, "scope": "infra"})
    again = svc.store(
        {**FIRST, "content": "  Deploys go through\nthe staging  cluster first. ", "scope": "infra"}
    )
    assert first == {"id": 1}
    assert again == {"id": 1, "duplicate_of": 1}
    assert [m["id"] for m in svc.list({})] == [1]
    assert svc.get({"id": 1})["content"] == FIRST["content"]  # the text first stored stays


@pytest.mark.parametrize(
    "other",
    [
        {"type": "PATTERN"},  # another type
        {"scope": "web"},  # another scope
        {"scope": None, "content": FIRST["content"].lower()},  # case counts
        {"content": FIRST["content"] + " Always."},  # more words
    ],
    ids=["type", "scope", "case", "words"],
)
def test_another_type_scope_or_text_is_a_new_memory(svc, other):
    svc.store({**FIRST, "scope": "infra"})
    answer = svc.store({**FIRST, "scope": "infra", **other})
    assert answer["id"] == 2 and "duplicate_of" not in answer  # (it may name 1 as similar)


def test_a_global_memory_and_a_scoped_one_are_not_duplicates(svc):
    assert svc.store(FIRST) == {"id": 1}
    assert svc.store({**FIRST, "scope": "infra"}) == {"id": 2}
    assert svc.store(FIRST) == {"id": 1, "duplicate_of": 1}
    assert svc.store({**FIRST, "scope": "infra"}) == {"id": 2, "duplicate_of": 2}


def test_a_duplicate_refreshes_use_and_merges_tags(svc):
    svc.store({**FIRST, "tags": ["deploy", "ci"]})
    svc.test_clock.advance(500)
    svc.store({**FIRST, "tags": ["ci", "staging"]})
    memory = svc.get({"id": 1})
    assert memory["tags"] == ["deploy", "ci", "staging"]
    assert memory["access_count"] == 1
    assert memory["last_accessed"] == memory["created_at"] + 500
    found = svc.search({"query": "staging", "tag": "staging"})["results"]
    assert [r["id"] for r in found] == [1]  # the merged tag is searchable


@pytest.mark.parametrize(
    ("kept", "sent", "wins"),
    [
        (100, 5000, 5000),  # longer wins
        (5000, 100, 5000),  # shorter loses
        (100, None, None),  # no expiry outlives any
        (None, 100, None),
    ],
)
def test_the_longer_or_absent_lifetime_wins(svc, kept, sent, wins):
    first = {**FIRST} if kept is None else {**FIRST, "ttl_secs": kept}
    svc.store(first)
    svc.store({**FIRST} if sent is None else {**FIRST, "ttl_secs": sent})
    start = svc.get({"id": 1})["created_at"]
    assert svc.get({"id": 1})["expires_at"] == (None if wins is None else start + wins)


def test_a_duplicate_whose_original_was_forgotten_is_stored_again(svc):
    svc.store(FIRST)
    svc.forget({"id": 1})
    assert svc.store(FIRST) == {"id": 2}


def test_an_updated_memory_is_matched_by_its_new_content(svc):
    svc.store(FIRST)
    svc.update({"id": 1, "content": "Deploys  go straight to production."})
    assert svc.store(FIRST) == {"id": 2}
    assert svc.store({**FIRST, "content": "Deploys go straight to production."}) == {
        "id": 1,
        "duplicate_of": 1,
    }


def test_over_mcp_the_answer_names_the_existing_memory(svc):
    first, again = run_mcp(svc, ("memory_store", FIRST), ("memory_store", FIRST))
    assert first.structured_content == {"id": 1}
    assert again.structured_content == {"id": 1, "duplicate_of": 1}
    assert '"duplicate_of": 1' in again.content[0].text


def _import(svc, tmp_path, memories: list[dict]) -> dict:
    from agent_memory.transfer import jsonl
    from agent_memory.transfer.portable import jsonl_reader

    at = 1_767_225_600
    base = {
        "record": "memory",
        "tags": [],
        "created_at": at,
        "last_accessed": at,
        "access_count": 0,
    }
    records = [
        jsonl.header(
            exported_at=1_767_225_600,
            embedding_model="",
            embedding_dim=0,
            schema_version=9,
            agent_memory_version="0",
            exported_rows=len(memories),
            exported_links=0,
        ),
        *({**base, "key": n + 1, **m} for n, m in enumerate(memories)),
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    reader = jsonl_reader(path)
    reader.check()
    return svc.import_jsonl(reader)


def test_an_import_merges_its_duplicates_as_a_store_does(svc, tmp_path):
    svc.store({**FIRST, "tags": ["deploy"], "scope": "infra", "ttl_secs": 100})
    far = svc.now() + 10**6
    report = _import(
        svc,
        tmp_path,
        [
            {
                **FIRST,
                "content": FIRST["content"] + "  ",
                "scope": "infra",
                "tags": ["ci"],
                "expires_at": svc.now() + 50,  # shorter: loses
            },
            {**FIRST, "scope": "infra", "tags": ["k8s"], "expires_at": far},
            {"type": "TODO", "content": "new  one", "tags": ["a"]},
            {"type": "TODO", "content": "new one", "tags": ["b"], "source": "elsewhere"},
        ],
    )
    assert (report["imported"], report["skipped duplicates"]) == (1, 3)
    kept = svc.get({"id": 1})
    assert kept["tags"] == ["deploy", "ci", "k8s"]
    assert kept["expires_at"] == far
    assert kept["access_count"] == 0  # an import is not a use
    new = svc.get({"id": 2})
    assert (new["content"], new["tags"]) == ("new  one", ["a", "b"])
    again = _import(svc, tmp_path, [{**FIRST, "scope": "infra", "tags": ["ci"], "expires_at": far}])
    assert (again["imported"], again["skipped duplicates"]) == (0, 1)
    assert svc.get({"id": 1})["tags"] == ["deploy", "ci", "k8s"]


def test_an_expired_memory_is_no_ones_twin(svc, tmp_path):
    svc.store({**FIRST, "ttl_secs": 10})
    svc.test_clock.advance(10)  # expired (expires_at <= now), not swept yet
    answer = svc.store(FIRST)
    assert answer["id"] == 2 and "duplicate_of" not in answer
    report = _import(svc, tmp_path, [{"type": "TODO", "content": "x"}, FIRST])
    assert (report["imported"], report["skipped duplicates"]) == (1, 1)
