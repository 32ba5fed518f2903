"""``agent-memory history ID`` (memory_history) and the ``--as-of`` option of search, list
and show: a memory's versions, and the memories as they stood at a past moment.

``history ID --purge`` drops the earlier versions for good (service.purge_history): it
shows them, a line each, and asks first (``--yes`` does not ask; without a terminal to ask
on, it must be given)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import click

from agent_memory.cli import display
from agent_memory.cli.command_support import (
    EXIT_FAILED,
    EXIT_USAGE,
    answering,
    finish,
    json_option,
    number,
    open_service,
    stop,
)
from agent_memory.cli.terminal import Subcommand, quiet
from agent_memory.contract.vocabulary import count
from agent_memory.storage.base import EXISTING, READ

# Characters of a version's content on the line --purge shows it on.
PURGE_SNIPPET_CHARS = 60

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
@click.option(
    "--purge",
    is_flag=True,
    help="Drop every earlier version for good, keeping the current one (a secret an update "
    "removed leaves the history and later exports), after showing them and asking.",
)
@click.option("--yes", "-y", is_flag=True, help="With --purge: do not ask before dropping.")
@json_option
@click.pass_obj
@quiet
def history(settings: Any, memory_id: str, purge: bool, yes: bool, as_json: bool) -> None:
    """Show a memory's versions, oldest first (memory_history). Not a use."""
    if yes and not purge:
        stop("--yes goes with --purge", EXIT_USAGE)
    if purge:
        _purge(settings, number(memory_id), yes, as_json)
        return

    def shown(answer: dict[str, Any]) -> None:
        for line in versions(answer, int(time.time())):
            click.echo(line)

    service = open_service(settings, READ)
    with answering(service):
        answer = service.history({"id": number(memory_id)})
    finish(answer, shown, as_json=as_json)


def _purge(settings: Any, memory_id: Any, yes: bool, as_json: bool) -> None:
    """Show the earlier versions, ask, drop them; say how many went."""
    if as_json and not yes:
        stop("--purge with --json needs --yes (there is no one to ask)", EXIT_USAGE)
    earlier: list[dict[str, Any]] = []
    service = open_service(settings, EXISTING)
    with answering(service):
        answer = service.history({"id": memory_id})
        if answer.get("reason") != "not_found":
            earlier = answer["versions"][:-1]
            if not as_json and not earlier:
                click.echo(f"memory {answer['id']} has no earlier versions: nothing to purge")
                return
            if not as_json:
                _show_earlier(answer["id"], earlier)
            if not yes and not _confirmed(answer["id"], len(earlier)):
                stop("nothing was purged", EXIT_FAILED)
            answer = service.purge_history({"id": answer["id"]})
    finish(answer, lambda done: _said(done, len(earlier)), as_json=as_json)


def _show_earlier(memory_id: int, earlier: list[dict[str, Any]]) -> None:
    """A line per version to drop: when it was replaced, its text on one line (escaped)."""
    now = int(time.time())
    click.echo(f"memory {memory_id}: {count(len(earlier), 'earlier version')} to purge")
    for version in earlier:
        replaced = display.when(version["replaced_at"], now)
        text = display.one_line(version["content"], PURGE_SNIPPET_CHARS)
        click.echo(f"  version {version['version']}  replaced {replaced}: {text}")


def _confirmed(memory_id: int, versions: int) -> bool:
    if not sys.stdin.isatty():
        stop("--purge asks before dropping: pass --yes to drop without asking", EXIT_USAGE)
    return click.confirm(
        f"Drop {count(versions, 'earlier version')} of memory {memory_id} for good? Its "
        "current version stays; exports and backups made before keep them.",
        default=False,
    )


def _said(answer: dict[str, Any], shown: int) -> None:
    purged = answer["purged"]
    line = f"purged {count(purged, 'earlier version')} of memory {answer['id']}"
    if purged > shown:  # updated between the list and the answer: those went too
        line += f" ({purged - shown} more than shown: it was updated meanwhile)"
    click.echo(f"{line}; its current version is kept")
