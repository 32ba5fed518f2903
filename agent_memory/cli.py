"""The ``agent-memory`` command: global options, logging, and the subcommands.

Logging is configured here, once, to stderr: the stdout of ``serve`` carries JSON-RPC only.
Heavy modules (the MCP SDK, later Flask and waitress) are imported inside the subcommand
that needs them, so each command pays only for itself.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import shlex
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from agent_memory import __version__, embedders, files, ui, wire
from agent_memory.embedders import ollama
from agent_memory.errors import (
    BackupFailed,
    DatabaseOpenError,
    EmbedderUnavailable,
    FormatTooNew,
    InvalidArgument,
    SchemaTooNew,
    StorageError,
)

DEFAULT_REST_PORT = 7437
# Both servers hand the GIL between threads on every request (waitress's I/O thread and
# workers; the MCP SDK's stdio reader and the event loop; our checkpoint and sweep threads).
# The default 5 ms switch interval added about 1 ms to each search (bench/).
SWITCH_INTERVAL_SECS = 0.0005
# serve opens its service this long after its first answer (see OpeningService).
OPEN_AFTER_ANSWER_SECS = 0.1
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

log = logging.getLogger("agent_memory")


@dataclass(frozen=True)
class Settings:
    db: Path | None
    ollama_url: str
    embed_model: str
    sweep_interval: int
    max_content_bytes: int
    redact: bool = True
    embedder: str = embedders.AUTO


def configure_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=level.upper(), format=LOG_FORMAT, force=True)
    if level.lower() != "debug":
        logging.getLogger("alembic").setLevel(logging.WARNING)


def fail(message: str) -> None:
    """One clear line on stderr and exit 1: never a traceback for an operator's problem."""
    click.echo(message, err=True)
    sys.exit(1)


def open_service(settings: Settings):  # -> MemoryService (imported lazily)
    try:
        return _service(settings)
    except (DatabaseOpenError, SchemaTooNew, BackupFailed) as exc:
        fail(str(exc))


def choose_embedder(settings: Settings, store: Any) -> Any:  # -> Embedder | None
    """The embedder for this store (embedders.choose), told by the pin it holds."""
    from agent_memory.errors import StorageFault

    try:
        pin = store.pin()
    except StorageFault as exc:  # the service reports the fault at its first use
        log.error("cannot read the embedding pin: %s", exc.detail)
        pin = None
    return embedders.choose(
        settings.embedder, pin, ollama_url=settings.ollama_url, ollama_model=settings.embed_model
    )


def _service(settings: Settings):  # -> MemoryService
    from agent_memory.service import MemoryService
    from agent_memory.storage import open_store

    store = open_store(settings.db)
    log.info("database %s (schema version %d)", store.location, store.schema_version)
    return MemoryService(
        store,
        embedder=choose_embedder(settings, store),
        max_content_bytes=settings.max_content_bytes,
        redact=settings.redact,
    )


