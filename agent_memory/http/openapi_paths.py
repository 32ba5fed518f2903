"""The paths of the REST API's OpenAPI document (rest.openapi): per route, what it
takes and what each status answers. Bodies name the components openapi builds."""

from __future__ import annotations

from typing import Any

from agent_memory.contract.schemas import SIMILAR
from agent_memory.contract.vocabulary import LINK_KINDS, MAX_LIMIT, MEMORY_TYPES
from agent_memory.http.signin import COOKIE, CSRF_HEADER, TLS_COOKIE

Schema = dict[str, Any]

_JSON = "application/json"
FORBIDDEN = "Host or Origin is not this daemon's own (DNS rebinding or cross-site request)"
STORAGE = (
    "storage failure: `<operation> failed due to a storage error (details are in the server log)`"
)
MALFORMED = (
    "malformed JSON, a value out of range, an unknown type, or an unknown field or query parameter"
)
TOO_LARGE = "request body too large"
NOT_JSON = "no Content-Type: application/json"
WRONG_TYPE = "a field is missing or has the wrong JSON type"
BAD_SEGMENT = "bad path segment, or an unknown query parameter"


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _answer(description: str, schema: Schema | str, media: str = _JSON) -> Schema:
    body = _ref(schema) if isinstance(schema, str) else schema
    return {"description": description, "content": {media: {"schema": body}}}


def _error(description: str) -> Schema:
    return _answer(description, "Error")


def _operation(summary: str, operation_id: str, answers: dict[str, Schema], **extra: Any) -> Schema:
    """An operation: every one may answer 403 (the address guard) and 500 (storage)."""
    responses = {"403": _error(FORBIDDEN), "500": _error(STORAGE), **answers}
    return {"summary": summary, "operationId": operation_id, **extra, "responses": responses}


def _body(component: str) -> Schema:
    return {"requestBody": {"required": True, "content": {_JSON: {"schema": _ref(component)}}}}


def _path_parameter(name: str, schema: Schema, description: str | None = None) -> Schema:
    out: Schema = {"name": name, "in": "path", "required": True}
    if description:
        out["description"] = description
    return {**out, "schema": schema}


def _query(name: str, schema: Schema, description: str | None = None, **extra: Any) -> Schema:
    out: Schema = {"name": name, "in": "query", "schema": schema}
    return {**out, "description": description, **extra} if description else out


_WRITE_ERRORS = {
    "400": _error(MALFORMED),
    "413": _error(TOO_LARGE),
    "415": _error(NOT_JSON),
    "422": _error(WRONG_TYPE),
}
_NO_MEMORY = "no memory with that id"
AS_OF_TEXT = (
    "answer as the memories stood at this moment: Unix seconds or an ISO 8601 date-time "
    "(updates since undone, memories stored since absent)"
)
_KIND = {"type": "string", "enum": list(LINK_KINDS)}
_LIST_PARAMETERS = [
    _query("type", {"type": "string", "enum": list(MEMORY_TYPES)}),
    _query("tag", {"type": "string"}, "exact, case-sensitive tag"),
    _query("scope", {"type": "string"}),
    _query("by", {"type": "string"}, "who stored or last changed it: a token's name, or local"),
    _query(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
        "omitted: all; required with expand_links=true",
    ),
    _query(
        "before",
        {"type": "string", "pattern": "^-?[0-9]+:-?[0-9]+$"},
        "the next page: CREATED_AT:ID of the last memory of the page before (e.g. "
        "1767225600:42); only memories older in (created_at, id) order are listed",
        example="1767225600:42",
    ),
    _query("expand_links", {"type": "string", "enum": ["true", "false"]}),
    _query("include_superseded", {"type": "string", "enum": ["true", "false"]}),
    _query("as_of", {"type": "string"}, AS_OF_TEXT, example="2026-12-01T09:00:00Z"),
]
_STORED = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "duplicate_of": {
            "type": "integer",
            "description": "Present only when the same content (whitespace aside) of the same "
            "type and scope was stored already: that memory's id, which took the tags and the "
            "longer lifetime sent; nothing new was stored.",
        },
        "redacted": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Present only when secrets were found in a text field (content, "
            "source, tags, scope): the kind of each one replaced by a [redacted:KIND] marker "
            "before the write (e.g. github-token, password). Off with --redact off.",
        },
        **SIMILAR,
    },
    "required": ["id"],
}


