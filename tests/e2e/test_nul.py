"""U+0000 in an import is refused whole by the real executable, naming the line: a JSONL
export and a GSD state file."""

from __future__ import annotations

import json

import pytest

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.transfer import jsonl
from tests.support.spawned import run_agent_memory

pytest_plugins = ["tests.support.pg_fixtures"]


START = 1_767_225_600


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
