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
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from agent_memory import __version__, files
from agent_memory.commands import COMMANDS
from agent_memory.embedders import ollama
from agent_memory.errors import (
    BackupFailed,
    DatabaseMissing,
    DatabaseOpenError,
    EmbedderUnavailable,
    FormatTooNew,
    InvalidArgument,
    SchemaTooNew,
    StorageError,
)
from agent_memory.storage.base import CREATE, READ
from agent_memory.terminal import Integer, Progress

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


def configure_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=level.upper(), format=LOG_FORMAT, force=True)
    if level.lower() != "debug":
        logging.getLogger("alembic").setLevel(logging.WARNING)


def fail(message: str) -> None:
    """One clear line on stderr and exit 1: never a traceback for an operator's problem."""
    click.echo(message, err=True)
    sys.exit(1)


def open_service(settings: Settings, *, mode: str = CREATE):  # -> MemoryService (lazy)
    """``mode``: EXISTING for a command that changes what is there, READ for one that only
    reads (storage.open_store)."""
    try:
        return _service(settings, mode=mode)
    except (DatabaseMissing, DatabaseOpenError, SchemaTooNew, BackupFailed) as exc:
        fail(str(exc))


def _service(settings: Settings, *, mode: str = CREATE):  # -> MemoryService
    from agent_memory.embedders.ollama import Ollama
    from agent_memory.service import MemoryService
    from agent_memory.storage import open_store

    store = open_store(settings.db, mode=mode)
    log.info("database %s (schema version %d)", store.location, store.schema_version)
    return MemoryService(
        store,
        embedder=Ollama(settings.ollama_url, settings.embed_model),
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="agent-memory", message="%(prog)s %(version)s"
)
@click.option(
    "--db",
    type=click.Path(path_type=Path),
    help="Database file. Default: $AGENT_MEMORY_DB, else memory.db in your user data directory.",
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
def cli(
    ctx: click.Context,
    db: Path | None,
    ollama_url: str,
    embed_model: str,
    sweep_interval: int,
    max_content_bytes: int,
    redact: str,
    log_level: str,
) -> None:
    """Persistent, typed, local memory for AI agents, in one SQLite file."""
    configure_logging(log_level)
    ctx.obj = Settings(
        db=db,
        ollama_url=ollama_url,
        embed_model=embed_model,
        sweep_interval=sweep_interval,
        max_content_bytes=max_content_bytes,
        redact=redact.lower() == "on",
    )


@cli.command()
@click.pass_obj
def serve(settings: Settings) -> None:
    """Run the MCP server on stdin/stdout (creates the database on first run)."""
    from agent_memory import storage

    try:
        at_head = storage.ready_to_serve(settings.db)
    except (DatabaseOpenError, SchemaTooNew) as exc:
        fail(str(exc))
    answered = threading.Event()
    # A new file or a migration is opened before the first answer, as everywhere else.
    service = OpeningService(settings, answered) if at_head else open_service(settings)
    from agent_memory import mcp_server
    from agent_memory.lifecycle import Sweeper

    sweeper = Sweeper(service, settings.sweep_interval, answered)
    sweeper.start()
    sys.setswitchinterval(SWITCH_INTERVAL_SECS)
    try:
        mcp_server.serve_stdio(service, answered)
    except KeyboardInterrupt:
        pass
    finally:
        sweeper.stop()
        service.close()


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
    service = open_service(settings, mode=READ)
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
    if not parsed.sections:
        known = ", ".join(name.title() for name in gsd.SECTIONS)
        click.echo(f"no known GSD section in {path} (headings read: {known})", err=True)
    if not parsed.items:  # nothing to write: the database is not even opened
        echo_import_report(
            {"imported": 0, "skipped duplicates": 0, "malformed lines skipped": parsed.malformed}
        )
        return
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


def main() -> None:
    cli(prog_name="agent-memory")


for _command in COMMANDS:  # for people and agent hooks: search, list, show, ..., context
    cli.add_command(_command)
