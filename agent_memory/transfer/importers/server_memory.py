"""The official MCP memory server's ``memory.jsonl`` (npm @modelcontextprotocol/server-memory).

One JSON object a line: ``{"type": "entity", "name", "entityType", "observations": [...]}``
or ``{"type": "relation", "from", "to", "relationType"}``.

Each observation becomes a memory that reads without its tags, ``ENTITY: observation``
(unless it begins with the entity's name already), tagged with its entity's name and type.
An entity is represented by a memory of its own, ``NAME (TYPE)``, followed by the relations
it has to others in words (``Alice (person): works on Billing.``), when it has no
observations or when a relation names it: a relation links the two entities' own memories
(by our kind for its name), and each observation of such an entity relates_to its entity's
memory, so that ``show`` on either reads as the file meant. The file keeps no times: every
memory is as old as the file's last write.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory.transfer.importers.common import Found, mtime, read_text, standing, type_of

SOURCE = "server-memory"
_ENTITY = {"name": str, "entityType": str, "observations": list}
_RELATION = {"from": str, "to": str, "relationType": str}


@dataclass
class _Entity:
    kind: str
    where: str
    observations: list[int] = field(default_factory=list)  # their memories' keys
    relations: list[tuple[str, str]] = field(default_factory=list)  # (relationType, to)


def read(path: Path, max_content_bytes: int) -> Found:
    found = Found(SOURCE, path)
    text = read_text(found)
    created = mtime(path)
    entities: dict[str, _Entity] = {}
    relations: list[dict[str, Any]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        record = _object(found, number, line)
        kind = record.get("type")
        if kind == "entity":
            _fields(found, number, record, _ENTITY)
            _entity(found, number, record, entities, created)
        elif kind == "relation":
            _fields(found, number, record, _RELATION)
            relations.append(record)
        elif isinstance(kind, str):
            found.skip(f"records of type {kind[:40]!r}")
        else:
            raise found.refuse(f'line {number} has no "type" of "entity" or "relation"')
    named = set()
    for record in relations:
        if record["from"] in entities and record["to"] in entities:
            entities[record["from"]].relations.append((record["relationType"], record["to"]))
            named.update((record["from"], record["to"]))
        else:
            found.skip("relations to a missing entity")
    own = _own_memories(found, entities, named, created)
    for name, entity in entities.items():
        for relation, other in entity.relations:
            found.link(own[name], own[other], relation)
        if name in named:
            for key in entity.observations:
                found.link(key, own[name], "relates_to")
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
    found: Found, number: int, record: dict[str, Any], entities: dict[str, _Entity], created: int
) -> None:
    """The entity's observations as memories; an entity named twice is one (the server
    merges them), of the type its first line gave."""
    name, kind = record["name"], record["entityType"]
    entity = entities.setdefault(name, _Entity(kind, f"line {number}"))
    tags = [name, kind]
    memory_type = type_of(kind)
    for text in record["observations"]:
        key = found.add(standing(name, text), memory_type, tags, created, f"line {number}")
        if key:
            entity.observations.append(key)


def _own_memories(
    found: Found, entities: dict[str, _Entity], named: set[str], created: int
) -> dict[str, int]:
    """The memory standing for each entity that has no observations or that a relation
    names: its name and type, then its relations in words."""
    own = {}
    for name, entity in entities.items():
        if entity.observations and name not in named:
            continue
        text = f"{name} ({entity.kind})"
        if entity.relations:
            said = "; ".join(f"{_words(r)} {other}" for r, other in entity.relations)
            text += f": {said}."
        kind = type_of(entity.kind)
        own[name] = found.add(text, kind, [name, entity.kind], created, entity.where)
    return own


def _words(relation: str) -> str:
    """A relation's name as words: ``works_on`` -> ``works on``."""
    return " ".join(relation.replace("_", " ").replace("-", " ").split())
