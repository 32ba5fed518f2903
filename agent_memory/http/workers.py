"""``serve-rest --workers N``: one port served by N worker processes.

Why: a search is Python CPU work, and one process runs Python on one core at a time (the
interpreter lock), so one daemon answers no more searches a second at 16 clients than at
one. N processes behind the port use N cores.

The parent binds the listening socket (same address checks and messages as one process),
then forks the workers *before* anything is opened: each opens its own database connections,
embedder, event loop and threads, none of which survive a fork (SQLite connections, the
local model's OpenMP threads, anyio's loop). Its weights are a memory-mapped file, so the
page cache holds them once for every worker anyway. Every worker accepts on the inherited
socket, the least busy one first (Balance); only worker 1 runs the lifecycle sweep. What
one process kept in memory and others must see is in the database: the page's sign-in
sessions (service.sessions); MCP's 2025 era is served without sessions (mcp.http); the
vector index follows other processes' writes as it follows a stdio server's, and the
keyword counts each caches for FREQUENCY_CACHE_SECS are as stale as a stdio server's.

Supervision: SIGTERM or SIGINT to the parent is passed to each worker as SIGTERM; a worker
finishes the requests in flight and exits, and the parent exits 0 once all have. A worker
that dies after it started serving is logged and replaced (the others serve meanwhile, and
a crash on one request should not end everyone's service). One that dies before it served
failed at start-up, which a new one would repeat: the parent then stops the others and exits
1. A worker whose parent is gone (killed -9) stops too: it watches a pipe only the parent
holds open.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import signal
import socket
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from waitress.adjustments import Adjustments

log = logging.getLogger(__name__)

# `--workers auto`: one worker per core this process may run on.
AUTO = "auto"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
READY = b"r"
# What a worker that does not serve (starting, or dead) counts as in the Balance.
NOT_SERVING = 2**62
_SLOT = struct.Struct("q")


class Balance:
    """Which worker accepts the next connection: one with the fewest open connections.

    Every worker accepts on one socket, and a connection stays with the worker that accepted
    it (clients keep theirs open). Left to the accept race, whichever process wakes first
    takes it: four clients connecting one after another often all landed on one worker,
    which then served them on one core. So each worker writes its count of open connections
    to its slot of a shared table (memory mapped before the fork) whenever its loop turns,
    and listens only while no serving worker has fewer. The least busy one always listens,
    so no connection waits for a worker that declines."""

    def __init__(self, count: int) -> None:
        self._table = mmap.mmap(-1, _SLOT.size * count)  # MAP_SHARED: seen by every worker
        self.count = count
        for index in range(1, count + 1):
            self.set(index, NOT_SERVING)

    def set(self, index: int, connections: int) -> None:
        _SLOT.pack_into(self._table, _SLOT.size * (index - 1), connections)

    def least_busy(self, index: int, connections: int) -> bool:
        """Records worker ``index``'s ``connections``; whether it should accept now."""
        self.set(index, connections)
        fewest = min(_SLOT.unpack_from(self._table, _SLOT.size * i)[0] for i in range(self.count))
        return connections <= fewest


