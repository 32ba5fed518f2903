"""The REST transport: a Flask app factory and one blueprint over the same service.

Thin like the MCP transport: turn the request into the service's arguments, call one
method, map its exceptions to status codes. Query strings and path segments arrive as
text; numbers and booleans are converted only when they are well formed, and anything
else is handed on as the string it was so the service rejects it with its usual message.
Every query parameter of a memory route is handed on (see _with_query), so the service
refuses a misspelled one instead of the route answering as if it had not been sent.
Every error, Flask's own 404/405/413 included, is a JSON ``{"error": ...}`` body.
Numbers are ASCII digits only, and JSON bodies are read with :func:`contract.wire.loads`
(lone surrogates kept, long integers counted) so the service names the field at fault.

Tokens are checked in front of this app (agent_memory.http.daemon.Gate), which hands a request on
with the service as its token may use it; the page signs in with one (rest.signin). Whether
or not tokens exist, a web page of another site in the user's browser must not reach the
API: unless the daemon was started with --allow-remote, a request whose Host header is not
the daemon's own address (DNS rebinding) or whose Origin is another site is refused.
The service keeps no per-request state: each call takes a pooled connection and returns
it, so there is nothing to open or close per request here.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Generator, Iterator
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, jsonify, request
from werkzeug.exceptions import HTTPException

from agent_memory.contract import wire
from agent_memory.contract.errors import (
    Forbidden,
    InvalidArgument,
    InvalidType,
    StorageError,
    UnknownField,
)
from agent_memory.contract.vocabulary import REST_ARGUMENTS
from agent_memory.http import openapi as openapi_document
from agent_memory.http import signin, web
from agent_memory.service.core import MemoryService

log = logging.getLogger(__name__)

# Request bodies above this are refused with 413 before they are read: room for the
# largest content the service takes, escaped (JSON writes a control character as the six
# bytes \u00XX), plus tags and labels; at least 4 MiB.
MAX_BODY_BYTES = 4 * 1024 * 1024
JSON_ESCAPE_FACTOR = 6
BODY_SLACK_BYTES = 1024 * 1024
# An unlimited list is streamed in pieces of about this many characters (a row bigger
# than this is one piece): the daemon holds one piece, not the whole answer.
STREAM_CHUNK_CHARS = 256 * 1024
_BOOLEANS = {"true": True, "false": False}
# Query parameters read as integers or booleans when they are well formed (else handed on
# as text).
_INTEGER_ARGS = frozenset(
    {"limit", "id", "from_id", "to_id", "ttl_secs", "unused_days", "keep", "max_chars"}
)
_BOOLEAN_ARGS = frozenset({"expand_links", "explain", "record_use", "include_superseded"})

api = Blueprint("api", __name__)
# app.extensions key: IP:PORT the daemon listens on, as its socket names it (what a proof of
# the database's identity names; a client compares it with the address it reached).
BOUND_ADDRESS = "agent_memory.bound_address"
# app.extensions key: which worker process of several this is (serve-rest --workers), or None.
WORKER = "agent_memory.worker"
# environ key: the service as the request's token may use it (agent_memory.http.daemon.Gate).
SERVICE = "agent_memory.service"
Rows = Generator[dict[str, Any], None, None]


class BadBody(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def error(status: int, message: str) -> tuple[Response, int]:
    return jsonify(error=message), status


def _service() -> MemoryService:
    """The service as this request's token may use it (set by the daemon's token gate),
    else the app's."""
    return request.environ.get(SERVICE) or current_app.extensions["agent_memory"]


def _integer(text: str) -> int | wire.LongInteger | str:
    """A path or query integer: ASCII digits only ("２" stays text and is refused as such)."""
    return wire.integer(text) if wire.INTEGER.fullmatch(text) else text


def _body(*, original_route: bool) -> Any:
    """The parsed JSON body. The two v0.0.1 routes keep their 415/400/422 answers;
    the others answer 400 for every malformed body."""
    g.invalid_type_status = 422 if original_route else 400
    if not request.is_json:
        status = 415 if original_route else 400
        raise BadBody(status, "expected a JSON request body (Content-Type: application/json)")
    try:
        return wire.loads(request.get_data(as_text=True))
    except (ValueError, RecursionError) as exc:
        raise BadBody(400, f"malformed JSON body: {exc}") from exc


def _query_value(name: str, text: str) -> Any:
    if name in _INTEGER_ARGS:
        return _integer(text)
    if name in _BOOLEAN_ARGS:
        return _BOOLEANS.get(text, text)
    return text


