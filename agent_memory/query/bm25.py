"""FTS5's bm25 as both backends compute it, and which words of a question may be left out.

A question FTS5 cannot parse is searched as the OR of its words (the plain-language retry).
Its common words ("the", "we": in more than about 44% of rows) match nearly every row and
barely move a score, yet scoring every row they match is most of a question's cost. So both
backends plan a question the same way (``plan``): words of IDF at most PRUNE_MAX_IDF are left
out of the rows to score, and, past PRUNE_EXACT_ROWS memories, only the rows of the rarest
words are scored when the kept words match many rows. How each backend adds the left-out
words back and checks that no row could have been missed is its own (storage/*/keyword.py);
docs/performance.md, section 3, has the measurements behind the settings.
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
# One query term adds at most idf * (k1 + 1) to a row's bm25 score.
BM25_TERM_MAX = BM25_K1 + 1
# Words of IDF at most PRUNE_MAX_IDF (in more than about 44% of rows) may be left out of the
# retry's OR. Below PRUNE_MIN_ROWS memories every word is searched: there that is as fast
# or faster (SQLite, bench corpus, in process, p50 of 200 questions: 3.0 against 3.8-5.2 ms
# at 1,000 memories, 6.6 against 5.7-6.2 at 2,000, 18 against 8.5-12 at 5,000).
PRUNE_MAX_IDF = 0.25
PRUNE_MIN_ROWS = 2_000
# On a database of more than PRUNE_EXACT_ROWS memories, when the words kept are found in
# more than PRUNE_SCORED_SHARE of the rows in all (counted per word), bm25 is computed only
# for the rows that match the rarest of them: the other words still count in those rows'
# scores, but a row matching none of the rarest words is not ranked. The page can differ
# from the full query's (measured in bench/pruning.py); up to PRUNE_EXACT_ROWS memories the
# answer is always the full query's.
PRUNE_EXACT_ROWS = 20_000
PRUNE_SCORED_SHARE = 0.1


def idf(rows_indexed: int, hits: int) -> float:
    """The IDF FTS5's bm25 gives a phrase found in ``hits`` of ``rows_indexed`` rows.

    A cached count can exceed a row count read in a newer snapshot after deletes: it is
    held to ``rows_indexed`` (found by the soak: a math domain error one search in 20,000).
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


@dataclass(frozen=True)
class Plan:
    """How to search a question's words: ``kept`` in the OR, ``left_out`` (word -> its IDF
    times its repeats in the question) added back to the best rows, and, when not None,
    only the rows of the ``rarest`` words scored first."""

    kept: list[str]
    left_out: dict[str, float]
    rarest: list[str] | None

    @property
    def bound(self) -> float:
        """The most the left-out words can add to one row's -bm25."""
        return BM25_TERM_MAX * sum(self.left_out.values())


def plan(words: Sequence[str], total: int, hits: Mapping[str, int]) -> Plan | None:
    """The plan for the OR of ``words`` over ``total`` rows, ``hits`` rows holding each
    word; None when every word should simply be searched."""
    if len(set(words)) < 2 or total < PRUNE_MIN_ROWS:
        return None
    left_out: dict[str, float] = {}
    for word in words:
        weight = idf(total, hits[word])
        # A word of a script written without spaces is a phrase of bigrams in the index
        # (query.bigrams), whose occurrences can overlap: only words that are one token
        # there are added back (SQLite counts them by highlight(), which merges overlaps).
        if weight <= PRUNE_MAX_IDF and not unsegmented(word):
            left_out[word] = left_out.get(word, 0.0) + weight
    kept = [w for w in words if w not in left_out]
    if not kept:
        return None
    within = None
    if total > PRUNE_EXACT_ROWS:
        within = rarest(kept, hits, PRUNE_SCORED_SHARE * total)
    if within is None and not left_out:
        return None  # nothing to leave out: that is the full query
    return Plan(kept, left_out, within)
