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
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agent_memory.cli import brief, display
from agent_memory.cli.command_support import (
    EXIT_FAILED,
    EXIT_USAGE,
    FAILURES,
    Answer,
    answering,
    arguments,
    expand_option,
    filters,
    finish,
    json_option,
    memory_type,
    number,
    open_service,
    print_json,
    print_table,
    read_back,
    read_content,
    stop,
)
from agent_memory.cli.history import as_of_option, history
from agent_memory.cli.terminal import Integer, Subcommand, quiet
from agent_memory.contract.errors import DatabaseBusy, DatabaseMissing, StorageError, StorageFault
from agent_memory.contract.vocabulary import (
    DEFAULT_SEARCH_LIMIT,
    LINK_KINDS,
    MAX_LIMIT,
    MAX_MAX_CHARS,
    MAX_TTL_SECS,
    MIN_MAX_CHARS,
    count,
)
from agent_memory.service import project
from agent_memory.storage.base import CREATE, EXISTING, READ

if TYPE_CHECKING:  # the service (and SQLAlchemy) load only when a command opens it
    from agent_memory.service.core import MemoryService

log = logging.getLogger(__name__)


@click.command(cls=Subcommand)
@click.argument("query")
@filters
@click.option(
    "--limit",
    metavar="N",
    help=f"At most N results (1-{MAX_LIMIT}, default {DEFAULT_SEARCH_LIMIT}).",
)
@expand_option
@click.option(
    "--explain",
    is_flag=True,
    help="Say under each result why it is there, and after them how the page was made.",
)
@as_of_option
@click.option(
    "--max-chars",
    metavar="N",
    help=f"The best results that fit whole in N characters of JSON ({MIN_MAX_CHARS}-"
    f"{MAX_MAX_CHARS:,}); default: no budget.",
)
@json_option
@click.pass_obj
@quiet
def search(
    settings: Any,
    query: str,
    limit: str | None,
    expand: bool,
    explain: bool,
    as_of: str | None,
    max_chars: str | None,
    as_json: bool,
    **filters: Any,
) -> None:
    """Search memories, best first (memory_search).

    QUERY is words, a question or FTS5 syntax. The memories shown count as used."""
    args = arguments(
        query=query,
        **filters,
        limit=number(limit),
        expand_links=expand or None,
        explain=explain or None,
        as_of=as_of,
        max_chars=number(max_chars),
    )
    service = open_service(settings, READ, embedding=True)
    off = service.embedding_off
    with answering(service):
        answer = service.search(args)
        waiting = 0 if as_json or off else service.waiting_for_vectors()
    if as_json:
        print_json(answer)
        return
    shown = print_table(answer["results"], related=expand)
    if explain:
        click.echo(f"explain: {display.explanation(answer['explain'])}")
    more = f"; {answer['more']} more did not fit in --max-chars" if answer.get("more") else ""
    mode = _search_mode(answer["search_mode"], waiting, off)
    click.echo(f"{shown} found ({mode}){more}", err=True)


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
@filters
@click.option("--limit", metavar="N", help=f"At most N memories (1-{MAX_LIMIT}); default: all.")
@expand_option
@as_of_option
@json_option
@click.pass_obj
@quiet
def list_(
    settings: Any, limit: str | None, expand: bool, as_of: str | None, as_json: bool, **filters: Any
) -> None:
    """List memories, newest first (memory_list). Not a use."""
    args = arguments(**filters, limit=number(limit), expand_links=expand or None, as_of=as_of)
    service = open_service(settings, READ)
    with answering(service):
        rows = service.iter_list(args)  # bad arguments are refused here, before any output
        if as_json:  # streamed: the same text as the tool's {"memories": [...]}
            click.echo('{"memories": [', nl=False)
            for position, memory in enumerate(rows):
                separator = ", " if position else ""
                click.echo(separator + display.json_text(memory), nl=False)
            click.echo("]}")
            return
        shown = print_table(rows, related=expand)
    click.echo(count(shown, "memory"), err=True)


