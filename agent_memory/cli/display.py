"""Memories as a person reads them in a terminal: a table of many, the record of one.

A table row shows id, type, scope, tags, age (since the memory was stored), decay (as of
now, the value a search would rank it with; a list's JSON carries the stored one) and the
content on one line, cut to the terminal's width. A record shows every field and the whole
content. Text a memory holds is shown ``printable``: a control character is written as its
escape, never sent to the terminal, so a memory cannot act on the terminal of the person
reading it. Pure text: the commands decide where it goes.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from agent_memory import ranking
from agent_memory.contract.vocabulary import count

# Widths of the narrow columns are taken from the first TABLE_SAMPLE_ROWS rows (a list is
# streamed: later rows are cut to them), each at most its cap; the content gets the rest
# of the terminal, at least CONTENT_MIN_CHARS.
TABLE_SAMPLE_ROWS = 100
SCOPE_MAX_CHARS = 24
TAGS_MAX_CHARS = 28
CONTENT_MIN_CHARS = 24
DEFAULT_COLUMNS = 120  # when the output is not a terminal
COLUMNS = ("ID", "TYPE", "SCOPE", "TAGS", "AGE", "DECAY", "CONTENT")
_SPACE = re.compile(r"\s+")
# What a terminal acts on instead of showing: the C0 controls but tab (ESC begins the
# sequences that erase, move the cursor, set the window title, write the clipboard), DEL and
# the C1 controls (U+009B is a CSI too), the line and paragraph separators, and the
# bidirectional embeddings, overrides and isolates (they reorder what is shown).
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r"}
# age units, largest first: (seconds, suffix)
_UNITS = ((365 * 86400, "y"), (30 * 86400, "mo"), (86400, "d"), (3600, "h"), (60, "m"))


def age(seconds: int) -> str:
    """A duration in its largest whole unit: 3d, 5h, 2mo; under a minute, in seconds."""
    seconds = max(seconds, 0)
    for size, suffix in _UNITS:
        if seconds >= size:
            return f"{seconds // size}{suffix}"
    return f"{seconds}s"


def when(timestamp: int, now: int) -> str:
    """A moment in local time, with how long ago (or until) it is: 2026-01-03 14:05 (2d ago)."""
    shown = time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))
    if timestamp > now:
        return f"{shown} (in {age(timestamp - now)})"
    return f"{shown} ({age(now - timestamp)} ago)"


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """``text`` with each control character written as its escape (\\x1b, \\n, \\u2028):
    on one line, and nothing in it acts on a terminal."""
    return _CONTROL.sub(_escape, text)


def json_text(payload: Any) -> str:
    """``payload`` as compact JSON on one line, with the control characters JSON may hold
    raw (DEL, C1, the separators, the bidirectional ones) as \\u escapes: the same value."""
    text = json.dumps(payload, ensure_ascii=False)
    return _CONTROL.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def printable_lines(text: str) -> list[str]:
    """``text`` as lines, split wherever str.splitlines splits (a bare \\r, \\v, \\u2028
    too), each ``printable``; one empty line for no text."""
    return [printable(line) for line in text.splitlines()] or [""]


def one_line(text: str, width: int) -> str:
    """``text`` with its whitespace runs as single spaces, ``printable``, cut to ``width``
    with …."""
    flat = printable(_SPACE.sub(" ", text).strip())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def terminal_width() -> int:
    import shutil  # here: with bz2 and lzma, start-up time other commands need not pay

    return shutil.get_terminal_size((DEFAULT_COLUMNS, 24)).columns


def _cells(memory: dict[str, Any], now: int) -> list[str]:
    decay = ranking.decay(memory["type"], memory["last_accessed"], now)
    return [
        str(memory["id"]),
        memory["type"],
        printable(memory["scope"] or "-"),
        printable(",".join(memory["tags"]) or "-"),
        age(now - memory["created_at"]),
        f"{decay:.2f}",
    ]


def table(
    memories: Iterable[dict[str, Any]], now: int, width: int | None = None, related: bool = False
) -> Iterator[str]:
    """The lines of a table of ``memories`` (a header first; nothing for no memories);
    ``related``: each memory's related ones (expand_links) on lines under it. A search's
    result carrying ``why`` (explain) gets it on a line under it, before those."""
    width = width or terminal_width()
    rows = iter(memories)
    sample = list(itertools.islice(rows, TABLE_SAMPLE_ROWS))
    if not sample:
        return
    caps = [20, 12, SCOPE_MAX_CHARS, TAGS_MAX_CHARS, 5, 5]
    widths = [len(name) for name in COLUMNS[:-1]]
    for memory in sample:
        for i, cell in enumerate(_cells(memory, now)):
            widths[i] = min(max(widths[i], len(cell)), caps[i])
    content_width = max(width - sum(widths) - 2 * len(widths), CONTENT_MIN_CHARS)

    def line(cells: list[str], content: str) -> str:
        fitted = [one_line(c, w).ljust(w) for c, w in zip(cells, widths, strict=True)]
        fitted[0] = cells[0].rjust(widths[0]) if len(cells[0]) <= widths[0] else fitted[0]
        return "  ".join([*fitted, one_line(content, content_width)]).rstrip()

    yield line(list(COLUMNS[:-1]), COLUMNS[-1])
    for memory in itertools.chain(sample, rows):
        yield line(_cells(memory, now), memory["content"])
        if "why" in memory:
            yield f"  why: {why(memory['why'])}"
        if related:
            yield from _related(memory.get("related", []), indent="    ")


def _score(value: float) -> str:
    """A score: two decimals, or two significant digits under 0.1 (rank fusion's are about
    0.016, and bm25 in a small store can be 1e-06)."""
    return f"{value:.2f}" if abs(value) >= 0.1 or value == 0 else f"{value:.2g}"


def why(reason: dict[str, Any]) -> str:
    """Why a search returned a memory (a result's ``why``), on one line: in words, then the
    score. The web page says it in the same words (app.js)."""
    return f"{reason['reason']} · score {_score(reason['score'])}"


def explanation(explain: dict[str, Any]) -> str:
    """How a search made its page and where it ended (the answer's ``explain``), on one
    line."""
    made = f"{explain['fusion']} fusion" if "fusion" in explain else f"score = {explain['score']}"
    return f"{made} · {explain['cut']['reason']}"


def record(memory: dict[str, Any], now: int) -> Iterator[str]:
    """The lines of one memory shown whole: its fields, its content, its relations."""
    decay = ranking.decay(memory["type"], memory["last_accessed"], now)
    head = f"memory {memory['id']}  {memory['type']}"
    yield head + (f"  scope {printable(memory['scope'])}" if memory["scope"] else "  global")
    fields = [
        ("tags", printable(", ".join(memory["tags"])) or "-"),
        ("source", printable(memory["source"] or "-")),
        ("created", when(memory["created_at"], now)),
        ("last used", when(memory["last_accessed"], now)),
        ("stored by", printable(memory["created_by"])),
        ("changed by", printable(memory["updated_by"])),
    ]
    if "access_count" in memory:
        fields.append(("uses", str(memory["access_count"])))
    expires = memory["expires_at"]
    fields.append(("expires", "never" if expires is None else when(expires, now)))
    fields.append(("decay", f"{decay:.3f}"))
    if "embedding_status" in memory:
        waiting = "waiting for a vector"
        fields.append(("embedding", "done" if memory["embedding_status"] else waiting))
    for name, value in fields:
        yield f"{name:<10} {value}"
    yield ""
    yield from printable_lines(memory["content"])
    related = memory.get("related")
    if related:
        yield ""
        yield f"{count(len(related), 'relation')}:"
        yield from _related(related, indent="  ")


def _related(related: list[dict[str, Any]], indent: str) -> Iterator[str]:
    """One line per related memory: kind (from the memory's side), id, type, snippet."""
    kind_width = max((len(r["kind"]) for r in related), default=0)
    for r in related:
        snippet = one_line(r["snippet"], 80)
        yield f"{indent}{r['kind']:<{kind_width}}  {r['id']}  {r['type']}  {snippet}"


# The fields of service.stats that stats() lays out; any other is shown as NAME: VALUE.
_STATS_FIELDS = ("memories", "by_type", "by_scope", "links", "pending_embedding")
STATS_NAME_CHARS = 40


def stats(found: dict[str, Any]) -> Iterator[str]:
    """The lines of what a store holds (service.stats, as memory://stats has it): the
    totals, the memories per type and per scope (- for global, as in a table; the scopes
    stats leaves out are summed on one line), then any other field as NAME: VALUE."""
    yield (
        f"{count(found['memories'], 'memory')} (superseded ones included), "
        f"{count(found['links'], 'link')}, {found['pending_embedding']} waiting for a vector"
    )
    scopes = [(row["scope"], row["memories"]) for row in found["by_scope"]]
    others = found["memories"] - sum(n for _, n in scopes)
    if others > 0:
        scopes.append(("(other scopes)", others))
    for title, rows in (("TYPE", list(found["by_type"].items())), ("SCOPE", scopes)):
        if not rows:
            continue
        names = [one_line(name or "-", STATS_NAME_CHARS) for name, _ in rows]
        width = max(len(title), *(len(name) for name in names))
        yield ""
        yield f"{title:<{width}}  MEMORIES"
        for name, (_, number) in zip(names, rows, strict=True):
            yield f"{name:<{width}}  {number:>8}"
    extra = [(name, value) for name, value in found.items() if name not in _STATS_FIELDS]
    if extra:
        yield ""
    for name, value in extra:
        yield f"{name.replace('_', ' ')}: {printable(str(value))}"
