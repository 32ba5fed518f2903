"""The portable export format, v1: JSON Lines, a header, then memories, then links.

Fields are written in the wire order of the format (dicts keep insertion order), optional
fields explicitly as null, so two exports of an unchanged database under the same clock are
byte-identical. Vectors, decay_score and embedding_status are derived data and do not travel.
"""

from __future__ import annotations

import json
from typing import Any

FORMAT = "agent-memory-export"
VERSION = 1


def line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def header(
    *,
    exported_at: int,
    embedding_model: str,
    embedding_dim: int,
    schema_version: int,
    agent_memory_version: str,
    exported_rows: int,
    exported_links: int,
) -> dict[str, Any]:
    return {
        "record": "header",
        "format": FORMAT,
        "version": VERSION,
        "exported_at": exported_at,
        "embedding_model": embedding_model,
        "embedding_dim": embedding_dim,
        "schema_version": schema_version,
        "agent_memory_version": agent_memory_version,
        "exported_rows": exported_rows,
        "exported_links": exported_links,
    }


def memory(row: dict[str, Any]) -> dict[str, Any]:
    """A memory record from a row of the repository's export snapshot."""
    return {
        "record": "memory",
        "key": row["id"],
        "type": row["type"],
        "content": row["content"],
        "tags": row["tags"],
        "source": row["source"],
        "scope": row["scope"],
        "created_at": row["created_at"],
        "last_accessed": row["last_accessed"],
        "access_count": row["access_count"],
        "expires_at": row["expires_at"],
    }


def link(from_key: int, to_key: int, kind: str, created_at: int) -> dict[str, Any]:
    return {
        "record": "link",
        "from": from_key,
        "to": to_key,
        "kind": kind,
        "created_at": created_at,
    }
