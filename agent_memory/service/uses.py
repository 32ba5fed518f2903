"""The recency bump: a search's results count as used (last_accessed, access_count).

A one-shot command writes the use at once. A server (``serve``, ``serve-rest``) writes it
behind the answer: uses wait in memory as {id: (uses, latest time)} and a thread writes them
all in one transaction every BUMP_INTERVAL_SECS, so a search takes no write lock and a burst
of searches costs one write. A clean stop (``close``: end of input, SIGTERM, Ctrl-C) writes
what is pending; a kill -9 loses at most the last interval's uses, never a memory
(docs/reliability.md). The reads that show uses (get, list, history, tidy, export) write the
pending ones first, so this process never shows a use older than its own answers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping

from agent_memory.contract.errors import StorageFault

log = logging.getLogger(__name__)

# How long a use may wait in memory before it is written (and so what a kill -9 may lose).
BUMP_INTERVAL_SECS = 1.0
# Pending ids kept at most: only a store that refuses every write for long gets there, and
# then later uses are dropped (a use is a ranking hint; the memories themselves are intact).
MAX_PENDING_IDS = 100_000
# The operations that show uses: the pending ones are written before they read.
SHOWN_BY = frozenset({"get", "list", "history", "tidy", "export"})

Write = Callable[[Mapping[int, tuple[int, int]]], None]


class Uses:
    """``write`` is the store's ``bump``; ``interval`` None writes every use at once."""

    def __init__(self, write: Write, interval: float | None = None) -> None:
        self._write = write
        self._interval = interval
        self._pending: dict[int, tuple[int, int]] = {}
        self._lock = threading.Lock()  # guards _pending; held for dict work only
        self._writing = threading.Lock()  # one write at a time, so close() waits for it
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dropped = False

    def record(self, ids: Iterable[int], now: int) -> None:
        """The use of ``ids`` at ``now``; a fault is logged, never raised (the answer stands)."""
        ids = list(ids)
        if not ids:
            return
        if self._interval is None:
            self._written({i: (1, now) for i in ids})
            return
        with self._lock:
            for memory_id in ids:
                count, _ = self._pending.get(memory_id, (0, now))
                if count == 0 and len(self._pending) >= MAX_PENDING_IDS:
                    self._drop()
                    continue
                self._pending[memory_id] = (count + 1, now)
            started = self._thread is not None
            if not started:
                self._thread = threading.Thread(
                    target=self._run, name="agent-memory-uses", daemon=True
                )
        if not started:
            self._thread.start()

    def flush(self) -> None:
        """Write every pending use now; on a fault they stay pending for the next try."""
        with self._writing:
            with self._lock:
                pending, self._pending = self._pending, {}
            if pending and not self._written(pending):
                with self._lock:
                    for memory_id, (count, at) in pending.items():
                        later, latest = self._pending.get(memory_id, (0, at))
                        self._pending[memory_id] = (count + later, max(at, latest))

    def close(self) -> None:
        """Stop the thread and write what is pending (a clean stop loses no use)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self.flush()

    def _written(self, uses: Mapping[int, tuple[int, int]]) -> bool:
        try:
            self._write(uses)
        except StorageFault as exc:
            log.error("could not record the use of %d search results: %s", len(uses), exc.detail)
            return False
        self._dropped = False
        return True

    def _drop(self) -> None:
        if not self._dropped:
            log.error(
                "over %d memories' uses wait to be written; later uses are not counted "
                "until the store takes writes again",
                MAX_PENDING_IDS,
            )
            self._dropped = True

    def _run(self) -> None:
        assert self._interval is not None
        while not self._stop.wait(self._interval):
            self.flush()
