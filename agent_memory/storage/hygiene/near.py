"""Which stored memories the keyword signal of a near-duplicate hint reads
(service/hygiene/similar.py), planned alike for every engine: no ranking, only the rows that
can share enough of the new memory's informative lexemes, found from the index's word lists.

A stored memory S is a near duplicate of the new one N when S and N share at least
``need(min(|N|, |S|))`` lexemes (the threshold is relative to the shorter one). Two ways in:

- S at least as long as N must share ``need(|N|)`` of N's lexemes, so it misses at most
  ``|N| - need(|N|)`` of them (prefix filtering): it holds one of N's rare words (in fewer
  than NEAR_RARE_ROWS rows), or, missing every rare one, it misses at most ``k = |N| -
  need(|N|) - rare`` of the others, so it holds at least ``h`` of any ``k + h`` of them.
  The plan asks that of the ``k + h`` rarest others as conjunctions of ``h`` words (every
  way of choosing them, h = NEAR_HOLD), which the index answers from the rarest word lists
  without ranking: exact for every S at least as long as N.
- S shorter than N is read when it holds one of N's rare words, or ``h`` of those ``k + h``
  words. A shorter memory made only of N's common words is not read: no bound on N's words
  finds it without reading the rows of its common words, which costs what ranking does.

Counting rows (the rarity) must not touch what searches cache for their own pruning (counts
cached at store time would leave later searches pruning by stale counts): each engine counts
afresh, or reads its exact statistics tables.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

# A word held by fewer rows than this is rare: every row of the scope holding it is read.
NEAR_RARE_ROWS = 64
# How many of the rarest other words a conjunction holds (see the module's docstring): more
# reads more word lists, and reads fewer rows that share only a few common words.
NEAR_HOLD = 3
# At most this many conjunctions; past it, they hold fewer words each.
NEAR_MAX_CONJUNCTIONS = 64
# At most this many candidate rows are read (newest first).
NEAR_MAX_ROWS = 200
# The cosine signal for a memory without a scope: the nearest are taken over every scope and
# the global ones kept after, so while every one of them passes the threshold the nearest
# are asked again four times as many, up to this many (see ``widened``).
NEAR_WIDEST = 640


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


def plan(asked: NearWords, counts: list[int], hold: int = NEAR_HOLD) -> NearPlan | None:
    """The plan for the words of ``asked``; ``counts``: each word's rows when fewer than
    NEAR_RARE_ROWS, else any larger number that orders the common words by how common
    (an engine may estimate it). None when the memory has too few lexemes for any hint.
    ``hold``: the words a conjunction asks for (fewer when there would be too many)."""
    words = asked.words
    n = len(words)
    if n < max(asked.min_lexemes, 1):
        return None
    order = sorted(range(n), key=lambda i: (counts[i], i))
    rare = [i for i in order if counts[i] < NEAR_RARE_ROWS]
    misses = n - need(n, asked.threshold) - len(rare)  # of the others, by S as long as N
    if misses < 0:
        return NearPlan(tuple(words[i] for i in rare), ())
    hold = min(hold, n - len(rare) - misses)
    while hold > 1 and math.comb(misses + hold, hold) > NEAR_MAX_CONJUNCTIONS:
        hold -= 1
    others = order[len(rare) : len(rare) + misses + hold]
    conjunctions = tuple(
        tuple(words[i] for i in sorted(kept)) for kept in itertools.combinations(others, hold)
    )
    return NearPlan(tuple(words[i] for i in rare), conjunctions)


def narrower(asked: NearWords, counts: list[int], planned: NearPlan) -> NearPlan | None:
    """When ``planned`` named more than NEAR_MAX_ROWS rows (common words that go together,
    such as a phrase many memories repeat), the plan whose conjunctions ask for NEAR_HOLD
    more words each, still exact; None when none asks for more."""
    if not planned.all_of:
        return None
    held = len(planned.all_of[0])
    wider = plan(asked, counts, held + NEAR_HOLD)
    return wider if wider is not None and len(wider.all_of[0]) > held else None


def widened(
    nearest: Callable[[int], list[tuple[int, float]]],
    limit: int,
    scope: str | None,
    at_least: float | None,
) -> list[tuple[int, float]]:
    """``nearest(n)``: the n nearest (id, similarity), best first, over every scope when
    ``scope`` is None. Memories of other scopes could then fill all of them and crowd the
    global ones out: while every one of them is ``at_least`` this similar, ask for more."""
    found = nearest(limit)
    while scope is None and at_least is not None and limit < NEAR_WIDEST:
        if len(found) < limit or found[-1][1] < at_least:
            break
        limit *= 4
        found = nearest(limit)
    return found