def cores() -> int:
    """The cores this process may run on (its affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def listen(host: str, port: int) -> socket.socket:
    """The socket at ``host:port`` (port 0: a free one), bound and listening as waitress
    binds its own. OSError when it cannot be."""
    adj = Adjustments(host=host, port=port)
    family, socktype, proto, address = adj.listen[0]
    sock = socket.socket(family, socktype, proto)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(adj.backlog)
    except OSError:
        sock.close()
        raise
    return sock


@dataclass
class Worker:
    index: int
    ready: int  # the read end of the pipe the worker writes READY to once it serves


@dataclass
class Supervisor:
    """Runs ``serve(index, ready)`` in ``count`` forked processes until told to stop.
    ``serve`` calls ``ready()`` when it is about to serve, and returns when its process
    should exit (its return value is the exit status). A stop signal is only noted while a
    worker starts (a KeyboardInterrupt inside the event loop's start-up would leave it
    waiting for itself): ``ready()`` raises it, and from then on it ends the serving loop."""

    count: int
    serve: Callable[[int, Callable[[], None]], int]
    balance: Balance | None = None
    workers: dict[int, Worker] = field(default_factory=dict)
    stopping: bool = False
    failed: bool = False

    def run(self) -> int:
        """Starts the workers and supervises them; the daemon's exit status."""
        self._life_r, self._life_w = os.pipe()  # EOF in the workers once the parent is gone
        self.catch_signals()
        for index in range(1, self.count + 1):
            if not self.stopping:
                self._start(index)
        while self.workers:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            self._ended(pid, status)
        return 1 if self.failed else 0

    def catch_signals(self) -> None:
        """From now on a stop signal stops the workers (before any: none is started)."""
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._stop)

    def _stop(self, signum: int = signal.SIGTERM, frame: object = None) -> None:
        self.stopping = True
        for pid in list(self.workers):
            with contextlib.suppress(ProcessLookupError):  # ended: os.wait() collects it
                os.kill(pid, signal.SIGTERM)

    def _ended(self, pid: int, status: int) -> None:
        worker = self.workers.pop(pid, None)
        if worker is None:
            return
        served = _was_ready(worker.ready)
        os.close(worker.ready)
        if self.balance is not None:  # no worker waits for this one to take connections
            self.balance.set(worker.index, NOT_SERVING)
        if self.stopping:
            return
        code = os.waitstatus_to_exitcode(status)
        how = f"exited with status {code}" if code >= 0 else f"was killed by {_signal(-code)}"
        if served:
            log.error("worker %d (pid %d) %s: starting another", worker.index, pid, how)
            self._start(worker.index)
        else:
            log.error(
                "worker %d (pid %d) %s before it served: stopping the daemon",
                worker.index,
                pid,
                how,
            )
            self.failed = True
            self._stop()

    def _start(self, index: int) -> None:
        ready_r, ready_w = os.pipe()
        # No stop signal between the fork and the worker's own handlers: the parent's
        # handler would run in the worker.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:
                os.close(ready_r)
                self._child(index, ready_w)
            os.close(ready_w)
            self.workers[pid] = Worker(index, ready_r)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def _child(self, index: int, ready_w: int) -> None:
        """The worker process: serves, then exits (never returns into the parent's code)."""
        code = 1
        try:
            os.close(self._life_w)
            for other in self.workers.values():
                os.close(other.ready)
            stop_asked: list[int] = []
            for signum in STOP_SIGNALS:  # while starting: noted, acted on by ready()
                signal.signal(signum, lambda signum, _frame: stop_asked.append(signum))
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            _watch_parent(self._life_r)

            def ready() -> None:
                os.write(ready_w, READY)
                for signum in STOP_SIGNALS:
                    signal.signal(signum, _stop_once)
                if stop_asked:
                    _stop_once(stop_asked[0], None)

            code = self.serve(index, ready)
        except SystemExit as exc:  # fail(): its message is out already
            code = exc.code if isinstance(exc.code, int) else 1
        except KeyboardInterrupt:  # stopped before it served
            code = 0
        except BaseException:
            log.exception("worker %d failed", index)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


def _stop_once(signum: int, frame: object) -> None:
    """A worker's first stop signal ends its loop (KeyboardInterrupt, as one process has
    it); a second, such as the parent's SIGTERM after a terminal's Ctrl-C reached the
    whole group, must not break the finishing of requests in flight."""
    for other in STOP_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    raise KeyboardInterrupt


def _watch_parent(life_r: int) -> None:
    def watch() -> None:
        while os.read(life_r, 1):
            pass
        log.error("the daemon's parent process is gone: stopping worker pid %d", os.getpid())
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="agent-memory-parent", daemon=True).start()


def _was_ready(ready_r: int) -> bool:
    os.set_blocking(ready_r, False)
    try:
        return os.read(ready_r, 1) == READY
    except BlockingIOError:
        return False


def _signal(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
