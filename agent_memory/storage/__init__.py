"""Where memories are kept: the Store seam (base.py) and its engines.

``open_store`` is the one way in: it picks the engine from the location and hands back a
Store. Only the engine packages import database drivers.
"""

from __future__ import annotations

import os

from agent_memory.models import Pin
from agent_memory.storage.base import CREATE, EXISTING, READ, Reader, Store, pin_of

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
    from agent_memory.storage.sqlite.database import open_database
    from agent_memory.storage.sqlite.store import SqliteStore

    return SqliteStore(open_database(location, mode=mode))


def open_reader(location: str | os.PathLike[str] | None = None) -> Reader:
    """A read-only view of the existing store at ``location`` for the session brief,
    without the engine open_store builds. Raises as open_store in READ mode; a
    database of an older schema is migrated first (by open_store)."""
    from agent_memory.storage.sqlite.reader import open_reader as open_sqlite

    return open_sqlite(location)


def database_id(location: str | os.PathLike[str] | None = None) -> str:
    """The ``identity`` the store at ``location`` (default as open_store picks it) has,
    computed without opening it."""
    from agent_memory.storage.sqlite import database

    return database.identity(database.resolve_path(location))


def ready_to_serve(location: str | os.PathLike[str] | None = None) -> bool:
    """Check the store at ``location`` without loading an engine: True when it can be
    opened after a server's first answer (nothing to create or migrate), False when it must
    be opened first. Raises as open_store for a location that cannot be used.
    """
    from agent_memory.storage.sqlite import database

    path, version = database.check(location)
    if version != database.head_revision():
        return False
    database.probe(path)
    return True


def quick_pin(location: str | os.PathLike[str] | None = None) -> Pin | None:
    """The embedding pin of the store at ``location``, read without loading an engine
    (``serve`` tells its client how searches will run before its first answer)."""
    from agent_memory.storage.sqlite import database

    return pin_of(database.read_meta(database.resolve_path(location)))
