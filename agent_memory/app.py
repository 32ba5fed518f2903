"""Putting the parts together: the settings every command shares, logging, and the
service opened over the chosen store and embedder. The one place that knows every part
(commands call it; nothing below the transports imports it).
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import click

from agent_memory import embedders
from agent_memory.contract.errors import (
    BackupFailed,
    DatabaseMissing,
    DatabaseOpenError,
    SchemaTooNew,
    StorageError,
)
from agent_memory.settings import Settings
from agent_memory.storage import engines
from agent_memory.storage.base import CREATE

if TYPE_CHECKING:  # the service (and SQLAlchemy) load when a command opens it
    from agent_memory.embedders.base import Embedder
    from agent_memory.service.core import MemoryService
    from agent_memory.service.uses import Uses

# serve opens its service this long after its first answer (see OpeningService).
OPEN_AFTER_ANSWER_SECS = 0.1
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries' loggers shown only from this level up, unless --log-level debug. waitress's
# queue logger warns "Task queue depth is N" each time a request waits for one of the
# daemon's threads: a page load sends about ten requests at once (the page, its files, the
# list, the counts, /health) and each waits briefly. More threads would not make
# that news either (a graph of two hops sends 17 at once; one SQLite writer, one GIL), and a
# daemon that is really behind shows it in its answer times, so the warning is off.
QUIET_LOGGERS = {"alembic": logging.WARNING, "waitress.queue": logging.ERROR}

log = logging.getLogger("agent_memory")


class Location(click.ParamType):
    """``--db``: a SQLite file (a Path), or a URL of an engine (``postgresql://``) kept as
    written (a Path would fold its ``//``)."""

    name = "path_or_url"

    def convert(self, value: Any, param: Any, ctx: Any) -> Path | str:
        if isinstance(value, Path):
            return value
        text = str(value)
        if engines.is_url(text):
            return text
        return Path(text)


def configure_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=level.upper(), format=LOG_FORMAT, force=True)
    if level.lower() != "debug":
        for name, quiet in QUIET_LOGGERS.items():
            logging.getLogger(name).setLevel(quiet)


def fail(message: str) -> NoReturn:
    """One clear line on stderr and exit 1: never a traceback for an operator's problem."""
    click.echo(message, err=True)
    sys.exit(1)


def open_service(
    settings: Settings, *, mode: str = CREATE, embedding: bool = True, serving: bool = False
) -> MemoryService:
    """``mode``: EXISTING for a command that changes what is there, READ for one that only
    reads (storage.open_store). ``embedding``: whether the command makes or compares vectors
    (the servers, store, an update of content, search, embed, reembed); any other gets no
    embedder, so nothing asks Ollama or loads the local model for it. ``serving``: a server,
    which writes search results' uses behind its answers (service/uses.py); it must close
    the service to write the last ones."""
    try:
        return build_service(settings, mode=mode, embedding=embedding, serving=serving)
    except (DatabaseMissing, DatabaseOpenError, SchemaTooNew, BackupFailed) as exc:
        fail(str(exc))


def choose_embedder(settings: Settings, store: Any) -> Embedder | None:
    """The embedder for this store (embedders.choose), told by the pin it holds."""
    from agent_memory.contract.errors import StorageFault

    try:
        pin = store.pin()
    except StorageFault as exc:  # the service reports the fault at its first use
        log.error("cannot read the embedding pin: %s", exc.detail)
        pin = None
    return embedders.choose(settings.embedder, pin, settings)


def build_service(
    settings: Settings, *, mode: str = CREATE, embedding: bool = True, serving: bool = False
) -> MemoryService:
    from agent_memory.service.core import MemoryService
    from agent_memory.service.uses import BUMP_INTERVAL_SECS
    from agent_memory.storage import open_store

    store = open_store(settings.db, mode=mode)
    log.info("database %s (schema version %d)", store.location, store.schema_version)
    return MemoryService(
        store,
        embedder=choose_embedder(settings, store) if embedding else None,
        max_content_bytes=settings.max_content_bytes,
        redact=settings.redact,
        embedding_off=settings.embedder == embedders.NONE,
        uses_every=BUMP_INTERVAL_SECS if serving else None,
    )


class OpeningService:
    """The service of ``serve``, opened in a thread once the server has answered a client.

    Importing SQLAlchemy and building the engine take time that the first answers (initialize,
    tools/list) do not need; the file is checked before them (``storage.ready_to_serve``), so a bad
    file still stops ``serve`` before it answers. The opening starts OPEN_AFTER_ANSWER_SECS after
    that answer, so that its imports do not compete with the answer on its way out, or at once when
    a call needs the service. Any attribute waits for the opening; if it failed, a call gets the
    storage error.
    """

    def __init__(self, settings: Settings, answered: threading.Event) -> None:
        self._settings = settings
        self._answered = answered
        self._needed = threading.Event()
        self._opened = threading.Event()
        self._closing = False
        self._service: Any = None
        self._thread = threading.Thread(target=self._open, name="agent-memory-open", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        from agent_memory.service.lifecycle import STARTUP_GRACE_SECS

        self._answered.wait(STARTUP_GRACE_SECS)
        self._needed.wait(OPEN_AFTER_ANSWER_SECS)
        try:  # on failure every call answers with the storage error; the detail is logged once
            if not self._closing:
                self._service = build_service(self._settings, serving=True)
        except (DatabaseOpenError, SchemaTooNew, BackupFailed) as exc:
            log.error("%s", exc)  # e.g. a newer agent-memory migrated the file meanwhile
        except Exception:
            log.exception("cannot open the database")
        finally:
            self._opened.set()

    def __getattr__(self, name: str) -> Any:
        self._needed.set()
        self._opened.wait()
        if self._service is None:
            raise StorageError(name)
        return getattr(self._service, name)

    def opened(self) -> MemoryService | None:
        """The service, if it is open; never waits for the opening."""
        return self._service if self._opened.is_set() else None

    def close(self) -> None:
        self._closing = True
        self._answered.set()
        self._needed.set()
        self._thread.join()
        if self._service is not None:
            self._service.close()


def pending_uses(service: Any) -> Uses | None:
    """The uses of search results a server holds (service/uses.py); None for a service
    still opening, which has answered no search."""
    if isinstance(service, OpeningService):
        service = service.opened()
    return None if service is None else service.uses


def opening_service(settings: Settings, answered: threading.Event) -> MemoryService:
    """``serve``'s service, opened once a client got an answer (OpeningService): it stands
    in for the service, every attribute waiting for the opening."""
    return cast("MemoryService", OpeningService(settings, answered))


def settings(options: dict[str, Any]) -> Settings:
    """The global options' values as Settings; logging is configured from them."""
    configure_logging(options["log_level"])
    return Settings.of(options)
