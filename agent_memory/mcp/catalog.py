"""What the MCP server offers besides its tools: resources that help an agent orient
itself, and a prompt that teaches the memory protocol. Declarations and pure functions
only (no service): listing them needs no database, and ``serve`` answers before one is
opened.

Resources are reads: none of them counts as a use of a memory (nothing is bumped).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from mcp.types import (
    GetPromptResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceTemplate,
    TextContent,
)

from agent_memory.contract import wire
from agent_memory.contract.vocabulary import MEMORY_TYPES
from agent_memory.service import validate

JSON = "application/json"
SCHEME = "memory://"
# memory://recent shows this many memories: enough to see what the store is about
# without filling an agent's context.
RECENT_MEMORIES = 20
# memory://scope/{scope} and memory://type/{type} show at most this many, newest first.
LISTED_MEMORIES = 50
# A completion answers at most this many values (the protocol's own cap).
MAX_COMPLETIONS = 100

RECENT_URI, STATS_URI = f"{SCHEME}recent", f"{SCHEME}stats"
MEMORY_TEMPLATE = f"{SCHEME}{{id}}"
SCOPE_TEMPLATE = f"{SCHEME}scope/{{scope}}"
TYPE_TEMPLATE = f"{SCHEME}type/{{type}}"

RESOURCES = [
    Resource(
        uri=RECENT_URI,
        name="recent",
        title="Newest memories",
        description=f"The {RECENT_MEMORIES} newest memories with every field, newest first.",
        mime_type=JSON,
    ),
    Resource(
        uri=STATS_URI,
        name="stats",
        title="What the memory holds",
        description="Memories per type and per scope (the largest scopes), relations, and "
        "memories waiting for a vector (pending_embedding); when search by meaning is off, "
        "`embedding` says that none is coming.",
        mime_type=JSON,
    ),
]
RESOURCE_TEMPLATES = [
    ResourceTemplate(
        uri_template=MEMORY_TEMPLATE,
        name="memory",
        title="A memory by id",
        description="One memory with every field (access_count and embedding_status too) "
        "and its relations both ways, newest first.",
        mime_type=JSON,
    ),
    ResourceTemplate(
        uri_template=SCOPE_TEMPLATE,
        name="scope",
        title="Memories of a scope",
        description=f"The {LISTED_MEMORIES} newest memories of one scope (a project or area).",
        mime_type=JSON,
    ),
    ResourceTemplate(
        uri_template=TYPE_TEMPLATE,
        name="type",
        title="Memories of a type",
        description=f"The {LISTED_MEMORIES} newest memories of one type: "
        f"{', '.join(MEMORY_TYPES)}.",
        mime_type=JSON,
    ),
]


class UnknownResource(Exception):
    """no resource {uri}"""

    def __init__(self, uri: str) -> None:
        shown = validate.shown(uri)
        super().__init__(
            f"unknown resource {shown}: expected {RECENT_URI}, {STATS_URI}, "
            f"{MEMORY_TEMPLATE}, {SCOPE_TEMPLATE} or {TYPE_TEMPLATE}"
        )


def resource_call(uri: str) -> tuple[str, dict[str, Any]]:
    """The service operation and arguments that read ``uri``; the service checks the
    values (a type, an id) as it does for a tool. Path parts are percent-decoded."""
    rest = uri[len(SCHEME) :] if uri.startswith(SCHEME) else ""
    if rest == "recent":
        return "list", {"limit": RECENT_MEMORIES}
    if rest == "stats":
        return "stats", {}
    kind, slash, value = rest.partition("/")
    if slash and value and kind in ("scope", "type"):
        return "list", {kind: unquote(value), "limit": LISTED_MEMORIES}
    if rest and not slash:
        text = unquote(rest)
        return "get", {"id": wire.integer(text) if wire.INTEGER.fullmatch(text) else text}
    raise UnknownResource(uri)


# -- the prompt -----------------------------------------------------------------------------

PROMPT_NAME = "memory_protocol"
PROMPT_ARGUMENTS = ("task", "scope")
PROMPTS = [
    Prompt(
        name=PROMPT_NAME,
        title="Use the shared memory",
        description="How to work with agent-memory in this session: search before starting, "
        "store decisions, constraints, errors with their fix and patterns, and link a new "
        "decision to the one it supersedes.",
        arguments=[
            PromptArgument(
                name="task",
                description="What you are about to work on; the agent searches for it first.",
                required=False,
            ),
            PromptArgument(
                name="scope",
                description="The project's scope (e.g. the repository name), used for "
                "searches and new memories.",
                required=False,
            ),
        ],
    )
]

_PROTOCOL = """\
You have a persistent memory, shared with every other agent session on this machine \
(the agent-memory MCP server). Use it as follows.

