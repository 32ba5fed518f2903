"""A store where two people wrote, its export, and an import by a third: for the writer tests on
each tier."""

from __future__ import annotations

import json

from agent_memory import storage
from agent_memory.service.actor import acting_as
from agent_memory.service.core import MemoryService
from agent_memory.transfer.portable import jsonl_reader
from tests.support.clock import Clock


def opened(location: str) -> MemoryService:
    return MemoryService(storage.open_store(location), clock=Clock())


def writers(memory: dict) -> tuple[str, str]:
    return memory["created_by"], memory["updated_by"]


def exported_records(location: str) -> list[dict]:
    """The export of a store where alice stored a memory and bob changed it."""
    service = opened(location)
    try:
        with acting_as("alice"):
            first = service.store({"content": "first", "type": "DECISION"})["id"]
        with acting_as("bob"):
            service.update({"id": first, "tags": ["x"]})
        lines: list[str] = []
        service.export(lines.append)
    finally:
        service.close()
    return [json.loads(line) for line in lines]


def imported_by(name: str, records: list[dict], tmp_path) -> list[tuple[str, str]]:
    """The writers of the memories ``name`` imports from ``records``."""
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    target = opened(str(tmp_path / "target.db"))
    try:
        reader = jsonl_reader(path)
        reader.check()
        with acting_as(name):
            target.import_jsonl(reader)
        return [writers(m) for m in target.list({})]
    finally:
        target.close()
