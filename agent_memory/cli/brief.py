"""The session brief (``agent-memory context``): what an agent should know as it starts
work on a project, as Markdown within a character budget (or the same as JSON).

Sections, in order: the project scope's pinned memories (DECISION, CONSTRAINT,
ARCHITECTURE), its PATTERNs, its recent ERRORs with the memories linked to them (their
fixes, causes), its open TODOs; then the same four for the global memories (no scope). In
each, the most recently used first (for one type that is the strongest decay first; a new
memory counts as just used). Left out: memories expired but not yet swept, and those
another memory supersedes (the older side of a ``supersedes`` relation: no longer true).
With a query, two sections instead, the scope's and the global memories that match it, by
relevance.

The budget is filled a memory at a time from each section in turn, so that every section
gets its best memories before any section gets more, by memory_search's rule for max_chars
(contract.models.Budget): a memory is shown whole or not at all, and one that does not fit
in what is left is skipped for the next. Reading is a pure read: nothing counts as used.
Free of heavy imports: it runs at every agent's start.

The brief goes into an agent's context, so a memory must not be able to pass for the brief
itself: every line at column 0 (the header, the headings, a memory's first line) and every
line a relation takes (indented 2) is written here. A memory's text is split wherever
str.splitlines splits and goes on at CONTENT_INDENT; the fields kept on one line (tags, a
scope, a snippet) and every line of content are display.printable (a control character is
written as its escape).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_memory.cli.display import printable, printable_lines
from agent_memory.contract.models import Budget
from agent_memory.contract.models import related as shaped
from agent_memory.contract.vocabulary import MAX_LIMIT
from agent_memory.storage.base import Reader

# Claude Code caps what a hook adds to the context at 10,000 characters (longer output is
# replaced by a preview); 8,000 fits within that with room to spare, about 2,000 tokens.
DEFAULT_MAX_CHARS = 8_000
# Candidates read per section: more than any budget up to about 50,000 characters shows.
SECTION_ROWS = 50
# Each section ranks the RECENT_WINDOW newest memories of its kind by last use: an older one
# only shows while it is among them. Every candidate is a row read (no index holds the last
# use). A brief has eight sections (four kinds, in the scope and global); the window bounds
# the rows each reads on a large scope, and a scope of 10,000 memories or fewer (up to 2,000
# per section) is ranked whole.
RECENT_WINDOW = 2_000
# Memories linked to an ERROR shown under it, newest relation first.
RELATED_PER_ERROR = 3
RELATED_CHARS = 160
SCOPE_SHOWN_CHARS = 60
# The lines of a memory's content after its first: deeper than a relation's "  - ", so that
# no content line reads as one of the brief's own.
CONTENT_INDENT = " " * 4
PINNED = ("DECISION", "CONSTRAINT", "ARCHITECTURE")
LEFT_OUT = "Older memories were left out to keep this short: memory_search finds them."
NOTHING = "No memories are stored for this project or globally yet."
NO_MATCH = "No memory of this project or global ones matches the query."


@dataclass
class Section:
    title: str
    scope: str | None
    types: tuple[str, ...]
    candidates: list[dict[str, Any]]  # best first
    chosen: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mixed(self) -> bool:
        """Whether the section holds several types (each line then names its type)."""
        return len(self.types) != 1


Searcher = Callable[[dict[str, Any]], dict[str, Any]]


def label(scope: str | None) -> str:
    """A scope as a heading shows it: on one line, quoted, cut; Global for none."""
    if scope is None:
        return "Global"
    flat = printable(" ".join(scope.split()).replace("`", "'"))
    cut = flat if len(flat) <= SCOPE_SHOWN_CHARS else flat[: SCOPE_SHOWN_CHARS - 1] + "…"
    return f"`{cut}`"


def recent(reader: Reader, scope: str | None, now: int) -> list[Section]:
    """The eight sections of a brief without a query (four when ``scope`` is None)."""
    out = []
    for where in dict.fromkeys([scope, None]):
        name = label(where)
        for title, types in (
            (f"{name}: decisions, constraints and architecture", PINNED),
            (f"{name}: patterns", ("PATTERN",)),
            (f"{name}: recent errors", ("ERROR",)),
            (f"{name}: open todos", ("TODO",)),
        ):
            found = reader.recent(
                scope=where, types=types, now=now, limit=SECTION_ROWS, window=RECENT_WINDOW
            )
            out.append(Section(title, where, types, found))
    errors = [m for s in out if s.types == ("ERROR",) for m in s.candidates]
    edges: dict[int, list[dict[str, Any]]] = {m["id"]: [] for m in errors}
    for edge in reader.neighbours(list(edges), RELATED_PER_ERROR):
        edges[edge["self"]].append(shaped(edge))
    for memory in errors:
        memory["related"] = edges[memory["id"]]
    return out


def relevant(search: Searcher, query: str, scope: str | None, now: int) -> list[Section]:
    """The two sections of a brief with a query: the scope's memories that match it, then
    the global ones, by relevance (``search`` is the service's, recording no use)."""
    found = search({"query": query, "limit": MAX_LIMIT, "expand_links": True})["results"]
    if scope is not None:  # the scope's own search: others' memories cannot crowd it out
        scoped = {"query": query, "scope": scope, "limit": SECTION_ROWS, "expand_links": True}
        found = search(scoped)["results"] + found
    out = []
    for where in dict.fromkeys([scope, None]):
        unique: dict[int, dict[str, Any]] = {}
        for memory in found:
            if memory["scope"] == where and _current(memory, now):
                unique.setdefault(memory["id"], memory)
        kept = list(unique.values())[:SECTION_ROWS]
        out.append(Section(f"{label(where)}: relevant to the query", where, (), kept))
    for section in out:
        for memory in section.candidates:
            if memory["type"] != "ERROR":
                memory.pop("related", None)
            else:
                memory["related"] = memory.get("related", [])[:RELATED_PER_ERROR]
    return out


def _current(memory: dict[str, Any], now: int) -> bool:
    """Not expired by ``now``. (The searches leave superseded memories out themselves, the
    scope's own search counting only the scope's supersessions, as the recent sections do.)"""
    expires = memory["expires_at"]
    return expires is None or expires > now


# -- rendering ----------------------------------------------------------------------------


def _date(timestamp: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(timestamp))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def item(section: Section, memory: dict[str, Any]) -> str:
    """One memory as a Markdown list item (with its linked memories, for an ERROR)."""
    kind = f"{memory['type']} " if section.mixed else ""
    tags = printable(", ".join(memory["tags"]))
    tagged = f" [{tags}]" if memory["tags"] else ""
    content = printable_lines(memory["content"].strip())
    text = f"\n{CONTENT_INDENT}".join(content)
    lines = [f"- #{memory['id']} {kind}{_date(memory['created_at'])}{tagged}: {text}\n"]
    for r in memory.get("related", []):
        snippet = printable(_cut(" ".join(r["snippet"].split()), RELATED_CHARS))
        lines.append(f"  - {r['kind']} #{r['id']} {r['type']}: {snippet}\n")
    return "".join(lines)


def heading(section: Section) -> str:
    return f"\n## {section.title}\n\n"


def header(scope: str | None, query: str | None) -> str:
    where = f"For project {label(scope)}, then global" if scope is not None else "Global"
    if query is None:
        what = "decisions, constraints and architecture, patterns, recent errors, open todos"
        order = "the most recently used first"
    else:
        what = f'the memories matching "{printable(_cut(" ".join(query.split()), 80))}"'
        order = "the most relevant first"
    return (
        "# Memory from earlier sessions (agent-memory)\n\n"
        f"{where}: {what}; {order}. #N is the memory's id (for memory_update, memory_link "
        "and memory_forget).\n"
    )


def cost(section: Section, memory: dict[str, Any]) -> int:
    """The characters ``memory`` takes in the brief: its item, and the section's heading
    when it is the section's first."""
    return len(item(section, memory)) + (0 if section.chosen else len(heading(section)))


def choose(sections: Sequence[Section], budget: Budget) -> bool:
    """Fill each section's ``chosen`` within ``budget``, a memory from each section in turn;
    one that does not fit is left out (``budget.more`` counts it) and the section's next is
    offered in the next round. Returns whether anything was left out."""
    offered = [(s, iter(s.candidates)) for s in sections if s.candidates]
    while offered:
        for entry in list(offered):
            section, rest = entry
            memory = next(rest, None)
            if memory is None:
                offered.remove(entry)
                continue
            if budget.take(memory["content"].strip(), functools.partial(cost, section, memory)):
                section.chosen.append(memory)
    return budget.more > 0 or any(len(s.candidates) == SECTION_ROWS for s in sections)


_NOTE = f"\n{LEFT_OUT}\n"


def _fill(
    sections: Sequence[Section], scope: str | None, query: str | None, limit: int
) -> tuple[bool, int]:
    """choose() within what a brief of ``limit`` characters leaves for memories: whether
    anything was left out, and how many of the memories offered did not fit."""
    budget = Budget(limit - len(header(scope, query)) - len(_NOTE))
    return choose(sections, budget), budget.more


def markdown(sections: Sequence[Section], scope: str | None, query: str | None, limit: int) -> str:
    """The brief in at most ``limit`` characters (``sections`` get their ``chosen``)."""
    left_out, _ = _fill(sections, scope, query, limit)
    body = "".join(heading(s) + "".join(item(s, m) for m in s.chosen) for s in sections if s.chosen)
    if not body and not left_out:
        body = f"\n{NOTHING if query is None else NO_MATCH}\n"
    return header(scope, query) + body + (_NOTE if left_out else "")


def as_json(
    sections: Sequence[Section], scope: str | None, query: str | None, limit: int
) -> dict[str, Any]:
    """The memories the Markdown brief of ``limit`` characters shows, as data; ``more``:
    how many of those it read did not fit."""
    left_out, more = _fill(sections, scope, query, limit)
    return {
        "scope": scope,
        "query": query,
        "max_chars": limit,
        "left_out": left_out,
        "more": more,
        "sections": [
            {"title": s.title, "scope": s.scope, "types": list(s.types), "memories": s.chosen}
            for s in sections
        ],
    }
