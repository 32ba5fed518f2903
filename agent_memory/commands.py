"""The commands for people and agent hooks: look at, search and correct memories from a
terminal (search, list, show, store, update, forget, link, unlink, stats), and the session
brief (context).

Each memory command hands one service method the arguments its MCP tool would get (an
option left out is an argument left out, numbers as typed), so it validates and answers as
the tool does; ``--json`` prints the tool's answer as its text (compact JSON). Otherwise a
table or a record. Exit codes: 0; 1 for a storage or runtime failure, and for not found
(one line); 2 for a usage error or an invalid argument. Commands that read, and those that
change what exists, open an existing database only (storage.open_store modes READ, which
reads a file it cannot write read-only, and EXISTING); only store creates one.

At the default --log-level only errors are logged: a person reads the answer, and an agent
hook's stderr is shown to people only. The module imports only click and light modules at
the top: ``context`` runs at every agent's start.
"""

from __future__ import annotations

import functools
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from agent_memory import brief, display, project, wire
from agent_memory.errors import (
    BackupFailed,
    DatabaseBusy,
    DatabaseMissing,
    DatabaseOpenError,
    InvalidArgument,
    SchemaTooNew,
    StorageError,
    StorageFault,
    UnknownField,
)
from agent_memory.storage.base import CREATE, EXISTING, READ
from agent_memory.terminal import Integer, Subcommand, quiet
from agent_memory.vocabulary import (
    DEFAULT_SEARCH_LIMIT,
    LINK_KINDS,
    MAX_LIMIT,
    MAX_TTL_SECS,
    MEMORY_TYPES,
    count,
)

log = logging.getLogger(__name__)

EXIT_FAILED = 1
EXIT_USAGE = 2
# Errors that stop a command with one line and exit code 1.
FAILURES = (StorageError, DatabaseMissing, DatabaseOpenError, SchemaTooNew, BackupFailed)


def _stop(message: str, code: int) -> None:
    click.echo(message, err=True)
    sys.exit(code)


def _open(settings: Any, mode: str, embedding: bool = False) -> Any:  # -> MemoryService
    """The service; with an embedder only for a call that makes or compares vectors
    (``embedding``): the others never ask Ollama nor load the local model."""
    from agent_memory.wiring import open_service

    return open_service(settings, mode=mode, embedding=embedding)


def _needs_vectors(operation: str, args: dict[str, Any]) -> bool:
    """Whether a service call makes or compares vectors: a search, a store, new content."""
    return operation in ("search", "store") or (operation == "update" and "content" in args)


@contextmanager
def _answering(service: Any) -> Iterator[None]:
    """The service's refusals as exit codes (2: the arguments, 1: anything else); closes it."""
    try:
        yield
    except (InvalidArgument, UnknownField) as exc:
        _stop(str(exc), EXIT_USAGE)
    except FAILURES as exc:
        _stop(str(exc), EXIT_FAILED)
    finally:
        service.close()


def _number(text: str | None) -> Any:
    """An option's text as the tool would get it: ASCII digits as an integer, anything else
    as the string it is (which the service then refuses, naming the field)."""
    if text is None:
        return None
    stripped = text.strip()
    return wire.integer(stripped) if wire.INTEGER.fullmatch(stripped) else text


def _args(**fields: Any) -> dict[str, Any]:
    """The tool's arguments: the options given, under the tool's names."""
    return {name: value for name, value in fields.items() if value is not None}


def _print_json(payload: Any) -> None:
    click.echo(display.json_text(payload))


def _print_table(memories: Iterable[dict[str, Any]], related: bool = False) -> int:
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


def _answer(
    settings: Any,
    mode: str,
    operation: str,
    args: dict[str, Any],
    show: Callable[[dict[str, Any]], None],
    *,
    as_json: bool,
    missing: Callable[[dict[str, Any]], str] = lambda answer: f"memory {answer['id']} not found",
    read_back: bool = False,
) -> None:
    """One service operation and its answer: as JSON, or ``show``n; a not-found answer
    exits 1 (with ``missing``'s line, or the JSON). ``read_back``: ``show`` gets the
    memory as ``get`` reads it (uses, relations), on the same service, with the answer's
    ``redacted``; the answer itself if it was forgotten meanwhile."""
    service = _open(settings, mode, _needs_vectors(operation, args))
    with _answering(service):
        answer = getattr(service, operation)(args)
        if read_back and not as_json and answer.get("reason") != "not_found":
            whole = service.get({"id": answer["id"]})
            if whole.get("reason") != "not_found":
                answer = (
                    {**whole, "redacted": answer["redacted"]} if "redacted" in answer else whole
                )
    if answer.get("reason") == "not_found":
        if as_json:
            _print_json(answer)
            sys.exit(EXIT_FAILED)
        _stop(missing(answer), EXIT_FAILED)
    _print_json(answer) if as_json else show(answer)


