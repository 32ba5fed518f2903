"""The MCP stdio transport: the official SDK's low-level ``Server`` over the service.

Thin by design: parse the request, hand the raw arguments to one service method, map the
service's exceptions to MCP. What the server offers is declared in mcp_tools.py (the
tools and their schemas) and mcp_catalog.py (resources, the prompt); listing it needs no
database. The low-level server does not validate arguments against the schemas (the
service does, with the contract's messages), and it would turn a stray exception into an
error carrying its raw text, so every failure is mapped here before it can leave. The
SDK's stdin reader drops, unanswered, every line its JSON parser refuses; ``_Answering``
reads those again (see there).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import anyio
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    ErrorData,
    GetPromptRequestParams,
    GetPromptResult,
    JSONRPCError,
    JSONRPCRequest,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from agent_memory import __version__
from agent_memory.contract import wire
from agent_memory.contract.errors import Forbidden, InvalidArgument, StorageError, UnknownField
from agent_memory.contract.vocabulary import MEMORY_TYPES
from agent_memory.mcp import catalog as mcp_catalog
from agent_memory.mcp.tools import TOOLS

if TYPE_CHECKING:  # the service (and SQLAlchemy) may load after the first answer
    from agent_memory.service.core import MemoryService

log = logging.getLogger(__name__)

SERVER_NAME = "agent-memory"
SERVER_TITLE = "Agent Memory"
SERVER_DESCRIPTION = (
    "Persistent, typed memory for AI agents in one local SQLite file, shared by every "
    "agent runtime on this machine."
)
WEBSITE_URL = "https://github.com/UnityInFlow/agent-memory"
# Outgoing JSON-RPC lines are encoded and written this many characters at a time.
WIRE_SLICE_CHARS = 1024 * 1024
INSTRUCTIONS = (
    "Persistent memory shared by every agent on this machine. Before starting work, "
    "memory_search for decisions, constraints and known errors about the task; after "
    "deciding something, fixing an error or finding a pattern, memory_store it with the "
    "right type and a few tags so the next session can recall it. The memory_protocol "
    "prompt has the full routine; memory://recent and memory://stats give an overview."
)
# The tool, resource and prompt listings never change while a server runs: clients may
# keep them this long (protocol 2026-07-28 result caching). Reads are never cached.
LISTING_TTL_MS = 60 * 60 * 1000
_LISTING = CacheHint(ttl_ms=LISTING_TTL_MS, scope="public")
CACHE_HINTS: dict[Any, CacheHint] = {
    method: _LISTING
    for method in (
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
    )
}


class Handler(NamedTuple):
    """What answers one tool: the operation its errors name, and the service call."""

    operation: str
    run: Callable[[MemoryService, Any], Any]


# One function per service call, so that a type checker and "find usages" follow each
# tool to its method. Each takes the service at call time: serve's may still be opening.
def _store(service: MemoryService, args: Any) -> dict[str, Any]:
    return service.store(args)


def _search(service: MemoryService, args: Any) -> dict[str, Any]:
    return service.search(args)


def _list(service: MemoryService, args: Any) -> dict[str, Any]:
    return {"memories": service.list(args)}


def _update(service: MemoryService, args: Any) -> dict[str, Any]:
    return service.update(args)


def _link(service: MemoryService, args: Any) -> dict[str, Any]:
    return service.link(args)


def _unlink(service: MemoryService, args: Any) -> dict[str, Any]:
    return service.unlink(args)


def _forget(service: MemoryService, args: Any) -> dict[str, Any]:
    return service.forget(args)


def _history(service: MemoryService, args: Any) -> dict[str, Any]:
    return service.history(args)


# Each tool's input schema, by name: the SDK checks a 2026-07-28 call's Mcp-Param-* headers
# against it, and without this lookup it runs the whole tools/list handler on every call.
# The listing is the same for every caller, so a lookup by name gives the same schema.
INPUT_SCHEMAS = {tool.name: tool.input_schema for tool in TOOLS}
# Every tool of mcp_tools.TOOLS, by name.
HANDLERS: dict[str, Handler] = {
    "memory_store": Handler("store", _store),
    "memory_search": Handler("search", _search),
    "memory_list": Handler("list", _list),
    "memory_update": Handler("update", _update),
    "memory_link": Handler("link", _link),
    "memory_unlink": Handler("unlink", _unlink),
    "memory_forget": Handler("forget", _forget),
    "memory_history": Handler("history", _history),
}


def _read_list(service: MemoryService, args: dict[str, Any]) -> Any:
    return service.list(args)


def _read_stats(service: MemoryService, args: dict[str, Any]) -> Any:
    return service.stats(args)


def _read_memory(service: MemoryService, args: dict[str, Any]) -> Any:
    return service.get(args)


# Every operation mcp_catalog.resource_call names, and the service call that reads it.
READS: dict[str, Callable[[MemoryService, dict[str, Any]], Any]] = {
    "list": _read_list,
    "stats": _read_stats,
    "get": _read_memory,
}


def _text(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False)


@contextmanager
def _mapped(operation: str) -> Iterator[None]:
    """The service's exceptions as MCP errors; anything else as the generic internal one."""
    try:
        yield
    except InvalidArgument as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
    except StorageError as exc:
        raise MCPError(INTERNAL_ERROR, str(exc)) from exc
    except (MCPError, UnknownField, Forbidden):
        raise  # already mapped, or a tool result (see call_tool)
    except Exception as exc:
        log.exception("%s: unexpected failure", operation)
        raise MCPError(
            INTERNAL_ERROR,
            f"{operation} failed due to an internal error (details are in the server log)",
        ) from exc


