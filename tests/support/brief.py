"""A project's memories, for the tests of the session brief (agent-memory context) in process and
spawned: a fixture, taken with pytest_plugins."""

from __future__ import annotations

import pytest


@pytest.fixture
def project(service, clock, db_path):
    """Memories of the project kore, global ones, and some the brief leaves out."""

    def store(content, memory_type, scope="kore", **extra):
        clock.advance(60)
        return service.store({"content": content, "type": memory_type, "scope": scope, **extra})[
            "id"
        ]

    old = store("Amounts are floats", "DECISION")  # 1: superseded by 2
    cents = store("Amounts are integers of cents", "DECISION", tags=["money"])  # 2
    store("Never force-push main", "CONSTRAINT")  # 3
    store("One SQLite file in WAL mode", "ARCHITECTURE")  # 4
    fix = store("Close the HTTP session in a finally block", "PATTERN")  # 5
    error = store("pytest hung on the fake Ollama\nafter the upgrade", "ERROR")  # 6
    store("Write the restore runbook", "TODO")  # 7
    store("Rotate the old keys", "TODO", ttl_secs=60)  # 8: expired by now
    store("Secrets never go into memories", "CONSTRAINT", scope=None)  # 9
    store("Upgrade to Python 3.13", "TODO", scope=None)  # 10
    store("Use Stripe for payments", "DECISION", scope="billing")  # 11: another project
    service.link({"from_id": cents, "to_id": old, "kind": "supersedes"})
    service.link({"from_id": error, "to_id": fix, "kind": "caused_by"})
    clock.advance(3600)
    return db_path
