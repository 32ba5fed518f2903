"""The lifecycle sweep: TTL expiry, decay refresh, the keyword index's merging, OAuth's
expired rows, then a batch of embedding backfill.

``sweep`` is one pass, in that order; a failing step is logged and skipped, and the next
step and the next pass still run. The store runs each step in batches that hold its write
lock briefly (so stores from other processes get their turn between batches). ``Sweeper``
runs a pass in ``serve`` and ``serve-rest`` at start and then every interval, as a daemon
thread that calls the service like any other caller; its first tick also reports, once,
whether the embedder is there.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import TYPE_CHECKING, Any

from agent_memory.contract.errors import StorageError
from agent_memory.service.oauth import CLIENT_IDLE_SECS

if TYPE_CHECKING:
    from agent_memory.service.core import MemoryService
    from agent_memory.storage.base import Pause

log = logging.getLogger(__name__)

DEFAULT_SWEEP_INTERVAL_SECS = 3600
# How long the first tick waits for the server's first answer (see ``answered``).
STARTUP_GRACE_SECS = 2.0
# The pause between two of the sweep's batches, outside the write lock: longer than SQLite's
# busy handler sleeps between a waiting writer's first tries added up, so a store that
# arrived during a batch (held for SWEEP_HOLD_TARGET_SECS) always gets in.
SWEEP_PAUSE_SECS = 0.025


def sweep(
    service: MemoryService, pause: Pause | None = None, decay_every: int | None = None
) -> dict[str, Any]:
    """One pass: TTL expiry, decay refresh, merging the keyword index, OAuth's expired rows
    (sign-ins, codes, grants, idle clients), then a batch of backfill.

    ``longest_hold_ms`` is the longest any of the pass's transactions held the write lock;
    ``pause`` runs between two of them and returns True to stop the pass. With
    ``decay_every``, decay scores are left alone if any process on the database refreshed
    them less than that many seconds ago: every server starting on a large file would
    otherwise rewrite every row.
    """
    report: dict[str, Any] = {"expired": 0, "decayed": 0, "merged": 0, "oauth": 0, "embedded": 0}
    longest = 0.0
    now = service.now()
    steps = [("expired", service.db.delete_expired)]
    if decay_every is None or not _decay_is_recent(service, now, decay_every):
        steps.append(("decayed", service.db.refresh_decay))
    steps.append(("merged", service.db.merge_index))
    steps.append(
        ("oauth", functools.partial(service.db.sweep_oauth, client_idle_secs=CLIENT_IDLE_SECS))
    )
    stopped = False

    def paused() -> bool:  # remembers a stop, so that the remaining steps are skipped
        nonlocal stopped
        stopped = stopped or (pause is not None and pause())
        return stopped

    for key, step in steps:
        if stopped:
            break
        try:
            with service.storage("sweep"):
                report[key], held = step(now, paused)
            longest = max(longest, held)
        except StorageError:
            pass  # already logged with its detail; the next step and pass still run
    try:
        if not stopped:
            report["embedded"] = service.backfill()
    except StorageError:
        pass
    report["longest_hold_ms"] = round(longest * 1e3, 1)
    return report


def _decay_is_recent(service: MemoryService, now: int, within: int) -> bool:
    try:
        with service.storage("sweep"):
            last = service.db.decay_refreshed_at()
    except StorageError:
        return False  # logged; the step then runs and reports its own fault
    return last is not None and 0 <= now - last < within


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
            report = sweep(
                self.service,
                pause=lambda: self._stop.wait(SWEEP_PAUSE_SECS),
                decay_every=int(self.interval),
            )
        except Exception:  # the loop must outlive any single failure
            log.exception("sweep failed")
        else:
            log.info(
                "sweep: %(expired)d expired, %(decayed)d decay scores refreshed, "
                "%(merged)d index merge steps, %(oauth)d OAuth rows expired, %(embedded)d embedded "
                "(longest write lock held %(longest_hold_ms).1f ms)",
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
