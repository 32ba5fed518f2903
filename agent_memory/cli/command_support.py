"""What the memory commands (commands.py) share: the service opened for one call, its
refusals as exit codes, options read as the tool takes its arguments, and the answer
printed as JSON or for a person.

Exit codes: 0; 1 for a storage or runtime failure, and for not found (one line); 2 for a
usage error or an invalid argument. Imports only click and light modules: ``context``
runs at every agent's start.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import click

from agent_memory.cli import display
from agent_memory.contract import wire
from agent_memory.contract.errors import (
    BackupFailed,
    DatabaseMissing,
    DatabaseOpenError,
    InvalidArgument,
    SchemaTooNew,
    StorageError,
    UnknownField,
)
from agent_memory.contract.vocabulary import MEMORY_TYPES

if TYPE_CHECKING:  # the service (and SQLAlchemy) load only when a command opens it
    from agent_memory.service.core import MemoryService

EXIT_FAILED = 1
EXIT_USAGE = 2
# Errors that stop a command with one line and exit code 1.
FAILURES = (StorageError, DatabaseMissing, DatabaseOpenError, SchemaTooNew, BackupFailed)
Answer = dict[str, Any]


def stop(message: str, code: int) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(code)


def open_service(settings: Any, mode: str, embedding: bool = False) -> MemoryService:
    """The service; with an embedder only for a call that makes or compares vectors
    (``embedding``: a search, a store, new content): the others never ask Ollama nor load
    the local model."""
    from agent_memory.app import open_service as opened

    return opened(settings, mode=mode, embedding=embedding)


@contextmanager
def answering(service: MemoryService) -> Iterator[None]:
    """The service's refusals as exit codes (2: the arguments, 1: anything else); closes it."""
    try:
        yield
    except (InvalidArgument, UnknownField) as exc:
        stop(str(exc), EXIT_USAGE)
    except FAILURES as exc:
        stop(str(exc), EXIT_FAILED)
    finally:
        service.close()


def number(text: str | None) -> Any:
    """An option's text as the tool would get it: ASCII digits as an integer, anything else
    as the string it is (which the service then refuses, naming the field)."""
    if text is None:
        return None
    stripped = text.strip()
    return wire.integer(stripped) if wire.INTEGER.fullmatch(stripped) else text


def arguments(**fields: Any) -> dict[str, Any]:
    """The tool's arguments: the options given, under the tool's names."""
    return {name: value for name, value in fields.items() if value is not None}


def print_json(payload: Any) -> None:
    click.echo(display.json_text(payload))


def print_table(memories: Iterable[dict[str, Any]], related: bool = False) -> int:
    """The table on stdout; how many memories it showed."""
    count = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal count
        for memory in memories:
            count += 1
            yield memory

    for line in display.table(counted(), int(time.time()), related=related):
        click.echo(line)
    return count


def not_found_line(answer: Answer) -> str:
    return f"memory {answer['id']} not found"


def finish(
    answer: Answer,
    show: Callable[[Answer], None],
    *,
    as_json: bool,
    missing: Callable[[Answer], str] = not_found_line,
) -> None:
    """A service call's answer: as JSON, or ``show``n; a not-found answer exits 1 (with
    ``missing``'s line, or the JSON)."""
    if answer.get("reason") == "not_found":
        if as_json:
            print_json(answer)
            sys.exit(EXIT_FAILED)
        stop(missing(answer), EXIT_FAILED)
    print_json(answer) if as_json else show(answer)


def read_back(service: MemoryService, answer: Answer) -> Answer:
    """The memory of a change's answer as ``get`` reads it (uses, relations), with the
    answer's ``redacted``; the answer itself when it was not found or forgotten meanwhile."""
    if answer.get("reason") == "not_found":
        return answer
    whole = service.get({"id": answer["id"]})
    if whole.get("reason") == "not_found":
        return answer
    return {**whole, "redacted": answer["redacted"]} if "redacted" in answer else whole


def read_content(given: str | None) -> str:
    """CONTENT as given, or stdin's (when left out or ``-``), without the newline that echo
    and here-documents end it with."""
    if given is not None and given != "-":
        return given
    if given is None and sys.stdin.isatty():
        raise click.UsageError("give the content as an argument, or on stdin")
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise click.UsageError("the content on stdin is not UTF-8 text") from None
    return text.removesuffix("\n").removesuffix("\r")


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the tool's answer as JSON, for scripts."
)
expand_option = click.option(
    "--expand", is_flag=True, help="Show each memory's related memories (expand_links)."
)


def memory_type(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """--type in any case (decision, Decision): the type's name as the contract spells it
    (upper-case); anything else as typed, for the service to refuse by name."""
    if value is not None and value.upper() in MEMORY_TYPES:
        return value.upper()
    return value


def filters(command: Callable[..., Any]) -> Callable[..., Any]:
    """--type, --tag, --scope and --by: the tool's filters, passed on as ``**filters``."""
    for option in reversed(
        [
            click.option(
                "--type", "type", metavar="TYPE", callback=memory_type, help="Only this type."
            ),
            click.option("--tag", metavar="TAG", help="Only memories carrying exactly this tag."),
            click.option("--scope", metavar="SCOPE", help="Only memories of this scope."),
            click.option(
                "--by", metavar="NAME", help="Only memories stored or last changed by NAME."
            ),
        ]
    ):
        command = option(command)
    return command
