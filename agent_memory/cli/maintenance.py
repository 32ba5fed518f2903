"""The commands that handle a whole database: export to and import from JSON Lines (and a
GSD STATE.md), embed what waits for a vector, reembed with another model, and doctor's
checks and repairs. Registered on the group by cli.py.

Every command here logs warnings and errors only at the default --log-level (a file from
the future, an import taken out again): its report is its answer.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agent_memory import app as wiring
from agent_memory.app import fail
from agent_memory.cli import display, importing
from agent_memory.cli.terminal import Integer, Progress, Subcommand, quiet_below
from agent_memory.contract.errors import (
    EmbedderUnavailable,
    EmbeddingOff,
    FormatTooNew,
    InvalidArgument,
    PinMismatch,
    StorageError,
)
from agent_memory.contract.models import Pin
from agent_memory.contract.vocabulary import count
from agent_memory.settings import Settings
from agent_memory.storage import files
from agent_memory.storage.base import CREATE, EXISTING, READ
from agent_memory.transfer.importers import SOURCES

if TYPE_CHECKING:  # the service (and SQLAlchemy) load when a command opens it
    from agent_memory.service.core import MemoryService

Progressed = Callable[[int, int], None]  # progress(done, total)
# The other memory servers `import --from` reads.
PEERS = tuple(SOURCES)


_batch_option = click.option(
    "--batch",
    type=Integer(min=1, max=1024),
    default=64,
    show_default=True,
    help="Memories per embedder call (each batch is committed on its own).",
)


def _embedding_run(
    settings: Settings,
    mode: str,
    label: str,
    run: Callable[[MemoryService, Progressed], tuple[int, Pin]],
) -> tuple[int, Pin]:
    """``run(service, progress)``, a reembed or an embed, with its progress bar on stderr;
    one line and exit code 1 when it cannot go on (what it committed stays)."""
    service = wiring.open_service(settings, mode=mode)
    bar = Progress(label, minimum=1)
    try:
        return run(service, bar.at)
    except (EmbedderUnavailable, EmbeddingOff, PinMismatch, StorageError) as exc:
        fail(str(exc))
    finally:
        bar.close()
        service.close()


@click.command(cls=Subcommand)
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Re-embed every memory even when the database is already pinned to this model "
    "(for example after `ollama pull` brought a new version of it).",
)
@_batch_option
@click.pass_obj
@quiet_below(logging.WARNING)
def reembed(settings: Settings, everything: bool, batch: int) -> None:
    """Re-embed memories with --embed-model and pin the database to it.

    Run it after changing the embedding model: until then searches stay keyword-only. It
    is safe to interrupt; running it again resumes with the memories still pending.
    """
    embedded, pin = _embedding_run(
        settings,
        CREATE,
        "re-embedding",
        lambda service, progress: service.reembed(
            everything=everything, batch=batch, progress=progress
        ),
    )
    click.echo(f"re-embedded {count(embedded, 'memory')} with {pin.describe()}", err=True)


@click.command(cls=Subcommand)
@_batch_option
@click.pass_obj
@quiet_below(logging.WARNING)
def embed(settings: Settings, batch: int) -> None:
    """Embed now the memories still waiting for a vector.

    Imported memories, and those stored while no embedder answered, wait for one (serve
    and serve-rest embed 128 per sweep). This embeds them all, in committed batches, with
    the embedder --embedder chooses (auto: the one the database is pinned to). The pin
    stays: a database pinned to another model needs reembed. Safe to interrupt; running
    it again goes on with what is left.
    """
    embedded, pin = _embedding_run(
        settings,
        EXISTING,
        "embedding",
        lambda service, progress: service.embed_pending(batch=batch, progress=progress),
    )
    click.echo(f"embedded {count(embedded, 'memory')} with {pin.describe()}", err=True)


@click.command(cls=Subcommand)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write to this file (atomically: a temp file, synced, then renamed). A FIFO or a "
    "character device is written into instead; a symbolic link or any other kind of file "
    "is refused. Default: stdout.",
)
@click.pass_obj
@quiet_below(logging.WARNING)
def export(settings: Settings, output: Path | None) -> None:
    """Export every memory and relation as portable JSONL (format v1)."""
    try:
        stream = output is not None and files.is_stream(output)
    except files.OutputRefused as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    service = wiring.open_service(settings, mode=READ, embedding=False)
    bar = Progress("exporting")

    def counted(write: Callable[[str], object]) -> Callable[[str], None]:
        lines = [0, 0]  # written, total (from the header)

        def write_line(text: str) -> None:
            if lines[0] == 0:
                header = json.loads(text)
                lines[1] = header["exported_rows"] + header["exported_links"]
            elif lines[0] % 1000 == 0:
                bar.at(lines[0], lines[1])
            lines[0] += 1
            write(text)

        return write_line

    def produce(write: Callable[[str], object]) -> tuple[int, int]:
        return service.export(counted(write))

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
    click.echo(f"exported {count(rows, 'memory')} and {count(links, 'link')}", err=True)


@click.command("import", cls=Subcommand)
@click.option(
    "--from",
    "source_format",
    type=click.Choice(["jsonl", "gsd-state", *PEERS]),
    help="jsonl: a file written by `agent-memory export`; gsd-state: a GSD .planning/STATE.md; "
    f"{', '.join(PEERS)}: another memory server's file or folder (docs/importing.md). "
    "Default: told by PATH's name (*.jsonl, STATE.md, CLAUDE.md, AGENTS.md).",
)
@click.option(
    "--scope",
    help="Not for jsonl: the scope of the imported memories (default: gsd-state and "
    "claude-md, the project's directory name; engram, each observation's project; the "
    "other sources, none).",
)
@click.option(
    "--dry-run", is_flag=True, help="Not for jsonl, gsd-state: print what would be imported."
)
@click.argument("path", type=click.Path(path_type=Path))
@click.pass_obj
@quiet_below(logging.WARNING)
def import_(
    settings: Settings, source_format: str | None, scope: str | None, dry_run: bool, path: Path
) -> None:
    """Import memories and relations from PATH (validated whole before anything is written)."""
    from agent_memory.transfer.portable import jsonl_reader

    source_format = source_format or format_of(path)
    if source_format in PEERS:
        report = importing.import_from(settings, source_format, path, scope, dry_run)
        if report is not None:
            echo_import_report(report)
            echo_pending(report)
        return
    if dry_run:
        raise click.UsageError(f"--dry-run is not accepted with --from {source_format}")
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
    service = wiring.open_service(settings, embedding=False)  # the import never embeds
    bar = Progress("importing")
    try:
        report = service.import_jsonl(reader, progress=bar.at)
    except StorageError as exc:
        fail(str(exc))
    finally:
        bar.close()
        service.close()
    echo_import_report(report)
    echo_pending(report)


def echo_pending(report: dict[str, int]) -> None:
    """What waits for a vector after an import, and how it gets one."""
    if report["imported"]:
        click.echo(
            f"{count(report['imported'], 'memory')} waiting for a vector — the sweep backfills "
            "them on the next serve/serve-rest start (128 per tick), or run `agent-memory "
            "embed` now"
        )


def format_of(path: Path) -> str:
    """The format PATH's name tells (a .jsonl suffix, a GSD STATE.md), in any case; a usage
    error when it tells none."""
    if path.suffix.lower() == ".jsonl":
        return "jsonl"
    if path.name.lower() == "state.md":
        return "gsd-state"
    if path.name.lower() in ("claude.md", "claude.local.md", "agents.md"):
        return "claude-md"
    raise click.UsageError(
        f"cannot tell the format of {path} from its name (*.jsonl is jsonl, STATE.md is "
        "gsd-state): pass --from jsonl or --from gsd-state"
    )


def import_gsd(settings: Settings, path: Path, scope: str | None) -> None:
    from agent_memory.service import validate
    from agent_memory.transfer import gsd

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        fail(f"cannot read {path}: not UTF-8 text")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    try:
        validate.without_nul_lines(text)  # refused whole, before the database is opened
    except InvalidArgument as exc:
        fail(str(exc))
    parsed = gsd.parse(text)
    if not parsed.sections:
        known = ", ".join(name.title() for name in gsd.SECTIONS)
        click.echo(f"no known GSD section in {path} (headings read: {known})", err=True)
    if not parsed.items:  # nothing to write: the database is not even opened
        echo_import_report(
            {"imported": 0, "skipped duplicates": 0, "malformed lines skipped": parsed.malformed}
        )
        return
    service = wiring.open_service(settings, embedding=False)
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
    from agent_memory.transfer.portable import REDACTION_COUNTS

    counts = {name: count for name, count in report.items() if name not in REDACTION_COUNTS}
    click.echo(", ".join(f"{name}: {count}" for name, count in counts.items()))
    secrets, memories = (report.get(name, 0) for name in REDACTION_COUNTS)
    if secrets:
        click.echo(f"secrets redacted: {secrets} in {count(memories, 'memory')}")


@click.command(cls=Subcommand)
@click.option(
    "--repair",
    is_flag=True,
    help="Rebuild what can be rebuilt: indexes, the keyword index, relations and vectors of "
    "memories that are gone removed, memories whose vector is missing made pending. No "
    "memory is removed.",
)
@click.option("--json", "as_json", is_flag=True, help="The report as JSON, for scripts.")
@click.pass_obj
@quiet_below(logging.WARNING)
def doctor(settings: Settings, repair: bool, as_json: bool) -> None:
    """Check the database: integrity, keyword index, vectors, pin, backups, embedder.

    SQLite: PRAGMA integrity_check, the relations' foreign keys, FTS5's integrity-check,
    the vectors against the pin and the memories, and backups left beside the file.
    PostgreSQL: the keyword totals and the vectors (the server's own pages are for
    pg_amcheck). Then the pin, the memories waiting for a vector, and how searches would
    run: Ollama is asked which models it has; the local model is not loaded. Exits 1 when
    a check fails.
    """
    service = wiring.open_service(settings, mode=EXISTING if repair else READ)
    try:
        report = service.doctor(repair=repair)
    except StorageError as exc:
        fail(str(exc))
    finally:
        service.close()
    if as_json:
        click.echo(display.json_text(report))
    else:
        for line in doctor_lines(report):
            click.echo(line)
    if not report["ok"]:
        sys.exit(1)


def doctor_lines(report: dict[str, Any]) -> list[str]:
    """The report for a person: a line per check, what was repaired, then the embeddings."""
    lines = []
    for check in report["checks"]:
        line = f"{'ok' if check['ok'] else 'FAIL':<5} {check['check']}"
        line += f": {check['detail']}" if check["detail"] else ""
        if not check["ok"] and check["repairable"] and not report["repaired"]:
            line += " (doctor --repair rebuilds it)"
        lines.append(line)
    lines += [f"repaired: {done}" for done in report["repaired"]]
    lines.append(f"pin: {report['pin'] or 'none (no vector yet)'}")
    waiting = report["pending_embedding"]
    lines.append(
        f"memories: {report['memories']}, waiting for a vector: {waiting}"
        + (" (agent-memory embed embeds them now)" if waiting and report["embedder"] else "")
    )
    embedder = report["embedder"] or "none"
    status = f" ({report['embedder_status']})" if report["embedder_status"] else ""
    how = (
        f"searches are {report['search_mode']}"
        if report["search_mode"] == "hybrid"
        else f"searches are by keyword: {report['search_hint']}"
    )
    lines.append(f"embedder: {embedder}{status}; {how}")
    failed = sum(not check["ok"] for check in report["checks"])
    fails = "fails" if failed == 1 else "fail"
    lines.append(
        f"doctor: {count(failed, 'check')} {fails}" if failed else "doctor: all checks pass"
    )
    return lines


COMMANDS = (reembed, embed, export, import_, doctor)
