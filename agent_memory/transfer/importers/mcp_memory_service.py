"""mcp-memory-service's SQLite database (PyPI mcp-memory-service, the sqlite_vec backend).

Its ``memories`` table: content, comma-separated tags, a free-form memory_type, created_at
in float seconds (a moment from 0 to now, else the file is refused), and deleted_at for a
memory deleted softly (not imported). Its
``memory_graph`` table holds associations between content hashes, each with a
relationship_type: they become links, as does ``superseded_by`` (the hash of the memory that
replaced one: it supersedes it). Its vectors are another model's and are not read.
The database is opened read-only; nothing of it is changed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from agent_memory.transfer.importers.common import Found, columns_of, read_only, type_of

SOURCE = "mcp-memory-service"
_NEEDED = ("content_hash", "content", "tags", "memory_type", "created_at")


def read(path: Path, max_content_bytes: int) -> Found:
    found = Found(SOURCE, path)
    with read_only(found, "sqlite_vec.db") as conn:
        keys = _memories(found, conn, int(path.stat().st_mtime))
        _associations(found, conn, keys)
    return found


def _memories(found: Found, conn: sqlite3.Connection, mtime: int) -> dict[str, int]:
    columns = columns_of(conn, "memories")
    if not columns:
        raise found.refuse("it has no memories table")
    missing = [name for name in _NEEDED if name not in columns]
    if missing:
        raise found.refuse(f"its memories table has no {', '.join(missing)} column")
    deleted = "deleted_at" if "deleted_at" in columns else "NULL"
    newer = "superseded_by" if "superseded_by" in columns else "NULL"
    rows = conn.execute(
        f"SELECT id, {', '.join(_NEEDED)}, {deleted}, {newer} FROM memories ORDER BY id"
    )
    keys: dict[str, int] = {}
    superseded: list[tuple[int, object]] = []
    for row in rows:
        memory_id, content_hash, content, tags, memory_type, created, gone, by = row
        if gone is not None:
            found.skip("memories deleted in mcp-memory-service")
            continue
        where = f"memory id {memory_id}"
        _typed(found, where, content=(content, str), tags=(tags, (str, type(None))))
        _typed(found, where, memory_type=(memory_type, (str, type(None))))
        _typed(found, where, created_at=(created, (int, float, type(None))))
        labels = [*(tags or "").split(","), memory_type or ""]
        at = found.seconds(where, "created_at", created) if created is not None else mtime
        key = found.add(content, type_of(memory_type), labels, at, where)
        if key and isinstance(content_hash, str):
            keys.setdefault(content_hash, key)
        if key and by:
            superseded.append((key, by))
    _replacements(found, keys, superseded)
    return keys


def _replacements(found: Found, keys: dict[str, int], superseded: list[tuple[int, object]]) -> None:
    """``superseded_by`` holds the content hash of the memory that replaced one."""
    for key, by in superseded:
        if isinstance(by, str) and by in keys:
            found.link(keys[by], key, "supersedes")
        else:
            found.skip("replacements of a memory not imported")


def _typed(found: Found, where: str, **values: tuple[Any, Any]) -> None:
    for name, (value, kind) in values.items():
        if isinstance(value, bool) or not isinstance(value, kind):
            raise found.refuse(f"{where}: {name} has the wrong type ({type(value).__name__})")


def _associations(found: Found, conn: sqlite3.Connection, keys: dict[str, int]) -> None:
    columns = columns_of(conn, "memory_graph")
    if not columns:
        return  # an older database: no associations
    kind = "relationship_type" if "relationship_type" in columns else "'related'"
    query = f"SELECT source_hash, target_hash, {kind} FROM memory_graph"
    for source, target, relation in conn.execute(query):
        a, b = keys.get(source), keys.get(target)
        if a is None or b is None:
            found.skip("associations with a memory not imported")
        else:
            found.link(a, b, relation if isinstance(relation, str) else "related")
