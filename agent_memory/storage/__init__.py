"""Where memories are kept: the Store seam (base.py) and its engines.

``open_store`` is the one way in: it picks the engine from the location (a
``postgresql://`` URL, else a SQLite file) and hands back a Store. Only the engine packages
import database drivers, and only for the engine a location names: a SQLite user never
imports psycopg.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agent_memory import DISTRIBUTION
from agent_memory.models import Pin
from agent_memory.storage.base import CREATE, EXISTING, READ, Reader, Store, pin_of

__all__ = ["CREATE", "EXISTING", "READ", "Reader", "Store", "open_reader", "open_store"]

# What an operator gets when a postgresql:// location meets an install without the extra.
POSTGRES_EXTRA = f"the PostgreSQL backend is not installed: pip install '{DISTRIBUTION}[postgres]'"


def _location(location: str | os.PathLike[str] | None) -> str | os.PathLike[str] | None:
    """``location``, else $AGENT_MEMORY_DB (which may hold a URL), else None (the default
    file)."""
    return location or os.environ.get("AGENT_MEMORY_DB") or None


def is_postgres(location: str | os.PathLike[str] | None) -> bool:
    """Whether ``location`` (default as open_store picks it) names a PostgreSQL database."""
    from agent_memory.storage.postgres.url import is_url

    return is_url(_location(location))


def _open_postgres(url: str, mode: str) -> Store:
    from agent_memory.errors import DatabaseOpenError
    from agent_memory.storage.postgres.url import redacted

    try:
        from agent_memory.storage.postgres.database import open_database
        from agent_memory.storage.postgres.store import PostgresStore
    except ImportError as exc:
        if exc.name not in ("psycopg", "pgvector") and "psycopg" not in str(exc):
            raise
        raise DatabaseOpenError(redacted(url), POSTGRES_EXTRA) from None
    return PostgresStore(open_database(url, mode=mode))


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
    if is_postgres(location):
        return _open_postgres(str(_location(location)), mode)
    from agent_memory.storage.sqlite.database import open_database
    from agent_memory.storage.sqlite.store import SqliteStore

    return SqliteStore(open_database(location, mode=mode))


def open_reader(location: str | os.PathLike[str] | None = None) -> Reader:
    """A read-only view of the existing store at ``location`` for the session brief,
    without the engine open_store builds. Raises as open_store in READ mode; a
    database of an older schema is migrated first (by open_store)."""
    if is_postgres(location):
        return _open_postgres(str(_location(location)), READ)  # a PostgresStore reads too
    from agent_memory.storage.sqlite.reader import open_reader as open_sqlite

    return open_sqlite(location)


def database_key(location: str | os.PathLike[str] | None = None) -> bytes | None:
    """The ``identity_key`` of the store at ``location`` (default as open_store picks it),
    read from the database without loading an engine and changing nothing; None when there
    is no database there yet, or one without an id (no daemon can be serving it). Raises
    DatabaseOpenError when it cannot be read."""
    if is_postgres(location):
        return _on_postgres(str(_location(location)), _postgres_identity)
    from agent_memory.storage.base import IDENTITY_KEY
    from agent_memory.storage.sqlite import database

    path = database.resolve_path(location)
    if path.is_dir():
        from agent_memory.errors import DatabaseOpenError

        raise DatabaseOpenError(path, "is a directory")
    return database.identity_key(path, database.read_meta(path).get(IDENTITY_KEY))


def ready_to_serve(location: str | os.PathLike[str] | None = None) -> bool:
    """Check the store at ``location`` without loading an engine: True when it can be
    opened after a server's first answer (nothing to create or migrate), False when it must
    be opened first. Raises as open_store for a location that cannot be used.
    A PostgreSQL database is always opened first (a server to reach, nothing to check
    cheaply without the driver).
    """
    if is_postgres(location):
        return False
    from agent_memory.storage.sqlite import database

    path, version = database.check(location)
    if version != database.head_revision():
        return False
    database.probe(path)
    return True


def quick_pin(location: str | os.PathLike[str] | None = None) -> Pin | None:
    """The embedding pin of the store at ``location``, read without loading an engine
    (``serve`` tells its client how searches will run before its first answer); for a
    PostgreSQL database, one libpq read of its ``meta`` table."""
    if is_postgres(location):
        return _on_postgres(str(_location(location)), _postgres_pin)
    from agent_memory.storage.sqlite import database

    return pin_of(database.read_meta(database.resolve_path(location)))


def _postgres_pin(conn: Any) -> Pin | None:
    if not conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0]:
        return None
    return pin_of(dict(conn.execute("SELECT key, value FROM meta").fetchall()))


def _postgres_identity(conn: Any) -> bytes | None:
    from agent_memory.storage.postgres.database import identity_key

    return identity_key(conn)


def _on_postgres(url: str, read: Callable[[Any], Any]) -> Any:
    """``read`` on one libpq connection to the database at ``url``."""
    from agent_memory.errors import DatabaseOpenError
    from agent_memory.storage.postgres.url import redacted

    try:
        from agent_memory.storage.postgres.database import connect
    except ImportError:
        raise DatabaseOpenError(redacted(url), POSTGRES_EXTRA) from None
    import psycopg

    try:
        with connect(url) as conn:
            return read(conn)
    except psycopg.Error as exc:
        detail = str(exc).strip().replace(url, redacted(url))
        raise DatabaseOpenError(redacted(url), detail.splitlines()[0] if detail else "") from exc