def _memories() -> Schema:
    return {
        "post": _operation(
            "Store a memory",
            "store",
            {"201": _answer("stored", _STORED), **_WRITE_ERRORS},
            **_body("StoreRequest"),
        ),
        "get": _operation(
            "List memories, newest first",
            "list",
            {
                "200": _answer("the memories", {"type": "array", "items": _ref("Memory")}),
                "400": _error(
                    "a bad or unknown query parameter (a malformed before cursor too), or "
                    "expand_links=true without a limit"
                ),
            },
            parameters=_LIST_PARAMETERS,
        ),
    }


def _memory() -> Schema:
    return {
        "parameters": [_path_parameter("id", {"type": "integer"}, "memory id")],
        "get": _operation(
            "One memory with every field and its relations both ways (a read: not counted "
            "as a use)",
            "get",
            {
                "200": _answer("the memory", "FullMemory"),
                "400": _error(BAD_SEGMENT),
                "404": _answer(_NO_MEMORY, "GetNotFound"),
            },
            parameters=[_query("as_of", {"type": "string"}, AS_OF_TEXT)],
        ),
        "patch": _operation(
            "Update a memory in place (JSON merge-patch)",
            "update",
            {
                "200": _answer("the updated memory", "UpdatedMemory"),
                "400": _error(
                    "bad path segment, malformed body, unknown field or query parameter, or "
                    "invalid value"
                ),
                "404": _answer(_NO_MEMORY, "UpdateNotFound"),
                "413": _error(TOO_LARGE),
            },
            **_body("PatchRequest"),
        ),
        "delete": _operation(
            "Forget a memory and its relations",
            "forget",
            {
                "200": _answer("deleted", "Forgotten"),
                "400": _error(BAD_SEGMENT),
                "404": _answer(_NO_MEMORY, "Forgotten"),
            },
        ),
    }


def _history() -> Schema:
    return {
        "parameters": [_path_parameter("id", {"type": "integer"}, "memory id")],
        "get": _operation(
            "A memory's versions, oldest first, the current one last (memory_history)",
            "history",
            {
                "200": _answer("the versions", "History"),
                "400": _error(BAD_SEGMENT),
                "404": _answer(_NO_MEMORY, "GetNotFound"),
            },
        ),
        "delete": _operation(
            "Purge a memory's history: every earlier version dropped for good, the current "
            "one kept (a full token only)",
            "purgeHistory",
            {
                "200": _answer("how many versions were dropped (0: it had none)", "Purged"),
                "400": _error(BAD_SEGMENT),
                "404": _answer(_NO_MEMORY, "GetNotFound"),
            },
            description="What an update removed (a secret) is then gone from the memory's "
            "history, from `as_of` answers and from later exports; exports made before keep "
            "it. A read-only or scope-bound token is refused.",
        ),
    }


def _links() -> dict[str, Schema]:
    link = _operation(
        "Link two memories",
        "link",
        {
            "200": _answer("linked (also when it already was)", "LinkResult"),
            "400": _error(
                "self-link, unknown kind, a malformed body, or an unknown field or query parameter"
            ),
            "404": _answer("an id does not exist", "LinkResult"),
            "413": _error(TOO_LARGE),
        },
        **_body("Edge"),
    )
    unlink = _operation(
        "Unlink",
        "unlink",
        {
            "200": _answer("removed", "UnlinkResult"),
            "400": _error("unknown kind, bad path segment, or an unknown query parameter"),
            "404": _answer("no such relation", "UnlinkResult"),
        },
    )
    return {
        "/api/links": {"post": link},
        "/api/links/{from_id}/{to_id}/{kind}": {
            "parameters": [
                _path_parameter("from_id", {"type": "integer"}, "source memory id"),
                _path_parameter("to_id", {"type": "integer"}, "target memory id"),
                _path_parameter("kind", _KIND),
            ],
            "delete": unlink,
        },
    }


