"""``serve-rest``: the daemon in this process, or in N worker processes.

With ``--workers N`` (N > 1) the parent does what one process does before it serves (the
database is opened, created or migrated once, the address is checked and bound, with the
same messages), but holds nothing open when it forks: the workers (agent_memory.http.workers)
each open their own service. Either way the same lines say where the daemon listens.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

import click

from agent_memory import app as wiring
from agent_memory.app import fail
from agent_memory.cli.terminal import PAGE_ASKS_FOR_A_TOKEN, is_loopback
from agent_memory.settings import Settings

log = logging.getLogger("agent_memory")

# Both servers hand the GIL between threads on every request (waitress's I/O thread and
# workers; the MCP SDK's stdio reader and the event loop; our checkpoint and sweep threads).
# Python's default switch interval is ten times this, and a request waits for it at each
# hand-over between those threads.
SWITCH_INTERVAL_SECS = 0.0005


def serve_rest(
    settings: Settings,
    addr: tuple[str, int],
    allow_remote: bool,
    public_hosts: tuple[str, ...],
    workers: int,
) -> int:
    """Runs the daemon until stopped; its exit status."""
    host, port = addr
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if workers > 1:
        return serve_workers(settings, host, port, allow_remote, public_hosts, workers)
    service = wiring.open_service(settings, serving=True)
    from agent_memory.http import daemon
    from agent_memory.service.tokens import Tokens

    loopback = is_loopback(host)
    try:
        tokens = Tokens(service).exist()
        if not loopback and not tokens:
            fail(
                f"refusing to bind non-loopback address {shown}: no access token exists; "
                "create one with `agent-memory token create NAME` first"
            )
        with daemon.serving(
            service,
            host,
            port,
            allow_remote=allow_remote,
            open_=loopback,
            extra_hosts=public_hosts,
        ) as server:
            _run_daemon(settings, service, server, host, loopback, tokens)
    except OSError as exc:
        fail(f"cannot listen on {shown}: {exc.strerror or exc}")
    finally:
        service.close()
    return 0


def _run_daemon(
    settings: Settings, service: Any, server: Any, host: str, loopback: bool, tokens: bool
) -> None:
    from agent_memory.service.lifecycle import Sweeper

    sweeper = Sweeper(service, settings.sweep_interval)
    sweeper.start()
    # Both finish the requests in flight, then exit 0. SIGINT is set too: a daemon started
    # in the background by a script inherits it ignored, and Python then leaves it so.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.default_int_handler)
    sys.setswitchinterval(SWITCH_INTERVAL_SECS)
    try:
        announce(host, server.effective_port, loopback, tokens)
        server.run()  # returns after KeyboardInterrupt, once workers are done
    except KeyboardInterrupt:
        pass  # told to stop as it said it was ready: no request is in flight yet
    finally:
        sweeper.stop()


def announce(host: str, port: int, loopback: bool, tokens: bool) -> None:
    """Where the daemon listens (stderr): REST, MCP and the page, which asks for a token when
    ``tokens`` exist; and the warning of plain HTTP off loopback."""
    bound = f"[{host}]" if ":" in host else host
    if not loopback:
        log.warning(
            "serving plain HTTP on %s:%s: tokens and memories cross the network unencrypted; "
            "put a TLS proxy in front (docs/http.md shows Caddy) and bind the daemon to "
            "127.0.0.1 behind it",
            bound,
            port,
        )
    click.echo(f"MCP (Streamable HTTP) at http://{bound}:{port}/mcp", err=True)
    click.echo(f"web page at http://{bound}:{port}/", err=True)
    if tokens:
        click.echo(PAGE_ASKS_FOR_A_TOKEN, err=True)
    # Last: scripts (and ui) take this line for "ready", and a stop may follow at once.
    click.echo(f"REST listening on {bound}:{port}", err=True)


def serve_workers(
    settings: Settings,
    host: str,
    port: int,
    allow_remote: bool,
    public_hosts: tuple[str, ...],
    count: int,
) -> int:
    """Runs the daemon in ``count`` worker processes until stopped; its exit status."""
    from agent_memory.http import workers
    from agent_memory.service.tokens import Tokens

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
        from agent_memory.http import daemon
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
