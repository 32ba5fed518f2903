"""History through export and import (JSONL format v2) on both engines. A v1 file still
imports; a reader of an older version refuses a newer file by its header, before anything is
written."""

from __future__ import annotations

import io
import json

import pytest

from agent_memory.contract.errors import FormatTooNew, InvalidArgument
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.transfer import jsonl
from agent_memory.transfer.portable import jsonl_reader
from tests.support.clock import START, Clock
from tests.support.history import OLD

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture
def clock() -> Clock:
    return Clock()


def exported(service: MemoryService) -> list[dict]:
    out = io.StringIO()
    service.export(out.write)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def write(path, records) -> None:
    path.write_text("".join(jsonl.line(r) for r in records), encoding="utf-8")


def imported(service: MemoryService, path) -> dict[str, int]:
    reader = jsonl_reader(path)
    reader.check()
    return service.import_jsonl(reader)


def test_history_travels_in_format_2(svc, clock, tmp_path):
    memory_id = svc.store(OLD)["id"]
    clock.advance(100)
    svc.update({"id": memory_id, "content": "The API timeout is 90 seconds."})
    records = exported(svc)
    header, _memory, version = records
    assert (header["version"], header["exported_versions"]) == (2, 1)
    assert version["record"] == "version" and version["key"] == memory_id
    assert (version["content"], version["replaced_at"]) == (OLD["content"], START + 100)
    path = tmp_path / "out.jsonl"
    write(path, records)
    target = MemoryService(open_store(tmp_path / "other.db"), clock=clock)
    try:
        report = imported(target, path)
        assert (report["versions imported"], report["versions dropped"]) == (1, 0)
        assert target.history({"id": 1}) == svc.history({"id": memory_id}) | {"id": 1}
        assert target.get({"id": 1, "as_of": START + 99})["content"] == OLD["content"]
        assert exported(target)[1:] == [{**r, "key": 1} for r in records[1:]]
    finally:
        target.close()


def test_a_version_1_file_still_imports(svc, tmp_path):
    header = {
        "record": "header", "format": "agent-memory-export", "version": 1, "exported_at": START,
        "embedding_model": "", "embedding_dim": 0, "schema_version": 11,
        "agent_memory_version": "0.1.0", "exported_rows": 1, "exported_links": 0,
    }  # fmt: skip
    memory = {
        "record": "memory", "key": 7, "type": "TODO", "content": "from a v1 file", "tags": [],
        "source": None, "scope": None, "created_at": START, "last_accessed": START,
        "access_count": 0, "expires_at": None,
    }  # fmt: skip
    path = tmp_path / "v1.jsonl"
    write(path, [header, memory])
    assert imported(svc, path)["imported"] == 1
    assert len(svc.history({"id": 1})["versions"]) == 1
    version = {
        "record": "version", "key": 7, "content": "before", "tags": [], "scope": None,
        "expires_at": None, "written_by": "local", "written_at": START, "replaced_at": START,
        "replaced_by": "local", "change": "update", "change_source": None,
    }  # fmt: skip
    write(path, [header, memory, version])
    with pytest.raises(InvalidArgument) as refused:
        jsonl_reader(path).check()
    assert str(refused.value) == "invalid argument: line 3: a version record in a version 1 file"


def test_a_reader_of_version_1_refuses_a_version_2_file(svc, tmp_path, monkeypatch):
    svc.store(OLD)
    path = tmp_path / "v2.jsonl"
    write(path, exported(svc))
    monkeypatch.setattr(jsonl, "VERSION", 1)
    with pytest.raises(FormatTooNew) as refused:
        jsonl_reader(path).check()
    assert str(refused.value) == (
        "file is format version 2 but this binary reads up to version 1 — upgrade agent-memory"
    )


def test_an_imported_duplicate_that_changes_a_memory_keeps_a_version(svc, clock, tmp_path):
    memory_id = svc.store({**OLD, "source": "chat"})["id"]
    clock.advance(10)
    record = {
        "record": "memory", "key": 1, "type": OLD["type"], "content": OLD["content"],
        "tags": ["timeouts"], "source": "gsd-state", "scope": None, "created_at": START,
        "last_accessed": START, "access_count": 0, "expires_at": None,
    }  # fmt: skip
    header = {
        "record": "header", "format": "agent-memory-export", "version": 2, "exported_at": START,
        "embedding_model": "", "embedding_dim": 0, "schema_version": 12,
        "agent_memory_version": "0.1.0", "exported_rows": 1, "exported_links": 0,
        "exported_versions": 0,
    }  # fmt: skip
    path = tmp_path / "in.jsonl"
    write(path, [header, record])
    assert imported(svc, path)["skipped duplicates"] == 1
    first, current = svc.history({"id": memory_id})["versions"]
    assert (first["tags"], first["change"], first["change_source"]) == (
        ["api"],
        "duplicate",
        "gsd-state",
    )
    assert first["replaced_at"] == START + 10 and current["tags"] == ["api", "timeouts"]
    imported(svc, path)  # again: nothing changes, so no version either
    assert len(svc.history({"id": memory_id})["versions"]) == 2


GITHUB = "ghp_" + "k3Jx9QmZ2vT8wLp4Rn6Yb1Hc7Fd5Gs0AeUoI"
SEALED = "[redacted:github-token]"


def test_an_import_redacts_every_text_field_of_every_version(svc, tmp_path):
    header = {
        "record": "header", "format": "agent-memory-export", "version": 2, "exported_at": START,
        "embedding_model": "", "embedding_dim": 0, "schema_version": 14,
        "agent_memory_version": "0.1.0", "exported_rows": 1, "exported_links": 0,
        "exported_versions": 1,
    }  # fmt: skip
    memory = {
        "record": "memory", "key": 3, "type": "PATTERN", "content": "deploy with the CI key",
        "tags": [], "source": None, "scope": None, "created_at": START, "last_accessed": START,
        "access_count": 0, "expires_at": None, "created_by": GITHUB, "updated_by": "ci",
    }  # fmt: skip
    version = {
        "record": "version", "key": 3, "content": f"deploy with {GITHUB}",
        "tags": [f"token={GITHUB}"], "scope": f"https://{GITHUB}@github.com/o/r.git",
        "expires_at": None, "written_by": GITHUB, "written_at": START,
        "replaced_at": START + 1, "replaced_by": GITHUB, "change": "duplicate",
        "change_source": f"https://x-access-token:{GITHUB}@github.com/o/r.git",
    }  # fmt: skip
    path = tmp_path / "in.jsonl"
    write(path, [header, memory, version])
    report = imported(svc, path)
    assert (report["secrets redacted"], report["memories redacted"]) == (7, 1)
    (kept, _current) = svc.history({"id": 1})["versions"]
    assert kept["content"] == f"deploy with {SEALED}"
    assert kept["tags"] == [f"token={SEALED}"]
    assert kept["scope"] == f"https://{SEALED}@github.com/o/r.git"
    assert kept["change_source"] == f"https://x-access-token:{SEALED}@github.com/o/r.git"
    assert (kept["written_by"], kept["replaced_by"]) == (SEALED, SEALED)
    assert svc.get({"id": 1})["created_by"] == SEALED
    assert [m["id"] for m in svc.list({"by": GITHUB})] == [1]  # a filter as the file wrote it
    assert GITHUB not in json.dumps(exported(svc))
