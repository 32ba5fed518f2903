"""The official MCP memory server's ``memory.jsonl`` (npm @modelcontextprotocol/server-memory).

One JSON object a line: ``{"type": "entity", "name", "entityType", "observations": [...]}``
or ``{"type": "relation", "from", "to", "relationType"}``. Each observation becomes a
memory tagged with its entity's name and type; an entity without observations becomes one
memory; a relation links the first memories of its two entities. The file keeps no times:
every memory is as old as the file's last write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_memory.transfer.sources.common import Found, mtime, read_text, type_of

SOURCE = "server-memory"
_ENTITY = {"name": str, "entityType": str, "observations": list}
_RELATION = {"from": str, "to": str, "relationType": str}


def read(path: Path, max_content_bytes: int) -> Found:
    found = Found(SOURCE, path)
    text = read_text(found)
    created = mtime(path)
    anchors: dict[str, int] = {}
    relations: list[dict[str, Any]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        record = _object(found, number, line)
        kind = record.get("type")
        if kind == "entity":
            _fields(found, number, record, _ENTITY)
            _entity(found, number, record, anchors, created)
        elif kind == "relation":
            _fields(found, number, record, _RELATION)
            relations.append(record)
        elif isinstance(kind, str):
            found.skip(f"records of type {kind[:40]!r}")
        else:
            raise found.refuse(f'line {number} has no "type" of "entity" or "relation"')
    for record in relations:
        a, b = anchors.get(record["from"]), anchors.get(record["to"])
        if a is None or b is None:
            found.skip("relations to a missing entity")
        else:
            found.link(a, b, record["relationType"])
    return found


def _object(found: Found, number: int, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        raise found.refuse(f"line {number} is not valid JSON") from None
    if not isinstance(value, dict):
        raise found.refuse(f"line {number} is not a JSON object")
    return value


def _fields(found: Found, number: int, record: dict[str, Any], shape: dict[str, type]) -> None:
    for name, kind in shape.items():
        value = record.get(name)
        if not isinstance(value, kind):
            noun = "an array of strings" if kind is list else "a string"
            raise found.refuse(
                f'line {number}: "{name}" must be {noun} (got {json.dumps(value)[:40]})'
            )
    observations = record.get("observations", [])
    if not all(isinstance(o, str) for o in observations):
        raise found.refuse(f'line {number}: "observations" must be an array of strings')


def _entity(
    found: Found, number: int, record: dict[str, Any], anchors: dict[str, int], created: int
) -> None:
    name, kind = record["name"], record["entityType"]
    tags = [name, kind]
    memory_type = type_of(kind)
    keys = [
        found.add(text, memory_type, tags, created, f"line {number}")
        for text in record["observations"]
    ]
    keys = [key for key in keys if key]
    if not record["observations"]:
        keys = [found.add(f"{name} ({kind})", memory_type, tags, created, f"line {number}")]
    if keys and name not in anchors:  # a name given twice: the server merges them
        anchors[name] = keys[0]
