"""A storage fault gives the generic message; the SQLite detail goes to the log only."""

from __future__ import annotations

import logging
from unittest.mock import ANY

import pytest

from agent_memory.contract.errors import StorageError
from agent_memory.service.lifecycle import sweep


@pytest.fixture
def broken(service, raw):
    """Pull the table out from under a running service (works as root, unlike chmod)."""
    service.store({"content": "stored before the fault", "type": "TODO"})
    raw.execute("ALTER TABLE memories RENAME TO memories_gone")
    raw.commit()
    return service


@pytest.mark.parametrize(
    "operation,args",
    [
        ("store", {"content": "x", "type": "TODO"}),
        ("search", {"query": "stored"}),
        ("search", {"query": "what was stored?"}),  # the retry path too
        ("list", {}),
        ("update", {"id": 1, "content": "y"}),
        ("forget", {"id": 1}),
    ],
)
def test_generic_message_and_detail_in_log(broken, caplog, operation, args):
    caplog.set_level(logging.ERROR)
    with pytest.raises(StorageError) as raised:
        getattr(broken, operation)(args)
    message = str(raised.value)
    assert message == f"{operation} failed due to a storage error (details are in the server log)"
    assert "memories" not in message and "sqlite" not in message.lower()
    assert "no such table" in caplog.text


def test_sweep_logs_each_failing_step_and_goes_on(broken, caplog):
    caplog.set_level(logging.ERROR)
    report = sweep(broken)
    # expiry and decay fail (no memories table); merging the keyword index finds nothing
    assert report == {
        "expired": 0,
        "decayed": 0,
        "merged": 0,
        "oauth": 0,
        "embedded": 0,
        "longest_hold_ms": ANY,
    }
    assert caplog.text.count("sweep: storage error") == 2


def test_nothing_stored_is_lost_by_a_fault(broken, raw):
    raw.execute("ALTER TABLE memories_gone RENAME TO memories")
    raw.commit()
    assert [m["content"] for m in broken.list({})] == ["stored before the fault"]


@pytest.mark.parametrize(
    "operation,args",
    [
        ("link", {"from_id": 1, "to_id": 2, "kind": "relates_to"}),
        ("unlink", {"from_id": 1, "to_id": 2, "kind": "relates_to"}),
        ("search", {"query": "stored", "expand_links": True}),
        ("list", {"limit": 5, "expand_links": True}),
    ],
)
def test_relation_faults_are_generic_too(service, raw, caplog, operation, args):
    service.store({"content": "stored one", "type": "TODO"})
    service.store({"content": "stored two", "type": "TODO"})
    raw.execute("ALTER TABLE memory_links RENAME TO links_gone")
    raw.commit()
    caplog.set_level(logging.ERROR)
    with pytest.raises(StorageError) as raised:
        getattr(service, operation)(args)
    assert (
        str(raised.value)
        == f"{operation} failed due to a storage error (details are in the server log)"
    )
    assert "no such table" in caplog.text