class OpeningService:
    """The service of ``serve``, opened in a thread once the server has answered a client.

    Importing SQLAlchemy and building the engine take about a third of a second, which the
    first answers (initialize, tools/list) do not need; the file was already checked
    (``storage.ready_to_serve``), so a bad file still stops ``serve`` before it answers.
    The opening starts OPEN_AFTER_ANSWER_SECS after that answer (begun at once, its imports
    had delayed the answer on its way out by about 150 ms), or at once when a call needs
    the service. Any attribute waits for the opening; if it failed, a call gets the
    storage error.
    """

    def __init__(self, settings: Settings, answered: threading.Event) -> None:
        self._settings = settings
        self._answered = answered
        self._needed = threading.Event()
        self._opened = threading.Event()
        self._closing = False
        self._service: Any = None
        self._thread = threading.Thread(target=self._open, name="agent-memory-open", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        from agent_memory.lifecycle import STARTUP_GRACE_SECS

        self._answered.wait(STARTUP_GRACE_SECS)
        self._needed.wait(OPEN_AFTER_ANSWER_SECS)
        try:  # on failure every call answers with the storage error; the detail is logged once
            if not self._closing:
                self._service = _service(self._settings)
        except (DatabaseOpenError, SchemaTooNew, BackupFailed) as exc:
            log.error("%s", exc)  # e.g. a newer agent-memory migrated the file meanwhile
        except Exception:
            log.exception("cannot open the database")
        finally:
            self._opened.set()

    def __getattr__(self, name: str) -> Any:
        self._needed.set()
        self._opened.wait()
        if self._service is None:
            raise StorageError(name)
        return getattr(self._service, name)

    def close(self) -> None:
        self._closing = True
        self._answered.set()
        self._needed.set()
        self._thread.join()
        if self._service is not None:
            self._service.close()


class Integer(click.IntRange):
    """click's IntRange, of ASCII digits only: int() also reads "２" (fullwidth) as 2."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if not wire.INTEGER.fullmatch(text) or not isinstance(wire.integer(text), int):
                shown = repr(value) if len(value) <= 40 else f"a value of {len(value)} characters"
                digits = wire.MAX_INTEGER_DIGITS
                self.fail(f"{shown} is not an integer (at most {digits} ASCII digits)", param, ctx)
        return super().convert(value, param, ctx)


def parse_addr(_ctx: click.Context, _param: click.Parameter, text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[IPV6]:PORT`` -> (host, port); a usage error otherwise."""
    match = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:([0-9]{1,5})|([^:\[\]]+):([0-9]{1,5})", text)
    port = int(match.group(2) or match.group(4)) if match else -1
    if not match or port > 65535:
        raise click.BadParameter(f"expected HOST:PORT or [IPV6]:PORT (got {text!r})")
    return match.group(1) or match.group(3), port


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # any other name may resolve anywhere


class Subcommand(click.Command):
    """A subcommand that takes the global options after its name too: `serve --db x.db`
    is how MCP client configs are written. The options are the group's own (one definition
    each); a value given after the subcommand wins over one given before it."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        help_option = self.get_help_option(ctx)
        own = [p for p in super().get_params(ctx) if p is not help_option]
        shared = _global_options(ctx, {p.name for p in own})
        return [*own, *shared, *([help_option] if help_option else [])]

    def invoke(self, ctx: click.Context) -> Any:
        given = {}
        for option in _global_options(ctx, {p.name for p in self.params}):
            value = ctx.params.pop(option.name)
            if ctx.get_parameter_source(option.name) is ParameterSource.COMMANDLINE:
                given[option.name] = value
        if given and ctx.parent is not None:
            ctx.obj = settings({**ctx.parent.params, **given})
        return super().invoke(ctx)


def _global_options(ctx: click.Context, taken: set[Any]) -> list[click.Option]:
    """The group's options a subcommand accepts as well (not --version, not its own)."""
    group = ctx.parent.command if ctx.parent is not None else None
    if group is None:
        return []
    return [
        p
        for p in group.params
        if isinstance(p, click.Option) and p.expose_value and p.name not in taken
    ]


class Group(click.Group):
    command_class = Subcommand


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="agent-memory", message="%(prog)s %(version)s"
)
@click.option(
    "--db",
    type=click.Path(path_type=Path),
    help="Database file. Default: $AGENT_MEMORY_DB, else memory.db in your user data directory.",
)
@click.option(
    "--embedder",
    type=click.Choice(embedders.MODES, case_sensitive=False),
    envvar="AGENT_MEMORY_EMBEDDER",
    default=embedders.AUTO,
    show_default=True,
    show_envvar=True,
    help="Who makes the vectors of search by meaning: auto (the database's own, else Ollama "
    "when it answers, else the local model when installed), ollama, local, or none "
    "(keyword search only).",
)
@click.option(
    "--ollama-url",
    envvar="AGENT_MEMORY_OLLAMA_URL",
    default=ollama.DEFAULT_URL,
    show_default=True,
    show_envvar=True,
    help="Ollama base URL for embeddings (hybrid search).",
)
@click.option(
    "--embed-model",
    envvar="AGENT_MEMORY_EMBED_MODEL",
    default=ollama.DEFAULT_MODEL,
    show_default=True,
    show_envvar=True,
    help="Ollama embedding model.",
)
@click.option(
    "--sweep-interval",
    type=Integer(min=1),
    envvar="AGENT_MEMORY_SWEEP_INTERVAL",
    default=3600,
    show_default=True,
    show_envvar=True,
    metavar="SECONDS",
    help="Seconds between lifecycle sweeps (TTL expiry, decay refresh).",
)
@click.option(
    "--max-content-bytes",
    type=Integer(min=1),
    envvar="AGENT_MEMORY_MAX_CONTENT_BYTES",
    default=1024 * 1024,
    show_default=True,
    show_envvar=True,
    metavar="BYTES",
    help="Largest memory content accepted (UTF-8 bytes); bigger stores and updates are refused.",
)
@click.option(
    "--redact",
    type=click.Choice(["on", "off"], case_sensitive=False),
    envvar="AGENT_MEMORY_REDACT",
    default="on",
    show_default=True,
    show_envvar=True,
    help="Replace secrets (private keys, cloud and API keys, tokens, JWTs, password= values) "
    "in stored and imported content by [redacted:KIND] markers.",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    envvar="AGENT_MEMORY_LOG",
    default="info",
    show_default=True,
    show_envvar=True,
    help="Log verbosity (logs always go to stderr).",
)
@click.pass_context
def cli(ctx: click.Context, **_options: Any) -> None:
    """Persistent, typed, local memory for AI agents, in one SQLite file.

    Global options go before or after the subcommand: `agent-memory --db x.db serve` and
    `agent-memory serve --db x.db` are the same.
    """
    ctx.obj = settings(ctx.params)