def call_tool(service: MemoryService, name: str, arguments: Any) -> CallToolResult:
    """Run one tool call; every failure leaves as a mapped MCP error, never raw text. An
    unknown argument is a tool result with isError, which the agent reads and corrects."""
    entry = HANDLERS.get(name)
    if entry is None:
        raise MCPError(INVALID_PARAMS, f"unknown tool: {wire.printable(str(name))}")
    operation, method = entry
    try:
        with _mapped(operation):
            payload = method(service, arguments)
    except (UnknownField, Forbidden) as exc:  # a token's refusal is read and acted on too
        return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
    return CallToolResult(
        content=[TextContent(type="text", text=_text(payload))], structured_content=payload
    )


def read_resource(service: MemoryService, uri: str) -> ReadResourceResult:
    """One resource as JSON text. A memory that does not exist, like a URI that names no
    resource, is -32602 (the protocol's resource-not-found)."""
    try:
        operation, args = mcp_catalog.resource_call(uri)
    except mcp_catalog.UnknownResource as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
    try:
        with _mapped(operation):
            payload = READS[operation](service, args)
    except Forbidden as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
    if operation == "get" and payload.get("found") is False:
        raise MCPError(INVALID_PARAMS, f"resource not found: no memory has id {payload['id']}")
    contents = TextResourceContents(uri=uri, mime_type=mcp_catalog.JSON, text=_text(payload))
    return ReadResourceResult(contents=[contents])


def get_prompt(name: str, arguments: dict[str, str] | None) -> GetPromptResult:
    try:
        return mcp_catalog.render_prompt(name, arguments)
    except KeyError:
        shown = wire.printable(name)
        raise MCPError(INVALID_PARAMS, f"unknown prompt: {shown}") from None
    except UnknownField as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc


def complete(service: MemoryService, params: CompleteRequestParams) -> CompleteResult:
    """Values for a resource template's or the prompt's argument: memory types, and the
    scopes in the store (the largest first, as stats names them)."""
    ref = params.ref
    kind, name = (
        ("ref/prompt", ref.name) if isinstance(ref, PromptReference) else ("ref/resource", ref.uri)
    )
    source = mcp_catalog.completion_source(kind, name, params.argument.name)
    candidates: list[str] = []
    if source == "type":
        candidates = list(MEMORY_TYPES)
    elif source == "scope":
        with _mapped("stats"):
            stats = service.stats()
        candidates = [row["scope"] for row in stats["by_scope"] if row["scope"] is not None]
    values = mcp_catalog.completions(candidates, params.argument.value)
    return CompleteResult(completion=Completion(values=values, has_more=False))


async def _inline(function: Callable[..., Any], *args: Any) -> Any:
    return function(*args)


