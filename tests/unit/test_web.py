"""The page's files and headers, in process (the browser tests are test_web_browser.py)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib import resources

import pytest

from agent_memory.http import web
from agent_memory.http.rest import create_app
from tests.support.rest_client import BASE

SCRIPTS = [name for name in web.ASSETS if name.endswith(".js")]


@pytest.fixture
def client(service):
    return create_app(service).test_client()


def get(client, path, **headers):
    return client.get(path, base_url=BASE, headers=headers)


def source(name: str) -> str:
    return resources.files("agent_memory.http.web").joinpath(name).read_text("utf-8")


class Markup(HTMLParser):
    """Every start tag of a document with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(name: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Markup()
    parser.feed(source(name))
    return parser.tags


def test_the_page_is_served_at_the_root_with_its_policy(client):
    response = get(client, "/")
    assert response.status_code == 200
    assert response.content_type == "text/html; charset=utf-8"
    assert response.headers["Content-Security-Policy"] == (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert b"<title>agent-memory</title>" in response.data


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("app.js", "text/javascript; charset=utf-8"),
        ("api.js", "text/javascript; charset=utf-8"),
        ("graph.js", "text/javascript; charset=utf-8"),
        ("tidy.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
        ("icon.svg", "image/svg+xml; charset=utf-8"),
    ],
)
def test_assets_are_served_with_their_type_and_revalidated(client, name, content_type):
    response = get(client, f"/assets/{name}")
    assert (response.status_code, response.content_type) == (200, content_type)
    assert response.data == resources.files("agent_memory.http.web").joinpath(name).read_bytes()
    assert response.headers["Cache-Control"] == "no-cache"
    again = get(client, f"/assets/{name}", **{"If-None-Match": response.headers["ETag"]})
    assert (again.status_code, again.data) == (304, b"")


@pytest.mark.parametrize("name", ["index.html", "__init__.py", "..%2Fservice.py", "nope.js"])
def test_nothing_else_is_served_as_an_asset(client, name):
    response = get(client, f"/assets/{name}")
    assert response.status_code == 404
    assert set(response.get_json()) == {"error"}


def test_api_answers_carry_the_strict_headers_too(client):
    for path in ("/health", "/api/memories", "/api/nothing"):
        response = get(client, path)
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Content-Security-Policy"] == web.API_POLICY


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/", {"Host": "evil.example:7437"}),  # DNS rebinding onto the page
        ("/assets/app.js", {"Host": "evil.example:7437"}),
        ("/assets/app.js", {"Origin": "http://evil.example"}),
    ],
)
def test_the_host_and_origin_guard_covers_the_page(client, path, headers):
    response = client.get(path, base_url=BASE, headers=headers)
    assert response.status_code == 403
    assert response.get_json()["error"].startswith("forbidden: ")
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_the_page_has_no_inline_script_or_style():
    tags = tags_of("index.html")
    assert not [t for t, attrs in tags if t == "style"]
    assert all(attrs.get("src") for t, attrs in tags if t == "script")
    handlers = [(t, a) for t, attrs in tags for a in attrs if a == "style" or a.startswith("on")]
    assert handlers == []


def test_the_page_loads_only_its_own_files():
    referenced = {
        value
        for _, attrs in tags_of("index.html")
        for name, value in attrs.items()
        if name in ("src", "href") and value and value.startswith("/assets/")
    }
    imports = {
        f"/assets/{m}" for name in SCRIPTS for m in re.findall(r'from "\./([\w.]+)"', source(name))
    }
    assert referenced | imports == {
        f"/assets/{name}" for name in web.ASSETS if name != "index.html"
    }
    everything = source("index.html") + "".join(map(source, SCRIPTS))
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg\b)", everything)  # no CDN
    assert not re.search(r'(?:src|href)="(?![/#"])', source("index.html"))  # this origin only


def test_the_page_preloads_what_its_script_asks_first():
    """The preloaded answers are used only if the script asks for exactly these addresses."""
    preloaded = [a["href"] for t, a in tags_of("index.html") if a.get("rel") == "preload"]
    page_size = int(re.search(r"const PAGE_SIZE = (\d+);", source("app.js")).group(1))
    first = f"/api/memories?limit={page_size + 1}&include_superseded=true"
    assert preloaded == [first, "/api/stats"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_never_write_markup(name):
    """Memory text only ever goes in as text: no API that parses a string as HTML."""
    text = source(name)
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "Function(",
    ):
        assert sink not in text, f"{name} uses {sink}"
