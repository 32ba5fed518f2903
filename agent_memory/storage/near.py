"""Which stored memories the keyword signal of a near-duplicate hint reads (service/similar.py,
issue 36), planned alike for every engine: no ranking, only the rows that can share enough of
the new memory's informative lexemes, found from the index's word lists.

A stored memory S is a near duplicate of the new one N when S and N share at least
``need(min(|N|, |S|))`` lexemes (the threshold is relative to the shorter one). Two ways in:

- S at least as long as N must share ``need(|N|)`` of N's lexemes, so it misses at most
  ``|N| - need(|N|)`` of them: of any ``|N| - need(|N|) + 1 + j`` of N's words it holds at
  least ``1 + j`` (prefix filtering). The plan takes N's rarest words with j = NEAR_EXTRA,
  so that few rows hold enough of them: exact for every S at least as long as N.
- S shorter than N is read when it holds one of N's rare words (in fewer than
  NEAR_RARE_ROWS rows), or enough of the rarest ones as above. A shorter memory made only of
  N's common words is not read: no bound on N's words finds it without reading the rows of
  its common words, which costs what ranking did (docs/performance.md, section 34).

Counting rows (the rarity) must not touch what searches cache for their own pruning (the
reason an earlier attempt was reverted): each engine counts afresh, or reads its exact
statistics tables.
"""

from __future__ import annotations

from dataclasses import dataclass

# A word held by fewer rows than this is rare: every row of the scope holding it is read.
NEAR_RARE_ROWS = 64
# Rows are counted up to this many for each word (the order of the common words; the
# counting stops there, so a common word costs no more than this).
NEAR_COUNT_ROWS = 1_024
# Words taken past the fewest the bound needs: each one more asks one more of them in common.
NEAR_EXTRA = 1
# At most this many candidate rows are read (newest first).
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
    """The rows to read: those holding one of ``rare``, or at least ``bound`` of ``words``
    (``rare`` among them)."""

    words: tuple[str, ...]
    rare: frozenset[str]
    bound: int


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
    rare = frozenset(words[i] for i in order if counts[i] < NEAR_RARE_ROWS)
    prefix = n - need(n, asked.threshold) + 1  # S at least as long holds one of these
    taken = min(n, prefix + NEAR_EXTRA)
    chosen = tuple(words[i] for i in order[: max(taken, len(rare))])
    return NearPlan(chosen, rare, taken - prefix + 1)
