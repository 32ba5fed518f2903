"""Who is acting: the name a memory's ``created_by`` and ``updated_by`` record, and the
memories it may name.

A transport that knows who sent a request (the daemon, from a bearer token) runs the
service call inside ``acting_as(name)``; everything else (stdio, the command line, the
daemon on loopback without tokens) acts as ``local``. A context variable rather than an
argument of every operation: it follows the call into threads that copy the context
(anyio's worker threads do), and a call that sets none acts as ``local``, naming any memory.

A scope-bound token names only its scope's memories (service.access gives ``visible``): an
operation that names a memory (an id, a link's end, ``supersedes``) asks :func:`hidden` once
its arguments are checked, and answers a hidden id exactly as one that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agent_memory.contract.fields import LOCAL

# The fields that say who wrote a memory; an import fills those its record leaves out.
WRITER_FIELDS = ("created_by", "updated_by")

_ACTOR: ContextVar[str] = ContextVar("agent_memory_actor", default=LOCAL)
_VISIBLE: ContextVar[Callable[[int], bool] | None] = ContextVar(
    "agent_memory_visible", default=None
)


def current() -> str:
    """The name of whoever the running call acts for."""
    return _ACTOR.get()


@contextmanager
def acting_as(name: str, visible: Callable[[int], bool] | None = None) -> Iterator[None]:
    """Run the block as ``name`` (a token's name), naming only the memories ``visible``
    says it may (None: any)."""
    reset, shown = _ACTOR.set(name), _VISIBLE.set(visible)
    try:
        yield
    finally:
        _VISIBLE.reset(shown)
        _ACTOR.reset(reset)


def hidden(*ids: int) -> int | None:
    """The first of ``ids`` the running call may not name (None when it may name them all)."""
    visible = _VISIBLE.get()
    return None if visible is None else next((i for i in ids if not visible(i)), None)


def stamp(record: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """An imported record with its writers: the file's, else whoever imports it."""
    for name in WRITER_FIELDS:
        if record.get(name) is None:
            record[name] = current()
    return record
