"""FTS5 query text: the rewrite used when a query is not valid FTS5 syntax.

Agents send plain questions ("what vector store do we use?"), hyphenated names
("sqlite-vec") and labels ("TODO: auth"). FTS5 rejects those, so the search runs the raw
query first (keeping the exact meaning of valid FTS5 such as ``sqlite AND vec`` or
``vec*``) and, only when FTS5 cannot parse it, once more as its words quoted and OR-ed.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")


def words(query: str) -> list[str]:
    return _WORD.findall(query)


def or_of(found: list[str]) -> str:
    """``["what", "s", "vec"]`` -> ``"what" OR "s" OR "vec"`` (\\w matches no quote)."""
    return " OR ".join(f'"{w}"' for w in found)


def or_of_words(query: str) -> str | None:
    """``what's sqlite-vec?`` -> ``"what" OR "s" OR "sqlite" OR "vec"``; None when wordless."""
    found = words(query)
    return or_of(found) if found else None
