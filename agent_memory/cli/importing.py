"""``agent-memory import --from SOURCE`` for another memory server's files: read and checked
whole before the database is opened (a wrong file is one line and exit 1, nothing written),
then written as a JSONL import is: atomic, deduplicated, redacted, never embedded here.

``--dry-run`` prints what would be written, a line a memory, and opens no database: each
record goes through the import's own step (service.redact.import_step), so secrets show as
the markers that would be stored, and the preview says how many.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from agent_memory import app as wiring
from agent_memory.app import fail
from agent_memory.cli import display
from agent_memory.contract.errors import StorageError
from agent_memory.contract.vocabulary import count
from agent_memory.settings import Settings

if TYPE_CHECKING:
    from agent_memory.transfer.importers.common import Records

# Characters of a memory's first line shown by --dry-run.
DRY_RUN_CHARS = 100


def import_from(
    settings: Settings, source: str, path: Path, scope: str | None, dry_run: bool
) -> dict[str, int] | None:
    """The import's report (its counts, then each kind of item skipped), or None after a
    dry run."""
    from agent_memory.transfer import importers as sources
    from agent_memory.transfer.importers.common import NotASource, Records

    try:
        found = sources.read(source, path, settings.max_content_bytes)
        if scope is None:
            scope = sources.default_scope(source, path)
        records = Records(found, scope, settings.max_content_bytes)
        records.check()
    except NotASource as exc:
        fail(str(exc))
    skipped = {f"skipped {kind}": n for kind, n in sorted(found.skipped.items())}
    if dry_run:
        _dry_run(records, skipped, settings.redact)
        return None
    service = wiring.open_service(settings, embedding=False)  # the import never embeds
    try:
        report = service.import_jsonl(records)  # type: ignore[arg-type]  # its shape
    except StorageError as exc:
        fail(str(exc))
    finally:
        service.close()
    return {**report, **skipped}


def _dry_run(records: Records, skipped: dict[str, int], redact: bool) -> None:
    """Each memory as the import would write it (escaped for the terminal), then the
    counts, and how many secrets would be replaced."""
    from agent_memory.service.redact import import_step

    step = import_step(redact)
    assert records.header is not None
    scopes: set[str] = set()
    secrets = redacted = 0
    for record in records.memories:
        written = {**record, "tags": list(record["tags"])}  # the records stay as read
        found = step(written)
        secrets, redacted = secrets + len(found), redacted + bool(found)
        scopes.add(written["scope"] or "global")
        first = written["content"].split("\n", 1)[0][:DRY_RUN_CHARS]
        tags = display.printable(", ".join(written["tags"]))
        click.echo(f"{written['type']:<12} {display.printable(first)}  [{tags}]")
    header = records.header
    shown = ", ".join(display.printable(scope) for scope in sorted(scopes)) or "global"
    line = (
        f"would import {count(header['exported_rows'], 'memory')} and "
        f"{count(header['exported_links'], 'link')} (scope: {shown}; "
        "duplicates are found when written)"
    )
    click.echo(", ".join([line, *(f"{name}: {n}" for name, n in skipped.items())]))
    if secrets:
        click.echo(f"secrets that would be redacted: {secrets} in {count(redacted, 'memory')}")
