"""The REST transport in process (Flask's test client): routes, status codes, bodies."""

from __future__ import annotations

import json
import re
import threading
from http.client import HTTPConnection, IncompleteRead

import flask
import pytest
import sqlalchemy
import waitress

from agent_memory import __version__
from agent_memory.contract import identity
from agent_memory.embedders.ollama import Ollama
from agent_memory.http import rest
from agent_memory.http.rest import create_app
from agent_memory.storage import database_key
from agent_memory.storage.sqlite import rows as sqlite_rows
from agent_memory.storage.sqlite.database import head_revision
from tests.support.fake_ollama import FakeOllama
from tests.support.files import dump
from tests.support.rest_client import BASE, Client

SURROGATE = "a\ud800b"  # sent as JSON's escape "a\\ud800b"
UNICODE = "must be valid Unicode text (got a lone surrogate at index 1)"
DIGITS = "9" * 5000  # Python's int() refuses more than 4,300 digits
COUNTED = "(got an integer of 5000 digits)"
ID_RANGE = f"between {-(2**63)} and {2**63 - 1}"


@pytest.fixture
def http(service):
    return Client(create_app(service))


@pytest.fixture
def seeded(service, db_path):
    service.store(
        {
            "content": "We chose io.github.unityinflow as the Maven group.",
            "type": "DECISION",
            "tags": ["maven"],
        }
    )
    service.store(
        {"content": "Sonatype portal replaces OSSRH", "type": "DECISION", "tags": ["maven"]}
    )
    return dump(db_path)


def test_store_returns_201_and_the_id(http, service):
    status, body = http(
        "POST",
        "/api/memories",
        body={"content": "hello", "type": "TODO", "tags": ["a"], "ttl_secs": 60},
    )
    assert (status, body) == (201, {"id": 1})
    assert service.list({})[0]["tags"] == ["a"]


def test_list_is_a_bare_array_with_filters_from_the_query(http, seeded):
    status, body = http("GET", "/api/memories?type=DECISION&tag=maven&limit=1")
    assert status == 200
    assert [m["id"] for m in body] == [2]
    assert http("GET", "/api/memories?tag=Maven") == (200, [])


def test_search_envelope(http, seeded):
    status, body = http("POST", "/api/search", body={"query": "maven", "limit": 5})
    assert status == 200
    assert body["search_mode"] == "keyword"
    assert [r["id"] for r in body["results"]] == [1, 2]  # 1 says it and is tagged, 2 is tagged


def test_patch_returns_the_updated_memory(http, seeded):
    status, body = http(
        "PATCH", "/api/memories/1", body={"tags": ["maven", "release"], "ttl_secs": None}
    )
    assert status == 200
    assert body["tags"] == ["maven", "release"] and body["embedding_status"] == 0


def test_delete_and_links(http, seeded, raw):
    assert http("POST", "/api/links", body={"from_id": 2, "to_id": 1, "kind": "supersedes"}) == (
        200,
        {"from_id": 2, "to_id": 1, "kind": "supersedes", "linked": True},
    )
    assert (
        http("POST", "/api/links", body={"from_id": 2, "to_id": 1, "kind": "supersedes"})[0] == 200
    )
    listed = "/api/memories?expand_links=true&limit=5&include_superseded=true"
    assert http("GET", listed)[0] == 200
    _, body = http("GET", listed)
    assert [r["kind"] for r in body[1]["related"]] == ["superseded_by"]
    assert http("DELETE", "/api/links/2/1/supersedes") == (
        200,
        {"from_id": 2, "to_id": 1, "kind": "supersedes", "unlinked": True},
    )
    assert http("DELETE", "/api/links/2/1/supersedes") == (
        404,
        {"from_id": 2, "to_id": 1, "kind": "supersedes", "unlinked": False, "reason": "not_found"},
    )
    assert http("DELETE", "/api/memories/2") == (200, {"id": 2, "deleted": True})
    assert raw.execute("SELECT count(*) FROM memory_links").fetchone() == (0,)


