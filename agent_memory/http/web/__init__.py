"""The web page at ``/`` of the REST daemon: plain HTML, CSS and JavaScript from this package.

Part of the REST transport: a blueprint that serves the page's files and nothing else. The
page reads and writes through the REST API like any other client (same routes, validation
and messages), so it has no route of its own beyond its files. Those are read once from the
package (they work offline: no CDN, no build step) and answered with an ETag, so a reload
costs a 304.

Memory text is written by agents and may hold anything, so the page renders it as text only
(``textContent``), and every response of the daemon carries headers that keep a browser
from doing anything else with it: a Content-Security-Policy that allows this origin's own
script and style files and nothing inline, ``X-Content-Type-Options: nosniff`` and
``frame-ancestors 'none'``. The Host/Origin guard of :mod:`rest.app` covers these
routes as it covers the API.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources

from flask import Blueprint, Response, abort, request

# The files the page is made of, and their types. Nothing else under web/ is served.
ASSETS = {
    "index.html": "text/html",
    "app.css": "text/css",
    "app.js": "text/javascript",
    "api.js": "text/javascript",
    "graph.js": "text/javascript",
    "tidy.js": "text/javascript",
    "signin.js": "text/javascript",
    "icon.svg": "image/svg+xml",
}
# The page: its own files, its own API, no inline script or style, no plugins, no framing,
# no form posted anywhere (the page's forms are handled by its script).
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# Every other answer (JSON): nothing runs even if a browser were led to render one.
API_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",  # frame-ancestors, for browsers that predate it
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

page = Blueprint("page", __name__)


@functools.cache
def asset(name: str) -> tuple[bytes, str]:
    """The file's bytes and its ETag, read from the package once."""
    body = resources.files(__name__).joinpath(name).read_bytes()
    return body, hashlib.sha256(body).hexdigest()[:20]


def _send(name: str) -> Response:
    body, etag = asset(name)
    response = Response(body, mimetype=ASSETS[name])
    response.set_etag(etag)
    response.headers["Cache-Control"] = "no-cache"  # revalidate: a new version shows at once
    return response.make_conditional(request)


@page.get("/")
def index() -> Response:
    return _send("index.html")


@page.get("/assets/<name>")
def assets(name: str) -> Response:
    if name not in ASSETS or name == "index.html":
        abort(404, f"no asset named {name!r}")
    return _send(name)


@page.after_app_request
def secure(response: Response) -> Response:
    """The security headers, on every answer of the app (errors and refusals too)."""
    response.headers.update(SECURITY_HEADERS)
    is_page = response.mimetype in ("text/html", "text/css", "text/javascript")
    response.headers["Content-Security-Policy"] = PAGE_POLICY if is_page else API_POLICY
    return response
