"""How results are ordered: time decay, and the fusion of a hybrid search's two rankings.

Pure functions and the constants they use; every store ranks with these (SQL stores write
the decay formula in their own dialect from the same constants).

``decay = exp(-ln 2 * max(now - last_accessed, 0) / half_life)``, in integer unix seconds.
Decay only orders results; it never deletes anything. It lies in (0, MAX_DECAY]: a keyword
search scores ``decay - bm25``, so a row's decay can move it by at most MAX_DECAY, the bound
every keyword shortcut reasons with.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from agent_memory.vocabulary import PINNED_TYPES

HALF_LIFE_SECS = 30 * 24 * 3600  # 2,592,000 s: PATTERN, ERROR, TODO
PINNED_HALF_LIFE_FACTOR = 6
PINNED_HALF_LIFE_SECS = PINNED_HALF_LIFE_FACTOR * HALF_LIFE_SECS  # 180 days
BASE_WEIGHT = 1.0
PINNED_BASE_WEIGHT = 2.0
MAX_DECAY = 1.0
# Hybrid search: each leg keeps min(LEG_FACTOR x limit, MAX_LEG) candidates, and a memory
# at 1-based rank r in a leg scores 1 / (RRF_K + r).
LEG_FACTOR = 4
MAX_LEG = 800
RRF_K = 60
SEARCH_MODE_KEYWORD = "keyword"
SEARCH_MODE_HYBRID = "hybrid"


def base_weight(memory_type: str) -> float:
    return PINNED_BASE_WEIGHT if memory_type in PINNED_TYPES else BASE_WEIGHT


def half_life(memory_type: str) -> int:
    return PINNED_HALF_LIFE_SECS if memory_type in PINNED_TYPES else HALF_LIFE_SECS


def decay_rate(memory_type: str) -> float:
    """-ln 2 / half-life: decay is ``exp(age * rate)`` (a multiplication, where SQL stores
    evaluate it for every matching row)."""
    return -math.log(2) / half_life(memory_type)


def decay(memory_type: str, last_accessed: int, now: int) -> float:
    return math.exp(max(now - last_accessed, 0) * decay_rate(memory_type))


def leg_size(limit: int) -> int:
    """How many candidates each leg of a hybrid search keeps."""
    return min(LEG_FACTOR * limit, MAX_LEG)


def rrf(rankings: list[list[int]]) -> dict[int, float]:
    """Reciprocal rank fusion: the sum over rankings of 1 / (RRF_K + rank), ranks from 1."""
    fused: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for rank, memory_id in enumerate(ranking, start=1):
            fused[memory_id] += 1.0 / (RRF_K + rank)
    return dict(fused)


def fuse(
    keyword: list[int], nearest: list[int], rows: dict[int, dict[str, Any]], limit: int
) -> list[dict[str, Any]]:
    """The hybrid page: RRF of the two rankings times each row's decay, best first.

    ``rows`` holds the rows that exist and pass the filters, with ``decay_score`` as of the
    query: an id missing from it (forgotten, or filtered out) drops out of both legs.
    """
    fused = rrf([[i for i in keyword if i in rows], [i for i in nearest if i in rows]])
    best = sorted(fused, key=lambda i: (-fused[i] * rows[i]["decay_score"], i))
    return [rows[memory_id] for memory_id in best[:limit]]
