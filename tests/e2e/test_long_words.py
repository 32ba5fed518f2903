"""The export of a SQLite file holding words at PostgreSQL's lexeme limit imports into
PostgreSQL with the real executable."""

from __future__ import annotations

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.clock import Clock
from tests.support.long_words import WORDS, indexed
from tests.support.spawned import run_agent_memory

pytest_plugins = ["tests.support.pg_fixtures"]


def test_a_sqlite_export_holding_words_at_the_limit_imports(location, tmp_path):
    source = tmp_path / "source.db"
    service = MemoryService(open_store(source), clock=Clock())
    for word in WORDS.values():
        service.store({"content": f"zebra {word}", "type": "TODO"})
    service.close()
    exported = tmp_path / "team.jsonl"
    result = run_agent_memory("--db", str(source), "export", "--output", str(exported))
    assert result.returncode == 0, result.stderr
    result = run_agent_memory("--db", location, "import", "--from", "jsonl", str(exported))
    assert result.returncode == 0, result.stderr
    assert "imported: 9" in result.stdout
    assert "x" * 100 not in result.stderr
    service = MemoryService(open_store(location), clock=Clock())
    try:
        stored = {m["content"]: m["id"] for m in service.list({})}
        assert set(stored) == {f"zebra {word}" for word in WORDS.values()}
        for word in WORDS.values():
            found = [m["id"] for m in service.search({"query": word})["results"]]
            assert found == ([stored[f"zebra {word}"]] if indexed(location, word) else [])
    finally:
        service.close()
