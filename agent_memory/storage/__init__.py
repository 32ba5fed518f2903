"""Where memories are kept: the Store seam (base.py) and its engines (engines.py).

``open_store`` is the one way in: the engine registry picks the engine from the location
(a ``postgresql://`` URL, else a SQLite file) and that engine hands back a Store. Only the
engine packages import database drivers, and only for the engine a location names: a SQLite
user never imports psycopg.
"""

from __future__ import annotations

import os

from agent_memory.contract.models import Pin
from agent_memory.storage.base import CREATE, EXISTING, READ, Reader, Store
from agent_memory.storage.engines import engine_for, located

__all__ = ["CREATE", "EXISTING", "READ", "Reader", "Store", "open_reader", "open_store"]


def open_store(location: str | os.PathLike[str] | None = None, *, mode: str = CREATE) -> Store:
    """The store at ``location`` (default: $AGENT_MEMORY_DB, else the user's data dir),
    migrated as needed; with ``mode``:

    - CREATE: created when there is none;
    - EXISTING (commands that change what is there): DatabaseMissing when there is none,
      having created nothing;
    - READ (commands that only read): as EXISTING, and a database this process cannot
      write is opened read-only (``Store.read_only``).

    Raises DatabaseOpenError for a location that cannot be used and SchemaTooNew for a
    database written by a newer agent-memory, which is then left untouched.
    """
    return engine_for(location).entry().open_store(located(location), mode)


def open_reader(location: str | os.PathLike[str] | None = None) -> Reader:
    """A read-only view of the existing store at ``location`` for the session brief,
    without the engine open_store builds. Raises as open_store in READ mode; a
    database of an older schema is migrated first (by open_store)."""
    return engine_for(location).entry().open_reader(located(location))


def database_key(location: str | os.PathLike[str] | None = None) -> bytes | None:
    """The ``identity_key`` of the store at ``location`` (default as open_store picks it),
    read from the database without loading an engine and changing nothing; None when there
    is no database there yet, or one without an id (no daemon can be serving it). Raises
    DatabaseOpenError when it cannot be read."""
    return engine_for(location).entry().database_key(located(location))


def ready_to_serve(location: str | os.PathLike[str] | None = None) -> bool:
    """Check the store at ``location`` without loading an engine: True when it can be
    opened after a server's first answer (nothing to create or migrate), False when it must
    be opened first. Raises as open_store for a location that cannot be used."""
    return engine_for(location).entry().ready_to_serve(located(location))


def quick_pin(location: str | os.PathLike[str] | None = None) -> Pin | None:
    """The embedding pin of the store at ``location``, read without loading an engine
    (``serve`` tells its client how searches will run before its first answer)."""
    return engine_for(location).entry().quick_pin(located(location))