@pytest.mark.parametrize(
    "method,path,kwargs,status,error",
    [
        # the two original body routes: 415 / 400 / 422, then 400 for values
        (
            "POST",
            "/api/memories",
            {"raw": '{"content": "x", "type": "TODO"}', "content_type": None},
            415,
            "expected a JSON request body (Content-Type: application/json)",
        ),
        (
            "POST",
            "/api/memories",
            {"raw": '{"content": "x", "type": "TODO"}', "content_type": "text/plain"},
            415,
            None,
        ),
        ("POST", "/api/memories", {"raw": "{not json"}, 400, None),
        ("POST", "/api/memories", {"raw": ""}, 400, None),
        (
            "POST",
            "/api/memories",
            {"body": {"type": "TODO"}},
            422,
            "invalid argument: content is required",
        ),
        (
            "POST",
            "/api/memories",
            {"body": {"content": 5, "type": "TODO"}},
            422,
            "invalid argument: content must be a non-empty string (got 5)",
        ),
        (
            "POST",
            "/api/memories",
            {"body": {"content": "x", "type": "TODO", "ttl_secs": "60"}},
            422,
            'invalid argument: ttl_secs must be an integer (got "60")',
        ),
        (
            "POST",
            "/api/memories",
            {"body": {"content": "x", "type": "TODO", "tags": "a"}},
            422,
            'invalid argument: tags must be a list of strings (got "a")',
        ),
        (
            "POST",
            "/api/memories",
            {"body": ["content"]},
            422,
            'invalid argument: arguments must be an object (got ["content"])',
        ),
        (
            "POST",
            "/api/memories",
            {"body": {"content": "x", "type": "TODO", "ttl_secs": 0}},
            400,
            "invalid argument: ttl_secs must be between 1 and 3155760000 (got 0)",
        ),
        (
            "POST",
            "/api/memories",
            {"body": {"content": "x", "type": "NOTE"}},
            400,
            "invalid memory type 'NOTE' (expected one of DECISION, PATTERN, ERROR, TODO, ARCHITECTURE, CONSTRAINT)",
        ),
        (
            "POST",
            "/api/memories",
            {"body": {"content": "  ", "type": "TODO"}},
            400,
            "invalid argument: content must be a non-empty string",
        ),
        ("POST", "/api/search", {"raw": '{"query": "x"}', "content_type": None}, 415, None),
        ("POST", "/api/search", {"raw": '{"query": '}, 400, None),
        ("POST", "/api/search", {"body": {}}, 422, "invalid argument: query is required"),
        (
            "POST",
            "/api/search",
            {"body": {"query": "x", "limit": "abc"}},
            422,
            'invalid argument: limit must be an integer (got "abc")',
        ),
        (
            "POST",
            "/api/search",
            {"body": {"query": "x", "limit": True}},
            422,
            "invalid argument: limit must be an integer (got true)",
        ),
        (
            "POST",
            "/api/search",
            {"body": {"query": "x", "limit": 0}},
            400,
            "invalid argument: limit must be between 1 and 200 (got 0)",
        ),
        ("POST", "/api/search", {"body": {"query": "x", "type": "todo"}}, 400, None),
        # query parameters on GET /api/memories
        (
            "GET",
            "/api/memories?limit=abc",
            {},
            400,
            'invalid argument: limit must be an integer (got "abc")',
        ),
        (
            "GET",
            "/api/memories?limit=0",
            {},
            400,
            "invalid argument: limit must be between 1 and 200 (got 0)",
        ),
        (
            "GET",
            "/api/memories?limit=1.5",
            {},
            400,
            'invalid argument: limit must be an integer (got "1.5")',
        ),
        (
            "GET",
            "/api/memories?expand_links=1&limit=5",
            {},
            400,
            'invalid argument: expand_links must be a boolean (got "1")',
        ),
        (
            "GET",
            "/api/memories?expand_links=True&limit=5",
            {},
            400,
            'invalid argument: expand_links must be a boolean (got "True")',
        ),
        (
            "GET",
            "/api/memories?expand_links=true",
            {},
            400,
            "invalid argument: limit is required when expand_links is true; pass a limit between 1 and 200",
        ),
        ("GET", "/api/memories?type=decision", {}, 400, None),
        # PATCH: every malformed body is a 400
        (
            "PATCH",
            "/api/memories/abc",
            {"body": {"tags": []}},
            400,
            'invalid argument: id must be an integer (got "abc")',
        ),
        (
            "PATCH",
            "/api/memories/-",
            {"body": {"tags": []}},
            400,
            'invalid argument: id must be an integer (got "-")',
        ),
        (
            "PATCH",
            "/api/memories/1",
            {"raw": '{"tags": []}', "content_type": None},
            400,
            "expected a JSON request body (Content-Type: application/json)",
        ),
        ("PATCH", "/api/memories/1", {"raw": "{oops"}, 400, None),
        (
            "PATCH",
            "/api/memories/1",
            {"body": {"ttl_sec": 5}},
            400,
            "failed to deserialize parameters: unknown field `ttl_sec`, expected one of `content`, `tags`, `scope`, `ttl_secs` (did you mean `ttl_secs`?)",
        ),
        (
            "PATCH",
            "/api/memories/1",
            {"body": {"id": 1, "tags": []}},
            400,
            "failed to deserialize parameters: unknown field `id`, expected one of `content`, `tags`, `scope`, `ttl_secs`",
        ),
        ("PATCH", "/api/memories/1", {"body": {"type": "TODO"}}, 400, None),
        (
            "PATCH",
            "/api/memories/1",
            {"body": {}},
            400,
            "invalid argument: at least one of content, tags, scope, ttl_secs must be provided",
        ),
        (
            "PATCH",
            "/api/memories/1",
            {"body": {"content": None}},
            400,
            "invalid argument: content must be a non-empty string",
        ),
        (
            "PATCH",
            "/api/memories/1",
            {"body": {"tags": "x"}},
            400,
            'invalid argument: tags must be a list of strings (got "x")',
        ),
        (
            "PATCH",
            "/api/memories/1",
            {"body": {"ttl_secs": 0}},
            400,
            "invalid argument: ttl_secs must be between 1 and 3155760000 (got 0)",
        ),
        (
            "DELETE",
            "/api/memories/x1",
            {},
            400,
            'invalid argument: id must be an integer (got "x1")',
        ),
        # links
        ("POST", "/api/links", {"raw": "{", "content_type": "application/json"}, 400, None),
        ("POST", "/api/links", {"raw": '{"from_id": 1}', "content_type": None}, 400, None),
        (
            "POST",
            "/api/links",
            {"body": {"from_id": 1, "to_id": 2}},
            400,
            "invalid argument: kind is required",
        ),
        (
            "POST",
            "/api/links",
            {"body": {"from_id": "1", "to_id": 2, "kind": "relates_to"}},
            400,
            'invalid argument: from_id must be an integer (got "1")',
        ),
        (
            "POST",
            "/api/links",
            {"body": {"from_id": 1, "to_id": 1, "kind": "relates_to"}},
            400,
            "invalid argument: from_id and to_id must differ (got 1)",
        ),
        (
            "POST",
            "/api/links",
            {"body": {"from_id": 1, "to_id": 2, "kind": "blocks"}},
            400,
            "invalid argument: kind must be one of relates_to, supersedes, caused_by (got 'blocks')",
        ),
        (
            "DELETE",
            "/api/links/1/2/blocks",
            {},
            400,
            "invalid argument: kind must be one of relates_to, supersedes, caused_by (got 'blocks')",
        ),
        (
            "DELETE",
            "/api/links/one/2/relates_to",
            {},
            400,
            'invalid argument: from_id must be an integer (got "one")',
        ),
        (
            "DELETE",
            "/api/links/1/2.0/relates_to",
            {},
            400,
            'invalid argument: to_id must be an integer (got "2.0")',
        ),
        # lone surrogates in JSON bodies
        (
            "POST",
            "/api/memories",
            {"body": {"content": SURROGATE, "type": "TODO"}},
            400,
            f"invalid argument: content {UNICODE}",
        ),
        (
            "POST",
            "/api/memories",
            {"body": {"content": "x", "type": "TODO", "tags": [SURROGATE]}},
            400,
            "invalid argument: each tag must be valid Unicode text "
            "(got a lone surrogate at index 1 in tag 0)",
        ),
        (
            "POST",
            "/api/memories",
            {"body": {"content": "x", "type": "TODO", "source": SURROGATE}},
            400,
            f"invalid argument: source {UNICODE}",
        ),
        (
            "POST",
            "/api/memories",
            {"body": {"content": "x", "type": SURROGATE}},
            400,
            f"invalid argument: type {UNICODE}",
        ),
        (
            "POST",
            "/api/search",
            {"body": {"query": SURROGATE}},
            400,
            f"invalid argument: query {UNICODE}",
        ),
        (
            "POST",
            "/api/search",
            {"body": {"query": "x", "scope": SURROGATE}},
            400,
            f"invalid argument: scope {UNICODE}",
        ),
        (
            "PATCH",
            "/api/memories/1",
            {"body": {"content": SURROGATE}},
            400,
            f"invalid argument: content {UNICODE}",
        ),
        (
            "PATCH",
            "/api/memories/1",
            {"body": {SURROGATE: 1}},
            400,
            "failed to deserialize parameters: unknown field `a\\ud800b`, expected one of `content`, `tags`, `scope`, `ttl_secs`",
        ),
        (
            "POST",
            "/api/links",
            {"body": {"from_id": 1, "to_id": 2, "kind": SURROGATE}},
            400,
            f"invalid argument: kind {UNICODE}",
        ),
        # integers of 5000 digits, in bodies, paths and query strings
        (
            "POST",
            "/api/memories",
            {"raw": '{"content": "x", "type": "TODO", "ttl_secs": ' + DIGITS + "}"},
            400,
            f"invalid argument: ttl_secs must be between 1 and 3155760000 {COUNTED}",
        ),
        (
            "POST",
            "/api/search",
            {"raw": '{"query": "x", "limit": -' + DIGITS + "}"},
            400,
            f"invalid argument: limit must be between 1 and 200 {COUNTED}",
        ),
        (
            "POST",
            "/api/links",
            {"raw": '{"from_id": ' + DIGITS + ', "to_id": 2, "kind": "relates_to"}'},
            400,
            f"invalid argument: from_id must be {ID_RANGE} {COUNTED}",
        ),
        (
            "GET",
            f"/api/memories?limit={DIGITS}",
            {},
            400,
            f"invalid argument: limit must be between 1 and 200 {COUNTED}",
        ),
        (
            "DELETE",
            f"/api/memories/{DIGITS}",
            {},
            400,
            f"invalid argument: id must be {ID_RANGE} {COUNTED}",
        ),
        (
            "PATCH",
            f"/api/memories/-{DIGITS}",
            {"body": {"tags": []}},
            400,
            f"invalid argument: id must be {ID_RANGE} {COUNTED}",
        ),
        (
            "DELETE",
            f"/api/links/1/{DIGITS}/relates_to",
            {},
            400,
            f"invalid argument: to_id must be {ID_RANGE} {COUNTED}",
        ),
        # only ASCII digits are numbers: fullwidth 2, Arabic-Indic 1, Devanagari 1
        (
            "DELETE",
            "/api/memories/%EF%BC%92",
            {},
            400,
            'invalid argument: id must be an integer (got "\uff12")',
        ),
        (
            "PATCH",
            "/api/memories/%EF%BC%92",
            {"body": {"tags": []}},
            400,
            'invalid argument: id must be an integer (got "\uff12")',
        ),
        (
            "GET",
            "/api/memories?limit=%D9%A1",
            {},
            400,
            'invalid argument: limit must be an integer (got "\u0661")',
        ),
        (
            "DELETE",
            "/api/links/%E0%A5%A7/2/relates_to",
            {},
            400,
            'invalid argument: from_id must be an integer (got "\u0967")',
        ),
        # Flask's own errors are JSON too
        ("GET", "/nope", {}, 404, None),
        ("PUT", "/api/memories", {}, 405, None),
        ("GET", "/api/links", {}, 405, None),
    ],
)
def test_rejected_requests(http, seeded, db_path, raw, method, path, kwargs, status, error):
    got_status, body = http(method, path, **kwargs)
    assert got_status == status
    assert isinstance(body, dict) and set(body) == {"error"}
    if error is not None:
        assert body["error"] == error
    assert dump(db_path) == seeded
    assert raw.execute("SELECT count(*) FROM memory_links").fetchone() == (0,)


