"""Who is acting: the name a memory's ``created_by`` and ``updated_by`` record.

A transport that knows who sent a request (the daemon, from a bearer token) runs the
service call inside ``acting_as(name)``; everything else (stdio, the command line, the
daemon on loopback without tokens) acts as ``local``. A context variable rather than an
argument of every operation: it follows the call into threads that copy the context
(anyio's worker threads do), and a call that sets none acts as ``local``.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agent_memory.contract.fields import LOCAL

# The fields that say who wrote a memory; an import fills those its record leaves out.
WRITER_FIELDS = ("created_by", "updated_by")

_ACTOR: ContextVar[str] = ContextVar("agent_memory_actor", default=LOCAL)


def current() -> str:
    """The name of whoever the running call acts for."""
    return _ACTOR.get()


@contextmanager
def acting_as(name: str) -> Iterator[None]:
    """Run the block as ``name`` (a token's name)."""
    reset = _ACTOR.set(name)
    try:
        yield
    finally:
        _ACTOR.reset(reset)


def stamp(record: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """An imported record with its writers: the file's, else whoever imports it."""
    for name in WRITER_FIELDS:
        if record.get(name) is None:
            record[name] = current()
    return record
