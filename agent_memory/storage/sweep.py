"""The lifecycle sweep's half of every store: expired memories deleted, decay scores
rewritten and the keyword index merged in batches, each batch one short write transaction,
so that a waiting writer gets its turn between two. The engines say how to do one batch,
and how large."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager

import sqlalchemy
from sqlalchemy import text

from agent_memory.storage.base import Pause
from agent_memory.storage.faults import guarded

DECAY_DONE_KEY = "decay_materialized_at"

_MAX_ID = text("SELECT max(id) FROM memories")
_READ_META = text("SELECT value FROM meta WHERE key = :key")
_WRITE_META = text(
    "INSERT INTO meta (key, value) VALUES (:key, :value)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
Batch = Callable[[sqlalchemy.Connection, int], tuple[int, bool]]


class SweepRows:
    """Mixed into CommonStore, whose ``_read`` and ``_write`` it uses."""

    def _read(self) -> AbstractContextManager[sqlalchemy.Connection]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlalchemy.Connection]:
        raise NotImplementedError

    @guarded
    def delete_expired(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        def batch(conn: sqlalchemy.Connection, size: int) -> tuple[int, bool]:
            gone = self._delete_expired(conn, now, size)
            return gone, gone == size

        done = self._in_batches(batch, pause)
        self._after_expiry()
        return done

    @guarded
    def refresh_decay(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        with self._read() as conn:
            top = conn.execute(_MAX_ID).scalar() or 0
        if not top:
            return 0, 0.0
        after = 0

        def batch(conn: sqlalchemy.Connection, size: int) -> tuple[int, bool]:
            nonlocal after
            done = self._decay_window(conn, now, after, after + size)
            after += size
            if after >= top:  # the last window: say when, for the other processes
                conn.execute(_WRITE_META, {"key": DECAY_DONE_KEY, "value": str(now)})
            return done, after < top

        done, longest = self._in_batches(batch, pause)
        if after >= top:  # not when stopped early: the server is on its way out
            self._after_decay()
        return done, longest

    @guarded
    def merge_index(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        def batch(conn: sqlalchemy.Connection, size: int) -> tuple[int, bool]:
            more = self._merge_index_step(conn)
            return int(more), more

        return self._in_batches(batch, pause)

    @guarded
    def decay_refreshed_at(self) -> int | None:
        with self._read() as conn:
            value = conn.execute(_READ_META, {"key": DECAY_DONE_KEY}).scalar()
        try:
            return None if value is None else int(value)
        except ValueError:
            return None  # not ours to trust: the next sweep rewrites it

    def _delete_expired(self, conn: sqlalchemy.Connection, now: int, size: int) -> int:
        """Delete at most ``size`` memories expired by ``now``; how many went."""
        raise NotImplementedError

    def _decay_window(self, conn: sqlalchemy.Connection, now: int, after: int, upto: int) -> int:
        """Rewrite the decay_score as of ``now`` of the ids in (after, upto]; how many."""
        raise NotImplementedError

    def _merge_index_step(self, conn: sqlalchemy.Connection) -> bool:
        """One step of merge_index; True when it merged something (another may follow)."""
        return False

    def _after_expiry(self) -> None:
        """After delete_expired's last batch."""

    def _after_decay(self) -> None:
        """After refresh_decay has rewritten every row."""

    def _first_batch_size(self) -> int:
        raise NotImplementedError

    def _next_batch_size(self, size: int, held: float) -> int:
        """The next batch's rows, after one of ``size`` rows held the lock ``held`` seconds."""
        return size

    def _held(self, began: float) -> float:
        """How long the batch begun at ``began`` (time.perf_counter) held the write lock."""
        return time.perf_counter() - began

    def _after_batch(self, count: int) -> None:
        """After a batch that changed ``count`` rows has committed, outside the lock."""

    def _in_batches(self, batch: Batch, pause: Pause | None) -> tuple[int, float]:
        """Run ``batch(conn, rows) -> (done, more)`` one transaction at a time until done;
        the longest a batch held the lock. Between two batches ``pause()`` runs outside the
        lock (the sweep waits there so a waiting writer gets its turn); it returns True to
        stop early."""
        size, done, longest = self._first_batch_size(), 0, 0.0
        while True:
            began = time.perf_counter()
            with self._write() as conn:
                count, more = batch(conn, size)
            held = self._held(began)
            self._after_batch(count)
            done, longest = done + count, max(longest, held)
            if not more or (pause is not None and pause()):
                return done, longest
            size = self._next_batch_size(size, held)
