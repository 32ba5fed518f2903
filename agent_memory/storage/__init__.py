"""Where memories are kept: the Store seam (base.py) and its engines.

``open_store`` is the one way in: it picks the engine from the location and hands back a
Store. Only the engine packages import database drivers.
"""

from __future__ import annotations

import os

from agent_memory.storage.base import Reader, Store


def open_store(location: str | os.PathLike[str] | None = None, *, existing: bool = False) -> Store:
    """The store at ``location`` (default: $AGENT_MEMORY_DB, else the user's data dir),
    created or migrated as needed.

    Raises DatabaseOpenError for a location that cannot be used and SchemaTooNew for a
    database written by a newer agent-memory, which is then left untouched. ``existing``
    (commands that read, or change what is there): DatabaseMissing when there is no
    database, creating nothing; a database this process cannot write is opened read-only
    (``Store.read_only``).
    """
    from agent_memory.storage.sqlite.database import open_database
    from agent_memory.storage.sqlite.store import SqliteStore

    return SqliteStore(open_database(location, existing=existing))


def open_reader(location: str | os.PathLike[str] | None = None) -> Reader:
    """A read-only view of the existing store at ``location`` for the session brief,
    without the engine open_store builds. Raises as open_store with ``existing``; a
    database of an older schema is migrated first (by open_store)."""
    from agent_memory.storage.sqlite.reader import open_reader as open_sqlite

    return open_sqlite(location)


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
