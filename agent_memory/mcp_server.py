"""The MCP stdio transport: the official SDK's low-level ``Server`` over the service.

Thin by design: parse the tool call, hand the raw arguments to one service method, map
the service's exceptions to MCP. The low-level server does not validate arguments
against the schemas below (the service does, with the contract's messages), and it
would turn a stray exception into an error carrying its raw text, so every failure is
mapped here before it can leave. The SDK's stdin reader drops, unanswered, every line its
JSON parser refuses; ``_Answering`` reads those again (see there).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
from mcp.server import Server
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
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    ListToolsResult,
    TextContent,
    Tool,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from agent_memory import __version__, wire
from agent_memory.errors import InvalidArgument, StorageError, UnknownField
from agent_memory.vocabulary import (
    DEFAULT_SEARCH_LIMIT,
    LINK_KINDS,
    MAX_EXPANDED_LINKS,
    MAX_LIMIT,
    MAX_TTL_SECS,
    MEMORY_TYPES,
    SNIPPET_CHARS,
)

if TYPE_CHECKING:  # the service (and SQLAlchemy) may load after the first answer
    from agent_memory.service import MemoryService

log = logging.getLogger(__name__)

SERVER_NAME = "agent-memory"
# Outgoing JSON-RPC lines are encoded and written this many characters at a time.
WIRE_SLICE_CHARS = 1024 * 1024
INSTRUCTIONS = (
    "Persistent memory shared by every agent on this machine. Before starting work, "
    "memory_search for decisions, constraints and known errors about the task; after "
    "deciding something, fixing an error or finding a pattern, memory_store it with the "
    "right type and a few tags so the next session can recall it."
)

_TYPE = {"type": "string", "enum": list(MEMORY_TYPES), "description": "Memory category."}
_TAGS = {"type": "array", "items": {"type": "string"}}
_ID = {"type": "integer", "description": "Memory id, as returned by memory_store."}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
_TTL = {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_TTL_SECS}
_EXPAND = {
    "type": "boolean",
    "description": f"Attach each result's related memories (1 hop, up to {MAX_EXPANDED_LINKS}, "
    f"newest relation first) as related: [{{id, kind, direction, type, snippet, tags}}]; "
    f"snippet is the first {SNIPPET_CHARS} characters. Default false.",
}
_EDGE = {
    "type": "object",
    "properties": {
        "from_id": {"type": "integer"},
        "to_id": {"type": "integer"},
        "kind": {
            "type": "string",
            "enum": list(LINK_KINDS),
            "description": "relates_to (symmetric see-also), supersedes (from_id replaces the "
            "older to_id) or caused_by (from_id was caused by to_id).",
        },
    },
    "required": ["from_id", "to_id", "kind"],
}
_FILTERS = {
    "type": _TYPE,
    "tag": {"type": "string", "description": "Only memories carrying exactly this tag."},
    "scope": {"type": "string", "description": "Only memories in this scope (e.g. a project)."},
}

TOOLS = [
    Tool(
        name="memory_store",
        description=(
            "Persist a typed memory and return its id. Types: DECISION (a choice made and "
            "why), PATTERN (a way of doing things here), ERROR (a failure and its fix), TODO, "
            "ARCHITECTURE (how the system is built), CONSTRAINT (a rule that must hold). "
            "DECISION, ARCHITECTURE and CONSTRAINT fade six times slower in ranking. Set "
            "ttl_secs for facts that stop being true (the memory is removed after that). "
            "Secrets in content (private keys, API keys, tokens, JWTs, password= values) are "
            "replaced by [redacted:KIND] markers before storing; the answer then lists their "
            "kinds in redacted."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "The memory text; non-empty."},
                "type": _TYPE,
                "tags": {**_TAGS, "description": "Labels for exact-match filtering."},
                "source": {"type": ["string", "null"], "description": "Where it came from."},
                "scope": {
                    "type": ["string", "null"],
                    "description": "A project or area; omit for a global memory.",
                },
                "ttl_secs": {
                    **_TTL,
                    "description": f"Expire after this many seconds (1-{MAX_TTL_SECS}); "
                    "omit or null for never.",
                },
            },
            "required": ["content", "type"],
        },
    ),
    Tool(
        name="memory_search",
        description=(
            "Search memories, best first. When a local Ollama embeds, by meaning and keywords "
            "together (search_mode hybrid: paraphrases and exact terms both surface); "
            "otherwise by keyword (search_mode keyword). Both are weighted by recency decay. "
            "Plain questions work (punctuation is fine) and so does FTS5 syntax "
            '(sqlite AND vec, "exact phrase", vec*). Returns {search_mode, results}; each '
            "result carries a freshly computed decay_score. Returned memories count as used."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words, a question or FTS5 syntax."},
                **_FILTERS,
                "limit": {
                    **_LIMIT,
                    "description": f"Results to return (1-{MAX_LIMIT}, default "
                    f"{DEFAULT_SEARCH_LIMIT}).",
                },
                "expand_links": _EXPAND,
            },
            "required": ["query"],
        },
    ),
    Tool(
        name="memory_list",
        description=(
            "List memories newest first, optionally filtered by type, exact tag and scope. "
            "Returns {memories: [...]}. Listing does not count as use."
        ),
        input_schema={
            "type": "object",
            "properties": {
                **_FILTERS,
                "limit": {
                    **_LIMIT,
                    "description": f"At most this many (1-{MAX_LIMIT}); omit for all "
                    "(required with expand_links).",
                },
                "before": {
                    "type": "string",
                    "pattern": "^-?[0-9]+:-?[0-9]+$",
                    "description": "The next page: CREATED_AT:ID of the last memory of the "
                    'page before (e.g. "1767225600:42"); only older memories are listed.',
                },
                "expand_links": _EXPAND,
            },
        },
    ),
    Tool(
        name="memory_update",
        description=(
            "Patch a memory in place by id (JSON merge-patch): a field you send replaces the "
            "old value, a field you omit stays, null clears tags (to []), scope (to global) "
            "or ttl_secs (never expire). content cannot be null or empty; type and source "
            "cannot change. Unknown fields are rejected. Returns the updated memory plus "
            "embedding_status (1: new content embedded, 0: embedding pending) and, when "
            "secrets in content were replaced, redacted (as for memory_store); or "
            "{updated: false, reason: not_found}. Counts as a use."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "id": _ID,
                "content": {"type": "string", "description": "New text; re-indexed."},
                "tags": {"type": ["array", "null"], "items": {"type": "string"}},
                "scope": {"type": ["string", "null"]},
                "ttl_secs": {
                    **_TTL,
                    "description": "New lifetime counted from now; null removes the expiry.",
                },
            },
            "required": ["id"],
            "additionalProperties": False,
        },
    ),
    Tool(
        name="memory_link",
        description=(
            "Record a typed relation from_id -[kind]-> to_id between two memories: relates_to, "
            "supersedes (a newer decision replacing an older one) or caused_by (an error and "
            "its cause). Idempotent: repeating it is a success. Unknown ids answer linked: "
            "false with reason not_found and the missing_id."
        ),
        input_schema=_EDGE,
    ),
    Tool(
        name="memory_unlink",
        description=(
            "Remove a relation. supersedes and caused_by must be given in their stored "
            "direction; relates_to can be removed from either end. Answers unlinked: true, or "
            "unlinked: false with reason not_found when there is no such relation."
        ),
        input_schema=_EDGE,
    ),
    Tool(
        name="memory_forget",
        description=(
            "Delete a memory by id, with every relation touching it. Returns {id, deleted: "
            "true}, or deleted: false with reason not_found for an unknown id."
        ),
        input_schema={"type": "object", "properties": {"id": _ID}, "required": ["id"]},
    ),
]


def _method(name: str) -> Callable[[MemoryService, Any], Any]:
    """The service's method ``name``, looked up per call (serve's service may still be opening)."""
    return lambda svc, args: getattr(svc, name)(args)


# tool name -> (operation named in storage errors, what runs it)
_OPERATIONS: dict[str, tuple[str, Callable[[MemoryService, Any], Any]]] = {
    f"memory_{name}": (name, _method(name))
    for name in ("store", "search", "update", "link", "unlink", "forget")
}
_OPERATIONS["memory_list"] = ("list", lambda svc, args: {"memories": svc.list(args)})


def _result(payload: dict[str, Any], *, is_error: bool = False) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=None if is_error else payload,
        is_error=is_error,
    )


def call_tool(service: MemoryService, name: str, arguments: Any) -> CallToolResult:
    """Run one tool call; every failure leaves as a mapped MCP error, never raw text."""
    entry = _OPERATIONS.get(name)
    if entry is None:
        raise MCPError(INVALID_PARAMS, f"unknown tool: {wire.printable(str(name))}")
    operation, method = entry
    try:
        return _result(method(service, arguments))
    except InvalidArgument as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
    except UnknownField as exc:
        return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
    except StorageError as exc:
        raise MCPError(INTERNAL_ERROR, str(exc)) from exc
    except Exception as exc:
        log.exception("%s: unexpected failure", operation)
        raise MCPError(
            INTERNAL_ERROR,
            f"{operation} failed due to an internal error (details are in the server log)",
        ) from exc


def build_server(service: MemoryService, answered: threading.Event | None = None) -> Server[Any]:
    """``answered`` is set once a client got an answer (the sweep waits for it to start)."""
    answered = answered or threading.Event()

    async def list_tools(_ctx: Any, _params: Any) -> ListToolsResult:
        answered.set()
        return ListToolsResult(tools=TOOLS)

    async def on_call_tool(_ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        answered.set()
        return call_tool(service, params.name, params.arguments)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
    )


class _SlicedWire:
    """The JSON-RPC side of stdout, encoded WIRE_SLICE_CHARS at a time.

    The SDK's stdio writer hands over each message as one str; a text wrapper would encode
    all of it into a second, bytes copy first (300 MiB more for an unlimited list of 150
    memories of 1 MiB). Slicing holds one slice of bytes instead.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw

    def write(self, text: str) -> int:
        for start in range(0, len(text), WIRE_SLICE_CHARS):
            self._raw.write(text[start : start + WIRE_SLICE_CHARS].encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        self._raw.flush()


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


def serve_stdio(service: MemoryService, answered: threading.Event | None = None) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes the stream."""
    server = build_server(service, answered)

    async def main() -> None:
        with _stdout_wire() as wire:
            stdout = anyio.wrap_file(_SlicedWire(wire))
            async with stdio_server(stdout=stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
                options = server.create_initialization_options()
                await server.run(_Answering(read_stream, write_stream), write_stream, options)

    anyio.run(main)
