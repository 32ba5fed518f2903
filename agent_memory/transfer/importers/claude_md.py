"""A Claude Code ``CLAUDE.md`` or memory file, or an ``AGENTS.md``: Markdown an agent reads
at the start of a session.

Each bullet becomes a memory tagged with the heading it is under (bullets before the first
heading have no heading tag); what is indented under a bullet folds into it, as in a GSD
STATE.md (the same reader, transfer.gsd). The heading's words give the type. Paragraphs
and ``@path`` imports are not bullets: they are counted, not imported.
"""

from __future__ import annotations

from pathlib import Path

from agent_memory.service import project
from agent_memory.transfer import gsd
from agent_memory.transfer.importers.common import Found, mtime, read_text, type_of

SOURCE = "claude-md"


def _section(heading: str) -> gsd.Section:
    return gsd.Section(type_of(heading), (heading,))


def read(path: Path, max_content_bytes: int) -> Found:
    found = Found(SOURCE, path)
    text = read_text(found)
    if "\x00" in text:
        raise found.refuse("holds a NUL character")
    created = mtime(path)
    parsed = gsd.parse(text, _section, first=gsd.Section(type_of(None), ()))
    for item in parsed.items:
        found.add(item.content, item.type, item.tags, created, item.content[:40])
    if parsed.malformed:
        found.skip(f"bullets empty or over {gsd.MAX_ITEM_BYTES} bytes", parsed.malformed)
    if parsed.text_lines:
        found.skip("lines that are not bullets", parsed.text_lines)
    return found


def default_scope(path: Path) -> str | None:
    """The project the file belongs to (as GSD's); none for a user's own ~/.claude file."""
    resolved = path.resolve()
    if resolved.parent.name == ".claude" and resolved.parent.parent == Path.home():
        return None
    return project.scope_of(resolved.parent)