@click.command(cls=Subcommand)
@click.argument("memory_id", metavar="ID")
@as_of_option
@json_option
@click.pass_obj
@quiet
def show(settings: Any, memory_id: str, as_of: str | None, as_json: bool) -> None:
    """Show one memory whole, with its relations.

    Every field of memory ID, and its relations both ways. Not a use."""
    service = open_service(settings, READ)
    with answering(service):
        answer = service.get(arguments(id=number(memory_id), as_of=as_of))
    finish(answer, _print_record, as_json=as_json)


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
    callback=memory_type,
    help="DECISION, PATTERN, ERROR, TODO, ... (in any case)",
)
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeat for several).")
@click.option("--source", help="Where it came from.")
@click.option("--scope", help="A project or area; leave out for a global memory.")
@click.option("--ttl", metavar="SECONDS", help=f"Expire after SECONDS (1-{MAX_TTL_SECS}).")
@json_option
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
    args = arguments(
        content=read_content(content),
        type=memory_type,
        tags=list(tags) or None,
        source=source,
        scope=scope,
        ttl_secs=number(ttl),
    )

    def stored(answer: dict[str, Any]) -> None:
        said = f" ({_redaction_note(answer)})" if answer.get("redacted") else ""
        click.echo(f"stored memory {answer['id']}{said}")

    service = open_service(settings, CREATE, embedding=True)
    with answering(service):
        answer = service.store(args)
    finish(answer, stored, as_json=as_json)


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
@json_option
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
    args: dict[str, Any] = {"id": number(memory_id)}
    if content is not None:
        args["content"] = read_content(content)
    _either(args, "tags", list(tags) or None, no_tags, ("--tag", "--no-tags"))
    _either(args, "scope", scope, to_global, ("--scope", "--global"))
    _either(args, "ttl_secs", number(ttl), no_expiry, ("--ttl", "--no-expiry"))
    if args.keys() == {"id"}:
        stop(f"nothing to change: give at least one of {_changing_options()}", EXIT_USAGE)
    service = open_service(settings, EXISTING, embedding="content" in args)
    with answering(service):
        answer = service.update(args)
        if not as_json:  # shown as ``show`` prints it, on the same service
            answer = read_back(service, answer)
    finish(answer, _print_record, as_json=as_json)


def _changing_options() -> str:
    """update's options that change something (all but --json), as its help lists them."""
    params = click.get_current_context().command.params
    shown = [p.opts[0] for p in params if isinstance(p, click.Option) and p.name != "as_json"]
    return ", ".join(shown)


@click.command(cls=Subcommand)
@click.argument("memory_id", metavar="ID")
@json_option
@click.pass_obj
@quiet
def forget(settings: Any, memory_id: str, as_json: bool) -> None:
    """Delete a memory and its relations (memory_forget)."""

    def forgot(answer: dict[str, Any]) -> None:
        click.echo(f"forgot memory {answer['id']}")

    service = open_service(settings, EXISTING)
    with answering(service):
        answer = service.forget({"id": number(memory_id)})
    finish(answer, forgot, as_json=as_json)


EdgeCall = Callable[["MemoryService", dict[str, Any]], Answer]


def _edge_command(name: str, verb: str, help_text: str, call: EdgeCall) -> click.Command:
    """link and unlink: FROM_ID TO_ID --kind KIND, answered by ``call``."""

    @click.command(name, cls=Subcommand, help=help_text)
    @click.argument("from_id")
    @click.argument("to_id")
    @click.option("--kind", metavar="KIND", help=f"One of {', '.join(LINK_KINDS)}.")
    @json_option
    @click.pass_obj
    @quiet
    def edge(settings: Any, from_id: str, to_id: str, kind: str | None, as_json: bool) -> None:
        args = arguments(from_id=number(from_id), to_id=number(to_id), kind=kind)

        def shown(answer: dict[str, Any]) -> str:
            return f"{answer['from_id']} -[{answer['kind']}]-> {answer['to_id']}"

        def missing(answer: dict[str, Any]) -> str:
            if "missing_id" in answer:
                return f"memory {answer['missing_id']} not found"
            return f"no relation {shown(answer)}"

        def done(answer: dict[str, Any]) -> None:
            click.echo(f"{verb} {shown(answer)}")

        service = open_service(settings, EXISTING)
        with answering(service):
            answer = call(service, args)
        finish(answer, done, as_json=as_json, missing=missing)

    return edge