def _read_content(given: str | None) -> str:
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


_json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the tool's answer as JSON, for scripts."
)


def _memory_type(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """--type in any case (decision, Decision): the type's name as the contract spells it
    (upper-case); anything else as typed, for the service to refuse by name."""
    if value is not None and value.upper() in MEMORY_TYPES:
        return value.upper()
    return value


def _filters(command: Callable[..., Any]) -> Callable[..., Any]:
    """--type, --tag and --scope: the tool's filters, passed on as ``**filters``."""
    for option in reversed(
        [
            click.option(
                "--type", "type", metavar="TYPE", callback=_memory_type, help="Only this type."
            ),
            click.option("--tag", metavar="TAG", help="Only memories carrying exactly this tag."),
            click.option("--scope", metavar="SCOPE", help="Only memories of this scope."),
        ]
    ):
        command = option(command)
    return command


_expand_option = click.option(
    "--expand", is_flag=True, help="Show each memory's related memories (expand_links)."
)


@click.command(cls=Subcommand)
@click.argument("query")
@_filters
@click.option(
    "--limit",
    metavar="N",
    help=f"At most N results (1-{MAX_LIMIT}, default {DEFAULT_SEARCH_LIMIT}).",
)
@_expand_option
@click.option(
    "--explain",
    is_flag=True,
    help="Say under each result why it is there, and after them how the page was made.",
)
@_json_option
@click.pass_obj
@quiet
def search(
    settings: Any,
    query: str,
    limit: str | None,
    expand: bool,
    explain: bool,
    as_json: bool,
    **filters: Any,
) -> None:
    """Search memories, best first (memory_search).

    QUERY is words, a question or FTS5 syntax. The memories found count as used."""
    args = _args(
        query=query,
        **filters,
        limit=_number(limit),
        expand_links=expand or None,
        explain=explain or None,
    )
    service = _open(settings, READ, embedding=True)
    off = service.embedding_off
    with _answering(service):
        answer = service.search(args)
        waiting = 0 if as_json or off else service.waiting_for_vectors()
    if as_json:
        _print_json(answer)
        return
    shown = _print_table(answer["results"], related=expand)
    if explain:
        click.echo(f"explain: {display.explanation(answer['explain'])}")
    click.echo(f"{shown} found ({_search_mode(answer['search_mode'], waiting, off)})", err=True)


def _search_mode(mode: str, pending: int, off: bool) -> str:
    """How the search ran, and why not by meaning when that is what is missing: memories
    waiting for a vector (``agent-memory embed`` makes them), or embedding turned off
    (then nothing is counted)."""
    if off:
        return f"{mode} search: search by meaning is off (--embedder none)"
    if not pending:
        return f"{mode} search"
    waiting = f"{count(pending, 'memory')} waiting for a vector"
    return f"{mode} search: {waiting}; run `agent-memory embed`"


@click.command("list", cls=Subcommand)
@_filters
@click.option("--limit", metavar="N", help=f"At most N memories (1-{MAX_LIMIT}); default: all.")
@_expand_option
@_json_option
@click.pass_obj
@quiet
def list_(settings: Any, limit: str | None, expand: bool, as_json: bool, **filters: Any) -> None:
    """List memories, newest first (memory_list). Not a use."""
    args = _args(**filters, limit=_number(limit), expand_links=expand or None)
    service = _open(settings, READ)
    with _answering(service):
        rows = service.iter_list(args)  # bad arguments are refused here, before any output
        if as_json:  # streamed: the same text as the tool's {"memories": [...]}
            click.echo('{"memories": [', nl=False)
            for position, memory in enumerate(rows):
                separator = ", " if position else ""
                click.echo(separator + display.json_text(memory), nl=False)
            click.echo("]}")
            return
        shown = _print_table(rows, related=expand)
    click.echo(count(shown, "memory"), err=True)


@click.command(cls=Subcommand)
@click.argument("memory_id", metavar="ID")
@_json_option
@click.pass_obj
@quiet
def show(settings: Any, memory_id: str, as_json: bool) -> None:
    """Show one memory whole, with its relations.

    Every field of memory ID, and its relations both ways. Not a use."""
    _show(settings, _number(memory_id), as_json)


def _show(settings: Any, memory_id: Any, as_json: bool) -> None:
    _answer(settings, READ, "get", {"id": memory_id}, _print_record, as_json=as_json)


def _print_record(memory: dict[str, Any]) -> None:
    """A memory as ``show`` prints it; after it, what was redacted (``update``)."""
    for line in display.record(memory, int(time.time())):
        click.echo(line)
    if memory.get("redacted"):
        click.echo(f"\n{_redaction_note(memory)}")


def _redaction_note(answer: dict[str, Any]) -> str:
    return f"secrets redacted: {', '.join(answer['redacted'])}"


@click.command(cls=Subcommand)
@click.argument("content", required=False)
@click.option(
    "--type",
    "memory_type",
    metavar="TYPE",
    callback=_memory_type,
    help="DECISION, PATTERN, ERROR, TODO, ... (in any case)",
)
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeat for several).")
@click.option("--source", help="Where it came from.")
@click.option("--scope", help="A project or area; leave out for a global memory.")
@click.option("--ttl", metavar="SECONDS", help=f"Expire after SECONDS (1-{MAX_TTL_SECS}).")
@_json_option
@click.pass_obj
@quiet
def store(
    settings: Any,
    content: str | None,
    memory_type: str | None,
    tags: tuple[str, ...],
    source: str | None,
    scope: str | None,
    ttl: str | None,
    as_json: bool,
) -> None:
    """Store a memory (memory_store).

    CONTENT is the argument, or stdin when it is left out or -. Creates the database if
    there is none."""
    args = _args(
        content=_read_content(content),
        type=memory_type,
        tags=list(tags) or None,
        source=source,
        scope=scope,
        ttl_secs=_number(ttl),
    )

    def stored(answer: dict[str, Any]) -> None:
        said = f" ({_redaction_note(answer)})" if answer.get("redacted") else ""
        click.echo(f"stored memory {answer['id']}{said}")

    _answer(settings, CREATE, "store", args, stored, as_json=as_json)


