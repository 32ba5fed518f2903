"""The seven MCP tools as clients see them: names, titles, descriptions, annotations, and
the input and output schemas. Declarations only (no service, no engine): ``serve`` lists
them before SQLAlchemy is loaded.

Input schemas give every property one ``type``. MCP Inspector's CLI before 0.17 turns a
``--tool-arg`` text into a number or a list only when ``type`` is one string, and
function-calling dialects such as Gemini's reject a list of types (Inspector 2.x's
portability check warns about it). Where null means something (memory_update: null
clears tags, scope or ttl_secs) the description says so; elsewhere null is the same as
leaving the field out. The service accepts null wherever the contract gives it a meaning.

Output schemas describe ``structuredContent`` (the SDK's client validates every result
against them); nullable output fields are ``anyOf`` a type and null, for the same reason.
"""

from __future__ import annotations

from typing import Any

from mcp.types import Tool, ToolAnnotations

from agent_memory.vocabulary import (
    ARGUMENTS,
    DEFAULT_SEARCH_LIMIT,
    INVERSE_KIND,
    LINK_KINDS,
    MAX_EXPANDED_LINKS,
    MAX_LIMIT,
    MAX_TTL_SECS,
    MEMORY_TYPES,
    SNIPPET_CHARS,
)

Schema = dict[str, Any]

# -- input ----------------------------------------------------------------------------------

_TYPE = {"type": "string", "enum": list(MEMORY_TYPES), "description": "Memory category."}
_TAGS = {"type": "array", "items": {"type": "string"}}
_ID = {"type": "integer", "description": "Memory id, as returned by memory_store."}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
_TTL = {"type": "integer", "minimum": 1, "maximum": MAX_TTL_SECS}
_EXPAND = {
    "type": "boolean",
    "description": f"Attach each result's related memories (1 hop, up to {MAX_EXPANDED_LINKS}, "
    f"newest relation first) as related: [{{id, kind, direction, type, snippet, tags}}]; "
    f"snippet is the first {SNIPPET_CHARS} characters. Default false.",
}
_FILTERS = {
    "type": _TYPE,
    "tag": {"type": "string", "description": "Only memories carrying exactly this tag."},
    "scope": {"type": "string", "description": "Only memories in this scope (e.g. a project)."},
}
_EDGE_PROPERTIES = {
    "from_id": {"type": "integer"},
    "to_id": {"type": "integer"},
    "kind": {
        "type": "string",
        "enum": list(LINK_KINDS),
        "description": "relates_to (symmetric see-also), supersedes (from_id replaces the "
        "older to_id) or caused_by (from_id was caused by to_id).",
    },
}


