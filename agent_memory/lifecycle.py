"""The background sweep: TTL expiry, decay materialization and embedding backfill.

It runs in ``serve`` and ``serve-rest`` as a daemon thread that calls the service like any
other caller, so it takes the write lock only for the service's own short transactions
and never blocks a tool call for long. Its first tick also reports, once, whether Ollama
is there.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_memory.service import MemoryService

log = logging.getLogger(__name__)

DEFAULT_SWEEP_INTERVAL_SECS = 3600
# How long the first tick waits for the server's first answer (see ``answered``).
STARTUP_GRACE_SECS = 2.0
# The pause between two of the sweep's batches, outside the write lock. SQLite's busy
# handler polls a waiting writer at 0, 1, 3, 8, 18 and 33 ms, so a gap this long (after a
# batch of ~20 ms) always lets a store that arrived during the batch in.
SWEEP_PAUSE_SECS = 0.025


class Sweeper:
    """``answered``, when given, is set by the transport once it has answered a client.

    The first tick waits for it (at most STARTUP_GRACE_SECS): asking Ollama means
    importing ``requests``, and that Python work would compete for the interpreter with
    the server's first answers.
    """

    def __init__(
        self,
        service: MemoryService,
        interval: float = DEFAULT_SWEEP_INTERVAL_SECS,
        answered: threading.Event | None = None,
    ):
        self.service = service
        self.interval = interval
        self.ticks = 0
        self.ticked = threading.Event()  # set after every tick; tests wait on it
        self._answered = answered
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agent-memory-sweep", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._answered is not None:
            self._answered.set()
        if self._thread.is_alive():
            self._thread.join()

    def tick(self) -> None:
        try:
            if self.ticks == 0:
                self.service.report_embedder()
            report = self.service.sweep(
                pause=lambda: self._stop.wait(SWEEP_PAUSE_SECS), decay_every=int(self.interval)
            )
        except Exception:  # the loop must outlive any single failure
            log.exception("sweep failed")
        else:
            log.info(
                "sweep: %(expired)d expired, %(decayed)d decay scores refreshed, "
                "%(embedded)d embedded (longest write lock held %(longest_hold_ms).1f ms)",
                report,
            )
        self.ticks += 1
        self.ticked.set()

    def _run(self) -> None:
        if self._answered is not None:
            self._answered.wait(STARTUP_GRACE_SECS)
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self.interval)
