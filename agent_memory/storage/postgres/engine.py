"""The PostgreSQL engine's entry (storage.engines): a location is a ``postgresql://`` URL.
The driver is imported only when a database is reached; without the ``postgres`` extra
every call is one DatabaseOpenError saying how to install it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_memory import DISTRIBUTION
from agent_memory.contract.errors import DatabaseOpenError
from agent_memory.contract.models import Pin
from agent_memory.storage.base import Reader, Store, pin_of
from agent_memory.storage.engines import Location
from agent_memory.storage.postgres.url import redacted

# What an operator gets when a postgresql:// location meets an install without the extra.
POSTGRES_EXTRA = f"the PostgreSQL backend is not installed: pip install '{DISTRIBUTION}[postgres]'"


def open_store(location: Location, mode: str) -> Store:
    url = str(location)
    try:
        from agent_memory.storage.postgres.database import open_database
        from agent_memory.storage.postgres.store import PostgresStore
    except ImportError as exc:
        if exc.name not in ("psycopg", "pgvector") and "psycopg" not in str(exc):
            raise
        raise DatabaseOpenError(redacted(url), POSTGRES_EXTRA) from None
    return PostgresStore(open_database(url, mode=mode))


def open_reader(location: Location) -> Reader:
    from agent_memory.storage.base import READ

    return open_store(location, READ)  # a PostgresStore reads too


def database_key(location: Location) -> bytes | None:
    return _on_postgres(str(location), _identity)


def ready_to_serve(location: Location) -> bool:
    """Always False: a server to reach, nothing to check cheaply without the driver."""
    return False


def quick_pin(location: Location) -> Pin | None:
    """One libpq read of the database's ``meta`` table."""
    return _on_postgres(str(location), _pin)


def describe(location: Location) -> str:
    return redacted(str(location))


def _pin(conn: Any) -> Pin | None:
    if not conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0]:
        return None
    return pin_of(dict(conn.execute("SELECT key, value FROM meta").fetchall()))


def _identity(conn: Any) -> bytes | None:
    from agent_memory.storage.postgres.database import identity_key

    return identity_key(conn)


def _on_postgres(url: str, read: Callable[[Any], Any]) -> Any:
    """``read`` on one libpq connection to the database at ``url``."""
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