def _input(operation: str, properties: Schema, required: tuple[str, ...] = ()) -> Schema:
    """The input schema of ``operation``: its properties in the order of
    vocabulary.ARGUMENTS, no other property allowed (the service refuses unknown ones)."""
    schema: Schema = {
        "type": "object",
        "properties": {name: properties[name] for name in ARGUMENTS[operation]},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


# -- output ---------------------------------------------------------------------------------


def _nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(properties: Schema, *required: str) -> Schema:
    return {"type": "object", "properties": properties, "required": list(required)}


_STRINGS = {"type": "array", "items": {"type": "string"}}
_RELATED = _object(
    {
        "id": {"type": "integer"},
        "kind": {"type": "string", "enum": sorted({*LINK_KINDS, *INVERSE_KIND.values()})},
        "direction": {"type": "string", "enum": ["out", "in"]},
        "type": {"type": "string", "enum": list(MEMORY_TYPES)},
        "snippet": {"type": "string"},
        "tags": _STRINGS,
    },
    *("id", "kind", "direction", "type", "snippet", "tags"),
)
# A memory as list, search and update return it; related only with expand_links.
_MEMORY_FIELDS: Schema = {
    "id": {"type": "integer"},
    "content": {"type": "string"},
    "type": {"type": "string", "enum": list(MEMORY_TYPES)},
    "tags": _STRINGS,
    "source": _nullable({"type": "string"}),
    "scope": _nullable({"type": "string"}),
    "decay_score": {"type": "number"},
    "created_at": {"type": "integer", "description": "Unix seconds."},
    "last_accessed": {"type": "integer", "description": "Unix seconds."},
    "expires_at": _nullable({"type": "integer", "description": "Unix seconds."}),
}
MEMORY = _object(
    {**_MEMORY_FIELDS, "related": {"type": "array", "items": _RELATED}}, *_MEMORY_FIELDS
)
_NUMBER = {"type": "number"}
_WHY = _object(
    {
        "keyword": _nullable(
            _object(
                {"rank": {"type": "integer"}, "bm25": _NUMBER, "share": _NUMBER}, "rank", "bm25"
            )
        ),
        "vector": _nullable(
            _object(
                {
                    "rank": {"type": "integer"},
                    "similarity": _NUMBER,
                    "share": _NUMBER,
                    "sigmas": _NUMBER,
                },
                "rank",
                "similarity",
                "share",
            )
        ),
        "fused": _NUMBER,
        "decay": _NUMBER,
        "score": _NUMBER,
    },
    "keyword",
    "vector",
    "decay",
    "score",
)
_EXPLAIN = {
    "type": "boolean",
    "description": "Say why each result ranks where it does: each result gets why: {keyword: "
    "{rank, bm25, share}, vector: {rank, similarity, share, sigmas}, fused, decay, score} "
    "(a leg that did not find it is null), and the answer gets explain: the fusion, what "
    "the model's similarity to unrelated memories looks like for this query (noise), the "
    "relevance floor and how many candidates fell below it. Default false.",
}
_REDACTED = {**_STRINGS, "description": "Kinds of secrets replaced by [redacted:KIND] markers."}


def _not_found(flag: str, **extra: Schema) -> Schema:
    return _object(
        {
            "id": {"type": "integer"},
            flag: {"type": "boolean", "const": False},
            "reason": {"type": "string", "const": "not_found"},
            **extra,
        },
        "id",
        flag,
        "reason",
    )


def _edge_answer(flag: str, **extra: Schema) -> Schema:
    return _object(
        {
            "from_id": {"type": "integer"},
            "to_id": {"type": "integer"},
            "kind": {"type": "string", "enum": list(LINK_KINDS)},
            flag: {"type": "boolean"},
            "reason": {"type": "string", "const": "not_found"},
            **extra,
        },
        *("from_id", "to_id", "kind", flag),
    )


_UPDATED = {
    **MEMORY,
    "properties": {
        **MEMORY["properties"],
        "embedding_status": {
            "type": "integer",
            "enum": [0, 1],
            "description": "1: the new content is embedded; 0: embedding pending.",
        },
        "redacted": _REDACTED,
    },
    "required": [*MEMORY["required"], "embedding_status"],
}


def _tool(
    name: str,
    title: str,
    description: str,
    input_schema: Schema,
    output_schema: Schema,
    *,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
) -> Tool:
    """A tool with its title in both places clients look, and its hints: every one is
    closed-world (one local file, nothing else)."""
    return Tool(
        name=name,
        title=title,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=False,
        ),
    )


