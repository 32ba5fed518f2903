"""The commands that move a whole database: export to and import from JSON Lines (and a GSD
STATE.md), and reembed with another model. Registered on the group by cli.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import click

from agent_memory import files, wiring
from agent_memory.errors import (
    EmbedderUnavailable,
    FormatTooNew,
    InvalidArgument,
    StorageError,
)
from agent_memory.storage.base import READ
from agent_memory.terminal import Integer, Progress, Subcommand
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
    click.echo(f"exported {rows} memories and {links} links", err=True)


@click.command("import", cls=Subcommand)
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
            f"{report['imported']} rows pending embedding — the sweep backfills them on the "
            "next serve/serve-rest start (128 per tick)"
        )


def import_gsd(settings: Settings, path: Path, scope: str | None) -> None:
    from agent_memory import gsd, validate

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
        click.echo(f"secrets redacted: {secrets} in {memories} memories")


COMMANDS = (reembed, export, import_)
