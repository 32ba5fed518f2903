"""Superseded memories in a search or a list: a memory another one supersedes
(the to_id of a supersedes relation) is left out (HIDE), or kept and marked with
``superseded_by``, the ids replacing it (MARK); KEEP changes nothing (the store's own
callers). Done around the ranking, in the same snapshot: the ranking is asked for as many
more results as there are superseded memories (at most MAX_EXTRA more) and those are
dropped, so that what remains ranks as it would have, and a store that has nothing
superseded pays one read of the links.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from agent_memory.contract.vocabulary import MAX_LIMIT

KEEP, HIDE, MARK = "keep", "hide", "mark"
# A search asks its ranking for at most this many results beyond its limit, to make up for
# superseded ones dropped: with more superseded memories than that ranking high, a page
# may come up short.
MAX_EXTRA = 4 * MAX_LIMIT


def room(limit: int, by: Mapping[int, Any], how: str) -> int:
    """What to ask the ranking for, so that ``limit`` remain once the superseded are dropped."""
    if how != HIDE or not by:
        return limit
    return limit + min(len(by), MAX_EXTRA)


def current(
    rows: Iterable[dict[str, Any]], by: Mapping[int, list[int]], limit: int | None, how: str
) -> Iterator[dict[str, Any]]:
    """At most ``limit`` of ``rows``: those in ``by`` left out (HIDE), or every row with
    its ``superseded_by`` (MARK)."""
    taken = 0
    for row in rows:
        if limit is not None and taken >= limit:
            return
        if how == MARK:
            row["superseded_by"] = by.get(row["id"], [])
        elif how == HIDE and row["id"] in by:
            continue
        taken += 1
        yield row