def _with_query(args: Any) -> Any:
    """The route's own arguments (from its path or body) plus the query string's, for the
    service to check: a name no operation takes is refused there, never ignored. A name
    sent twice in the query arrives as a list (refused as such); one both in the query and
    in the path or body is refused here."""
    if not request.args or not isinstance(args, dict):
        return args  # a body that is no object: the service refuses it as it is
    merged = dict(args)
    for name, texts in request.args.lists():
        if name in merged:
            raise BadBody(
                400,
                f"invalid argument: {name} is given twice, in the query string and the "
                "path or body",
            )
        values = [_query_value(name, text) for text in texts]
        merged[name] = values[0] if len(values) == 1 else values
    return merged


def _found(payload: dict[str, Any], flag: str, status: int = 200) -> tuple[Response, int]:
    return jsonify(payload), (status if payload.get(flag, True) else 404)


@api.post("/api/memories")
def store() -> tuple[Response, int]:
    return jsonify(_service().store(_with_query(_body(original_route=True)))), 201


@api.get("/api/memories")
def list_memories() -> Response:
    pieces = _json_array(_service().iter_list(_with_query({})), current_app.json.dumps)
    first = next(pieces)  # the first page is read here: a fault in it is an ordinary 500
    return Response(itertools.chain((first,), pieces), mimetype="application/json")


def _json_array(rows: Rows, dumps: Callable[..., str]) -> Iterator[str]:
    """The bytes ``jsonify`` writes for the whole list, in pieces of STREAM_CHUNK_CHARS.

    Once the status line is out, a storage fault cannot become a 500: it is logged and
    re-raised, so waitress drops the connection without the final chunk and the client
    sees a broken answer, never a shorter list it could take for the whole one.
    """
    parts: list[str] = []
    size = read = sent = 0
    try:
        for row in rows:
            text = dumps(row, separators=(",", ":"))
            if parts and size + len(text) > STREAM_CHUNK_CHARS:
                yield "".join(parts)
                sent += 1
                parts, size = [], 0
            parts += ["," if read else "[", text]
            read += 1
            size += len(text) + 1
        parts.append("]\n" if read else "[]\n")
        yield "".join(parts)
    except StorageError:
        if sent:
            log.error("list: storage fault after reading %d rows; cutting the answer", read)
        raise
    finally:
        rows.close()


@api.post("/api/search")
def search() -> Response:
    """The tool's search; ``record_use: false`` (the web page's) records no use."""
    body = _with_query(_body(original_route=True))
    return jsonify(_service().search(body, fields=REST_ARGUMENTS["search"]))


@api.get("/api/memories/<id>")
def get(id: str) -> tuple[Response, int]:
    return _found(_service().get(_with_query({"id": _integer(id)})), "found")


@api.get("/api/memories/<id>/history")
def history(id: str) -> tuple[Response, int]:
    return _found(_service().history(_with_query({"id": _integer(id)})), "found")


@api.delete("/api/memories/<id>/history")
def purge_history(id: str) -> tuple[Response, int]:
    """Every earlier version dropped, the current one kept (full tokens only)."""
    return _found(_service().purge_history(_with_query({"id": _integer(id)})), "found")


@api.get("/api/stats")
def stats() -> Response:
    return jsonify(_service().stats(_with_query({})))


@api.get("/api/tidy")
def tidy() -> Response:
    """What ``agent-memory tidy`` reports (a dry run: nothing is written)."""
    return jsonify(_service().tidy(_with_query({})))


@api.patch("/api/memories/<id>")
def update(id: str) -> tuple[Response, int]:
    body = _with_query(_body(original_route=False))
    return _found(_service().update(body, path_id=_integer(id)), "updated")


@api.delete("/api/memories/<id>")
def forget(id: str) -> tuple[Response, int]:
    return _found(_service().forget(_with_query({"id": _integer(id)})), "deleted")


@api.post("/api/links")
def link() -> tuple[Response, int]:
    return _found(_service().link(_with_query(_body(original_route=False))), "linked")


@api.delete("/api/links/<from_id>/<to_id>/<kind>")
def unlink(from_id: str, to_id: str, kind: str) -> tuple[Response, int]:
    args = {"from_id": _integer(from_id), "to_id": _integer(to_id), "kind": kind}
    return _found(_service().unlink(_with_query(args)), "unlinked")


@api.get("/health")
def health() -> Response:
    """Only ``challenge`` is read from the query (agent_memory.contract.identity): anything else a
    monitor adds (a cache buster) is ignored."""
    address = current_app.extensions[BOUND_ADDRESS]
    answer = _service().health(request.args.get("challenge"), address)
    worker = current_app.extensions[WORKER]
    return jsonify(answer if worker is None else {**answer, "worker": worker})


@api.get("/openapi.json")
def openapi() -> Response:
    """The document built from the same schemas as the MCP tools' (rest.openapi)."""
    return Response(openapi_document.text(), mimetype="application/json")