def settings(options: dict[str, Any]) -> Settings:
    """The global options' values as Settings; logging is configured from them."""
    configure_logging(options["log_level"])
    return Settings(
        db=options["db"],
        embedder=options["embedder"].lower(),
        ollama_url=options["ollama_url"],
        embed_model=options["embed_model"],
        sweep_interval=options["sweep_interval"],
        max_content_bytes=options["max_content_bytes"],
        redact=options["redact"].lower() == "on",
    )


PROGRESS_MIN_ROWS = 2_000


class Progress:
    """A progress bar on stderr, only when a person watches (a terminal) and the job is big.

    Nothing at all is written when stderr is not a terminal or the total is under
    ``minimum``, so logs and pipes stay clean.
    """

    def __init__(self, label: str, minimum: int = PROGRESS_MIN_ROWS) -> None:
        self.label = label
        self.minimum = minimum
        self._bar = None

    def at(self, done: int, total: int) -> None:
        if self._bar is None:
            if total < self.minimum or not sys.stderr.isatty():
                return
            self._bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self._bar.__enter__()
        self._bar.length = total
        self._bar.update(done - self._bar.pos)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


@cli.command()
@click.pass_obj
def serve(settings: Settings) -> None:
    """Run the MCP server on stdin/stdout (creates the database on first run)."""
    from agent_memory import storage

    if sys.stdin.isatty():  # started by hand: say what this is, once
        click.echo(terminal_notice(settings.db), err=True)

    try:
        at_head = storage.ready_to_serve(settings.db)
        pin = storage.quick_pin(settings.db)
    except (DatabaseOpenError, SchemaTooNew) as exc:
        fail(str(exc))
    outlook = embedders.outlook(settings.embedder, pin, ollama_model=settings.embed_model)
    answered = threading.Event()
    # A new file or a migration is opened before the first answer, as everywhere else.
    service = OpeningService(settings, answered) if at_head else open_service(settings)
    from agent_memory import mcp_server
    from agent_memory.lifecycle import Sweeper

    sweeper = Sweeper(service, settings.sweep_interval, answered)
    sweeper.start()
    sys.setswitchinterval(SWITCH_INTERVAL_SECS)
    try:
        mcp_server.serve_stdio(service, answered, outlook)
    except KeyboardInterrupt:
        pass
    finally:
        sweeper.stop()
        service.close()


