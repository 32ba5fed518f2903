"""History and as-of: memory_history lists a memory's versions, and ``as_of`` on
search, list and get answers as the store stood then (storage.history keeps the versions
and says what "as it stood" means).

- An update, or a store merged into the memory as its duplicate, made after the moment is
  undone in the answer; a memory stored after it is absent; one superseded only later is
  present; one expired by then is absent. Forgotten and swept memories are gone, history
  and all.
- A search as of T ranks by today's index (the keyword index and vectors hold the present
  text), asked for AS_OF_ROOM more results to make up for those that did not stand then,
  each shown as it stood. A memory changed since T is also found by the words of its text
  then (every word of the query in its content or tags), after the ranked ones. Decay is
  computed as of T; the results' use is not recorded (looking back is not a use).
- A list as of T reads the memories created by T, newest first, filtered as they stood.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Generator, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from agent_memory.contract import wire
from agent_memory.contract.errors import InvalidArgument, InvalidType
from agent_memory.contract.models import Filters, SearchPage
from agent_memory.contract.models import related as _related
from agent_memory.contract.vocabulary import MAX_LIMIT, SQLITE_INT_MAX
from agent_memory.query import ParsedQuery
from agent_memory.ranking.relevance import Words
from agent_memory.service import validate
from agent_memory.storage.base import AsOf, Store
from agent_memory.storage.hygiene import superseded as superseded_rows

# A search as of T asks its ranking for FIRST_ROOM more results than its limit, to make up
# for those stored after T, expired or superseded by then, and for ROOM_GROWTH times as many
# while too few stood then, up to AS_OF_ROOM more (a larger page costs the ranking more);
# it considers at most CHANGED_SCAN memories changed since T for the
# words of their text then.
FIRST_ROOM = 10
ROOM_GROWTH = 4
AS_OF_ROOM = 4 * MAX_LIMIT
CHANGED_SCAN = 1_000
# A list as of T reads its memories' versions this many at a time.
LIST_CHUNK = 200
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"-?[0-9]+")
_OPERATORS = frozenset({"and", "or", "not", "near"})


def within(at: float, now: int) -> bool:
    """Whether ``at`` (Unix seconds) is a moment the store can have seen: from 0 to now.
    ``as_of`` takes no other, and an import from another server keeps no other as a
    memory's time (NaN and the infinities are none)."""
    return 0 <= at <= now


def moment(args: Mapping[str, Any], now: int) -> int | None:
    """``as_of``: Unix seconds (an integer, or its digits as text) or an ISO 8601 date-time
    (UTC when it names no offset), from 0 to now; None when absent."""
    value = args.get("as_of")
    if value is None:
        return None
    at: int | None = None
    if isinstance(value, str):
        validate.unicode(value, "as_of")
    if isinstance(value, wire.LongInteger):
        at = None  # an integer too long for any range
    elif isinstance(value, int) and not isinstance(value, bool):
        at = value
    elif isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        at = int(value.strip()) if len(value) < 30 else None
    elif isinstance(value, str):
        at = _iso(value)
    else:
        raise InvalidType(
            f"as_of must be Unix seconds or an ISO 8601 date-time (got {validate.shown(value)})"
        )
    if at is None or not within(at, now):
        raise InvalidArgument(
            f"as_of must be a moment between 0 and now ({now}), as Unix seconds or an ISO "
            f"8601 date-time such as 2026-12-01T09:00:00Z (got {validate.shown(value)})"
        )
    return at