def _link(service: MemoryService, args: dict[str, Any]) -> Answer:
    return service.link(args)


def _unlink(service: MemoryService, args: dict[str, Any]) -> Answer:
    return service.unlink(args)


link = _edge_command(
    "link",
    "linked",
    "Relate two memories (memory_link).\n\nKIND: relates_to (see also), supersedes "
    "(FROM_ID replaces the older TO_ID) or caused_by. Linking again changes nothing.",
    _link,
)
unlink = _edge_command(
    "unlink",
    "unlinked",
    "Remove a relation (memory_unlink).\n\nsupersedes and caused_by in their stored "
    "direction; relates_to from either end.",
    _unlink,
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
    type=Integer(min=MIN_MAX_CHARS, max=MAX_MAX_CHARS),
    default=brief.DEFAULT_MAX_CHARS,
    show_default=True,
    help="The brief's length, at most (characters): the memories that fit whole.",
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
    global ones; the most recently used first, each with its id, within --max-chars
    (a memory is shown whole or left out). A read: nothing counts as used. For an agent
    runtime's session-start hook: a database another process keeps locked for more than a
    second gets no brief (one line on stderr, exit 0)."""
    from agent_memory import storage

    now = int(time.time())
    try:
        where = project.scope_of(Path.cwd()) if scope == "auto" else scope
    except OSError as exc:  # the directory was removed under the shell
        stop(f"cannot tell the project: {exc.strerror or exc}; pass --scope NAME", EXIT_FAILED)
    try:
        reader = storage.open_reader(settings.db)  # exists, at this schema (migrated once)
    except DatabaseMissing as exc:
        if missing_ok:
            if verbose:
                click.echo(f"{exc}: no brief", err=True)
            return
        stop(str(exc), EXIT_FAILED)
    except DatabaseBusy as exc:  # the session starts without a brief rather than late
        stop(f"{exc}: no brief", 0)
    except FAILURES as exc:
        stop(str(exc), EXIT_FAILED)
    if verbose:
        click.echo(f"brief from the database {reader.location}", err=True)
    try:
        sections = None if query is not None else brief.recent(reader, where, now)
    except DatabaseBusy as exc:
        stop(f"{exc}: no brief", 0)
    except StorageFault as exc:
        log.error("context: storage error: %s", exc.detail)
        stop(str(StorageError("context")), EXIT_FAILED)
    finally:
        reader.close()
    if sections is None:  # by relevance: the search pipeline, recording no use
        service = open_service(settings, READ, embedding=True)
        with answering(service):
            sections = brief.relevant(
                functools.partial(service.search, record_use=False), query, where, now
            )
    if as_json:
        print_json(brief.as_json(sections, where, query, max_chars))
    else:
        click.echo(brief.markdown(sections, where, query, max_chars), nl=False)


@click.command(cls=Subcommand)
@json_option
@click.pass_obj
@quiet
def stats(settings: Any, as_json: bool) -> None:
    """Show what the database holds (memory://stats).

    Memories in all, per type and per scope (the largest first), superseded ones included;
    relations, and how many memories are waiting for a vector. Not a use."""

    def shown(answer: dict[str, Any]) -> None:
        for line in display.stats(answer):
            click.echo(line)

    service = open_service(settings, READ)
    with answering(service):
        answer = service.stats({})
    finish(answer, shown, as_json=as_json)


COMMANDS = [search, list_, show, history, store, update, forget, link, unlink, context, stats]