def terminal_notice(db: Path | None) -> str:
    """The line ``serve`` prints when a person starts it in a terminal: what it is, and
    the configuration that starts it from an MCP client (with this --db, if given)."""
    args = ["serve", *(["--db", str(db.resolve())] if db is not None else [])]
    entry = json.dumps({"command": "agent-memory", "args": args})
    command = shlex.join(["claude", "mcp", "add", "--scope", "user", "agent-memory", "--"])
    return (
        "agent-memory serve speaks MCP (JSON-RPC) on stdin/stdout and is meant to be started "
        f'by an MCP client, not typed into: add the server "agent-memory": {entry} to the '
        f"client's MCP configuration (Claude Code: {command} "
        f"{shlex.join(['agent-memory', *args])}). Ctrl-D quits."
    )


@cli.command("serve-rest")
@click.option(
    "--addr",
    default=f"127.0.0.1:{DEFAULT_REST_PORT}",
    show_default=True,
    metavar="HOST:PORT",
    callback=parse_addr,
    help="Address to bind; [::1]:PORT for IPv6. Port 0 picks a free port.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback address (the API has no authentication) and accept any "
    "Host and Origin header.",
)
@click.pass_obj
def serve_rest(settings: Settings, addr: tuple[str, int], allow_remote: bool) -> None:
    """Run the REST API under waitress (loopback only by default)."""
    host, port = addr
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if not is_loopback(host) and not allow_remote:
        fail(
            f"refusing to bind non-loopback address {shown}: the REST API is unauthenticated; "
            "pass --allow-remote to expose it beyond localhost"
        )
    service = open_service(settings)
    from agent_memory.daemon import create_server
    from agent_memory.lifecycle import Sweeper

    try:
        server = create_server(service, host, port, allow_remote=allow_remote)
    except OSError as exc:
        service.close()
        fail(f"cannot listen on {shown}: {exc.strerror or exc}")
    bound = f"[{host}]" if ":" in host else host
    bound_port = server.effective_port
    if allow_remote:
        log.warning(
            "REST API exposed on %s:%s WITHOUT AUTHENTICATION: anyone who can reach this "
            "address can read and delete every memory; keep it behind a VPN, an SSH tunnel "
            "or an authenticating proxy",
            bound,
            bound_port,
        )
    sweeper = Sweeper(service, settings.sweep_interval)
    sweeper.start()
    # Both finish the requests in flight, then exit 0. SIGINT is set too: a daemon started
    # in the background by a script inherits it ignored, and Python then leaves it so.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.default_int_handler)
    sys.setswitchinterval(SWITCH_INTERVAL_SECS)
    click.echo(f"REST listening on {bound}:{bound_port}", err=True)
    try:
        server.run()  # returns after KeyboardInterrupt, once workers are done
    finally:
        sweeper.stop()
        service.close()


@cli.command()
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Re-embed every memory even when the database is already pinned to this model "
    "(for example after `ollama pull` brought a new version of it).",
)
@click.option(
    "--batch",
    type=Integer(min=1, max=1024),
    default=64,
    show_default=True,
    help="Memories per Ollama request (each batch is committed on its own).",
)
@click.pass_obj
def reembed(settings: Settings, everything: bool, batch: int) -> None:
    """Re-embed memories with --embed-model and pin the database to it.

    Run it after changing the embedding model: until then searches stay keyword-only. It
    is safe to interrupt; running it again resumes with the memories still pending.
    """
    service = open_service(settings)
    bar = Progress("re-embedding", minimum=1)
    try:
        embedded, pin = service.reembed(everything=everything, batch=batch, progress=bar.at)
    except (EmbedderUnavailable, StorageError) as exc:
        fail(str(exc))
    finally:
        bar.close()
        service.close()
    click.echo(f"re-embedded {embedded} memories with {pin.describe()}", err=True)