Before you start{on_task}:
1. Call memory_search with the task's key words{in_scope}. Read the DECISION, CONSTRAINT, \
ERROR and PATTERN memories it finds, and follow them unless the user says otherwise. Search \
again when you reach a part of the work you have not searched for.
2. For an overview, read the resource {orientation}.

While you work, store with memory_store what the next session must know: one fact per \
memory, in plain words that make sense on their own, with a few tags{with_scope}.
- DECISION: a choice made and why, with the alternatives rejected.
- CONSTRAINT: a rule that must hold (a version, an API not to use, a policy).
- ERROR: a failure and its fix: the error message, the cause and what solved it.
- PATTERN: how things are done here (conventions, commands that work).
- ARCHITECTURE: how the system is built.
- TODO: work left for later. Give ttl_secs to anything that stops being true.
Search before storing: when a memory already says it, memory_update that one instead.

When a new decision replaces an older one, store the new one with supersedes: [the old \
id] (or call memory_link with from_id = the new id, to_id = the old id and kind = \
"supersedes"): the old one then leaves search and list. Link an error to its \
cause with "caused_by" and related notes with "relates_to". Correct a memory that turned \
out wrong with memory_update, or remove it with memory_forget.
Never store secrets; they are replaced by [redacted:KIND] markers anyway.
"""


def render_prompt(name: str, arguments: Mapping[str, str] | None) -> GetPromptResult:
    """The prompt ``name`` with its arguments filled in. Raises KeyError for an unknown
    prompt and UnknownField for an argument it does not take."""
    if name != PROMPT_NAME:
        raise KeyError(name)
    args = dict(arguments or {})
    validate.known_fields(args, PROMPT_ARGUMENTS)
    # printable: a lone surrogate a client sent cannot be written back as UTF-8
    task = wire.printable(args.get("task", "")).strip()
    scope = wire.printable(args.get("scope", "")).strip()
    text = _PROTOCOL.format(
        on_task=f" on: {task}" if task else "",
        in_scope=f' and scope "{scope}"' if scope else "",
        orientation=f"{SCHEME}scope/{scope}" if scope else RECENT_URI,
        with_scope=f' and scope "{scope}"' if scope else "",
    )
    return GetPromptResult(
        description=PROMPTS[0].description,
        messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))],
    )


# -- completions ----------------------------------------------------------------------------


def completion_source(ref_type: str, ref_name: str, argument: str) -> str | None:
    """What an argument completes from: "type" (the memory types), "scope" (the scopes in
    the store), or None (nothing to offer, e.g. an id)."""
    if ref_type == "ref/resource" and ref_name == TYPE_TEMPLATE and argument == "type":
        return "type"
    if ref_type == "ref/resource" and ref_name == SCOPE_TEMPLATE and argument == "scope":
        return "scope"
    if ref_type == "ref/prompt" and ref_name == PROMPT_NAME and argument == "scope":
        return "scope"
    return None


def completions(candidates: Iterable[str], typed: str) -> list[str]:
    """The candidates that begin with what was typed (case aside), at most MAX_COMPLETIONS."""
    prefix = typed.lower()
    return [c for c in candidates if c.lower().startswith(prefix)][:MAX_COMPLETIONS]
