"""U+0000 in any text is refused on both engines, naming the field, and nothing is written.

PostgreSQL's text cannot hold NUL, and a SQLite file is exported into PostgreSQL: so both
engines refuse it alike (decisions, "Content"), in every call and in every import.
"""

from __future__ import annotations

import json

import pytest

from agent_memory.contract.errors import InvalidArgument
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.transfer import jsonl
from tests.support.clock import Clock
from tests.support.spawned import run_agent_memory

pytest_plugins = ["tests.support.pg_fixtures"]

START = 1_767_225_600


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


def export_records(**changed) -> list[dict]:
    memory = {
        "record": "memory", "key": 1, "type": "TODO", "content": "good", "tags": ["t"],
        "source": None, "scope": None, "created_at": START, "last_accessed": START,
        "access_count": 0, "expires_at": None,
    }  # fmt: skip
    header = jsonl.header(
        exported_at=START,
        embedding_model="nomic-embed-text",
        embedding_dim=768,
        schema_version=6,
        agent_memory_version="0",
        exported_rows=2,
        exported_links=0,
    )
    return [header, {**memory, "content": "first, fine"}, {**memory, "key": 2, **changed}]


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"content": "a\x00b"}, "content must not contain NUL characters (got one at character 1)"),
        ({"tags": ["t", "\x00"]}, "tags must not contain NUL characters (got one at character 0 in tag 1)"),
        ({"source": "s\x00"}, "source must not contain NUL characters (got one at character 1)"),
        ({"scope": "\x00s"}, "scope must not contain NUL characters (got one at character 0)"),
    ],
    ids=["content", "tags", "source", "scope"],
)  # fmt: skip
def test_an_export_holding_nul_is_refused_whole_naming_the_line(
    location, tmp_path, changed, message
):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in export_records(**changed)))
    found = run_agent_memory("--db", location, "import", "--from", "jsonl", str(path))
    assert found.returncode == 1
    assert found.stderr.splitlines()[-1] == f"invalid argument: line 3: {message}"
    service = MemoryService(open_store(location))
    try:
        assert service.list({}) == []  # not even the good first record
    finally:
        service.close()


def test_a_gsd_state_file_holding_nul_is_refused_whole_naming_the_line(location, tmp_path):
    state = tmp_path / "STATE.md"
    state.write_text("## Decisions\n\n- use kafka\n- use\x00 redis\n")
    found = run_agent_memory("--db", location, "import", "--from", "gsd-state", str(state))
    assert found.returncode == 1
    assert found.stderr.splitlines()[-1] == (
        "invalid argument: line 4: the file must not contain NUL characters "
        "(got one at character 5)"
    )
    service = MemoryService(open_store(location))
    try:
        assert service.list({}) == []
    finally:
        service.close()