def _health() -> Schema:
    return _operation(
        "Liveness and embedder status",
        "health",
        {"400": _error("a malformed `challenge`"), "200": _answer("alive", "Health")},
        description="With `challenge`, the answer carries `database_proof`: proof that the "
        "daemon reads the database `agent-memory ui` asked about, without telling its id "
        "(HMAC-SHA256 keyed with the database's identity key over the challenge and the "
        "daemon's IP:PORT). Other query parameters are ignored.",
        parameters=[
            _query(
                "challenge",
                {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                "128 fresh random bits as lowercase hex",
            )
        ],
    )


def _page() -> dict[str, Schema]:
    text = {"type": "string"}
    page = {
        "summary": "The web page (browse, search, edit, link, forget)",
        "operationId": "page",
        "responses": {
            "403": _error(FORBIDDEN),
            "200": _answer("the page; it reads and writes through this API", text, "text/html"),
        },
    }
    files = {media: {"schema": text} for media in ("text/javascript", "text/css", "image/svg+xml")}
    asset = {
        "summary": "A file of the web page (script, style, icon)",
        "operationId": "asset",
        "parameters": [_path_parameter("name", text)],
        "responses": {
            "403": _error(FORBIDDEN),
            "200": {"description": "the file", "content": files},
            "404": _error("no such file"),
        },
    }
    return {"/": {"get": page}, "/assets/{name}": {"get": asset}}


_SIGNED_OUT = {
    "type": "object",
    "properties": {"signed_out": {"const": True}},
    "required": ["signed_out"],
}


def _session() -> Schema:
    """The page's sign-in (rest.signin)."""
    csrf = _error(
        f"{FORBIDDEN}; or the {CSRF_HEADER} header is missing, or the Origin is another site's"
    )
    sign_in = _operation(
        "Sign in with a token: the answer sets the session cookie",
        "signIn",
        {
            "200": _answer("signed in: who the session is", "Identity"),
            "400": _error("not a JSON body, or a field other than token"),
            "401": _error("the token is wrong, expired or revoked (which is not said)"),
            "403": csrf,
            "413": _error(TOO_LARGE),
        },
        description=f"Checks the token as a Bearer header is checked; the cookie (`{COOKIE}`, "
        f"`{TLS_COOKIE}` behind TLS) is HttpOnly, SameSite=Strict, Path=/, Secure behind TLS. "
        f"Send the header `{CSRF_HEADER}: 1`.",
        parameters=[_csrf_header()],
        **_body("SignInRequest"),
    )
    who = _operation(
        "Who this request is: a session's or a Bearer token's name, rights and scope, or "
        "`via: open` where no sign-in is needed",
        "whoAmI",
        {
            "200": _answer("the identity", "Identity"),
            "401": _error("a token is required: sign in, or send Authorization: Bearer"),
        },
    )
    sign_out = _operation(
        "Sign out: ends the cookie's session and clears the cookie",
        "signOut",
        {
            "200": _answer("signed out", _SIGNED_OUT),
            "403": _error(f"{FORBIDDEN}; or the {CSRF_HEADER} header is missing"),
        },
        parameters=[_csrf_header()],
    )
    return {"get": who, "post": sign_in, "delete": sign_out}


def _csrf_header() -> Schema:
    return {
        "name": CSRF_HEADER,
        "in": "header",
        "required": True,
        "description": "any value: proves the request is the page's own (CSRF)",
        "schema": {"type": "string"},
    }


def _tidy() -> Schema:
    """GET /api/tidy: the report of ``agent-memory tidy``."""
    return _operation(
        "What `agent-memory tidy` reports: near-duplicate clusters, superseded memories still "
        "treated as current, memories not used in N days",
        "tidy",
        {
            "400": _error(
                "unused_days out of range, keep naming no member of a cluster, or an unknown "
                "query parameter"
            ),
            "200": _answer("the report (a dry run: nothing is written)", "Tidy"),
        },
        parameters=[
            _query("scope", {"type": "string"}, "only this scope (default: all)"),
            _query(
                "unused_days",
                {"type": "integer", "minimum": 1, "maximum": 36500, "default": 90},
                "list the memories not used in this many days",
            ),
            _query(
                "keep",
                {"type": "array", "items": {"type": "integer"}},
                "the member of its cluster to keep (repeat: one per cluster); an id in no "
                "cluster is refused",
                explode=True,
            ),
        ],
    )


def paths() -> dict[str, Schema]:
    """Every route the daemon serves (tests/e2e/test_openapi.py checks it against the app)."""
    search = _operation(
        "Search memories",
        "search",
        {"200": _answer("the {search_mode, results} envelope", "SearchResult"), **_WRITE_ERRORS},
        description="The results returned (only those) count as used: last_accessed becomes "
        "now and access_count grows by 1, unless record_use is false.",
        **_body("SearchRequest"),
    )
    stats = _operation(
        "What the store holds: memories in all, per type and per scope, links, the embedding "
        "backlog",
        "stats",
        {"400": _error("an unknown query parameter"), "200": _answer("the counts", "Stats")},
    )
    document = _operation(
        "This document",
        "openapi",
        {"200": _answer("the OpenAPI document", {"type": "object"})},
    )
    return {
        "/api/memories": _memories(),
        "/api/memories/{id}": _memory(),
        "/api/memories/{id}/history": _history(),
        "/api/stats": {"get": stats},
        "/api/tidy": {"get": _tidy()},
        "/api/search": {"post": search},
        "/api/session": _session(),
        **_links(),
        "/health": {"get": _health()},
        "/openapi.json": {"get": document},
        **_page(),
    }
