"""The ``agent-memory`` command: global options, logging, and the subcommands.

Logging is configured here, once, to stderr: the stdout of ``serve`` carries JSON-RPC only.
Heavy modules (the MCP SDK, later Flask and waitress) are imported inside the subcommand
that needs them, so each command pays only for itself.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import click

from agent_memory import __version__, embedders
from agent_memory import app as wiring
from agent_memory.app import fail
from agent_memory.cli import serving
from agent_memory.cli.options import options
from agent_memory.cli.terminal import (
    Subcommand,
)
from agent_memory.contract.errors import (
    DatabaseOpenError,
    SchemaTooNew,
)
from agent_memory.settings import GLOBAL, Settings

COMMAND = "agent-memory"
# numpy's OpenBLAS runs each matrix product on a thread per core. A search's products are
# small (one query against the vector index's rows), and waking the threads costs more than
# they share. Set before numpy is imported, unless the user set it.
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"
BLAS_THREADS = "1"

log = logging.getLogger("agent_memory")


class Group(click.Group):
    """The servers are registered at once; the other commands (commands, maintenance, tokens, ui)
    when a name is not found or the list is asked for, so ``serve`` never imports them."""

    command_class = Subcommand
    _all_loaded = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None and not self._all_loaded:
            self._load_all()
            found = super().get_command(ctx, cmd_name)
        return found

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_all()
        return super().list_commands(ctx)

    def _load_all(self) -> None:
        if self._all_loaded:
            return
        self._all_loaded = True
        from agent_memory.cli import commands, maintenance, tidy, tokens, ui

        # for people and agent hooks (search, list, show, ..., context), and whole databases
        commands_ = (*commands.COMMANDS, *maintenance.COMMANDS, *tidy.COMMANDS)
        for command in (ui.ui, tokens.token, *commands_):
            self.add_command(command)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="agent-memory", message="%(prog)s %(version)s"
)
@options(GLOBAL)
@click.pass_context
def cli(ctx: click.Context, **_options: Any) -> None:
    """Persistent, typed, local memory for AI agents, in one SQLite file.

    Global options go before or after the subcommand: `agent-memory --db x.db serve` and
    `agent-memory serve --db x.db` are the same.
    """
    ctx.obj = wiring.settings(ctx.params)


@cli.command()
@click.pass_obj
def serve(settings: Settings) -> None:
    """Run the MCP server on stdin/stdout (creates the database on first run)."""
    from agent_memory import storage

    # The SDK first: the opening and the sweep wait for the first answer at most
    # STARTUP_GRACE_SECS, and that clock must not run while the SDK is still importing.
    from agent_memory.mcp import server as mcp_server

    if sys.stdin.isatty():  # started by hand: say what this is, once
        click.echo(terminal_notice(settings.db), err=True)

    try:
        at_head = storage.ready_to_serve(settings.db)
        pin = storage.quick_pin(settings.db)
    except (DatabaseOpenError, SchemaTooNew) as exc:
        fail(str(exc))
    outlook = embedders.outlook(settings.embedder, pin, settings)
    answered = threading.Event()
    if at_head:
        service = wiring.opening_service(settings, answered)
    else:  # a new file or a migration is opened before the first answer, as everywhere else
        service = wiring.open_service(settings, serving=True)
    from agent_memory.service.lifecycle import Sweeper

    sweeper = Sweeper(service, settings.sweep_interval, answered)
    sweeper.start()
    sys.setswitchinterval(serving.SWITCH_INTERVAL_SECS)
    _leave_on_signals(service)
    try:
        mcp_server.serve_stdio(service, answered, outlook)
    except KeyboardInterrupt:
        pass
    finally:
        sweeper.stop()
        service.close()


def _leave_on_signals(service: Any) -> None:
    """SIGTERM, and Ctrl-C unless it is ignored, end ``serve`` once the pending uses of
    search results are written (service/uses.py), with 128 + the signal's number.

    The SDK reads stdin in a worker thread no interrupt reaches, so an exception raised in
    the main thread would wait for a line that never comes; the handler leaves from a thread
    of its own instead (the main thread may hold a lock the writing needs). Every answered
    write is already committed; the uses are all that waits in memory."""

    def leave(signum: int, _frame: Any) -> None:
        threading.Thread(target=_leave, args=(service, 128 + signum), daemon=True).start()

    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) is not signal.SIG_IGN:  # an inherited "ignore" stays
            signal.signal(signum, leave)


def _leave(service: Any, code: int) -> None:
    try:
        uses = wiring.pending_uses(service)
        if uses is not None:
            uses.close()
    except Exception:  # leaving must not wait on a failure
        log.exception("could not write the pending uses of search results")
    finally:
        os._exit(code)


def terminal_notice(db: Path | str | None) -> str:
    """The line ``serve`` prints when a person starts it in a terminal: what it is, and
    the configuration that starts it from an MCP client (with this --db, if given)."""
    if isinstance(db, str):  # an engine's URL: shown without its password
        from agent_memory.storage import engines

        db = engines.describe(db)
    where = str(db.resolve()) if isinstance(db, Path) else db
    args = ["serve", *(["--db", where] if where is not None else [])]
    executable = own_command()
    entry = json.dumps({"command": executable, "args": args})
    command = shlex.join(["claude", "mcp", "add", "--scope", "user", "agent-memory", "--"])
    return (
        "agent-memory serve speaks MCP (JSON-RPC) on stdin/stdout and is meant to be started "
        f'by an MCP client, not typed into: add the server "agent-memory": {entry} to the '
        f"client's MCP configuration (Claude Code: {command} "
        f"{shlex.join([executable, *args])}). Ctrl-D quits."
    )


def own_command() -> str:
    """How a client should start this install: ``agent-memory`` when PATH finds this very
    executable, else its absolute path (a venv's bin/ is seldom on PATH)."""
    running = _running_script()
    if running is None:
        return COMMAND
    on_path = shutil.which(COMMAND)
    if on_path is not None and os.path.samefile(on_path, running):
        return COMMAND
    return str(running)


def _running_script() -> Path | None:
    """The console script of this install: sys.argv[0] itself or its sibling of that name
    (the second console script, typed-agent-memory), else the one beside the interpreter
    (``python -m agent_memory``); None when there is none."""
    beside_argv = Path(sys.argv[0]).absolute().with_name(COMMAND)
    for candidate in (beside_argv, Path(sys.executable).absolute().with_name(COMMAND)):
        if candidate.is_file():
            return candidate
    return None


@cli.command("serve-rest")
@options("serve-rest")
@click.pass_obj
def serve_rest(
    settings: Settings,
    addr: tuple[str, int],
    allow_remote: bool,
    public_hosts: tuple[str, ...],
    workers: int,
) -> None:
    """Run the HTTP daemon: the REST API, the web page and MCP at /mcp (loopback only
    unless a token exists: see `agent-memory token`)."""
    sys.exit(serving.serve_rest(settings, addr, allow_remote, public_hosts, workers))


def one_blas_thread(environ: Any = os.environ) -> None:
    """BLAS_THREADS for numpy's products, unless the environment already says how many."""
    environ.setdefault(BLAS_THREADS_ENV, BLAS_THREADS)


def main() -> None:
    one_blas_thread()  # numpy is not imported yet: serve and serve-rest load it later
    cli(prog_name="agent-memory")