@pytest.mark.parametrize(
    "method,path,body,expected",
    [
        (
            "PATCH",
            "/api/memories/42",
            {"tags": []},
            {"id": 42, "updated": False, "reason": "not_found"},
        ),
        ("DELETE", "/api/memories/42", None, {"id": 42, "deleted": False, "reason": "not_found"}),
        (
            "POST",
            "/api/links",
            {"from_id": 1, "to_id": 42, "kind": "caused_by"},
            {
                "from_id": 1,
                "to_id": 42,
                "kind": "caused_by",
                "linked": False,
                "reason": "not_found",
                "missing_id": 42,
            },
        ),
        (
            "DELETE",
            "/api/links/1/2/relates_to",
            None,
            {
                "from_id": 1,
                "to_id": 2,
                "kind": "relates_to",
                "unlinked": False,
                "reason": "not_found",
            },
        ),
    ],
)
def test_not_found_is_404_with_a_structured_body(
    http, seeded, db_path, method, path, body, expected
):
    assert http(method, path, body=body) == (404, expected)
    assert dump(db_path) == seeded


def test_storage_fault_is_500_with_the_generic_text(http, seeded, raw, caplog):
    raw.execute("ALTER TABLE memories RENAME TO elsewhere")
    raw.commit()
    for method, path, body, operation in [
        ("POST", "/api/memories", {"content": "x", "type": "TODO"}, "store"),
        ("GET", "/api/memories", None, "list"),
        ("POST", "/api/search", {"query": "maven"}, "search"),
        ("PATCH", "/api/memories/1", {"tags": []}, "update"),
        ("DELETE", "/api/memories/1", None, "forget"),
        ("GET", "/health", None, "health"),
    ]:
        assert http(method, path, body=body) == (
            500,
            {"error": f"{operation} failed due to a storage error (details are in the server log)"},
        )
    assert "no such table" in caplog.text


