"""Supersede and scopes: a scope's supersessions are read from the links, not from the
scope. tests/engines/test_supersede_scopes.py holds search, list, tidy and the brief on both
engines."""

from __future__ import annotations

import pytest
import sqlean

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.common import SCOPE_SUPERSEDED_SQL
from agent_memory.storage.hygiene import history


@pytest.mark.parametrize("statement", [SCOPE_SUPERSEDED_SQL, history._SCOPE_SUPERSEDED_AT.text])
def test_the_scopes_supersessions_are_read_from_the_links_not_the_scope(db_path, statement):
    """Each link's superseder is looked up: planned as a join, SQLite read every memory of
    the scope first, whatever the links (12 ms at 1,000,000 memories with none)."""
    MemoryService(open_store(db_path)).close()
    with sqlean.connect(db_path) as conn:
        plan = [
            row[3]
            for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}", {"scope": "a", "at": 1})
        ]
    assert plan[0].startswith("SCAN l"), plan
    assert not any("memories_scope" in step for step in plan), plan
