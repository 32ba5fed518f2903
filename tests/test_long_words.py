"""Words at PostgreSQL's lexeme limit (2,046 bytes) store, search and import on both engines.

A tsvector or tsquery refuses a word of 2,047 bytes or more, so on PostgreSQL such a word is
left out of the index (a search for it finds nothing there; FTS5 finds it): the memory is
stored whole and found by its other words, and the export of a SQLite file holding one
imports. Nothing of the word reaches the log.
"""

from __future__ import annotations

import logging

import pytest

from agent_memory import query
from agent_memory.contract.errors import StorageFault
from agent_memory.service.core import MemoryService
from agent_memory.storage import faults, open_store
from tests.support.clock import Clock
from tests.support.spawned import run_agent_memory

pytest_plugins = ["tests.support.pg_fixtures"]

# Words around the limit, in bytes of UTF-8; multi-byte letters straddling it (ж is 2
# bytes, ა (Georgian) 3: neither is folded by remove_diacritics, so the lexeme keeps their bytes).
WORDS = {
    "2045": "x" * 2045,
    "2046": "x" * 2046,
    "2047": "x" * 2047,
    "2048": "x" * 2048,
    "2046-cyrillic": "ж" * 1023,
    "2047-cyrillic-then-x": "ж" * 1023 + "x",
    "2047-x-then-cyrillic": "x" * 2045 + "ж",
    "2046-3byte": "ა" * 682,
    "2049-3byte": "ა" * 683,
}


def indexed(location: str, word: str) -> bool:
    """Whether the engine at ``location`` can find ``word`` itself."""
    return "postgresql" not in location or len(query.lexeme(word).encode()) <= 2046


@pytest.mark.parametrize("word", WORDS.values(), ids=WORDS.keys())
def test_a_word_at_the_limit_stores_and_searches(location, word, caplog):
    caplog.set_level(logging.INFO)
    service = MemoryService(open_store(location), clock=Clock())
    try:
        stored = service.store({"content": f"zebra {word} tail", "type": "TODO"})["id"]
        found = service.search({"query": word})["results"]
        assert [m["id"] for m in found] == ([stored] if indexed(location, word) else [])
        assert [m["id"] for m in service.search({"query": "zebra"})["results"]] == [stored]
        assert service.get({"id": stored})["content"] == f"zebra {word} tail"
        phrase = service.search({"query": f'"zebra {word}" OR tail'})["results"]
        assert [m["id"] for m in phrase] == [stored]
    finally:
        service.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert word[:100] not in caplog.text


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


def test_an_engine_error_is_logged_cut_short():
    """An engine's message may quote a value (a word, a parameter): only its start is kept."""

    @faults.guard((ValueError,))
    def failing() -> None:
        raise ValueError("word is too long in tsquery: " + "x" * 5000)

    with pytest.raises(StorageFault) as caught:
        failing()
    assert caught.value.detail.startswith("word is too long in tsquery: xxx")
    assert len(caught.value.detail) <= faults.MAX_DETAIL_CHARS + 1
    assert caught.value.detail.endswith("…")
