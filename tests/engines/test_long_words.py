"""Words at PostgreSQL's lexeme limit (2,046 bytes) store and search on both engines.

A tsvector or tsquery refuses a word of 2,047 bytes or more, so on PostgreSQL such a word is
left out of the index (a search for it finds nothing there; FTS5 finds it): the memory is
stored whole and found by its other words."""

from __future__ import annotations

import logging

import pytest

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.clock import Clock
from tests.support.long_words import WORDS, indexed

pytest_plugins = ["tests.support.pg_fixtures"]


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