def test_unexpected_failure_is_a_json_500_without_details(service, monkeypatch, caplog):
    monkeypatch.setattr(service, "iter_list", lambda args: 1 / 0)
    http = Client(create_app(service))
    assert http("GET", "/api/memories") == (
        500,
        {"error": "internal error (details are in the server log)"},
    )
    assert "ZeroDivisionError" in caplog.text


def test_oversized_body_is_413_json(http, db_path, seeded):
    status, body = http("POST", "/api/memories", raw="x" * (8 * 1024 * 1024))
    assert status == 413 and set(body) == {"error"}
    assert dump(db_path) == seeded


@pytest.mark.parametrize(
    "base_url,headers",
    [
        ("http://evil.example:7437", {}),  # DNS rebinding: a foreign name pointing at us
        ("http://127.0.0.1:8000", {}),  # another port
        ("http://localhost", {}),
        (BASE, {"Origin": "http://evil.example"}),
        (BASE, {"Origin": "null"}),
        (BASE, {"Origin": "http://127.0.0.1:8000"}),
    ],
)
def test_foreign_host_or_origin_is_refused_before_anything_happens(
    http, seeded, db_path, base_url, headers
):
    for method, path, body in [
        ("POST", "/api/memories", {"content": "planted", "type": "TODO"}),
        ("GET", "/api/memories", None),
        ("POST", "/api/search", {"query": "maven"}),
        ("DELETE", "/api/memories/1", None),
        ("GET", "/health", None),
    ]:
        status, answer = http(method, path, body=body, base_url=base_url, headers=headers)
        assert status == 403 and answer["error"].startswith("forbidden: ")
    assert dump(db_path) == seeded  # nothing written, nothing bumped


