"""Supersede that ranks: a memory another one supersedes (the to_id of a
supersedes relation) leaves search and list, unless ``include_superseded: true`` asks for
it; it stays reachable by id (get). Asked for, every result carries ``superseded_by``: the
ids of the memories replacing it (empty for a current one). Unlinking restores it. A search
or list filtered by a scope counts only the supersessions made by memories of that scope:
one superseded only from outside stays current there.

How: storage.superseded (a search does it in its snapshot; a list here).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from agent_memory.contract.errors import InvalidArgument, InvalidType
from agent_memory.contract.models import Filters
from agent_memory.contract.vocabulary import MAX_SUPERSEDES, SQLITE_INT_MAX
from agent_memory.service import actor, validate
from agent_memory.storage.base import MissingMemory, Store
from agent_memory.storage.hygiene import superseded


def ids(args: Mapping[str, Any]) -> tuple[int, ...]:
    """memory_store's ``supersedes``: a list of memory ids, each once; () when absent."""
    value = args.get("supersedes")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidType(
            f"supersedes must be an array of memory ids (got {validate.shown(value)})"
        )
    if len(value) > MAX_SUPERSEDES:
        raise InvalidArgument(
            f"supersedes must name at most {MAX_SUPERSEDES} memories (got {len(value)})"
        )
    for n, item in enumerate(value):
        validate.integer({f"supersedes[{n}]": item}, f"supersedes[{n}]", 1, SQLITE_INT_MAX)
    return tuple(dict.fromkeys(value))


def how(args: Mapping[str, Any]) -> str:
    """What a search or a list does with superseded memories (storage.superseded)."""
    return superseded.MARK if validate.flag(args, "include_superseded") else superseded.HIDE


def listed(
    store: Store,
    filters: Filters,
    limit: int | None,
    before: tuple[int, int] | None,
    how: str,
) -> Iterator[dict[str, Any]]:
    """A list's rows (store.memories) as storage.superseded.current makes them; a list
    filtered by a scope counts only what memories of that scope supersede."""
    by = store.superseded_by(None, filters.scope)
    asked = None if limit is None else superseded.room(limit, by, how)
    return superseded.current(store.memories(filters, asked, before), by, limit, how)


@contextmanager
def refused(older: tuple[int, ...]) -> Iterator[None]:
    """A store naming a memory that is not there, in ``supersedes``: refused, as bad input;
    and so is one the caller may not name (service.actor), first (the store finds missing
    ones in the same order)."""
    try:
        missing = actor.hidden(*older)
        if missing is not None:
            raise MissingMemory(missing)
        yield
    except MissingMemory as exc:
        raise InvalidArgument(
            f"supersedes names no memory with id {exc.memory_id}; nothing was stored"
        ) from None
