"""The REST API's OpenAPI 3.1 document, built from the schemas the MCP tools state
(agent_memory.contract.schemas, and through them the fields table): one source for both.

The OpenAPI dialect differs from the MCP one in two ways only: a nullable value is a list of
types (``["string", "null"]``) instead of ``anyOf`` a type and null, and a request field
that accepts null says so in its type (the MCP input schemas give one type).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from agent_memory import __version__
from agent_memory.contract import fields, schemas
from agent_memory.contract.schemas import TIDY
from agent_memory.contract.vocabulary import REST_ARGUMENTS
from agent_memory.http import signin
from agent_memory.http.openapi_paths import paths
from agent_memory.settings import OPTIONS

Schema = dict[str, Any]

REF = "#/components/schemas/"
# The address the daemon listens on unless told otherwise.
SERVER = f"http://{OPTIONS['addr'].default}"
_NULL = {"type": "null"}


def dialect(schema: Any) -> Any:
    """``schema`` in the OpenAPI dialect: ``anyOf`` [S, null] becomes S with null in its
    type; everything else as it is, at any depth."""
    if isinstance(schema, list):
        return [dialect(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {name: dialect(value) for name, value in schema.items()}
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and branches[1] == _NULL:
        inner = branches[0]
        if isinstance(inner.get("type"), str):
            del out["anyOf"]
            out = {**inner, **out, "type": [inner["type"], "null"]}
    return out


def or_null(schema: Schema) -> Schema:
    return {**schema, "type": [schema["type"], "null"]}


def ref(name: str) -> Schema:
    return {"$ref": REF + name}


def _request(tool: str, drop: tuple[str, ...] = ()) -> Schema:
    """A request body of the MCP input schema of ``tool``: what it takes of a memory's
    fields accepts null where the field table says so."""
    mcp = schemas.INPUT[tool]
    nullable = {a.name for a in fields.arguments(tool) if a.nullable}
    properties = {
        name: or_null(value) if name in nullable else value
        for name, value in mcp["properties"].items()
        if name not in drop
    }
    out: Schema = {"type": "object", "additionalProperties": False, "properties": properties}
    if [name for name in mcp.get("required", ()) if name not in drop]:
        out["required"] = [name for name in mcp["required"] if name not in drop]
    return out


def _search_request() -> Schema:
    """memory_search's arguments, and what REST takes besides (vocabulary.REST_ARGUMENTS)."""
    out = _request("search")
    out["properties"]["explain"] = {**out["properties"]["explain"], "default": False}
    out["properties"]["record_use"] = {
        "type": "boolean",
        "default": True,
        "description": "false: the results are not counted as used (no recency bump). The "
        "web page sends it: a person browsing is not an agent using a memory. REST only; "
        "memory_search over MCP does not take it.",
    }
    assert list(out["properties"]) == list(REST_ARGUMENTS["search"])
    return out


def _with_related_ref(memory: Schema, note: str | None = None) -> Schema:
    """A memory whose related list names the Related component."""
    items = {"type": "array", "items": ref("Related")}
    if note:
        items["description"] = note
    return {**memory, "properties": {**memory["properties"], "related": items}}


_COUNT = {"type": "integer", "minimum": 0}
_STATS = schemas.obj(
    {
        "memories": _COUNT,
        "by_type": {"type": "object", "additionalProperties": _COUNT},
        "by_scope": {
            "type": "array",
            "items": schemas.obj(
                {"scope": {"type": ["string", "null"]}, "memories": _COUNT}, "scope", "memories"
            ),
        },
        "links": _COUNT,
        "pending_embedding": _COUNT,
        "embedding": {
            "type": "string",
            "description": "Present only when search by meaning is off (--embedder none): "
            "then the memories counted in pending_embedding get no vector until agent-memory "
            "runs with an embedder.",
        },
    },
    *("memories", "by_type", "by_scope", "links", "pending_embedding"),
)
_EMBEDDING = schemas.obj(
    {
        "provider": {"type": "string", "enum": ["ollama", "local"]},
        "model": {"type": "string"},
        "dimension": {"type": ["integer", "null"]},
    },
    *("provider", "model", "dimension"),
)
_HEALTH = schemas.obj(
    {
        "status": {"const": "ok"},
        "embedder": {"type": "string", "enum": ["ready", "model_missing", "unreachable"]},
        "schema_version": {"type": "integer"},
        "version": {"type": "string"},
        "search_mode": {
            "type": "string",
            "enum": ["hybrid", "keyword"],
            "description": "how a search runs now",
        },
        "embedding": {
            "oneOf": [_NULL, _EMBEDDING],
            "description": "the model whose vectors searches use; null when search is by "
            "keyword only",
        },
        "search_hint": {
            "type": "string",
            "description": "when search is by keyword only: why, and what would enable "
            "search by meaning",
        },
        "worker": {
            "type": "integer",
            "minimum": 1,
            "description": "only from a daemon of several worker processes (serve-rest "
            "--workers N): which one (1 to N) answered",
        },
        "database_proof": {
            "type": ["string", "null"],
            "description": "only when a challenge was sent: hex HMAC-SHA256 proving which "
            "database this daemon serves (agent-memory ui checks it); null for a database "
            "without an id",
        },
    },
    *("status", "embedder", "schema_version", "version", "search_mode", "embedding"),
)


