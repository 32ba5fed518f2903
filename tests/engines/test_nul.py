"""U+0000 in any text is refused on both engines, naming the field, and nothing is written.

PostgreSQL's text cannot hold NUL, and a SQLite file is exported into PostgreSQL: so both
engines refuse it alike (decisions, "Content"), in every call."""

from __future__ import annotations

import pytest

from agent_memory.contract.errors import InvalidArgument
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.clock import Clock

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture
def nul_service(location):
    service = MemoryService(open_store(location), clock=Clock())
    yield service
    service.close()


FIRST = {"content": "the first", "type": "TODO", "tags": ["kept"], "scope": "s", "source": "x"}
CALLS = [
    ("store", {"content": "before\x00after", "type": "TODO"}, "content", 6),
    ("store", {"content": "fine", "type": "TODO\x00"}, "type", 4),
    ("store", {"content": "fine", "type": "TODO", "tags": ["a", "b\x00"]}, "tags", "1 in tag 1"),
    ("store", {"content": "fine", "type": "TODO", "source": "git\x00"}, "source", 3),
    ("store", {"content": "fine", "type": "TODO", "scope": "\x00"}, "scope", 0),
    ("search", {"query": "kafka\x00"}, "query", 5),
    ("search", {"query": "first", "scope": "s\x00"}, "scope", 1),
    ("search", {"query": "first", "tag": "kept\x00"}, "tag", 4),
    ("list", {"tag": "\x00"}, "tag", 0),
    ("list", {"type": "TODO\x00"}, "type", 4),
    ("list", {"before": "1:\x002"}, "before", 2),
    ("update", {"id": 1, "content": "new\x00"}, "content", 3),
    ("update", {"id": 1, "tags": ["\x00"]}, "tags", "0 in tag 0"),
    ("update", {"id": 1, "scope": "s\x00"}, "scope", 1),
    ("link", {"from_id": 1, "to_id": 2, "kind": "relates_to\x00"}, "kind", 10),
]


@pytest.mark.parametrize(
    ("call", "args", "field", "at"), CALLS, ids=[f"{c[0]}-{c[2]}" for c in CALLS]
)
def test_nul_is_refused_in_every_text_field_naming_it(nul_service, call, args, field, at):
    nul_service.store(FIRST)
    nul_service.store({"content": "the second", "type": "TODO"})
    before = nul_service.list({})
    with pytest.raises(InvalidArgument) as caught:
        getattr(nul_service, call)(args)
    assert str(caught.value) == (
        f"invalid argument: {field} must not contain NUL characters (got one at character {at})"
    )
    assert nul_service.list({}) == before  # nothing written, nothing changed
    assert nul_service.get({"id": 1})["related"] == []