@pytest.mark.parametrize(
    "host,base_url,origin",
    [
        ("127.0.0.1", "http://localhost:7437", "http://localhost:7437"),
        ("127.0.0.1", BASE, BASE),
        ("::1", "http://[::1]:7437", "http://[::1]:7437"),
        ("localhost", "http://127.0.0.1:7437", None),
    ],
)
def test_own_names_and_origins_are_accepted(service, host, base_url, origin):
    http = Client(create_app(service, host=host, port=7437))
    headers = {"Origin": origin} if origin else {}
    assert http("GET", "/health", base_url=base_url, headers=headers)[0] == 200


def test_allow_remote_relaxes_both_checks(service):
    http = Client(create_app(service, host="0.0.0.0", port=7437, allow_remote=True))
    assert (
        http("GET", "/health", base_url="http://memory.lan:7437", headers={"Origin": "http://x"})[0]
        == 200
    )


@pytest.mark.parametrize(
    "models,status",
    [
        (["nomic-embed-text:latest"], "ready"),
        (["nomic-embed-text:v1.5", "llama3"], "ready"),
        (["llama3:8b"], "model_missing"),
        ([], "model_missing"),
    ],
)
def test_health_reports_the_embedder(db_path, service, models, status):
    with FakeOllama(models) as ollama:
        service.embedder = Ollama(ollama.url, "nomic-embed-text")
        code, body = Client(create_app(service))("GET", "/health")
    assert code == 200
    hybrid = status == "ready"
    outlook = (
        {
            "search_mode": "hybrid",
            "embedding": {"provider": "ollama", "model": "nomic-embed-text", "dimension": 768},
        }
        if hybrid
        else {
            "search_mode": "keyword",
            "embedding": None,
            "search_hint": "run `ollama pull nomic-embed-text`",
        }
    )
    assert body == {
        "status": "ok",
        "embedder": status,
        "schema_version": head_revision(),
        "version": __version__,
        **outlook,
    }


