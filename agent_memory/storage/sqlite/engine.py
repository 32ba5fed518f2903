"""The SQLite engine's entry (storage.engines): a location is a file path, or None for the
default file (storage.sqlite.database.resolve_path). Reads the file's header and meta
table directly where it can, so that ``serve`` answers before SQLAlchemy is imported."""

from __future__ import annotations

from agent_memory.contract.errors import DatabaseOpenError
from agent_memory.contract.models import Pin
from agent_memory.storage.base import IDENTITY_KEY, Reader, Store, pin_of
from agent_memory.storage.engines import Location


def open_store(location: Location, mode: str) -> Store:
    from agent_memory.storage.sqlite.database import open_database
    from agent_memory.storage.sqlite.store import SqliteStore

    return SqliteStore(open_database(location, mode=mode))


def open_reader(location: Location) -> Reader:
    from agent_memory.storage.sqlite.reader import open_reader as open_sqlite

    return open_sqlite(location)


def database_key(location: Location) -> bytes | None:
    from agent_memory.storage.sqlite import database

    path = database.resolve_path(location)
    if path.is_dir():
        raise DatabaseOpenError(path, "is a directory")
    return database.identity_key(path, database.read_meta(path).get(IDENTITY_KEY))


def ready_to_serve(location: Location) -> bool:
    from agent_memory.storage.sqlite import database

    path, version = database.check(location)
    if version != database.head_revision():
        return False
    database.probe(path)
    return True


def quick_pin(location: Location) -> Pin | None:
    from agent_memory.storage.sqlite import database

    return pin_of(database.read_meta(database.resolve_path(location)))


def describe(location: Location) -> str:
    return str(location) if location is not None else "the default database file"
