"""Exact duplicates at store time, as every engine finds and merges them (decisions,
"Content"): a store whose content equals a memory's once whitespace is normalised
(models.normalised), with the same type and scope, adds nothing. That memory takes what the
store sent that it lacks: the tags it does not have yet (after its own, in the order sent),
and the later expiry (no expiry is the latest). Looked up by content_hash, which is of the
normalised text; equal hashes are only candidates, compared exactly here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy
from sqlalchemy import text

from agent_memory.contract.fields import LOCAL
from agent_memory.contract.models import content_hash, normalised
from agent_memory.storage.base import NewMemory
from agent_memory.storage.hygiene import history

# A row hashed by no one yet: written by a process older than the hash, or edited in its
# whitespace only (SQLite's trigger of revision 0005 resets the hash then). Such rows are
# candidates too; there are few of them.
UNKNOWN_HASH = 0

# By the hash alone, the rest compared here: given the type or the scope too, a planner
# without statistics may take their index and read a whole scope.
_CANDIDATES = text(
    "SELECT id, type, scope, content, tags, expires_at FROM memories"
    " WHERE content_hash IN (:hash, :unknown) ORDER BY id"
)

# What an import compares records and memories by: (type, normalised content, scope).
Key = tuple[str, str, str | None]


@dataclass(frozen=True)
class Twin:
    """The memory a store duplicates: its id, content, tags and expiry as stored."""

    id: int
    content: str
    tags: list[str]
    expires_at: int | None


tag_list = history.tag_list


def find(conn: sqlalchemy.Connection, memory: NewMemory) -> Twin | None:
    """The oldest live memory ``memory`` duplicates, read in the caller's write transaction."""
    params = {"hash": content_hash(memory.content), "unknown": UNKNOWN_HASH}
    wanted = normalised(memory.content)
    for memory_id, memory_type, scope, content, tags, expires_at in conn.execute(
        _CANDIDATES, params
    ):
        if (memory_type, scope) != (memory.memory_type, memory.scope):
            continue
        if expires_at is not None and expires_at <= memory.now:
            continue
        if normalised(content) == wanted:
            return Twin(int(memory_id), content, tag_list(tags), expires_at)
    return None


def key(record: dict[str, Any]) -> Key:
    """An import record's (or a stored row's) duplicate key."""
    return record["type"], normalised(record["content"]), record["scope"]


def merged_tags(kept: Sequence[str], sent: Sequence[str]) -> list[str]:
    """The stored tags, then each sent one not among them, in the order sent."""
    return list(dict.fromkeys([*kept, *sent]))


def later_expiry(kept: int | None, sent: int | None) -> int | None:
    """The longer of two lifetimes: no expiry outlives any."""
    return None if kept is None or sent is None else max(kept, sent)


def changes(twin: Twin, tags: Sequence[str], expires_at: int | None) -> dict[str, Any]:
    """What the stored memory takes of a duplicate's ``tags`` and expiry (what differs)."""
    out: dict[str, Any] = {}
    merged = merged_tags(twin.tags, tags)
    if merged != twin.tags:
        out["tags"] = merged
    later = later_expiry(twin.expires_at, expires_at)
    if later != twin.expires_at:
        out["expires_at"] = later
    return out


def merge_record(kept: dict[str, Any], record: dict[str, Any]) -> None:
    """A later record of an import that duplicates ``kept`` (a new row's record) gives it
    its tags and its longer lifetime."""
    kept["tags"] = merged_tags(kept["tags"], record["tags"])
    kept["expires_at"] = later_expiry(kept["expires_at"], record["expires_at"])


class Merges:
    """An import batch's duplicates of stored memories: each live stored one (by key) with
    the tags and expiry it takes from them, written once at the batch's end."""

    def __init__(self, now: int) -> None:
        self.now = now
        self.stored: dict[Key, Twin] = {}
        self.changed: dict[int, Twin] = {}
        # who and what source last changed each of ``changed`` (its history's version)
        self.by: dict[int, tuple[str, str | None]] = {}

    def know(self, row: Sequence[Any]) -> None:
        """A stored row (id, type, content, scope, tags, expires_at) with a candidate hash;
        an expired one is gone already, as far as duplicates go."""
        memory_id, memory_type, content, scope, tags, expires_at = row
        if expires_at is not None and expires_at <= self.now:
            return
        found = key({"type": memory_type, "content": content, "scope": scope})
        if found not in self.stored:
            self.stored[found] = Twin(int(memory_id), content, tag_list(tags), expires_at)

    def duplicate(self, record: dict[str, Any]) -> int | None:
        """The stored memory ``record`` duplicates (taking its tags and expiry), if any."""
        twin = self.stored.get(key(record))
        if twin is None:
            return None
        taken = changes(twin, record["tags"], record["expires_at"])
        if taken:
            twin = dataclasses.replace(twin, **taken)
            self.stored[key(record)] = self.changed[twin.id] = twin
            self.by[twin.id] = (record.get("updated_by") or LOCAL, record.get("source"))
        return twin.id

    def keep_versions(self, conn: sqlalchemy.Connection) -> None:
        """Before the merges are written: each changed memory's version, as a duplicate
        store keeps it (storage.history), so that the source that merged is on record."""
        for memory_id, (by, source) in self.by.items():
            history.record(conn, memory_id, self.now, by, history.DUPLICATE, source)