def _either(
    args: dict[str, Any], name: str, value: Any, cleared: bool, options: tuple[str, str]
) -> None:
    """A patch field set by one option or cleared (null) by another, never both."""
    if cleared and value is not None:
        raise click.UsageError(f"{options[0]} and {options[1]} cannot be used together")
    if cleared:
        args[name] = None
    elif value is not None:
        args[name] = value


@click.command(cls=Subcommand)
@click.argument("memory_id", metavar="ID")
@click.option("--content", help="New text (- reads it from stdin); re-indexed at once.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Replace the tags (repeat).")
@click.option("--no-tags", is_flag=True, help="Clear the tags.")
@click.option("--scope", help="Move it to this scope.")
@click.option("--global", "to_global", is_flag=True, help="Make it global (no scope).")
@click.option("--ttl", metavar="SECONDS", help="Expire SECONDS from now.")
@click.option("--no-expiry", is_flag=True, help="Never expire.")
@_json_option
@click.pass_obj
@quiet
def update(
    settings: Any,
    memory_id: str,
    content: str | None,
    tags: tuple[str, ...],
    no_tags: bool,
    scope: str | None,
    to_global: bool,
    ttl: str | None,
    no_expiry: bool,
    as_json: bool,
) -> None:
    """Patch a memory in place (memory_update).

    What you give replaces, what you leave out stays. Counts as a use. Prints the memory
    as show does."""
    args: dict[str, Any] = {"id": _number(memory_id)}
    if content is not None:
        args["content"] = _read_content(content)
    _either(args, "tags", list(tags) or None, no_tags, ("--tag", "--no-tags"))
    _either(args, "scope", scope, to_global, ("--scope", "--global"))
    _either(args, "ttl_secs", _number(ttl), no_expiry, ("--ttl", "--no-expiry"))
    _answer(settings, EXISTING, "update", args, _print_record, as_json=as_json, read_back=True)


@click.command(cls=Subcommand)
@click.argument("memory_id", metavar="ID")
@_json_option
@click.pass_obj
@quiet
def forget(settings: Any, memory_id: str, as_json: bool) -> None:
    """Delete a memory and its relations (memory_forget)."""

    def forgot(answer: dict[str, Any]) -> None:
        click.echo(f"forgot memory {answer['id']}")

    _answer(settings, EXISTING, "forget", {"id": _number(memory_id)}, forgot, as_json=as_json)


