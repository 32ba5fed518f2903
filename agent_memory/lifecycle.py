"""The background sweep: TTL expiry, then decay materialization, on an interval.

It runs in ``serve`` (and later ``serve-rest``) as a daemon thread that calls the service
like any other caller, so it takes the write lock only for the service's own short
transactions and never blocks a tool call for long.
"""

from __future__ import annotations

import logging
import threading

from agent_memory.service import MemoryService

log = logging.getLogger(__name__)

DEFAULT_SWEEP_INTERVAL_SECS = 3600


class Sweeper:
    def __init__(self, service: MemoryService, interval: float = DEFAULT_SWEEP_INTERVAL_SECS):
        self.service = service
        self.interval = interval
        self.ticks = 0
        self.ticked = threading.Event()  # set after every tick; tests wait on it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agent-memory-sweep", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def tick(self) -> None:
        try:
            report = self.service.sweep()
        except Exception:  # the loop must outlive any single failure
            log.exception("sweep failed")
        else:
            log.info("sweep: %(expired)d expired, %(decayed)d decay scores refreshed", report)
        self.ticks += 1
        self.ticked.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self.interval)