def test_health_proves_which_database_it_serves_without_telling_its_id(db_path, new_service):
    """The answer to a challenge is the HMAC only a reader of the database can make, for
    the address the daemon is bound to; the id itself is in no answer."""
    client = Client(create_app(new_service, host="localhost", port=8123, bound_ip="127.0.0.1"))
    challenge = identity.challenge()
    code, body = client("GET", f"/health?challenge={challenge}", base_url="http://localhost:8123")
    key = database_key(db_path)
    assert code == 200
    assert body["database_proof"] == identity.proof(key, challenge, "127.0.0.1:8123")
    assert body["database_proof"] != identity.proof(key, challenge, "127.0.0.1:8124")
    stored = new_service.db.database.stored_id
    assert re.fullmatch("[0-9a-f]{32}", stored)
    assert stored not in json.dumps(body) and key.hex() not in json.dumps(body)
    without = client("GET", "/health", base_url="http://localhost:8123")[1]
    assert "database_proof" not in without  # no challenge, no proof


@pytest.mark.parametrize("challenge", ["", "xyz", "A" * 32, "0" * 31, "0" * 33])
def test_a_malformed_challenge_is_refused(service, challenge):
    assert Client(create_app(service))("GET", f"/health?challenge={challenge}") == (
        400,
        {
            "error": "invalid argument: challenge must be 32 lowercase hexadecimal digits "
            f"(got {json.dumps(challenge)})"
        },
    )


def test_health_with_ollama_down_is_still_ok(service):
    service.embedder = Ollama("http://127.0.0.1:9", "nomic-embed-text")
    assert Client(create_app(service))("GET", "/health")[1]["embedder"] == "unreachable"


def test_link_storage_faults_are_500_with_the_generic_text(http, seeded, raw):
    raw.execute("ALTER TABLE memory_links RENAME TO links_gone")
    raw.commit()
    assert http("POST", "/api/links", body={"from_id": 1, "to_id": 2, "kind": "relates_to"}) == (
        500,
        {"error": "link failed due to a storage error (details are in the server log)"},
    )
    assert http("DELETE", "/api/links/1/2/relates_to") == (
        500,
        {"error": "unlink failed due to a storage error (details are in the server log)"},
    )