def _edge_command(name: str, verb: str, help_text: str) -> click.Command:
    """link and unlink: FROM_ID TO_ID --kind KIND, one service method each."""

    @click.command(name, cls=Subcommand, help=help_text)
    @click.argument("from_id")
    @click.argument("to_id")
    @click.option("--kind", metavar="KIND", help=f"One of {', '.join(LINK_KINDS)}.")
    @_json_option
    @click.pass_obj
    @quiet
    def edge(settings: Any, from_id: str, to_id: str, kind: str | None, as_json: bool) -> None:
        args = _args(from_id=_number(from_id), to_id=_number(to_id), kind=kind)

        def shown(answer: dict[str, Any]) -> str:
            return f"{answer['from_id']} -[{answer['kind']}]-> {answer['to_id']}"

        def missing(answer: dict[str, Any]) -> str:
            if "missing_id" in answer:
                return f"memory {answer['missing_id']} not found"
            return f"no relation {shown(answer)}"

        def done(answer: dict[str, Any]) -> None:
            click.echo(f"{verb} {shown(answer)}")

        _answer(settings, EXISTING, name, args, done, as_json=as_json, missing=missing)

    return edge


link = _edge_command(
    "link",
    "linked",
    "Relate two memories (memory_link).\n\nKIND: relates_to (see also), supersedes "
    "(FROM_ID replaces the older TO_ID) or caused_by. Linking again changes nothing.",
)
unlink = _edge_command(
    "unlink",
    "unlinked",
    "Remove a relation (memory_unlink).\n\nsupersedes and caused_by in their stored "
    "direction; relates_to from either end.",
)


@click.command(cls=Subcommand)
@click.option(
    "--scope",
    default="auto",
    show_default=True,
    help="The project's scope. auto: the name of the git top level of the current "
    "directory, else of the directory itself (the GSD import's rule).",
)
@click.option("--query", metavar="TEXT", help="Rank by relevance to TEXT instead.")
@click.option(
    "--max-chars",
    type=Integer(min=brief.MIN_MAX_CHARS, max=10_000_000),
    default=brief.DEFAULT_MAX_CHARS,
    show_default=True,
    help="The brief's length, at most (characters).",
)
@click.option("--missing-ok", is_flag=True, help="No database yet: print nothing, exit 0.")
@click.option("--json", "as_json", is_flag=True, help="The same memories as JSON, whole.")
@click.option("--verbose", "-v", is_flag=True, help="Say on stderr which database the brief reads.")
@click.pass_obj
@quiet
def context(
    settings: Any,
    scope: str,
    query: str | None,
    max_chars: int,
    missing_ok: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Print a brief for an agent's session start.

    In Markdown: the project's pinned decisions, constraints and architecture, its
    patterns, its recent errors (with what is linked to them) and open todos, then the
    global ones; the most recently used first, each with its id, within --max-chars. A
    read: nothing counts as used. For an agent runtime's session-start hook: a database
    another process keeps locked for more than a second gets no brief (one line on stderr,
    exit 0)."""
    from agent_memory import storage

    now = int(time.time())
    try:
        where = project.scope_of(Path.cwd()) if scope == "auto" else scope
    except OSError as exc:  # the directory was removed under the shell
        _stop(f"cannot tell the project: {exc.strerror or exc}; pass --scope NAME", EXIT_FAILED)
    try:
        reader = storage.open_reader(settings.db)  # exists, at this schema (migrated once)
    except DatabaseMissing as exc:
        if missing_ok:
            if verbose:
                click.echo(f"{exc}: no brief", err=True)
            return
        _stop(str(exc), EXIT_FAILED)
    except DatabaseBusy as exc:  # the session starts without a brief rather than late
        _stop(f"{exc}: no brief", 0)
    except FAILURES as exc:
        _stop(str(exc), EXIT_FAILED)
    if verbose:
        click.echo(f"brief from the database {reader.location}", err=True)
    try:
        sections = None if query is not None else brief.recent(reader, where, now)
    except DatabaseBusy as exc:
        _stop(f"{exc}: no brief", 0)
    except StorageFault as exc:
        log.error("context: storage error: %s", exc.detail)
        _stop(str(StorageError("context")), EXIT_FAILED)
    finally:
        reader.close()
    if sections is None:  # by relevance: the search pipeline, recording no use
        service = _open(settings, READ, embedding=True)
        with _answering(service):
            sections = brief.relevant(
                functools.partial(service.search, record_use=False), query, where, now
            )
    if as_json:
        _print_json(brief.as_json(sections, where, query, max_chars))
    else:
        click.echo(brief.markdown(sections, where, query, max_chars), nl=False)


@click.command(cls=Subcommand)
@_json_option
@click.pass_obj
@quiet
def stats(settings: Any, as_json: bool) -> None:
    """Show what the database holds (memory://stats).

    Memories in all, per type and per scope (the largest first), relations, and how many
    memories are waiting for a vector. Not a use."""

    def shown(answer: dict[str, Any]) -> None:
        for line in display.stats(answer):
            click.echo(line)

    _answer(settings, READ, "stats", {}, shown, as_json=as_json)


COMMANDS = [search, list_, show, store, update, forget, link, unlink, context, stats]
