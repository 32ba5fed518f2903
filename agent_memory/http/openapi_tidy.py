"""The OpenAPI schema of ``GET /api/tidy`` (service/hygiene/tidy.py's report), for rest.openapi."""

from __future__ import annotations

from typing import Any

from agent_memory.contract.schemas import obj
from agent_memory.contract.vocabulary import MEMORY_TYPES

Schema = dict[str, Any]

_INT = {"type": "integer"}
_IDS = {"type": "array", "items": _INT}
_TYPE = {"type": "string", "enum": list(MEMORY_TYPES)}
_MEMBER = {
    "id": _INT,
    "type": _TYPE,
    "created_at": _INT,
    "tags": {"type": "array", "items": {"type": "string"}},
    "snippet": {"type": "string"},
    "revision": {
        "type": "string",
        "description": "The memory as the report saw it, hashed: a merge skips the cluster "
        "when it changed since.",
    },
}
_MERGED = {
    **_MEMBER,
    "similarity": {"type": "number", "description": "To the kept memory."},
    "missing_words": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Its informative words that the kept memory lacks (at most 20).",
    },
}
_CLUSTER = obj(
    {
        "keep": obj(_MEMBER, *_MEMBER),
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
            "items": obj(_MERGED, *_MERGED),
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
_SUPERSEDED = obj(
    {
        "id": _INT,
        "type": _TYPE,
        "snippet": {"type": "string"},
        "superseded_by": _IDS,
        "current_replacements": {
            **_IDS,
            "description": "The current memories at the ends of its chains of replacements.",
        },
        "related": {
            "type": "array",
            "items": obj({"id": _INT, "kind": {"type": "string"}}, "id", "kind"),
            "description": "Current memories still related to it (relates_to, caused_by).",
        },
        "problems": {
            "type": "array",
            "items": {"type": "string", "enum": ["no_current_replacement", "still_related"]},
        },
    },
    *("id", "type", "snippet", "superseded_by", "current_replacements", "related", "problems"),
)
_UNUSED = obj(
    {
        "id": _INT,
        "type": _TYPE,
        "scope": {"type": ["string", "null"]},
        "last_accessed": _INT,
        "access_count": _INT,
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
        "memories": {**_INT, "description": "The current memories compared."},
        "not_compared": {**_INT, "description": "Memories without a vector (cosine only)."},
        "clusters": {"type": "array", "items": _CLUSTER},
        "superseded": {"type": "array", "items": _SUPERSEDED},
        "unused_days": _INT,
        "unused": obj(
            {"count": _INT, "memories": {"type": "array", "items": _UNUSED}}, "count", "memories"
        ),
    },
    *("scope", "signal", "threshold", "memories", "not_compared", "clusters", "superseded"),
    *("unused_days", "unused"),
)
