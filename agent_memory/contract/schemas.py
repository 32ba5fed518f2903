"""The JSON Schemas of every operation's arguments and answer, in the MCP dialect: the MCP
tools (mcp_tools) state them as they are, the OpenAPI document (openapi) states them in its
dialect. A memory's own fields come from the fields table.

Input schemas give every property one ``type``. MCP Inspector's CLI before 0.17 turns a
``--tool-arg`` text into a number or a list only when ``type`` is one string, and
function-calling dialects such as Gemini's reject a list of types (Inspector 2.x's
portability check warns about it). Where null means something (memory_update: null
clears tags, scope or ttl_secs) the description says so; elsewhere null is the same as
leaving the field out. The service accepts null wherever the contract gives it a meaning.

Output schemas describe ``structuredContent`` (the SDK's client validates every result
against them); nullable output fields are ``anyOf`` a type and null, for the same reason.

Declarations only (no service, no engine, no MCP SDK): ``serve`` lists the tools before
SQLAlchemy is loaded.
"""

from __future__ import annotations

from typing import Any

from agent_memory.contract import fields
from agent_memory.contract.vocabulary import (
    ARGUMENTS,
    DEFAULT_SEARCH_LIMIT,
    INVERSE_KIND,
    LINK_KINDS,
    MAX_EXPANDED_LINKS,
    MAX_LIMIT,
    MAX_MAX_CHARS,
    MAX_SUPERSEDES,
    MEMORY_TYPES,
    MIN_MAX_CHARS,
    SNIPPET_CHARS,
)

Schema = dict[str, Any]

# -- input ----------------------------------------------------------------------------------

_TYPE = {"type": "string", "enum": list(MEMORY_TYPES), "description": "Memory category."}
ID = {"type": "integer", "description": "Memory id, as returned by memory_store."}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
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
    "by": {
        "type": "string",
        "description": "Only memories stored or last changed by this writer (a token's name, "
        "or local).",
    },
}
EDGE_PROPERTIES = {
    "from_id": {"type": "integer"},
    "to_id": {"type": "integer"},
    "kind": {
        "type": "string",
        "enum": list(LINK_KINDS),
        "description": "relates_to (symmetric see-also), supersedes (from_id replaces the "
        "older to_id) or caused_by (from_id was caused by to_id).",
    },
}
_EXPLAIN = {
    "type": "boolean",
    "description": "Say why each result is on the page: each result gets why: {keyword: "
    "{rank, bm25, share, words, together}, vector: {rank, similarity, share, sigmas}, fused, "
    "decay, score, reason} (share: the part of the question's information the memory holds; "
    "sigmas: how far the model puts it above unrelated text; a leg that did not find it is "
    "null; reason: the same in a sentence), and the answer gets explain: the fusion, the "
    "words and what each tells, how far the keyword leg was trusted, and cut: where the page "
    "ended and why. Default false.",
}


