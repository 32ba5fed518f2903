"""``serve-rest --workers N`` (N > 1): the parent's checks and bind, then each worker's daemon.

The parent does what one process does before it serves (the database is opened, created or
migrated once, the address is checked and bound, with the same messages), but holds nothing
open when it forks: the workers (agent_memory.workers) each open their own service.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

import click

from agent_memory import app as wiring
from agent_memory.app import fail
from agent_memory.settings import Settings
from agent_memory.transports.cli.terminal import is_loopback

log = logging.getLogger("agent_memory")


def serve(
    settings: Settings,
    host: str,
    port: int,
    allow_remote: bool,
    public_hosts: tuple[str, ...],
    count: int,
) -> int:
    """Runs the daemon in ``count`` worker processes until stopped; its exit status."""
    from agent_memory import workers
    from agent_memory.service.tokens import Tokens
    from agent_memory.transports.cli.main import SWITCH_INTERVAL_SECS, announce

    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    loopback = is_loopback(host)
    # No embedder: the parent only checks, and the local model's threads would not survive
    # the fork. Closed before it: no connection or thread crosses into a worker.
    service = wiring.open_service(settings, embedding=False)
    try:
        tokens = Tokens(service).exist()
    finally:
        service.close()
    if not loopback and not tokens:
        fail(
            f"refusing to bind non-loopback address {shown}: no access token exists; "
            "create one with `agent-memory token create NAME` first"
        )
    try:
        sock = workers.listen(host, port)
    except OSError as exc:
        fail(f"cannot listen on {shown}: {exc.strerror or exc}")
    bound_port = sock.getsockname()[1]
    balance = workers.Balance(count)
    options = {"allow_remote": allow_remote, "open_": loopback, "extra_hosts": public_hosts}
    supervisor = workers.Supervisor(
        count, _worker(settings, host, bound_port, sock, balance, options), balance
    )
    supervisor.catch_signals()  # before the address is told: a stop may follow at once
    announce(host, bound_port, loopback, tokens)
    click.echo(f"{count} worker processes", err=True)
    sys.setswitchinterval(SWITCH_INTERVAL_SECS)
    try:
        return supervisor.run()
    finally:
        sock.close()


def _worker(
    settings: Settings,
    host: str,
    port: int,
    sock: socket.socket,
    balance: Any,
    options: dict[str, Any],
) -> Callable[[int, Callable[[], None]], int]:
    """What worker ``index`` runs, in its own process: the one-process daemon on ``sock``."""

    def serve_one(index: int, ready: Callable[[], None]) -> int:
        from agent_memory import daemon
        from agent_memory.service.lifecycle import Sweeper

        service = wiring.open_service(settings, serving=True)  # closed below: writes the uses
        try:
            least_busy = functools.partial(balance.least_busy, index)
            with daemon.serving(
                service, host, port, sock=sock, worker=index, least_busy=least_busy, **options
            ) as server:
                # one sweep for the database, not one per worker
                sweeper = Sweeper(service, settings.sweep_interval) if index == 1 else None
                if sweeper is not None:
                    sweeper.start()
                try:
                    ready()  # raises KeyboardInterrupt if told to stop while starting
                    log.info("worker %d (pid %d) serving", index, os.getpid())
                    server.run()  # returns after SIGTERM, once its requests are done
                finally:
                    if sweeper is not None:
                        sweeper.stop()
        finally:
            service.close()
        return 0

    return serve_one
