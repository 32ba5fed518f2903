"""Which stored memories the keyword signal of a near-duplicate hint reads (service/similar.py,
issue 36), planned alike for every engine: no ranking, only the rows that can share enough of
the new memory's informative lexemes, found from the index's word lists.

A stored memory S is a near duplicate of the new one N when S and N share at least
``need(min(|N|, |S|))`` lexemes (the threshold is relative to the shorter one). Two ways in:

- S at least as long as N must share ``need(|N|)`` of N's lexemes, so it misses at most
  ``|N| - need(|N|)`` of them: it holds one of any ``|N| - need(|N|) + 1`` of N's words
  (prefix filtering). The plan takes N's rare words first; when too few are rare, the
  memories holding none of them must hold all but ``k`` of the others, asked as
  conjunctions (every way of leaving ``k`` out), which the index answers cheaply.
- S shorter than N is found when it holds one of N's rare words (in fewer than
  NEAR_RARE_ROWS rows): a shorter memory made only of N's common words is not read (not an
  exact bound; docs/performance.md, section 34, measures what that changes).

Counting rows (the rarity) must not touch what searches cache for their own pruning (the
reason an earlier attempt was reverted): each engine counts afresh, or reads its exact
statistics tables.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

# A word held by fewer rows than this is rare: every row of the scope holding it is read.
NEAR_RARE_ROWS = 64
# Rows are counted up to this many for each word (the order of the common words; the
# counting stops there, so a common word costs no more than this).
NEAR_COUNT_ROWS = 512
# At most this many conjunctions (see the module's docstring); past it, the next rarest
# words are read whole instead, each one lowering the misses a conjunction allows.
NEAR_MAX_CONJUNCTIONS = 32
# At most this many candidate rows are read (newest first): a bound on the cost of a memory
# made only of common words.
NEAR_MAX_ROWS = 200


@dataclass(frozen=True)
class NearWords:
    """What the service asks: one word per informative lexeme of the new memory (as written,
    in its order), the overlap threshold and the fewest lexemes a memory needs."""

    words: tuple[str, ...]
    threshold: float
    min_lexemes: int


@dataclass(frozen=True)
class NearPlan:
    """The rows to read: those holding one of ``any_of``, or all of one of ``all_of``."""

    any_of: tuple[str, ...]
    all_of: tuple[tuple[str, ...], ...]


def need(size: int, threshold: float) -> int:
    """The fewest shared lexemes that reach ``threshold`` against a memory of ``size``
    lexemes, in the float arithmetic service.similar.overlap uses."""
    return next(c for c in range(size + 1) if c / size >= threshold)


def plan(asked: NearWords, counts: list[int]) -> NearPlan | None:
    """The plan for the words of ``asked``, whose row counts (capped) are ``counts``; None
    when the memory has too few lexemes for any hint."""
    words = asked.words
    n = len(words)
    if n < max(asked.min_lexemes, 1):
        return None
    order = sorted(range(n), key=lambda i: (counts[i], i))
    rare = [i for i in order if counts[i] < NEAR_RARE_ROWS]
    prefix = n - need(n, asked.threshold) + 1
    if len(rare) >= prefix:
        return NearPlan(tuple(words[i] for i in rare), ())
    taken = len(rare)
    while True:
        rest = [i for i in order[taken:]]
        misses = prefix - 1 - taken
        if misses == 0 or math.comb(len(rest), misses) <= NEAR_MAX_CONJUNCTIONS:
            break
        taken += 1  # the next rarest word is read whole
    keep = len(rest) - misses
    conjunctions = tuple(
        tuple(words[i] for i in sorted(kept)) for kept in itertools.combinations(rest, keep)
    )
    return NearPlan(tuple(words[i] for i in order[:taken]), conjunctions)
