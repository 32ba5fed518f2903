"""FTS5 query text: the rewrite used when a query is not valid FTS5 syntax.

Agents send plain questions ("what vector store do we use?"), hyphenated names
("sqlite-vec") and labels ("TODO: auth"). FTS5 rejects those, so the search runs the raw
query first (keeping the exact meaning of valid FTS5 such as ``sqlite AND vec`` or
``vec*``) and, only when FTS5 cannot parse it, once more as its words quoted and OR-ed.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")


# FTS5's bm25 floors the IDF of a word found in half the rows or more at 1e-6, so such a
# word adds less than 1e-6 * (k1 + 1) to any row's score (k1 = 1.2, FTS5's default).
CLAMPED_IDF = 1e-6
BM25_K1 = 1.2
MAX_CLAMPED_WORD_SCORE = CLAMPED_IDF * (BM25_K1 + 1)


def words(query: str) -> list[str]:
    return _WORD.findall(query)


def or_of(found: list[str]) -> str:
    return " OR ".join(f'"{w}"' for w in found)  # \w never matches a quote


def or_of_words(query: str) -> str | None:
    """``what's sqlite-vec?`` -> ``"what" OR "s" OR "sqlite" OR "vec"``; None when wordless."""
    found = words(query)
    return or_of(found) if found else None


def is_clamped(document_frequency: int, total: int) -> bool:
    """True when bm25 gives the word (almost) no weight: it is in half the rows or more."""
    return 2 * document_frequency >= total
