"""How memories fade: exponential decay on the time since last use.

``decay = exp(-ln 2 * max(now - last_accessed, 0) / half_life)``, in integer unix seconds.
Decay only orders results; it never deletes anything. The repository evaluates the formula
in SQL (one expression, shared by search ranking and the sweep) from these constants.
"""

from __future__ import annotations

from agent_memory.vocabulary import PINNED_TYPES

HALF_LIFE_SECS = 30 * 24 * 3600  # 2,592,000 s: PATTERN, ERROR, TODO
PINNED_HALF_LIFE_FACTOR = 6
PINNED_HALF_LIFE_SECS = PINNED_HALF_LIFE_FACTOR * HALF_LIFE_SECS  # 180 days
BASE_WEIGHT = 1.0
PINNED_BASE_WEIGHT = 2.0


def base_weight(memory_type: str) -> float:
    return PINNED_BASE_WEIGHT if memory_type in PINNED_TYPES else BASE_WEIGHT
