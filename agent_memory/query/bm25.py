"""FTS5's bm25 as both backends compute it, and which words of a question carry information.

A query of plain words, or one FTS5 cannot parse (the retry), is searched as words
(decisions.md, "Plain-language keyword queries"): the rows holding every word first, then
the rows holding its informative words, every row scored by the bm25 of the OR of all its
words. A word is informative when it is in at most about a quarter of rows (IDF above
PRUNE_MAX_IDF); when no word that occurs is, the rarest that occurs is (``informative``).
Judged by the index's own counts, this needs no stop-word list and holds in every language:
"the", "we", "which" match nearly every row and do not bring them in.

Scoring every row the common words match is most of a question's cost, so both
backends plan it the same way (``plan``): past PRUNE_MIN_ROWS memories the informative words
alone are scored and the others' share added back to the best rows, and past
PRUNE_EXACT_ROWS only the rows of the rarest words are scored when the kept words match many
rows. How each backend adds the left-out words back is its own (storage/*/keyword.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent_memory.query.bigrams import unsegmented

# FTS5's bm25 parameters (fts5_aux.c, fixed in SQLite): term-frequency saturation, length
# weight, and the smallest IDF (given where the formula is not positive).
BM25_K1 = 1.2
BM25_B = 0.75
IDF_FLOOR = 1e-6
# A hit in a memory's tags counts this many times a hit in its content in bm25's term
# frequency (FTS5's column weights). A sum of powers of two, so that a row's hits add up to
# the same float on both engines. Chosen on the committed sets (docs/search.md).
TAG_WEIGHT = 1.5
# One query term adds at most idf * (k1 + 1) to a row's bm25 score.
BM25_TERM_MAX = BM25_K1 + 1
# Words of IDF at most PRUNE_MAX_IDF (ln 3: in more than about a quarter of the rows) carry
# no information: rows holding only them are not matched, and past PRUNE_MIN_ROWS they are
# left out of the rows scored. A looser share lets the common words of a small project ("we",
# "and") bring in much of the store (tests/engines/test_everyday_set.py). Below PRUNE_MIN_ROWS
# memories every word is scored in one query, which is there as fast as adding the common
# words back.
PRUNE_MAX_IDF = math.log(3)
# A word in at most this many rows is informative however few rows there are: on a handful
# of memories a quarter is one row, and "sqlite" in 2 of 6 is no stop word.
INFORMATIVE_ROWS = 2
PRUNE_MIN_ROWS = 2_000
# On a database of more than PRUNE_EXACT_ROWS memories, when the words kept are found in
# more than PRUNE_SCORED_SHARE of the rows in all (counted per word), bm25 is computed only
# for the rows that match the rarest of them: the other words still count in those rows'
# scores, but a row matching none of the rarest words is not ranked. The page can differ
# from the full query's; up to PRUNE_EXACT_ROWS memories the answer is always the full
# query's.
PRUNE_EXACT_ROWS = 20_000
PRUNE_SCORED_SHARE = 0.1


def idf(rows_indexed: int, hits: int) -> float:
    """The IDF FTS5's bm25 gives a phrase found in ``hits`` of ``rows_indexed`` rows.

    A cached count can exceed a row count read in a newer snapshot after deletes: it is
    held to ``rows_indexed``.
    """
    hits = min(hits, rows_indexed)
    value = math.log((rows_indexed - hits + 0.5) / (hits + 0.5))
    return value if value > 0 else IDF_FLOOR


def rarest(kept: Sequence[str], hits: Mapping[str, int], budget: float) -> list[str] | None:
    """The rarest kept words: the rarest found, and more while their rows number at most
    ``budget``; None when that is all of them, or their rows all fit."""
    ordered = sorted(set(kept), key=lambda w: (hits[w], w))
    if sum(hits[w] for w in ordered) <= budget:
        return None
    chosen, total = [], 0
    for word in ordered:
        if total and total + hits[word] > budget:
            break
        chosen.append(word)
        total += hits[word]
    return chosen if len(chosen) < len(ordered) else None


def informative(
    words: Sequence[str], total: int, hits: Mapping[str, int], never_empty: bool = True
) -> set[str]:
    """The words that carry information: IDF above PRUNE_MAX_IDF (in at most about a quarter
    of the ``total`` rows) or in at most INFORMATIVE_ROWS rows; when none of those occurs,
    the rarest words that occur as well, so that a question is never emptied.

    Without ``never_empty`` (the keyword leg of a hybrid search, where the model answers
    what no word finds), only the IDF rule: on a store of a few memories a word such as
    "the" in one of them would otherwise bring in every memory. The fusion reads every
    candidate's words itself (ranking.relevance), so a memory the model found holding only
    common words still gets their share.
    """
    if not never_empty:
        return {word for word in words if idf(total, hits[word]) > PRUNE_MAX_IDF}
    kept = {
        word
        for word in words
        if hits[word] <= INFORMATIVE_ROWS or idf(total, hits[word]) > PRUNE_MAX_IDF
    }
    if any(hits[word] for word in kept):
        return kept
    found = [hits[word] for word in words if hits[word]]
    return kept | {word for word in words if found and hits[word] == min(found)}


@dataclass(frozen=True)
class Plan:
    """How to search a question's words: rows holding one of ``kept`` (its informative
    words, repeats kept) are matched; ``left_out`` (word -> its IDF times its repeats)
    still count in their scores; when not None, only the rows of the ``rarest`` words
    are scored first; ``shortcut``: score the kept words alone and add the others back."""

    kept: list[str]
    left_out: dict[str, float]
    rarest: list[str] | None
    shortcut: bool

    @property
    def bound(self) -> float:
        """The most the left-out words can add to one row's -bm25."""
        return BM25_TERM_MAX * sum(self.left_out.values())


def plan(
    words: Sequence[str], total: int, hits: Mapping[str, int], never_empty: bool = True
) -> Plan:
    """The plan for the ``words`` of a question over ``total`` rows, ``hits`` rows holding
    each word; ``never_empty`` as for ``informative``."""
    chosen = informative(words, total, hits, never_empty)
    left_out: dict[str, float] = {}
    for word in words:
        if word not in chosen:
            left_out[word] = left_out.get(word, 0.0) + idf(total, hits[word])
    kept = [w for w in words if w in chosen]
    within = None
    if total > PRUNE_EXACT_ROWS:
        within = rarest(kept, hits, PRUNE_SCORED_SHARE * total)
    # A word of a script written without spaces is a phrase of bigrams in the index
    # (query.bigrams), whose occurrences can overlap: SQLite's shortcut counts left-out
    # words by highlight(), which merges overlaps, so such a word left out means no shortcut.
    shortcut = total >= PRUNE_MIN_ROWS and not any(unsegmented(w) for w in left_out)
    return Plan(kept, left_out, within, shortcut)
