"""What the MCP surface promises, shared by the in-process and the end-to-end surface tests:
the tools' titles and hints, a session's worth of calls, and a check for undeclared keys."""

from __future__ import annotations

from typing import Any

import jsonschema

# name, title, readOnlyHint, destructiveHint, idempotentHint; in tools/list order
HINTS = [
    ("memory_store", "Store a memory", False, False, False),
    ("memory_search", "Search memories", True, False, False),
    ("memory_list", "List memories", True, False, True),
    ("memory_update", "Update a memory", False, True, False),
    ("memory_link", "Link two memories", False, False, True),
    ("memory_unlink", "Remove a relation", False, True, True),
    ("memory_forget", "Forget a memory", False, True, True),
    ("memory_history", "A memory's versions", True, False, True),
]
SECRET = "password=hunter2hunter2"


def undeclared(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """The object keys in ``value`` that ``schema`` does not declare (output drift the
    SDK's validation lets through, since the schemas are open)."""
    if "anyOf" in schema:
        branch = next(
            b for b in schema["anyOf"] if jsonschema.Draft202012Validator(b).is_valid(value)
        )
        return undeclared(value, branch, path)
    if isinstance(value, dict) and "properties" in schema:
        found = [f"{path}.{k}" for k in value if k not in schema["properties"]]
        for key, item in value.items():
            if key in schema["properties"]:
                found += undeclared(item, schema["properties"][key], f"{path}.{key}")
        return found
    if isinstance(value, list) and "items" in schema:
        return [
            p
            for i, item in enumerate(value)
            for p in undeclared(item, schema["items"], f"{path}[{i}]")
        ]
    return []


CALLS = [
    (
        "memory_store",
        {
            "content": "We chose SQLite",
            "type": "DECISION",
            "tags": ["db"],
            "scope": "kore",
            "ttl_secs": 600,
        },
    ),
    ("memory_store", {"content": f"Use WAL; {SECRET}", "type": "PATTERN", "source": "test"}),
    ("memory_link", {"from_id": 2, "to_id": 1, "kind": "caused_by"}),
    ("memory_link", {"from_id": 2, "to_id": 99, "kind": "caused_by"}),
    ("memory_search", {"query": "sqlite OR wal", "expand_links": True, "limit": 5}),
    ("memory_search", {"query": "nothing matches this"}),
    ("memory_list", {}),
    (
        "memory_list",
        {"type": "DECISION", "tag": "db", "scope": "kore", "limit": 5, "expand_links": True},
    ),
    ("memory_update", {"id": 1, "content": f"We chose SQLite; {SECRET}", "tags": ["db", "x"]}),
    ("memory_update", {"id": 1, "tags": None, "scope": None, "ttl_secs": None}),
    ("memory_update", {"id": 99, "content": "x"}),
    ("memory_unlink", {"from_id": 2, "to_id": 1, "kind": "caused_by"}),
    ("memory_unlink", {"from_id": 2, "to_id": 1, "kind": "caused_by"}),
    ("memory_forget", {"id": 2}),
    ("memory_forget", {"id": 2}),
    ("memory_history", {"id": 1}),
    ("memory_history", {"id": 99}),
    ("memory_search", {"query": "sqlite", "as_of": "2026-01-01T00:00:00Z"}),
    ("memory_list", {"as_of": "1767225600", "include_superseded": True}),
]
