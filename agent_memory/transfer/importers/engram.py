"""engram's SQLite database (github.com/Gentleman-Programming/engram, ``~/.engram/engram.db``),
read as its source (internal/store/store.go) writes it: no copy of engram could be run here.

Each row of ``observations`` (type, title, content, project, scope, topic_key, created_at in
UTC as ``YYYY-MM-DD HH:MM:SS``, deleted_at for one deleted softly) becomes a memory of its
title and content, tagged with its type and topic key; its project is its scope (a
``personal`` observation is global) unless --scope says otherwise. Sessions and user prompts
are not memories: prompts are counted, not imported.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from agent_memory.transfer.importers.common import Found, columns_of, read_only, type_of

SOURCE = "engram"
_NEEDED = ("id", "type", "title", "content", "project", "scope", "topic_key", "created_at")


def read(path: Path, max_content_bytes: int) -> Found:
    found = Found(SOURCE, path)
    with read_only(found, "engram.db") as conn:
        _observations(found, conn)
        if columns_of(conn, "user_prompts"):
            (prompts,) = conn.execute("SELECT count(*) FROM user_prompts").fetchone()
            if prompts:
                found.skip("user prompts (not memories)", prompts)
    return found


def _observations(found: Found, conn: sqlite3.Connection) -> None:
    columns = columns_of(conn, "observations")
    if not columns:
        raise found.refuse("it has no observations table")
    missing = [name for name in _NEEDED if name not in columns]
    if missing:
        raise found.refuse(f"its observations table has no {', '.join(missing)} column")
    deleted = "deleted_at" if "deleted_at" in columns else "NULL"
    query = f"SELECT {', '.join(_NEEDED)}, {deleted} FROM observations ORDER BY id"
    for row in conn.execute(query):
        number, kind, title, content, project, scope, topic, created, gone = row
        if gone is not None:
            found.skip("observations deleted in engram")
            continue
        where = f"observation id {number}"
        for name, value in (("type", kind), ("title", title), ("content", content)):
            if not isinstance(value, str):
                raise found.refuse(f"{where}: {name} is not text ({type(value).__name__})")
        text = f"{title.strip()}\n\n{content}" if title.strip() else content
        tags = [kind, topic if isinstance(topic, str) else ""]
        key = found.add(text, type_of(kind, title), tags, _seconds(found, where, created), where)
        if key and isinstance(project, str) and project and scope != "personal":
            found.items[-1].scope = project


def _seconds(found: Found, where: str, created: object) -> int:
    """engram's times: SQLite's datetime('now') (UTC) or RFC 3339."""
    try:
        at = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    except ValueError:
        raise found.refuse(f"{where}: created_at is not a time ({str(created)[:40]!r})") from None
    seconds = (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()
    return found.seconds(where, "created_at", seconds)