def build_server(
    service: MemoryService,
    answered: threading.Event | None = None,
    outlook: str = "",
    run: Callable[..., Any] = _inline,
    service_for: Callable[[Any], Any] | None = None,
) -> Server[Any]:
    """``answered`` is set once a client got an answer (the sweep waits for it to start);
    ``outlook`` says how searches will run (embedders.outlook), after the instructions;
    ``run`` calls the service (over HTTP: in a worker thread, so clients do not queue);
    ``service_for`` gives the service a request may use (over HTTP: its token's)."""
    answered = answered or threading.Event()
    chosen = service_for or (lambda _ctx: service)

    def listing(result: Any) -> Callable[[Any, Any], Any]:
        async def handler(_ctx: Any, _params: Any) -> Any:
            answered.set()
            return result

        return handler

    async def on_call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        answered.set()
        return await run(call_tool, chosen(ctx), params.name, params.arguments)

    async def on_read_resource(ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
        answered.set()
        return await run(read_resource, chosen(ctx), params.uri)

    async def on_get_prompt(_ctx: Any, params: GetPromptRequestParams) -> GetPromptResult:
        answered.set()
        return get_prompt(params.name, params.arguments)

    async def on_completion(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        answered.set()
        return await run(complete, chosen(ctx), params)

    return Server(
        SERVER_NAME,
        version=__version__,
        title=SERVER_TITLE,
        description=SERVER_DESCRIPTION,
        instructions=f"{INSTRUCTIONS} {outlook}".strip(),
        website_url=WEBSITE_URL,
        cache_hints=CACHE_HINTS,
        on_list_tools=listing(ListToolsResult(tools=TOOLS)),
        get_tool_input_schema=INPUT_SCHEMAS.get,
        on_call_tool=on_call_tool,
        on_list_resources=listing(ListResourcesResult(resources=mcp_catalog.RESOURCES)),
        on_list_resource_templates=listing(
            ListResourceTemplatesResult(resource_templates=mcp_catalog.RESOURCE_TEMPLATES)
        ),
        on_read_resource=on_read_resource,
        on_list_prompts=listing(ListPromptsResult(prompts=mcp_catalog.PROMPTS)),
        on_get_prompt=on_get_prompt,
        on_completion=on_completion,
    )


class _SlicedWire:
    """The JSON-RPC side of stdout, encoded WIRE_SLICE_CHARS at a time.

    The SDK's stdio writer hands over each message as one str; a text wrapper would encode
    all of it into a second, bytes copy first, as large as the message again (an
    unlimited list of large memories). Slicing holds one slice of bytes instead.
    """

    def __init__(self, raw: BinaryIO, flushed: Callable[[], None] = lambda: None) -> None:
        self._raw = raw
        self._flushed = flushed

    def write(self, text: str) -> int:
        for start in range(0, len(text), WIRE_SLICE_CHARS):
            self._raw.write(text[start : start + WIRE_SLICE_CHARS].encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        self._raw.flush()
        self._flushed()


@contextmanager
def _stdout_wire() -> Iterator[BinaryIO]:
    """fd 1 for JSON-RPC only, as the SDK's own claim keeps it: the wire is a private
    duplicate, and fd 1 points at stderr while serving, so a stray print cannot corrupt it.
    The duplicate is never closed (a writer thread may still block on it at exit)."""
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    try:
        yield os.fdopen(private, "wb", closefd=False)
    finally:
        os.dup2(private, 1)


class _Answering:
    """The stdio transport's read stream, answering the lines the SDK drops unanswered.

    The SDK parses each line with pydantic's JSON parser, hands the server the exception
    when that fails, and the server drops it (a debug log line): the client then waits
    for its own timeout. That parser refuses two kinds of valid JSON too, a lone
    surrogate escape ("\\ud800") and an integer of more than 4,300 digits. Such a line is
    read again with :func:`wire.loads`: a message goes on to the server, so a tool call
    gets the service's -32602 naming the argument; a line that is still not JSON gets
    -32700 with id null (JSON-RPC 2.0, 5.1); a blank line is no message and gets nothing.
    A valid JSON value that is no JSON-RPC message is dropped as the SDK does.
    """

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream

    @property
    def last_context(self) -> Any:  # the sender's context, which the server looks for
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, ValidationError):
                return item
            line = _refused_line(item)
            if line is None:
                return item  # JSON, but no JSON-RPC message: the SDK's own handling
            if not line.strip():
                continue
            try:
                value = wire.loads(line)
            except (ValueError, RecursionError) as exc:
                deep = isinstance(exc, RecursionError)
                why = "is nested too deeply" if deep else "is not JSON"
                await self._refuse(PARSE_ERROR, f"Parse error: the line {why}", exc)
                continue
            try:
                message = jsonrpc_message_adapter.validate_python(value, by_name=False)
            except ValidationError:
                return item  # JSON, but no JSON-RPC message: the SDK's own handling
            if isinstance(message, JSONRPCRequest) and not _encodable(message.id, message.method):
                why = "id and method must be valid Unicode text (got a lone surrogate)"
                await self._refuse(INVALID_REQUEST, f"Invalid Request: {why}", None)
                continue
            return SessionMessage(message)

    async def _refuse(self, code: int, message: str, exc: BaseException | None) -> None:
        log.warning("stdin: answered %d to a line: %s", code, message if exc is None else exc)
        error = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))
        await self._write.send(SessionMessage(error))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Answering:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _refused_line(exc: ValidationError) -> str | None:
    """The line pydantic's parser could not read as JSON, if that is why ``exc`` was raised."""
    errors = exc.errors()
    if len(errors) == 1 and errors[0]["type"] == "json_invalid":
        line = errors[0].get("input")
        return line if isinstance(line, str) else None
    return None


def _encodable(*values: Any) -> bool:
    return all(not isinstance(v, str) or wire.printable(v) == v for v in values)


def serve_stdio(
    service: MemoryService, answered: threading.Event | None = None, outlook: str = ""
) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes the stream.

    ``answered`` is set once the first answer to a client's request has left on stdout, not
    when its handler runs: what waits for it (the service's opening, the sweep) would
    otherwise compete with that answer's encoding and writing."""
    answered = answered or threading.Event()
    handled = threading.Event()
    server = build_server(service, handled, outlook)

    def flushed() -> None:
        if handled.is_set():
            answered.set()

    async def main() -> None:
        with _stdout_wire() as wire:
            stdout = anyio.wrap_file(_SlicedWire(wire, flushed))
            async with stdio_server(stdout=stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
                options = server.create_initialization_options()
                await server.run(_Answering(read_stream, write_stream), write_stream, options)

    anyio.run(main)
