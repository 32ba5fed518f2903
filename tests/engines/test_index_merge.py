"""PostgreSQL has no keyword index segments to merge: the sweep's merge step does nothing
there."""

from __future__ import annotations

from agent_memory.service.lifecycle import sweep
from bench import corpus

pytest_plugins = ["tests.support.pg_fixtures"]


def test_postgresql_has_nothing_to_merge(svc, location):
    for memory in corpus.developer_memories(20):
        svc.store({"content": memory["content"], "type": memory["type"]})
    merged = sweep(svc)["merged"]
    assert merged == 0 if location.startswith("postgresql") else merged > 0
