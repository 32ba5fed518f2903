"""memory_update as a JSON merge-patch, exactly per the contract's table."""

from __future__ import annotations

import pytest

from agent_memory.service.lifecycle import sweep
from tests.support.files import dump

DAY = 86_400


@pytest.fixture
def memory(service, clock):
    service.store(
        {
            "content": "We chose io.github.unityinflow as the Maven group.",
            "type": "DECISION",
            "tags": ["maven", "release"],
            "source": "chat",
            "scope": "kore-runtime",
            "ttl_secs": 3600,
        }
    )
    clock.advance(DAY)
    return service.list({})[0]


@pytest.mark.parametrize(
    "patch,changed",
    [
        ({"content": "new text"}, {"content": "new text"}),
        ({"tags": ["x", "y"]}, {"tags": ["x", "y"]}),
        ({"tags": []}, {"tags": []}),
        ({"tags": None}, {"tags": []}),
        ({"scope": "elsewhere"}, {"scope": "elsewhere"}),
        ({"scope": None}, {"scope": None}),
        ({"ttl_secs": None}, {"expires_at": None}),
        ({"content": "both", "scope": None}, {"content": "both", "scope": None}),
    ],
)
def test_patch_applies_sent_fields_and_keeps_the_rest(service, clock, memory, patch, changed):
    updated = service.update({"id": memory["id"], **patch})
    expected = {
        **memory,
        **changed,
        "decay_score": 1.0,
        "last_accessed": clock.now,
        "embedding_status": 0,
    }
    assert updated == expected
    stored = service.list({})[0]
    assert stored == {k: v for k, v in expected.items() if k != "embedding_status"}


def test_ttl_value_counts_from_now(service, clock, memory):
    assert memory["expires_at"] == clock.now - DAY + 3600
    updated = service.update({"id": memory["id"], "ttl_secs": 60})
    assert updated["expires_at"] == clock.now + 60


def test_omitted_ttl_keeps_the_existing_expiry(service, memory):
    assert service.update({"id": memory["id"], "tags": []})["expires_at"] == memory["expires_at"]


def test_type_source_and_id_never_change(service, memory):
    updated = service.update({"id": memory["id"], "content": "changed"})
    assert (updated["id"], updated["type"], updated["source"]) == (1, "DECISION", "chat")


def test_update_counts_as_a_use(service, clock, memory, db_path):
    service.update({"id": memory["id"], "tags": ["t"]})
    row = dump(db_path)[0]
    assert (row[8], row[10], row[7]) == (1, clock.now, 1.0)  # access_count, last_accessed, decay


def test_new_content_is_reindexed_in_the_same_transaction(service, memory):
    assert service.search({"query": "unityinflow"})["results"]
    service.update({"id": memory["id"], "content": "Gradle plugin portal instead"})
    assert service.search({"query": "unityinflow"})["results"] == []
    assert service.search({"query": "content:Maven"})["results"] == []
    assert [r["id"] for r in service.search({"query": "gradle"})["results"]] == [memory["id"]]
    # "maven" is still one of its tags
    assert [r["id"] for r in service.search({"query": "Maven"})["results"]] == [memory["id"]]


def test_unknown_id_is_a_clean_not_found(service, memory, db_path):
    before = dump(db_path)
    assert service.update({"id": 42, "content": "x"}) == {
        "id": 42,
        "updated": False,
        "reason": "not_found",
    }
    assert dump(db_path) == before


def test_expired_but_unswept_memory_can_still_be_updated(service, clock, memory):
    clock.advance(7 * DAY)  # well past the one-hour TTL; no sweep has run
    assert service.list({})[0]["id"] == memory["id"]
    updated = service.update({"id": memory["id"], "ttl_secs": None})
    assert updated["expires_at"] is None
    assert sweep(service)["expired"] == 0
    assert len(service.list({})) == 1
