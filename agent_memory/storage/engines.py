"""The storage engines, keyed by the location they serve: a URL scheme, else a SQLite file.

An engine is a package under storage/ with an ``engine`` module that opens its stores
(:class:`EngineEntry`). That module imports no database driver at import time, so asking
which engine a location names, or how to show it in a log, costs no driver import: a SQLite
user never imports psycopg. A third engine is one :data:`ENGINES` row and its own package.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any, Protocol, cast

from agent_memory.contract.models import Pin
from agent_memory.settings import DB_ENV
from agent_memory.storage.base import Reader, Store

Location = str | os.PathLike[str] | None
# Where an open_store location comes from when none is given (it may hold a URL).


class EngineEntry(Protocol):
    """What an engine's ``engine`` module offers (storage/__init__.py documents each)."""

    def open_store(self, location: Location, mode: str) -> Store: ...

    def open_reader(self, location: Location) -> Reader: ...

    def database_key(self, location: Location) -> bytes | None: ...

    def ready_to_serve(self, location: Location) -> bool: ...

    def quick_pin(self, location: Location) -> Pin | None: ...

    def describe(self, location: Location) -> str: ...


@dataclass(frozen=True)
class Engine:
    """One engine: its name, the URL schemes it serves (none: the default, SQLite files),
    and the module that opens its stores (imported when first used)."""

    name: str
    schemes: tuple[str, ...]
    module: str

    def serves(self, location: Location) -> bool:
        """Whether ``location`` is one of this engine's URLs."""
        return isinstance(location, str) and location.lower().startswith(
            tuple(f"{scheme}://" for scheme in self.schemes)
        )

    def entry(self) -> EngineEntry:
        return cast(EngineEntry, importlib.import_module(self.module))


# The URL engines first, then the default: a location no scheme claims is a SQLite file.
ENGINES = (
    Engine("postgresql", ("postgresql", "postgres"), "agent_memory.storage.postgres.engine"),
    Engine("sqlite", (), "agent_memory.storage.sqlite.engine"),
)


def located(location: Location) -> Location:
    """``location``, else $AGENT_MEMORY_DB, else None (the default file)."""
    return location or os.environ.get(DB_ENV) or None


def engine_for(location: Location) -> Engine:
    """The engine of ``location`` (default as open_store picks it)."""
    found = located(location)
    return next((e for e in ENGINES if e.serves(found)), ENGINES[-1])


def is_url(location: Any) -> bool:
    """Whether ``location`` is a URL some engine serves (kept as written, not as a path)."""
    return any(engine.serves(location) for engine in ENGINES)


def describe(location: Location) -> str:
    """``location`` as logs and messages show it (a URL without its password)."""
    return engine_for(location).entry().describe(located(location))