# In this order in tools/list, always.
TOOLS = [
    _tool(
        "memory_store",
        "Store a memory",
        "Persist a typed memory and return its id. Types: DECISION (a choice made and "
        "why), PATTERN (a way of doing things here), ERROR (a failure and its fix), TODO, "
        "ARCHITECTURE (how the system is built), CONSTRAINT (a rule that must hold). "
        "DECISION, ARCHITECTURE and CONSTRAINT fade six times slower in ranking. Set "
        "ttl_secs for facts that stop being true (the memory is removed after that). "
        "Secrets in any text field (private keys, API keys, tokens, JWTs, passwords) are "
        "replaced by [redacted:KIND] markers before storing; the answer then lists their "
        "kinds in redacted. Unknown arguments are refused.",
        _input(
            "store",
            {
                "content": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The memory text; non-empty.",
                },
                "type": _TYPE,
                "tags": {**_TAGS, "description": "Labels for exact-match filtering."},
                "source": {
                    "type": "string",
                    "description": "Where it came from (a tool, a session); omit for none.",
                },
                "scope": {
                    "type": "string",
                    "description": "A project or area; omit for a global memory.",
                },
                "ttl_secs": {
                    **_TTL,
                    "description": f"Expire after this many seconds (1-{MAX_TTL_SECS}); "
                    "omit for never.",
                },
            },
            ("content", "type"),
        ),
        _object({"id": {"type": "integer"}, "redacted": _REDACTED}, "id"),
    ),
    _tool(
        "memory_search",
        "Search memories",
        "Search memories, best first. When a local Ollama embeds, by meaning and keywords "
        "together (search_mode hybrid: paraphrases and exact terms both surface); "
        "otherwise by keyword (search_mode keyword). Both are weighted by recency decay. "
        "Plain questions work (punctuation is fine) and so does FTS5 syntax "
        '(sqlite AND vec, "exact phrase", vec*). Returns {search_mode, results}; each '
        "result carries a freshly computed decay_score. Returned memories count as used.",
        _input(
            "search",
            {
                "query": {"type": "string", "description": "Words, a question or FTS5 syntax."},
                **_FILTERS,
                "limit": {
                    **_LIMIT,
                    "description": f"Results to return (1-{MAX_LIMIT}, default "
                    f"{DEFAULT_SEARCH_LIMIT}).",
                },
                "expand_links": _EXPAND,
                "explain": _EXPLAIN,
            },
            ("query",),
        ),
        _object(
            {
                "search_mode": {"type": "string", "enum": ["hybrid", "keyword"]},
                "results": {
                    "type": "array",
                    "items": {
                        **MEMORY,
                        "properties": {**MEMORY["properties"], "why": _WHY},
                    },
                },
                "explain": {"type": "object", "description": "Only with explain: true."},
            },
            "search_mode",
            "results",
        ),
        # Reads only; the recency bump of what it returns is bookkeeping, not a change.
        read_only=True,
    ),
    _tool(
        "memory_list",
        "List memories",
        "List memories newest first, optionally filtered by type, exact tag and scope. "
        "Returns {memories: [...]}. Listing does not count as use.",
        _input(
            "list",
            {
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
        ),
        _object({"memories": {"type": "array", "items": MEMORY}}, "memories"),
        read_only=True,
        idempotent=True,
    ),
    _tool(
        "memory_update",
        "Update a memory",
        "Patch a memory in place by id (JSON merge-patch): a field you send replaces the "
        "old value, a field you omit stays, null clears tags (to []), scope (to global) "
        "or ttl_secs (never expire). content cannot be null or empty; type and source "
        "cannot change. Unknown fields are rejected. Returns the updated memory plus "
        "embedding_status (1: new content embedded, 0: embedding pending) and, when "
        "secrets were replaced, redacted (as for memory_store); or "
        "{updated: false, reason: not_found}. Counts as a use.",
        _input(
            "update",
            {
                "id": _ID,
                "content": {
                    "type": "string",
                    "minLength": 1,
                    "description": "New text; re-indexed.",
                },
                "tags": {**_TAGS, "description": "The new tags, replacing all; null clears."},
                "scope": {"type": "string", "description": "New scope; null makes it global."},
                "ttl_secs": {
                    **_TTL,
                    "description": "New lifetime in seconds, counted from now; null removes "
                    "the expiry.",
                },
            },
            ("id",),
        ),
        # "type" at the root as well: protocol revisions before 2026-07-28 require it.
        {"type": "object", "anyOf": [_UPDATED, _not_found("updated")]},
        destructive=True,
    ),
    _tool(
        "memory_link",
        "Link two memories",
        "Record a typed relation from_id -[kind]-> to_id between two memories: relates_to, "
        "supersedes (a newer decision replacing an older one) or caused_by (an error and "
        "its cause). Idempotent: repeating it is a success. Unknown ids answer linked: "
        "false with reason not_found and the missing_id.",
        _input("link", _EDGE_PROPERTIES, ("from_id", "to_id", "kind")),
        _edge_answer("linked", missing_id={"type": "integer"}),
        idempotent=True,
    ),
    _tool(
        "memory_unlink",
        "Remove a relation",
        "Remove a relation. supersedes and caused_by must be given in their stored "
        "direction; relates_to can be removed from either end. Answers unlinked: true, or "
        "unlinked: false with reason not_found when there is no such relation.",
        _input("unlink", _EDGE_PROPERTIES, ("from_id", "to_id", "kind")),
        _edge_answer("unlinked"),
        destructive=True,
        idempotent=True,
    ),
    _tool(
        "memory_forget",
        "Forget a memory",
        "Delete a memory by id, with every relation touching it. Returns {id, deleted: "
        "true}, or deleted: false with reason not_found for an unknown id.",
        _input("forget", {"id": _ID}, ("id",)),
        _object(
            {
                "id": {"type": "integer"},
                "deleted": {"type": "boolean"},
                "reason": {"type": "string", "const": "not_found"},
            },
            "id",
            "deleted",
        ),
        destructive=True,
        idempotent=True,
    ),
]
