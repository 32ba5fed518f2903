"""The connections of a SQLite store: one writer behind a lock, pooled readers, checkpoints.

Every write is one short ``BEGIN IMMEDIATE`` transaction on the one writer connection of
this process (the serialized writer every process on the file shares); a read is one
deferred ``BEGIN`` on a pooled connection, so a multi-statement read sees one snapshot, and
may carry a deadline after which SQLite's progress handler stops it.

WAL checkpoints fsync, which stalls a store whose commit runs one inline (at SQLite's default 1,000
pages, every few dozen stores). A background thread checkpoints instead (PASSIVE: it never blocks a
writer) every CHECKPOINT_EVERY_WRITES commits; the sweep's batches checkpoint one by one (see
checkpoint_now); the inline checkpoint, raised to database.WAL_AUTOCHECKPOINT_PAGES, only finishes
the few frames left.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy
import sqlean
from sqlalchemy.engine import Engine

from agent_memory.contract.errors import SearchTimedOut

log = logging.getLogger(__name__)

# Commits between two background WAL checkpoints (a store writes about ten pages).
CHECKPOINT_EVERY_WRITES = 32
# The writer's page cache during bulk(), and SQLite's default it returns to, in KiB.
BULK_CACHE_KIB = 16_384
DEFAULT_CACHE_KIB = 2_000
# SQLite VM instructions between two looks at a read's deadline: about a millisecond of
# work, and no measurable cost.
PROGRESS_STEPS = 10_000
# What a statement stopped by the progress handler raises.
_SQLITE_INTERRUPT = 9


class Connections:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._writer: sqlalchemy.Connection | None = None
        self._write_lock = threading.Lock()
        self._writes = 0
        self._checkpoint_due = threading.Event()
        self._closed = False
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop, name="agent-memory-checkpoint", daemon=True
        )
        self._checkpointer.start()
        self._held = threading.local()  # .last: seconds this thread's last write held the lock

    def _writer_connection(self) -> sqlalchemy.Connection:
        """The one writer connection (under the write lock), opened again if it was lost."""
        if self._writer is None or self._writer.invalidated or self._writer.closed:
            self._writer = self.engine.connect().execution_options(sqlite_write=True)
        return self._writer

    @contextmanager
    def write(self) -> Iterator[sqlalchemy.Connection]:
        """One write transaction: BEGIN IMMEDIATE waits for other processes' writes."""
        with self._write_lock:
            writer = self._writer_connection()
            with writer.begin():
                started = time.perf_counter()
                yield writer
            self._held.last = time.perf_counter() - started  # from holding the lock to commit
            self._writes += 1
            if self._writes % CHECKPOINT_EVERY_WRITES == 0:
                self._checkpoint_due.set()

    def last_hold(self) -> float:
        """Seconds this thread's last write transaction held the write lock."""
        return self._held.last

    @contextmanager
    def read(self, deadline: float | None = None) -> Iterator[sqlalchemy.Connection]:
        """One read snapshot; with ``deadline`` (time.monotonic()), SearchTimedOut past it."""
        with self.engine.connect() as conn:
            if deadline is None:
                with conn.begin():
                    yield conn
                return
            driver = conn.connection.driver_connection
            driver.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_STEPS)
            try:
                with conn.begin():
                    yield conn
            except (sqlalchemy.exc.OperationalError, sqlean.OperationalError) as exc:
                if (
                    getattr(getattr(exc, "orig", exc), "sqlite_errorcode", None)
                    == _SQLITE_INTERRUPT
                ):
                    raise SearchTimedOut() from exc
                raise
            finally:
                driver.set_progress_handler(None, 0)

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """A larger page cache on the writer for a long run of batches (an import).

        With SQLite's default 2 MiB, the indexes of a large table do not fit and every batch
        spills and re-reads pages.
        """
        with self._write_lock:
            self._pragma(f"cache_size = -{BULK_CACHE_KIB}")
        try:
            yield
        finally:
            with self._write_lock:
                self._pragma(f"cache_size = -{DEFAULT_CACHE_KIB}")

    def _pragma(self, pragma: str) -> None:
        """On the driver connection: through SQLAlchemy it would begin a transaction."""
        self._writer_connection().connection.driver_connection.execute(f"PRAGMA {pragma}")

    def _checkpoint_loop(self) -> None:
        while True:
            self._checkpoint_due.wait()
            self._checkpoint_due.clear()
            if self._closed:
                return
            self.checkpoint_now()

    def checkpoint_now(self) -> None:
        """Copy the WAL into the file (PASSIVE: it never waits for, nor blocks, a writer)."""
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlalchemy.exc.SQLAlchemyError as exc:  # the next one will catch up
            log.warning("WAL checkpoint failed: %s", getattr(exc, "orig", exc))

    def close(self) -> None:
        self._closed = True
        self._checkpoint_due.set()
        self._checkpointer.join()
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        self.engine.dispose()
