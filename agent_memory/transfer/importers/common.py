"""What every importer from another memory server shares: the items it found, the one type
and relation table, and the checked records the JSONL import writes.

A reader turns a peer's file into a ``Found`` (memories keyed by number, links between keys,
and counts of what it had to leave out, by kind). ``Records`` checks every memory the way an
export file's are checked, before the database is opened, then hands them to
portable.import_jsonl in the shape of a checked export file: so an import from a peer is
written, deduplicated, redacted, taken out again on a failure and left for the backfill to
embed exactly as a JSONL import is.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory.contract import fields
from agent_memory.contract.errors import InvalidArgument
from agent_memory.service import validate
from agent_memory.service.hygiene import history

SOURCE_PREFIX = "import:"
# A peer's word for a kind of memory (a category, an entity or memory type, a heading) ->
# ours, matched on its lower-cased words; anything else is a PATTERN (docs/importing.md).
DEFAULT_TYPE = "PATTERN"
TYPE_WORDS = {  # a word or its plural (-s)
    "DECISION": ("decision", "decided", "choice"),
    "ARCHITECTURE": ("architecture", "design", "component", "system", "module", "structure"),
    "CONSTRAINT": ("constraint", "rule", "requirement", "preference", "convention", "guideline"),
    "TODO": ("todo", "task", "action", "plan", "planning", "next", "pending", "backlog", "follow"),
    "ERROR": (
        *("error", "bug", "issue", "problem", "failure", "incident", "fix", "gotcha"),
        *("exception", "timeout", "mistake", "bugfix"),
    ),
}
# A peer's relation name (lower-cased, words joined by _) -> (our kind, whether the ends
# swap); any other name is relates_to.
RELATION_KINDS = {
    "supersedes": ("supersedes", False),
    "replaces": ("supersedes", False),
    "obsoletes": ("supersedes", False),
    "superseded_by": ("supersedes", True),
    "replaced_by": ("supersedes", True),
    "caused_by": ("caused_by", False),
    "because_of": ("caused_by", False),
    "due_to": ("caused_by", False),
    "result_of": ("caused_by", False),
    "causes": ("caused_by", True),
    "caused": ("caused_by", True),
    "leads_to": ("caused_by", True),
    "results_in": ("caused_by", True),
}
_WORD = re.compile(r"[a-z]+")
_TYPE_OF_WORD = {word: kind for kind, words in TYPE_WORDS.items() for word in words}


class NotASource(Exception):
    """A file that is not what its source writes: one line naming source, file and defect."""

    def __init__(self, source: str, path: Path | str, what: str) -> None:
        super().__init__(f"not a {source} file: {path}: {what}")


@dataclass
class Item:
    key: int
    content: str
    type: str
    tags: list[str]
    created_at: int
    where: str  # a line, a note: named when the item cannot be stored
    scope: str | None = None  # the peer's own, when --scope is not given


@dataclass
class Found:
    """What a reader found in a peer's file."""

    source: str
    path: Path
    items: list[Item] = field(default_factory=list)
    links: list[tuple[int, int, str]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    now: int = field(default_factory=lambda: int(time.time()))  # when it was read

    def add(self, content: str, kind: str, tags: list[str], created_at: int, where: str) -> int:
        """Add a memory (its content trimmed); its key, for links; 0 for empty content
        (skipped and counted)."""
        content = content.strip()
        if not content:
            self.skip("empty items")
            return 0
        key = len(self.items) + 1
        self.items.append(Item(key, content, kind, clean_tags(tags), created_at, where))
        return key

    def link(self, a: int, b: int, relation: str) -> None:
        kind, swap = RELATION_KINDS.get(_relation_key(relation), ("relates_to", False))
        if swap or (kind == "relates_to" and b < a):  # relates_to reads alike both ways
            a, b = b, a
        if a and b and a != b:
            self.links.append((a, b, kind))

    def skip(self, kind: str, n: int = 1) -> None:
        self.skipped[kind] += n

    def refuse(self, what: str) -> NotASource:
        return NotASource(self.source, self.path, what)

    def seconds(self, where: str, name: str, value: float) -> int:
        """A peer's time (Unix seconds) as a memory's, whole seconds: one the rest of the
        product would not take (service.history.within: before 0, after now, NaN, an
        infinity) refuses the file, naming ``where`` and ``name``."""
        if not history.within(value, self.now):
            raise self.refuse(
                f"{where}: {name} must be a moment between 0 and now ({self.now}) in Unix "
                f"seconds (got {value!r})"
            )
        return int(value)


def _relation_key(name: str) -> str:
    return "_".join(_WORD.findall(name.lower()))


def type_of(*words: str | None) -> str:
    """Our type for a peer's words (the first that maps wins); DEFAULT_TYPE for none."""
    for text in words:
        if text and text.strip().upper() in fields.MEMORY_TYPES:
            return text.strip().upper()
        for word in _WORD.findall((text or "").lower()):
            kind = _TYPE_OF_WORD.get(word) or _TYPE_OF_WORD.get(word.removesuffix("s"))
            if kind:
                return kind
    return DEFAULT_TYPE


def standing(name: str, text: str, between: str = ": ") -> str:
    """``text`` written so that it reads without its tags: ``name`` (an entity's, a note's
    title) before it, unless it begins with that name already (case and a Markdown
    heading's marks aside)."""
    name = name.strip()
    start = text.lstrip().lstrip("#").lstrip()
    if not name or re.match(re.escape(name) + r"(?!\w)", start, re.IGNORECASE):
        return text
    return f"{name}{between}{text}"


def clean_tags(tags: list[str]) -> list[str]:
    """Tags trimmed and cut to the stored bounds, each once, in order."""
    out = dict.fromkeys(t.strip()[: validate.MAX_TAG_CHARS] for t in tags if t and t.strip())
    return list(out)[: validate.MAX_TAGS]


def cut(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` of UTF-8, at a character boundary."""
    data = text.encode()
    return text if len(data) <= max_bytes else data[:max_bytes].decode(errors="ignore")


def read_text(found: Found) -> str:
    """The file's text (a BOM dropped); one that cannot be read or is not UTF-8 refuses
    the import."""
    try:
        return found.path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise found.refuse(f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise found.refuse(exc.strerror or str(exc)) from None


@contextmanager
def read_only(found: Found, example: str) -> Iterator[sqlite3.Connection]:
    """A peer's SQLite database, opened read-only; one that SQLite cannot read refuses the
    import (``example``: the file's usual name, for the message)."""
    if not found.path.is_file():
        raise found.refuse(f"not a file (the database is a single SQLite file, e.g. {example})")
    try:
        conn = sqlite3.connect(f"{found.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            yield conn
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise found.refuse(f"not a readable SQLite database ({exc})") from None


def columns_of(conn: sqlite3.Connection, table: str) -> set[str]:
    """The columns of a peer's table (none: no such table)."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def mtime(path: Path) -> int:
    """A file's modification time in whole seconds: the time of what carries none."""
    return int(path.stat().st_mtime)


class Records:
    """A peer's items as the records of an export file: checked whole by ``check`` (as the
    JSONL reader checks a file), then read by portable.import_jsonl (``header``,
    ``records()``)."""

    def __init__(self, found: Found, scope: str | None, max_content_bytes: int) -> None:
        self.found = found
        self.scope = scope
        self.max_content_bytes = max_content_bytes
        self.memories: list[dict[str, Any]] = []
        self.header: dict[str, Any] | None = None

    def check(self) -> None:
        """Every item that can be stored becomes a record; one too long is skipped and
        counted, anything else a store would refuse refuses the file (naming where)."""
        source = SOURCE_PREFIX + self.found.source
        keep: set[int] = set()
        for item in self.found.items:
            if len(item.content.encode()) > self.max_content_bytes:
                self.found.skip(f"items over {self.max_content_bytes} bytes")
                continue
            record = _record(item, source, self.scope or item.scope)
            try:
                validate.import_record(record, self.max_content_bytes)
            except InvalidArgument as exc:
                raise self.found.refuse(f"{item.where}: {exc.detail}") from None
            self.memories.append(record)
            keep.add(item.key)
        links = list(dict.fromkeys(self.found.links))
        self.found.links = [e for e in links if e[0] in keep and e[1] in keep]
        if len(self.found.links) < len(links):
            self.found.skip("links to an item left out", len(links) - len(self.found.links))
        self.header = {
            "exported_at": 0,
            "exported_rows": len(self.memories),
            "exported_links": len(self.found.links),
            "exported_versions": 0,  # a peer keeps no versions of ours
        }

    def records(self) -> Iterator[dict[str, Any]]:
        """The memories, then the links (each as old as the later of its ends)."""
        yield from self.memories
        created = {record["key"]: record["created_at"] for record in self.memories}
        for a, b, kind in self.found.links:
            at = max(created[a], created[b])
            yield {"record": "link", "from": a, "to": b, "kind": kind, "created_at": at}


def _record(item: Item, source: str, scope: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {"record": "memory"}
    record.update((fields.export_key(f), None) for f in fields.exported())
    record.update(
        key=item.key,
        type=item.type,
        content=item.content,
        tags=item.tags,
        source=source,
        scope=scope,
        created_at=item.created_at,
        access_count=0,
    )
    return record