_IDENTITY = schemas.obj(
    {
        "name": {"type": "string", "description": "the token's name; local where none is needed"},
        "read_only": {"type": "boolean"},
        "scope": {"type": ["string", "null"], "description": "the only scope it may use"},
        "via": {
            "type": "string",
            "enum": ["session", "bearer", "open"],
            "description": "a session cookie, an Authorization header, or neither (loopback, "
            "on a database that requires no token: nothing to sign in to)",
        },
        "may": {
            "type": "object",
            "additionalProperties": {"type": "boolean"},
            "description": "for each operation a token can reach (docs/http.md's table), "
            "whether this one may call it: the page offers only those",
        },
    },
    *("name", "read_only", "scope", "via", "may"),
)
# How a request names its token (docs/http.md): the header, or the page's session cookie.
SECURITY_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "agent-memory token create"},
    "session": {
        "type": "apiKey",
        "in": "cookie",
        "name": signin.COOKIE,
        "description": f"set by POST /api/session ({signin.TLS_COOKIE} behind TLS); API routes "
        f"only; a write must carry {signin.CSRF_HEADER}: 1",
    },
}


def components() -> dict[str, Schema]:
    """The named schemas the paths refer to."""
    memory = _with_related_ref(schemas.MEMORY, "only with expand_links: true")
    updated = {
        **schemas.UPDATED,
        "properties": {**schemas.UPDATED["properties"], "related": memory["properties"]["related"]},
    }
    result = schemas.SEARCH_RESULT
    found = {**result["properties"]["results"]["items"]}
    found = _with_related_ref(found, "only with expand_links: true")
    found["properties"]["why"] = ref("Why")
    search_result = {
        **result,
        "properties": {**result["properties"], "results": {"type": "array", "items": found}},
    }
    named = {
        "Error": schemas.obj({"error": {"type": "string"}}, "error"),
        "StoreRequest": _request("store"),
        "SearchRequest": _search_request(),
        "PatchRequest": {**_request("update", drop=("id",)), "minProperties": 1},
        "Edge": _request("link"),
        "Memory": memory,
        "UpdatedMemory": updated,
        "Related": schemas.RELATED,
        "SearchResult": search_result,
        "UpdateNotFound": schemas.not_found("updated"),
        "Forgotten": schemas.OUTPUT["forget"],
        "LinkResult": schemas.OUTPUT["link"],
        "UnlinkResult": schemas.OUTPUT["unlink"],
        "Health": _HEALTH,
        "SignInRequest": schemas.obj({"token": {"type": "string"}}, "token"),
        "Identity": _IDENTITY,
        "FullMemory": _with_related_ref(schemas.FULL_MEMORY),
        "GetNotFound": schemas.not_found("found"),
        "History": schemas.HISTORY,
        "Purged": schemas.PURGED,
        "Stats": _STATS,
        "Tidy": TIDY,
        "Why": schemas.WHY,
    }
    return {name: dialect(schema) for name, schema in named.items()}


@functools.cache
def document() -> Schema:
    """The whole document (built once per process)."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agent-memory REST API",
            "version": __version__,
            "description": "HTTP access to agent-memory. On loopback with no token created "
            "nothing is asked; once a token exists every /api route takes "
            "Authorization: Bearer TOKEN, or the web page's session cookie (POST "
            "/api/session), and answers 401 without. Every error body is "
            '{"error": message}.',
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "servers": [{"url": SERVER}],
        "security": [{}, {"bearer": []}, {"session": []}],
        "paths": paths(),
        "components": {"schemas": components(), "securitySchemes": SECURITY_SCHEMES},
    }


@functools.cache
def text() -> str:
    """The document as the daemon serves it."""
    return json.dumps(document(), ensure_ascii=False, indent=2) + "\n"