def _iso(value: str) -> int | None:
    try:
        parsed = datetime.fromisoformat(value.strip().replace("z", "Z"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return int(parsed.timestamp())
    except (ValueError, OverflowError):
        return None


def versions(store: Store, memory_id: int) -> dict[str, Any]:
    """memory_history's answer: the versions oldest first, numbered from 1, the current one
    last; or not found."""
    found = store.history(memory_id)
    if found is None:
        return {"id": memory_id, "found": False, "reason": "not_found"}
    numbered = [{"version": n, **v} for n, v in enumerate(found, start=1)]
    return {"id": memory_id, "versions": numbered}


def purge(store: Store, memory_id: int) -> dict[str, Any]:
    """Every earlier version of a memory dropped, the current one kept: how many (0 when it
    had none); or not found."""
    purged = store.purge_history(memory_id)
    if purged is None:
        return {"id": memory_id, "found": False, "reason": "not_found"}
    return {"id": memory_id, "purged": purged}


def passes(memory: Mapping[str, Any], filters: Filters) -> bool:
    """Whether a memory, as it stood, passes a search's or a list's filters."""
    if filters.memory_type is not None and memory["type"] != filters.memory_type:
        return False
    if filters.tag is not None and filters.tag not in memory["tags"]:
        return False
    if filters.scope is not None and memory["scope"] != filters.scope:
        return False
    by = filters.by
    return by is None or by in (memory.get("created_by"), memory.get("updated_by"))


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _says(memory: Mapping[str, Any], words: set[str]) -> bool:
    """Whether every word of the query is in the memory's content or tags."""
    said = _words(memory["content"]) | _words(" ".join(memory["tags"]))
    return bool(words) and words <= said


def _superseded(rows: list[dict[str, Any]], by: Mapping[int, list[int]], how: str) -> list:
    return list(superseded_rows.current(rows, by, None, how))


def searched(
    store: Store,
    at: int,
    query: ParsedQuery,
    embedding: Any,
    *,
    limit: int,
    filters: Filters,
    superseded: str,
    **options: Any,
) -> SearchPage:
    """The search as the store stood at ``at`` (see the module doc): the ranking is asked for
    FIRST_ROOM more results, then for ROOM_GROWTH times as many while too few of those stood
    then, up to AS_OF_ROOM more. A search of the store as it is now never comes here."""
    stored = dataclasses.replace(filters, created_until=at)  # before the ranking's cut
    options.update(now=at, filters=stored, superseded=superseded_rows.KEEP)
    words = _words(query.text) - _OPERATORS
    asked = limit + FIRST_ROOM
    while True:
        page = store.search(query, embedding, limit=asked, **options)
        view = store.as_of(at, [r["id"] for r in page.results], CHANGED_SCAN, filters.scope)
        rows = _stood(page.results, view, filters)
        rows += _said(store, at, [m["id"] for m in view.changed if _says(m, words)], filters)
        rows = _superseded(rows, view.superseded, superseded)
        if len(rows) >= limit or len(page.results) < asked or asked >= limit + AS_OF_ROOM:
            why = {r["id"]: page.why.get(r["id"]) or _by_words(r, page.words) for r in rows[:limit]}
            return dataclasses.replace(page, results=rows[:limit], why=why)
        asked = min(limit + AS_OF_ROOM, asked * ROOM_GROWTH)


def _by_words(memory: Mapping[str, Any], words: Words | None) -> dict[str, Any]:
    """Why a memory found by its words then is there: neither leg ranked it (its text has
    changed since), so its keyword share is read from its text then (every word of the
    query is in it: a whole share when the query is FTS5 syntax)."""
    decay = memory["decay_score"]
    match = None if words is None else words.match(memory["content"], memory["tags"])
    share = 1.0 if match is None else match.share
    keyword = {
        "rank": None,
        "bm25": None,
        "share": share,
        "words": [] if match is None else list(match.words),
        "together": [] if match is None else list(match.together),
    }
    reason = f"holds the query's words in its text as it stood then ({round(100 * share)}%)"
    return {
        "keyword": keyword,
        "vector": None,
        "decay": decay,
        "score": share * decay,
        "reason": reason,
    }


def _said(store: Store, at: int, ids: list[int], filters: Filters) -> list[dict[str, Any]]:
    """Those of ``ids`` (memories whose text then holds the query's words) that stood then
    and passed the filters then, as they stood."""
    if not ids:
        return []
    stood = store.as_of(at, ids).memories
    return [stood[i] for i in ids if i in stood and passes(stood[i], filters)]


def _stood(ranked: list[dict[str, Any]], view: AsOf, filters: Filters) -> list[dict[str, Any]]:
    """The ranked results that stood then and passed the filters then, as they stood, with
    their decay as of then."""
    rows = []
    for result in ranked:
        stood = view.memories.get(result["id"])
        if stood is not None and passes(stood, filters):
            rows.append({**stood, "decay_score": result["decay_score"]})
    return rows


def listed(
    store: Store,
    at: int,
    filters: Filters,
    limit: int | None,
    before: tuple[int, int] | None,
    how: str,
) -> Generator[dict[str, Any], None, None]:
    """The list as of ``at``: the memories created by then, newest first, as they stood."""
    point = (at, SQLITE_INT_MAX) if before is None else min(before, (at, SQLITE_INT_MAX))
    stream = store.memories(Filters(memory_type=filters.memory_type), None, point)
    taken = 0
    for chunk in _chunks(stream, LIST_CHUNK):
        view = store.as_of(at, [m["id"] for m in chunk], scope=filters.scope)
        stood = [view.memories[m["id"]] for m in chunk if m["id"] in view.memories]
        for memory in _superseded([m for m in stood if passes(m, filters)], view.superseded, how):
            if limit is not None and taken >= limit:
                return
            taken += 1
            yield memory


def _chunks(rows: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def got(store: Store, memory_id: int, at: int, relations: int) -> dict[str, Any]:
    """get as of ``at``: the memory as it stood, with the relations made by then."""
    found = store.get(memory_id, relations)
    stood = store.as_of(at, [memory_id]).memories.get(memory_id)
    if found is None or stood is None:
        return {"id": memory_id, "found": False, "reason": "not_found"}
    memory, edges = found
    made = store.links_at(memory_id, at)
    kept = [e for e in edges if _made(e, memory_id, made)]
    return {**memory, **stood, "related": [_related(e) for e in kept]}


def _made(edge: Mapping[str, Any], memory_id: int, made: set[tuple[int, int, str]]) -> bool:
    ends: Sequence[tuple[int, int]] = (
        [(memory_id, edge["id"])] if edge["direction"] == "out" else [(edge["id"], memory_id)]
    )
    if edge["kind"] == "relates_to":
        ends = [(memory_id, edge["id"]), (edge["id"], memory_id)]
    return any((a, b, edge["kind"]) in made for a, b in ends)