def _mixed_memories(service, count):
    for i in range(count):
        service.store(
            {
                "content": f'mémoire {i} \u2603 "quoted" \\ {"x" * (i % 50)}',
                "type": ("DECISION", "TODO", "PATTERN")[i % 3],
                "tags": [f"t{i % 4}", "é"] if i % 5 else [],
                "scope": None if i % 2 else f"s{i % 3}",
                "source": "src" if i % 7 == 0 else None,
            }
        )


@pytest.mark.parametrize(
    "query,args",
    [
        ("", {}),
        ("?type=TODO", {"type": "TODO"}),
        ("?tag=t1", {"tag": "t1"}),
        ("?scope=s1&type=DECISION", {"scope": "s1", "type": "DECISION"}),
        ("?limit=7", {"limit": 7}),
        ("?tag=none", {"tag": "none"}),
        ("?limit=3&expand_links=true", {"limit": 3, "expand_links": True}),
    ],
)
@pytest.mark.parametrize("chunk", [1, 1000, None])  # None: STREAM_CHUNK_CHARS as shipped
def test_streamed_list_is_the_bytes_jsonify_wrote(service, monkeypatch, query, args, chunk):
    if chunk:
        monkeypatch.setattr(rest, "STREAM_CHUNK_CHARS", chunk, raising=False)
    _mixed_memories(service, 300)
    service.link({"from_id": 300, "to_id": 299, "kind": "relates_to"})
    app = create_app(service)
    response = app.test_client().get(f"/api/memories{query}", base_url=BASE)
    with app.app_context():
        expected = flask.jsonify(service.list(args)).get_data()
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.get_data() == expected


def test_unlimited_list_is_streamed_not_built(service):
    _mixed_memories(service, 3)
    response = create_app(service).test_client().get("/api/memories", base_url=BASE)
    assert response.is_streamed
    assert "Content-Length" not in response.headers
    assert [m["id"] for m in response.get_json()] == [3, 2, 1]


@pytest.fixture
def fail_at_row(monkeypatch):
    """arm(n): reading the n-th row (from 1) of any read fails with engine text."""

    def arm(n):
        calls = iter(range(1, 10**6))

        def memory(row):
            if next(calls) == n:
                raise sqlalchemy.exc.OperationalError("SELECT", {}, Exception("disk I/O zzsecret"))
            return real(row)

        monkeypatch.setattr(sqlite_rows, "memory", memory)

    real = sqlite_rows.memory
    return arm


def test_storage_fault_mid_list_drops_the_connection(service, fail_at_row, caplog, monkeypatch):
    """Past the first page a fault cannot be a 500: the daemon cuts the chunked body, so the
    client sees a broken answer (never a shorter list) and no engine text."""
    monkeypatch.setattr(rest, "STREAM_CHUNK_CHARS", 1, raising=False)  # a page per row
    _mixed_memories(service, 5)
    fail_at_row(3)
    server = waitress.create_server(create_app(service, allow_remote=True), port=0, threads=1)
    threading.Thread(target=server.run, daemon=True).start()
    try:
        conn = HTTPConnection("127.0.0.1", server.effective_port, timeout=30)
        conn.request("GET", "/api/memories")
        response = conn.getresponse()
        assert response.status == 200
        with pytest.raises(IncompleteRead) as cut:
            response.read()
    finally:
        server.close()
    assert b"zzsecret" not in cut.value.partial
    assert "list: storage error: disk I/O zzsecret" in caplog.text
    assert "storage fault after reading 2 rows; cutting the answer" in caplog.text


@pytest.mark.parametrize("row", [1, 3])
def test_storage_fault_in_the_first_page_is_a_generic_500(service, fail_at_row, row):
    _mixed_memories(service, 5)
    fail_at_row(row)
    assert Client(create_app(service))("GET", "/api/memories") == (
        500,
        {"error": "list failed due to a storage error (details are in the server log)"},
    )
