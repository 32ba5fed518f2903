"""``agent-memory history ID`` (memory_history) and the ``--as-of`` option of search, list
and show: a memory's versions, and the memories as they stood at a past moment."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import click

from agent_memory.storage.base import READ
from agent_memory.transports.cli import display
from agent_memory.transports.cli.command_support import (
    answering,
    finish,
    json_option,
    number,
    open_service,
)
from agent_memory.transports.cli.terminal import Subcommand, quiet

as_of_option = click.option(
    "--as-of",
    "as_of",
    metavar="WHEN",
    help="As the memories stood at WHEN: Unix seconds or an ISO 8601 date-time "
    "(2026-12-01T09:00:00Z).",
)


def versions(answer: dict[str, Any], now: int) -> Iterator[str]:
    """The lines of a memory's versions, oldest first."""
    for version in answer["versions"]:
        written = display.when(version["written_at"], now)
        head = f"version {version['version']}  written {written} by "
        head += display.printable(version["written_by"])
        if version["replaced_at"] is None:
            head += "  (current)"
        else:
            by = display.printable(version["replaced_by"])
            head += f"  replaced {display.when(version['replaced_at'], now)} by {by}"
            if version["change"] == "duplicate":
                source = version["change_source"]
                came = "" if source is None else " from " + display.printable(source)
                head += f" (duplicate store{came})"
        yield head
        scope = version["scope"]
        tags = display.printable(", ".join(version["tags"])) or "-"
        yield f"  scope {display.printable(scope) if scope else 'global'}; tags {tags}"
        expires = version["expires_at"]
        yield f"  expires {'never' if expires is None else display.when(expires, now)}"
        for line in display.printable_lines(version["content"]):
            yield f"  {line}"
        yield ""


@click.command(cls=Subcommand)
@click.argument("memory_id", metavar="ID")
@json_option
@click.pass_obj
@quiet
def history(settings: Any, memory_id: str, as_json: bool) -> None:
    """Show a memory's versions, oldest first (memory_history). Not a use."""

    def shown(answer: dict[str, Any]) -> None:
        for line in versions(answer, int(time.time())):
            click.echo(line)

    service = open_service(settings, READ)
    with answering(service):
        answer = service.history({"id": number(memory_id)})
    finish(answer, shown, as_json=as_json)