_SUPERSEDED = {
    "type": "boolean",
    "description": "Also return memories another memory supersedes (left out by default), "
    "each result then carrying superseded_by: [ids of what replaced it]. Default false.",
}
AS_OF = {
    "type": "string",
    "description": "Answer as the memories stood at this moment: Unix seconds (as text) or an "
    "ISO 8601 date-time (e.g. 2026-12-01T09:00:00Z). Updates made since are undone, memories "
    "stored since are absent, those superseded only since are present.",
}
_SUPERSEDES = {
    "type": "array",
    "items": {"type": "integer"},
    "maxItems": MAX_SUPERSEDES,
    "description": "Ids of older memories this one replaces: linked (supersedes) in the same "
    "write; they leave search and list, and stay reachable by id.",
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


def field_arguments(tool: str) -> Schema:
    """The properties ``tool`` ("store" or "update") takes of a memory's fields."""
    return {a.name: fields.input_schema(a, tool) for a in fields.arguments(tool)}


def _required(tool: str) -> tuple[str, ...]:
    return tuple(a.name for a in fields.arguments(tool) if a.required)


# -- output ---------------------------------------------------------------------------------


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def obj(properties: Schema, *required: str) -> Schema:
    return {"type": "object", "properties": properties, "required": list(required)}


_STRINGS = {"type": "array", "items": {"type": "string"}}
_INTS = {"type": "array", "items": {"type": "integer"}}
RELATED = obj(
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
_RELATED_LIST = {"type": "array", "items": RELATED}
# A memory as list, search and update return it; related only with expand_links.
_SUPERSEDED_BY = {
    **_INTS,
    "description": "Only with include_superseded: the ids of the memories replacing this one.",
}
MEMORY = obj(
    {**fields.memory_properties(), "related": _RELATED_LIST, "superseded_by": _SUPERSEDED_BY},
    *fields.read_names(),
)
EMBEDDING_STATUS = {
    "type": "integer",
    "enum": [0, 1],
    "description": "1: the new content is embedded; 0: embedding pending.",
}
# A memory as get returns it: every field, its relations both ways, its embedding status.
FULL_MEMORY = obj(
    {
        **fields.memory_properties(full=True),
        "related": _RELATED_LIST,
        "embedding_status": EMBEDDING_STATUS,
    },
    *(f.name for f in fields.FIELDS),
    "embedding_status",
    "related",
)
_NUMBER = {"type": "number"}
_NULLABLE_NUMBER = nullable(_NUMBER)
_NULLABLE_RANK = nullable({"type": "integer"})
WHY = obj(
    {
        "keyword": nullable(
            obj(
                {
                    "rank": _NULLABLE_RANK,
                    "bm25": _NULLABLE_NUMBER,
                    "share": _NUMBER,
                    "words": _STRINGS,
                    "together": _STRINGS,
                },
                "rank",
                "bm25",
                "share",
            )
        ),
        "vector": nullable(
            obj(
                {
                    "rank": _NULLABLE_RANK,
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
        "reason": {"type": "string"},
    },
    "keyword",
    "vector",
    "decay",
    "score",
)
REDACTED = {**_STRINGS, "description": "Kinds of secrets replaced by [redacted:KIND] markers."}


def not_found(flag: str, **extra: Schema) -> Schema:
    return obj(
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
    return obj(
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


UPDATED = {
    **MEMORY,
    "properties": {
        **MEMORY["properties"],
        "embedding_status": EMBEDDING_STATUS,
        "redacted": REDACTED,
    },
    "required": [*MEMORY["required"], "embedding_status"],
}

# -- per operation --------------------------------------------------------------------------

_LIST_PROPERTIES = {
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
    "include_superseded": _SUPERSEDED,
    "as_of": AS_OF,
}
_SEARCH_PROPERTIES = {
    "query": {"type": "string", "description": "Words, a question or FTS5 syntax."},
    **_FILTERS,
    "limit": {
        **_LIMIT,
        "description": f"Results to return (1-{MAX_LIMIT}, default {DEFAULT_SEARCH_LIMIT}).",
    },
    "expand_links": _EXPAND,
    "explain": _EXPLAIN,
    "include_superseded": _SUPERSEDED,
    "as_of": AS_OF,
    "max_chars": {
        "type": "integer",
        "minimum": MIN_MAX_CHARS,
        "maximum": MAX_MAX_CHARS,
        "description": "A budget for the results, in characters: the best results that fit "
        "whole, each counted as its JSON text (with why and related when asked); a result "
        "is never cut. The answer's more says how many others answered but did not fit. "
        "Only the results returned count as used. Default: no budget.",
    },
}

INPUT: dict[str, Schema] = {
    "store": _input(
        "store", {**field_arguments("store"), "supersedes": _SUPERSEDES}, _required("store")
    ),
    "search": _input("search", _SEARCH_PROPERTIES, ("query",)),
    "list": _input("list", _LIST_PROPERTIES),
    "update": _input("update", {"id": ID, **field_arguments("update")}, ("id",)),
    "link": _input("link", EDGE_PROPERTIES, ("from_id", "to_id", "kind")),
    "unlink": _input("unlink", EDGE_PROPERTIES, ("from_id", "to_id", "kind")),
    "forget": _input("forget", {"id": ID}, ("id",)),
    "history": _input("history", {"id": ID}, ("id",)),
}
# A store's near-duplicate hints (service/hygiene/similar.py), present only when a memory is near.
SIMILAR: Schema = {
    "similar": {
        "type": "array",
        "maxItems": 3,
        "description": "Only when memories of the same scope say nearly the same: update or "
        "supersede one of them instead of keeping both (the new memory is stored all the same).",
        "items": obj(
            {
                "id": {"type": "integer"},
                "similarity": {"type": "number"},
                "snippet": {"type": "string"},
            },
            "id",
            "similarity",
            "snippet",
        ),
    },
    "similar_by": {
        "type": "string",
        "enum": ["cosine", "keyword"],
        "description": "The signal of similar: the model's cosine, or keyword overlap.",
    },
}
SEARCH_RESULT = obj(
    {
        "search_mode": {"type": "string", "enum": ["hybrid", "keyword"]},
        "results": {
            "type": "array",
            "items": {**MEMORY, "properties": {**MEMORY["properties"], "why": WHY}},
        },
        "more": {
            "type": "integer",
            "description": "Only with max_chars: how many more results answered the query "
            "but did not fit in the budget.",
        },
        "explain": {"type": "object", "description": "Only with explain: true."},
    },
    "search_mode",
    "results",
)
_WHO = {"type": "string", "description": "A token's name, or local."}
VERSION = obj(
    {
        "version": {"type": "integer", "description": "1 for the first, the current one last."},
        "content": {"type": "string"},
        "tags": _STRINGS,
        "scope": nullable({"type": "string"}),
        "expires_at": nullable({"type": "integer"}),
        "written_by": _WHO,
        "written_at": {"type": "integer", "description": "Unix seconds."},
        "replaced_at": nullable({"type": "integer", "description": "null: the current one."}),
        "replaced_by": nullable(_WHO),
        "change": nullable(
            {
                "type": "string",
                "enum": ["update", "duplicate"],
                "description": "What replaced it: an update, or a store of the same content "
                "merged into this memory.",
            }
        ),
        "change_source": nullable(
            {"type": "string", "description": "The source that duplicate store sent."}
        ),
    },
    *("version", "content", "tags", "scope", "expires_at", "written_by", "written_at"),
    *("replaced_at", "replaced_by", "change", "change_source"),
)
HISTORY = obj(
    {"id": {"type": "integer"}, "versions": {"type": "array", "items": VERSION}}, "id", "versions"
)
PURGED = obj(
    {
        "id": {"type": "integer"},
        "purged": {
            "type": "integer",
            "minimum": 0,
            "description": "How many earlier versions were dropped (0: it had none); the "
            "current version is kept.",
        },
    },
    "id",
    "purged",
)
OUTPUT: dict[str, Schema] = {
    "store": obj(
        {
            "id": {"type": "integer"},
            "duplicate_of": {
                "type": "integer",
                "description": "Only when the content was stored already: that memory's id.",
            },
            "redacted": REDACTED,
            **SIMILAR,
        },
        "id",
    ),
    "search": SEARCH_RESULT,
    "list": obj({"memories": {"type": "array", "items": MEMORY}}, "memories"),
    # "type" at the root as well: protocol revisions before 2026-07-28 require it.
    "update": {"type": "object", "anyOf": [UPDATED, not_found("updated")]},
    "link": _edge_answer("linked", missing_id={"type": "integer"}),
    "unlink": _edge_answer("unlinked"),
    "history": {"type": "object", "anyOf": [HISTORY, not_found("found")]},
    "forget": obj(
        {
            "id": {"type": "integer"},
            "deleted": {"type": "boolean"},
            "reason": {"type": "string", "const": "not_found"},
        },
        "id",
        "deleted",
    ),
}


# The report of `agent-memory tidy` (service/hygiene/tidy.py), as GET /api/tidy answers it.
_TIDY_INT = {"type": "integer"}
_TIDY_IDS = {"type": "array", "items": _TIDY_INT}
_TIDY_TYPE = {"type": "string", "enum": list(MEMORY_TYPES)}
_TIDY_MEMBER = {
    "id": _TIDY_INT,
    "type": _TIDY_TYPE,
    "created_at": _TIDY_INT,
    "tags": {"type": "array", "items": {"type": "string"}},
    "snippet": {"type": "string"},
    "revision": {
        "type": "string",
        "description": "The memory as the report saw it, hashed: a merge skips the cluster "
        "when it changed since.",
    },
}
_TIDY_MERGED = {
    **_TIDY_MEMBER,
    "similarity": {"type": "number", "description": "To the kept memory."},
    "missing_words": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Its informative words that the kept memory lacks (at most 20).",
    },
}
_TIDY_CLUSTER = obj(
    {
        "keep": obj(_TIDY_MEMBER, *_TIDY_MEMBER),
        "keep_reason": {
            "type": ["string", "null"],
            "enum": ["holds_the_rest", "named", None],
            "description": "Why that member is kept: it holds every informative word of the "
            "others, or `keep` named it. Null: no member holds the rest, `keep` is only the "
            "nearest to it, and a merge leaves the cluster alone unless `keep` names one.",
        },
        "merge": {
            "type": "array",
            "minItems": 1,
            "items": obj(_TIDY_MERGED, *_TIDY_MERGED),
            "description": "The memories the kept one would supersede, the most similar first.",
        },
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The kept memory's tags after a merge: its own, then the others'.",
        },
    },
    "keep",
    "keep_reason",
    "merge",
    "tags",
)
_TIDY_SUPERSEDED = obj(
    {
        "id": _TIDY_INT,
        "type": _TIDY_TYPE,
        "snippet": {"type": "string"},
        "superseded_by": _TIDY_IDS,
        "current_replacements": {
            **_TIDY_IDS,
            "description": "The current memories at the ends of its chains of replacements.",
        },
        "related": {
            "type": "array",
            "items": obj({"id": _TIDY_INT, "kind": {"type": "string"}}, "id", "kind"),
            "description": "Current memories still related to it (relates_to, caused_by).",
        },
        "problems": {
            "type": "array",
            "items": {"type": "string", "enum": ["no_current_replacement", "still_related"]},
        },
    },
    *("id", "type", "snippet", "superseded_by", "current_replacements", "related", "problems"),
)
_TIDY_UNUSED = obj(
    {
        "id": _TIDY_INT,
        "type": _TIDY_TYPE,
        "scope": {"type": ["string", "null"]},
        "last_accessed": _TIDY_INT,
        "access_count": _TIDY_INT,
        "snippet": {"type": "string"},
    },
    *("id", "type", "scope", "last_accessed", "access_count", "snippet"),
)
TIDY: Schema = obj(
    {
        "scope": {"type": ["string", "null"]},
        "signal": {
            "type": "string",
            "enum": ["cosine", "keyword"],
            "description": "How near-duplicates were found: the model's cosine of the stored "
            "vectors, or keyword overlap.",
        },
        "threshold": {"type": "number"},
        "signal_note": {"type": "string", "description": "Why keyword overlap, when it is."},
        "memories": {**_TIDY_INT, "description": "The current memories compared."},
        "not_compared": {**_TIDY_INT, "description": "Memories without a vector (cosine only)."},
        "clusters": {"type": "array", "items": _TIDY_CLUSTER},
        "superseded": {"type": "array", "items": _TIDY_SUPERSEDED},
        "unused_days": _TIDY_INT,
        "unused": obj(
            {"count": _TIDY_INT, "memories": {"type": "array", "items": _TIDY_UNUSED}},
            "count",
            "memories",
        ),
    },
    *("scope", "signal", "threshold", "memories", "not_compared", "clusters", "superseded"),
    *("unused_days", "unused"),
)