def max_body_bytes(max_content_bytes: int) -> int:
    """The largest request body taken: the app's limit and the daemon's, one figure."""
    return max(MAX_BODY_BYTES, JSON_ESCAPE_FACTOR * max_content_bytes + BODY_SLACK_BYTES)


class AddressGuard:
    """Which Host and Origin headers name this daemon: the one rule of both gates.

    Flask's ``before_request`` applies it to in-process clients; the daemon's parser
    (:mod:`agent_memory.http.server`) applies it to the headers, before a body is read.
    """

    def __init__(
        self, host: str, port: int, allow_remote: bool, extra_hosts: tuple[str, ...] = ()
    ) -> None:
        names = {"localhost", f"[{host}]" if ":" in host else host}
        if host == "localhost":
            names |= {"127.0.0.1", "[::1]"}
        self.hosts = {f"{name}:{port}" for name in names}
        if port == 80:  # clients leave the default port out: "Host: 127.0.0.1"
            self.hosts |= names
        self.origins = {f"http://{h}" for h in self.hosts}
        # A public name the daemon is reached by (behind a TLS proxy): as sent, with or
        # without a port, over http or https.
        self.public = frozenset(name.lower() for name in extra_hosts)
        self.hosts |= self.public
        self.origins |= {
            f"{scheme}://{name}" for name in self.public for scheme in ("http", "https")
        }
        self.allow_remote = allow_remote

    def behind_proxy(self) -> bool:
        """Whether the daemon was told it is reached through a proxy (--public-host, or
        --allow-remote): only then is a proxy's X-Forwarded-Proto believed."""
        return bool(self.public) or self.allow_remote

    def refusal(self, host: str | None, origin: str | None) -> str | None:
        """Why a request with these headers is refused (None when it is not)."""
        if self.allow_remote:
            return None
        if host is None or host.lower() not in self.hosts:
            return f"Host {host or ''!r} is not this daemon's address"
        if origin is not None and origin.lower() not in self.origins:
            return f"cross-site request from Origin {origin!r}"
        return None


def create_app(
    service: MemoryService,
    *,
    host: str = "127.0.0.1",
    port: int = 7437,
    allow_remote: bool = False,
    bound_ip: str | None = None,
    extra_hosts: tuple[str, ...] = (),
    worker: int | None = None,
) -> Flask:
    """The REST app over ``service``; ``host``/``port`` are where it is bound (``bound_ip``:
    the IP address ``host`` named, when it is a name). ``worker``: which worker process of
    several this is (/health says it), None when the daemon is one process."""
    app = Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = max_body_bytes(service.max_content_bytes)
    app.json.sort_keys = False
    app.json.ensure_ascii = False
    app.extensions["agent_memory"] = service
    app.extensions[BOUND_ADDRESS] = f"{bound_ip or host}:{port}"
    app.extensions[WORKER] = worker
    address = AddressGuard(host, port, allow_remote, extra_hosts)

    @app.before_request
    def guard() -> tuple[Response, int] | None:
        log.debug("request %s %s", request.method, request.full_path.rstrip("?"))
        # The header as sent: werkzeug's request.host drops ":80", which the rule decides on.
        reason = address.refusal(request.headers.get("Host"), request.headers.get("Origin"))
        return None if reason is None else error(403, f"forbidden: {reason}")

    app.extensions[signin.KEY] = signin.SignIn(service, address)
    app.register_blueprint(api)
    app.register_blueprint(signin.routes)  # the page's sign-in: /api/session
    app.register_blueprint(web.page)  # the page at /, and the security headers of every answer
    _register_errors(app)
    return app


def _register_errors(app: Flask) -> None:
    @app.errorhandler(BadBody)
    def bad_body(exc: BadBody) -> tuple[Response, int]:
        return error(exc.status, str(exc))

    @app.errorhandler(InvalidArgument)
    def invalid(exc: InvalidArgument) -> tuple[Response, int]:
        status = getattr(g, "invalid_type_status", 400) if isinstance(exc, InvalidType) else 400
        return error(status, str(exc))

    @app.errorhandler(Forbidden)
    def forbidden(exc: Forbidden) -> tuple[Response, int]:
        return error(403, str(exc))

    @app.errorhandler(UnknownField)
    def unknown_field(exc: UnknownField) -> tuple[Response, int]:
        return error(400, str(exc))

    @app.errorhandler(StorageError)
    def storage(exc: StorageError) -> tuple[Response, int]:
        return error(500, str(exc))

    @app.errorhandler(HTTPException)
    def http(exc: HTTPException) -> tuple[Response, int]:
        return error(exc.code or 500, (exc.description or exc.name).rstrip("."))

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> tuple[Response, int]:
        log.exception("unexpected failure on %s %s", request.method, request.path)
        return error(500, "internal error (details are in the server log)")
