"""The commands that move a whole database: export to and import from JSON Lines (and a GSD
STATE.md), and reembed with another model. Registered on the group by cli.py.

export and import log warnings and errors only at the default --log-level (a file from the
future, an import taken out again): their report is their answer.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import click

from agent_memory import display, files, storage, wiring
from agent_memory.errors import (
    EmbedderUnavailable,
    FormatTooNew,
    InvalidArgument,
    StorageError,
)
from agent_memory.storage.base import READ
from agent_memory.terminal import Integer, Progress, Subcommand, quiet_below
from agent_memory.wiring import Settings, fail


@click.command(cls=Subcommand)
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
    service = wiring.open_service(settings)
    bar = Progress("re-embedding", minimum=1)
    try:
        embedded, pin = service.reembed(everything=everything, batch=batch, progress=bar.at)
    except (EmbedderUnavailable, StorageError) as exc:
        fail(str(exc))
    finally:
        bar.close()
        service.close()
    click.echo(f"re-embedded {embedded} memories with {pin.describe()}", err=True)


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
    service = wiring.open_service(settings, mode=READ)
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
    click.echo(
        f"exported {display.count(rows, 'memory')} and {display.count(links, 'link')}", err=True
    )


@click.command("import", cls=Subcommand)
@click.option(
    "--from",
    "source_format",
    type=click.Choice(["jsonl", "gsd-state"]),
    help="jsonl: a file written by `agent-memory export`; gsd-state: a GSD .planning/STATE.md. "
    "Default: told by PATH's name (*.jsonl, STATE.md).",
)
@click.option(
    "--scope",
    help="gsd-state only: the scope of the imported memories (default: the name of the "
    "project directory that contains .planning).",
)
@click.argument("path", type=click.Path(path_type=Path))
@click.pass_obj
@quiet_below(logging.WARNING)
def import_(settings: Settings, source_format: str | None, scope: str | None, path: Path) -> None:
    """Import memories and relations from PATH (validated whole before anything is written)."""
    from agent_memory.portable import jsonl_reader

    if (source_format or format_of(path)) == "gsd-state":
        import_gsd(settings, path, scope)
        return
    if scope is not None:
        raise click.UsageError(
            "--scope is not accepted with --from jsonl: every memory in the file carries its "
            "own scope"
        )
    reader = jsonl_reader(
        path, settings.max_content_bytes, holds_nul=storage.holds_nul(settings.db)
    )
    try:
        reader.check()  # the database is not even opened for a file with a defect
    except UnicodeDecodeError:
        fail(f"cannot read {path}: not UTF-8 text")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    except (InvalidArgument, FormatTooNew) as exc:
        fail(str(exc))
    service = wiring.open_service(settings)
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
            f"{display.count(report['imported'], 'row')} pending embedding — the sweep "
            "backfills them on the next serve/serve-rest start (128 per tick)"
        )


def format_of(path: Path) -> str:
    """The format PATH's name tells (a .jsonl suffix, a GSD STATE.md), in any case; a usage
    error when it tells none."""
    if path.suffix.lower() == ".jsonl":
        return "jsonl"
    if path.name.lower() == "state.md":
        return "gsd-state"
    raise click.UsageError(
        f"cannot tell the format of {path} from its name (*.jsonl is jsonl, STATE.md is "
        "gsd-state): pass --from jsonl or --from gsd-state"
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
    service = wiring.open_service(settings)
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
        click.echo(f"secrets redacted: {secrets} in {display.count(memories, 'memory')}")


COMMANDS = (reembed, export, import_)
