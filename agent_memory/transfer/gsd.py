"""The tolerant reader of a GSD ``.planning/STATE.md``: decisions, blockers, todos, deferred items.

A STATE.md is edited by people and by agents, so this reader never rejects a file: it takes
the sections it knows by their heading text (any level, case-insensitive), the bullet items
in them (``- `` or ``* ``) and the rows of the Deferred Items table, and counts what it had
to skip as malformed. What is indented under an item (nested bullets, continued lines)
belongs to it: it is kept in the item's content, indented as written, so that a note such
as ``- never floats`` under a decision stays with that decision.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent_memory.service import project

SOURCE = "gsd-state"
TAG = "gsd"
DEFERRED_TAG = "deferred"
MAX_ITEM_BYTES = 8192
PLACEHOLDERS = frozenset({"none", "none.", "none yet.", "*(none)*"})
SECTIONS = {
    "decisions": "DECISION",
    "decisions made": "DECISION",
    "blockers/concerns": "CONSTRAINT",
    "blockers": "CONSTRAINT",
    "concerns": "CONSTRAINT",
    "pending todos": "TODO",
    "deferred items": "TODO",
}
DEFERRED_SECTION = "deferred items"

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*](\s+|$)(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
TAB_COLUMNS = 4


@dataclass
class Item:
    type: str
    content: str
    tags: list[str] = field(default_factory=lambda: [TAG])


@dataclass
class Parsed:
    items: list[Item] = field(default_factory=list)
    malformed: int = 0
    sections: int = 0  # headings of known sections found (0: nothing here is GSD's)
    text_lines: int = 0  # lines of a section that are neither bullets nor table rows


@dataclass(frozen=True)
class Section:
    """What the items under a heading become: their type and tags; ``table``: a Markdown
    table's rows are items too (the Deferred Items table)."""

    type: str
    tags: tuple[str, ...]
    table: bool = False


def gsd_section(heading: str) -> Section | None:
    """GSD's sections, by heading text in any case."""
    name = heading.lower()
    if name not in SECTIONS:
        return None
    deferred = name == DEFERRED_SECTION
    return Section(SECTIONS[name], (TAG, DEFERRED_TAG) if deferred else (TAG,), deferred)


@dataclass
class _Open:
    """The item being read, until a line that is not indented under it ends it."""

    indent: int
    item: Item | None  # None: a skipped bullet (placeholder, lone marker), its lines too


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [cell.strip() for cell in inner.split("|")]


class _Table:
    """The Deferred Items table: columns found by header name."""

    def __init__(self, header: list[str]) -> None:
        names = [cell.lower() for cell in header]
        if "item" in names:
            self.item = names.index("item")
        else:
            self.item = next((i for i, n in enumerate(names) if n != "category"), 0)
        self.status = next((names.index(n) for n in ("status", "reason") if n in names), None)
        self.separated = False

    def content(self, cells: list[str]) -> str | None:
        item = cells[self.item] if self.item < len(cells) else ""
        if not item or item.lower() in PLACEHOLDERS:
            return None
        status = cells[self.status] if self.status is not None and self.status < len(cells) else ""
        return f"{item} — {status}" if status else item


def parse(
    text: str,
    section_of: Callable[[str], Section | None] = gsd_section,
    first: Section | None = None,
) -> Parsed:
    """The items of the sections ``section_of`` knows by their heading (``first``: before
    any heading); nested lines fold into their item."""
    out = Parsed()
    text = text.removeprefix("\ufeff")
    section = first
    table: _Table | None = None
    fenced: str | None = None
    current: _Open | None = None
    for raw in text.splitlines():  # \n, \r\n and \r alike
        line = raw.expandtabs(TAB_COLUMNS).rstrip()
        indent = len(line) - len(line.lstrip())
        if current is not None and line:  # (a fence ends the item: never open in one)
            if indent > current.indent and not _FENCE.match(line):
                if current.item is not None:
                    current.item.content += "\n" + line[current.indent :]
                continue
            _close(out, current)
            current = None
        fence = _FENCE.match(raw)
        if fenced is not None:
            if fence and fence.group(1) == fenced:
                fenced = None
            continue
        if fence:
            fenced = fence.group(1)
            continue
        heading = _HEADING.match(raw)
        if heading:
            section = section_of(heading.group(1).strip())
            out.sections += section is not None
            table = None
            continue
        if section is None:
            continue
        if section.table and raw.strip().startswith("|"):
            table = _table_row(out, table, _cells(raw))
            continue
        bullet = _BULLET.match(raw)
        if not bullet:
            out.text_lines += bool(raw.strip())
            continue
        content = bullet.group(2).strip()
        if not content:
            out.malformed += 1  # a lone marker
            current = _Open(indent, None)
            continue
        if content.lower() in PLACEHOLDERS:
            current = _Open(indent, None)
            continue
        current = _Open(indent, Item(section.type, content, list(section.tags)))
    if current is not None:
        _close(out, current)
    return out


def _table_row(out: Parsed, table: _Table | None, cells: list[str]) -> _Table:
    """One row of the deferred section's table: its header, its separator, or an item."""
    if table is None:
        return _Table(cells)
    if not table.separated and all(_SEPARATOR_CELL.match(c) for c in cells if c):
        table.separated = True
    else:
        content = table.content(cells)
        if content is not None:
            _add(out, Item("TODO", content, [TAG, DEFERRED_TAG]))
    return table


def _close(out: Parsed, current: _Open) -> None:
    if current.item is not None:
        _add(out, current.item)


def _add(out: Parsed, item: Item) -> None:
    if len(item.content.encode()) > MAX_ITEM_BYTES:
        out.malformed += 1
    else:
        out.items.append(item)


def default_scope(path: Path) -> str:
    """The scope of the project the file belongs to (project.scope_of), from the directory
    that holds ``.planning`` (else the file's folder)."""
    resolved = path.resolve()
    for parent in resolved.parents:
        if parent.name == ".planning":
            return project.scope_of(parent.parent)
    return project.scope_of(resolved.parent)
