"""An ASGI app served from the daemon's WSGI server: one process, one port, one server.

The daemon is waitress (WSGI), with the guards that act on a request's headers before its
body is read (:mod:`rest.daemon`). MCP's Streamable HTTP transport, from the SDK, is an
ASGI app. Rather than a second server, each request for the ASGI app is handed, from the
waitress worker that holds it, to one event loop running in a thread of its own (an anyio
blocking portal, whose loop also holds the app's lifespan: its sessions and tasks). The
worker feeds the body, already read whole by waitress within its limits, and writes out
what the app sends as it arrives.

Only exchanges that end are served: a request whose answer would be an open-ended stream
(an SSE GET) would hold one of the few workers for as long as the client likes, so the
mount refuses methods it is not told to take (405 names the ones it takes).
"""

from __future__ import annotations

import http
import json
import logging
import queue
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

log = logging.getLogger(__name__)

# Headers a WSGI application must not set (PEP 3333); waitress refuses them.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers"}
    | {"transfer-encoding", "upgrade"}
)
# How long a worker waits for the app's next message before it gives the request up.
ANSWER_TIMEOUT_SECS = 300.0
_DONE = object()

AsgiApp = Callable[..., Any]
StartResponse = Callable[..., Any]


def scope_of(environ: dict[str, Any]) -> dict[str, Any]:
    """The ASGI HTTP scope of a WSGI request (the path decoded as UTF-8, as ASGI has it)."""
    headers = [
        (key[5:].replace("_", "-").lower().encode("latin-1"), value.encode("latin-1"))
        for key, value in environ.items()
        if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", b"content-type"), ("CONTENT_LENGTH", b"content-length")):
        if environ.get(key):
            headers.append((name, environ[key].encode("latin-1")))
    raw_path = environ.get("PATH_INFO", "").encode("latin-1")
    protocol = environ.get("SERVER_PROTOCOL", "HTTP/1.1")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": protocol.partition("/")[2] or "1.1",
        "method": environ["REQUEST_METHOD"],
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": raw_path.decode("utf-8", "replace"),
        "raw_path": raw_path,
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": environ.get("SCRIPT_NAME", ""),
        "headers": headers,
        "client": (environ.get("REMOTE_ADDR", ""), int(environ.get("REMOTE_PORT") or 0)),
        "server": (environ.get("SERVER_NAME", ""), int(environ.get("SERVER_PORT") or 0)),
        "state": {},
    }


class AsgiMount:
    """A WSGI app that answers each request with ``app`` run in ``portal``'s event loop.

    ``extend_scope`` may add keys to a request's scope (who sent it) before the app sees it.
    """

    def __init__(
        self,
        app: AsgiApp,
        portal: BlockingPortal,
        methods: Iterable[str],
        extend_scope: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
    ) -> None:
        self.app = app
        self.portal = portal
        self.methods = frozenset(methods)
        self.extend_scope = extend_scope

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] not in self.methods:
            allowed = ", ".join(sorted(self.methods))
            return _json(start_response, 405, f"method not allowed (allowed: {allowed})", allowed)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else environ["wsgi.input"].read()
        scope = scope_of(environ)
        if self.extend_scope is not None:
            self.extend_scope(scope, environ)
        messages: queue.SimpleQueue[Any] = queue.SimpleQueue()
        future = self.portal.start_task_soon(self._run, scope, body, messages)
        return self._answer(messages, future, start_response)

    async def _run(self, scope: dict[str, Any], body: bytes, messages: queue.SimpleQueue) -> None:
        finished = anyio.Event()
        sent_body = False

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await finished.wait()  # the client is gone only once its answer is out
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            messages.put(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                finished.set()

        try:
            await self.app(scope, receive, send)
        finally:
            finished.set()
            messages.put(_DONE)

    def _answer(self, messages: queue.SimpleQueue, future: Any, start_response: StartResponse):
        start = _next(messages)
        if start is _DONE or start.get("type") != "http.response.start":
            _log_failure(future)
            return _json(start_response, 500, "internal error (details are in the server log)")
        status = int(start["status"])
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in start.get("headers", [])
            if name.decode("latin-1").lower() not in HOP_BY_HOP
        ]
        start_response(f"{status} {_phrase(status)}", headers)
        return _body(messages, future)


def _body(messages: queue.SimpleQueue, future: Any) -> Iterator[bytes]:
    while True:
        message = _next(messages)
        if message is _DONE:
            _log_failure(future)
            return
        if message.get("type") != "http.response.body":
            continue
        if message.get("body"):
            yield bytes(message["body"])
        if not message.get("more_body"):
            return


def _next(messages: queue.SimpleQueue) -> Any:
    try:
        return messages.get(timeout=ANSWER_TIMEOUT_SECS)
    except queue.Empty:
        return _DONE


def _log_failure(future: Any) -> None:
    if future.done() and not future.cancelled() and future.exception() is not None:
        log.error("the mounted app failed", exc_info=future.exception())


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _json(start_response: StartResponse, status: int, message: str, allow: str = "") -> list[bytes]:
    body = (json.dumps({"error": message}) + "\n").encode("utf-8")
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    if allow:
        headers.append(("Allow", allow))
    start_response(f"{status} {_phrase(status)}", headers)
    return [body]