@cli.command()
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write to this file (atomically: a temp file, synced, then renamed). A FIFO or a "
    "character device is written into instead; a symbolic link or any other kind of file "
    "is refused. Default: stdout.",
)
@click.pass_obj
def export(settings: Settings, output: Path | None) -> None:
    """Export every memory and relation as portable JSONL (format v1)."""
    try:
        stream = output is not None and files.is_stream(output)
    except files.OutputRefused as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    service = open_service(settings)
    bar = Progress("exporting")

    def counted(write: Callable[[str], object]) -> Callable[[str], object]:
        lines = [0, 0]  # written, total (from the header)

        def write_line(text: str) -> object:
            if lines[0] == 0:
                header = json.loads(text)
                lines[1] = header["exported_rows"] + header["exported_links"]
            elif lines[0] % 1000 == 0:
                bar.at(lines[0], lines[1])
            lines[0] += 1
            return write(text)

        return write_line

    def produce(write: Callable[[str], object]) -> tuple[int, int]:
        embedder = service.embedder
        return service.export(counted(write), embedder.model, embedder.dimension or 0)

    with files.dying_of_signals():
        try:
            if output is None:
                stdout = sys.stdout.buffer
                rows, links = produce(lambda text: stdout.write(text.encode()))
                stdout.flush()
            else:
                rows, links = (files.write_through if stream else files.write_atomically)(
                    output, produce
                )  # type: ignore[misc]
        except StorageError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write {output or 'stdout'}: {exc.strerror or exc}")
        finally:
            bar.close()
            service.close()
    click.echo(f"exported {rows} memories and {links} links", err=True)


@cli.command("import")
@click.option(
    "--from",
    "source_format",
    type=click.Choice(["jsonl", "gsd-state"]),
    required=True,
    help="jsonl: a file written by `agent-memory export`; gsd-state: a GSD .planning/STATE.md.",
)
@click.option(
    "--scope",
    help="gsd-state only: the scope of the imported memories (default: the name of the "
    "project directory that contains .planning).",
)
@click.argument("path", type=click.Path(path_type=Path))
@click.pass_obj
def import_(settings: Settings, source_format: str, scope: str | None, path: Path) -> None:
    """Import memories and relations from PATH (validated whole before anything is written)."""
    from agent_memory.portable import jsonl_reader

    if source_format == "gsd-state":
        import_gsd(settings, path, scope)
        return
    if scope is not None:
        raise click.UsageError(
            "--scope is not accepted with --from jsonl: every memory in the file carries its "
            "own scope"
        )
    reader = jsonl_reader(path, settings.max_content_bytes)
    try:
        reader.check()  # the database is not even opened for a file with a defect
    except UnicodeDecodeError:
        fail(f"cannot read {path}: not UTF-8 text")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    except (InvalidArgument, FormatTooNew) as exc:
        fail(str(exc))
    service = open_service(settings)
    bar = Progress("importing")
    try:
        report = service.import_jsonl(reader, progress=bar.at)
    except StorageError as exc:
        fail(str(exc))
    finally:
        bar.close()
        service.close()
    echo_import_report(report)
    if report["imported"]:
        click.echo(
            f"{report['imported']} rows pending embedding — the sweep backfills them on the "
            "next serve/serve-rest start (128 per tick)"
        )


def import_gsd(settings: Settings, path: Path, scope: str | None) -> None:
    from agent_memory import gsd

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        fail(f"cannot read {path}: not UTF-8 text")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    parsed = gsd.parse(text)
    service = open_service(settings)
    try:
        report = service.import_gsd(
            parsed.items, parsed.malformed, scope if scope is not None else gsd.default_scope(path)
        )
    except StorageError as exc:
        fail(str(exc))
    finally:
        service.close()
    echo_import_report(report)


def echo_import_report(report: dict[str, int]) -> None:
    """The counts on one line; then, only when secrets were redacted, how many and where."""
    from agent_memory.portable import REDACTION_COUNTS

    counts = {name: count for name, count in report.items() if name not in REDACTION_COUNTS}
    click.echo(", ".join(f"{name}: {count}" for name, count in counts.items()))
    secrets, memories = (report.get(name, 0) for name in REDACTION_COUNTS)
    if secrets:
        click.echo(f"secrets redacted: {secrets} in {memories} memories")


cli.add_command(ui.ui)


def main() -> None:
    cli(prog_name="agent-memory")
