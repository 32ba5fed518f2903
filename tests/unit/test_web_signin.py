"""The page's sign-in, in process: the REST app behind the daemon's token gate, through
Flask's test client, on the service's own clock (sessions expire without waiting).

Every refusal: a wrong, expired or revoked token (one message for all), a session whose token
is revoked or expires, a read-only token's writes, another scope through a scope-bound
session, a write by cookie without the page's header or from another Origin. And the cookie's
attributes with and without TLS, sign-out, the cap on sessions and their expiry.
"""

from __future__ import annotations

import pytest

from agent_memory.http import signin
from agent_memory.http.daemon import Gate
from agent_memory.http.rest import create_app
from agent_memory.service import access
from agent_memory.service.sessions import SEEN_EVERY_SECS
from agent_memory.service.tokens import FULL, Grant, Tokens
from tests.support.rest_client import BASE

PAGE = {signin.CSRF_HEADER: "1"}  # what the page sends on every write
PUBLIC = "memory.example.com"
DAY = 86_400


def gated(service, **options):
    """The app as the daemon serves it: the token gate in front, open on loopback."""
    app = create_app(service, **options)
    app.wsgi_app = Gate(app.wsgi_app, service, open_=True, sign_in=app.extensions[signin.KEY])
    return app


@pytest.fixture
def tokens(service):
    service.store({"content": "alpha plan", "type": "DECISION", "scope": "alpha"})
    service.store({"content": "beta plan", "type": "DECISION", "scope": "beta"})
    service.link({"from_id": 1, "to_id": 2, "kind": "relates_to"})
    made = Tokens(service)
    return {
        "rw": made.create("rw"),
        "ro": made.create("ro", read_only=True),
        "alpha": made.create("alpha", scope="alpha"),
        "brief": made.create("brief", days=1),
    }


@pytest.fixture
def app(service, tokens):
    return gated(service)


@pytest.fixture
def client(app):
    return app.test_client()


def call(client, method, path, *, headers=None, base_url=BASE, **kwargs):
    return client.open(path, method=method, headers=headers or {}, base_url=base_url, **kwargs)


def sign_in(client, token, **headers):
    return call(client, "POST", "/api/session", json={"token": token}, headers={**PAGE, **headers})


def cookie_of(response) -> dict[str, str]:
    """The Set-Cookie header's name=value and attributes (lowercased names)."""
    first, *attributes = response.headers["Set-Cookie"].split("; ")
    name, _, value = first.partition("=")
    out = {"name": name, "value": value}
    for attribute in attributes:
        key, _, val = attribute.partition("=")
        out[key.lower()] = val
    return out


def ids(response) -> list[int]:
    return [m["id"] for m in response.get_json()]


def test_an_open_loopback_daemon_asks_for_no_sign_in(service):
    client = gated(service).test_client()
    assert call(client, "GET", "/api/session").get_json() == {
        "name": "local",
        "read_only": False,
        "scope": None,
        "via": "open",
        "may": access.may(FULL),
    }
    assert all(access.may(FULL).values())
    stored = call(client, "POST", "/api/memories", json={"content": "c", "type": "TODO"})
    assert stored.status_code == 201  # no header needed: nobody signs in
    assert sign_in(client, "amt_nobody.secret").status_code == 401


def test_signing_in_opens_the_api_to_the_page(client, tokens):
    assert call(client, "GET", "/api/memories").status_code == 401
    assert call(client, "GET", "/api/session").status_code == 401
    signed = sign_in(client, tokens["rw"])
    assert signed.status_code == 200
    assert signed.get_json() == {
        "name": "rw",
        "read_only": False,
        "scope": None,
        "via": "session",
        "may": access.may(Grant("rw")),
    }
    assert signed.headers["Cache-Control"] == "no-store"
    cookie = cookie_of(signed)
    assert cookie["name"] == "agent_memory_session" and len(cookie["value"]) >= 43
    assert cookie["path"] == "/" and cookie["samesite"] == "Strict" and "httponly" in cookie
    assert "secure" not in cookie and cookie["max-age"] == str(signin.SESSION_MAX_AGE_SECS)
    assert ids(call(client, "GET", "/api/memories")) == [2, 1]
    assert call(client, "GET", "/api/session").get_json()["via"] == "session"
    stored = call(
        client, "POST", "/api/memories", json={"content": "by page", "type": "TODO"}, headers=PAGE
    )
    assert stored.status_code == 201
    memory = call(client, "GET", f"/api/memories/{stored.get_json()['id']}").get_json()
    assert memory["created_by"] == "rw"


def test_a_refused_token_gets_one_answer_whatever_was_wrong(client, tokens, service, clock):
    Tokens(service).revoke("ro")
    wrong_secret = tokens["rw"][:-4] + "AAAA"
    answers = [
        sign_in(client, token)
        for token in (wrong_secret, "amt_nobody.x", "not a token", tokens["ro"])
    ]
    surrogate = '{"token": "amt_rw.\\ud800"}'  # a lone surrogate: JSON text may hold one
    answers.append(
        call(
            client,
            "POST",
            "/api/session",
            data=surrogate,
            content_type="application/json",
            headers=PAGE,
        )
    )
    clock.advance(DAY)  # "brief" has expired
    answers.append(sign_in(client, tokens["brief"]))
    assert [a.status_code for a in answers] == [401] * 6
    assert {a.get_json()["error"] for a in answers} == {signin.REFUSED}
    assert all("Set-Cookie" not in a.headers for a in answers)
    assert answers[0].headers["WWW-Authenticate"].startswith('Bearer realm="agent-memory"')


def test_sign_in_takes_only_a_token_in_json(client, tokens):
    form = call(client, "POST", "/api/session", data={"token": tokens["rw"]}, headers=PAGE)
    extra = call(
        client, "POST", "/api/session", json={"token": tokens["rw"], "as": "x"}, headers=PAGE
    )
    number = call(client, "POST", "/api/session", json={"token": 1}, headers=PAGE)
    assert [r.status_code for r in (form, extra, number)] == [400, 400, 400]
    assert "unknown field" in extra.get_json()["error"]
    assert call(client, "GET", "/api/memories").status_code == 401


def test_signing_in_needs_the_pages_header_and_origin(client, tokens):
    bare = call(client, "POST", "/api/session", json={"token": tokens["rw"]})
    foreign = sign_in(client, tokens["rw"], Origin="http://evil.example")
    assert (bare.status_code, foreign.status_code) == (403, 403)
    assert signin.CSRF_HEADER in bare.get_json()["error"]
    assert call(client, "GET", "/api/memories").status_code == 401


def test_a_revoked_tokens_session_ends_at_its_next_request(client, tokens, service, app):
    sign_in(client, tokens["rw"])
    assert call(client, "GET", "/api/memories").status_code == 200
    Tokens(service).revoke("rw")
    Tokens(service).create("rw")  # the same name again: another secret, not this session's
    refused = call(client, "GET", "/api/memories")
    assert refused.status_code == 401
    assert "revoked or expired" in refused.get_json()["error"]
    assert len(app.extensions[signin.KEY].sessions) == 0
    assert call(client, "GET", "/api/memories").status_code == 401


def test_an_expired_tokens_session_ends(client, tokens, clock):
    clock.advance(DAY - 60)
    sign_in(client, tokens["brief"])
    assert call(client, "GET", "/api/stats").status_code == 200
    clock.advance(60)
    assert call(client, "GET", "/api/stats").status_code == 401


def test_a_read_only_session_reads_and_cannot_write(client, tokens):
    sign_in(client, tokens["ro"])
    assert ids(call(client, "GET", "/api/memories")) == [2, 1]
    writes = [
        call(client, "POST", "/api/memories", json={"content": "x", "type": "TODO"}, headers=PAGE),
        call(client, "PATCH", "/api/memories/1", json={"content": "y"}, headers=PAGE),
        call(client, "DELETE", "/api/memories/1", headers=PAGE),
        call(
            client,
            "POST",
            "/api/links",
            json={"from_id": 2, "to_id": 1, "kind": "caused_by"},
            headers=PAGE,
        ),
    ]
    assert [w.status_code for w in writes] == [403] * 4
    assert writes[0].get_json()["error"] == (
        "forbidden: the token 'ro' is read-only and cannot store"
    )
    assert call(client, "GET", "/api/memories/1").get_json()["content"] == "alpha plan"


def test_a_scope_bound_session_sees_and_writes_only_its_scope(client, tokens):
    sign_in(client, tokens["alpha"])
    assert ids(call(client, "GET", "/api/memories")) == [1]
    assert call(client, "GET", "/api/memories?scope=beta").status_code == 403
    found = call(client, "POST", "/api/search", json={"query": "plan"}, headers=PAGE).get_json()
    assert [r["id"] for r in found["results"]] == [1]
    assert call(client, "GET", "/api/memories/2").status_code == 404
    assert call(client, "GET", "/api/memories/2/history").status_code == 404
    assert call(client, "GET", "/api/memories/1").get_json()["related"] == []  # the graph
    stats = call(client, "GET", "/api/stats").get_json()
    assert stats["memories"] == 1 and stats["by_scope"] == [{"scope": "alpha", "memories": 1}]
    assert call(client, "GET", "/api/tidy").status_code == 200
    assert call(client, "DELETE", "/api/memories/2", headers=PAGE).status_code == 404
    stored = call(
        client,
        "POST",
        "/api/memories",
        json={"content": "alpha note", "type": "TODO"},
        headers=PAGE,
    )
    assert (
        call(client, "GET", f"/api/memories/{stored.get_json()['id']}").get_json()["scope"]
        == "alpha"
    )
    assert call(client, "GET", "/api/session").get_json()["scope"] == "alpha"


def test_a_write_by_cookie_must_be_the_pages_own(client, tokens):
    sign_in(client, tokens["rw"])
    body = {"content": "csrf?", "type": "TODO"}
    refused = [
        call(client, "POST", "/api/memories", json=body),
        call(client, "DELETE", "/api/memories/1"),
        call(
            client,
            "POST",
            "/api/memories",
            json=body,
            headers={**PAGE, "Origin": "http://evil.example"},
        ),
        call(client, "POST", "/api/memories", json=body, headers={**PAGE, "Origin": "null"}),
        call(
            client,
            "POST",
            "/api/memories",
            json=body,
            headers={**PAGE, "Sec-Fetch-Site": "cross-site"},
        ),
    ]
    assert [r.status_code for r in refused] == [403] * 5
    assert refused[0].get_json()["error"] == (
        "forbidden: a signed-in write must carry the header X-Agent-Memory: 1 (the page sends it)"
    )
    assert "Origin 'http://evil.example'" in refused[2].get_json()["error"]
    assert ids(call(client, "GET", "/api/memories")) == [2, 1]  # nothing was written
    own = call(
        client,
        "POST",
        "/api/memories",
        json=body,
        headers={**PAGE, "Origin": BASE, "Sec-Fetch-Site": "same-origin"},
    )
    assert own.status_code == 201
    assert call(client, "GET", "/api/memories").status_code == 200  # reads need no header


def test_bearer_requests_are_unchanged(app, tokens):
    client = app.test_client()
    bearer = {"Authorization": f"Bearer {tokens['rw']}"}
    stored = call(
        client, "POST", "/api/memories", json={"content": "b", "type": "TODO"}, headers=bearer
    )
    assert stored.status_code == 201  # no page header needed
    assert call(client, "GET", "/api/session", headers=bearer).get_json()["via"] == "bearer"


def test_a_session_cookie_does_not_open_mcp(client, tokens):
    sign_in(client, tokens["rw"])
    assert call(client, "POST", "/mcp", json={}, headers=PAGE).status_code == 401


def test_signing_out_ends_the_session_and_clears_the_cookie(app, tokens):
    client = app.test_client()
    session_id = cookie_of(sign_in(client, tokens["rw"]))["value"]
    assert call(client, "DELETE", "/api/session").status_code == 403  # no page header
    out = call(client, "DELETE", "/api/session", headers=PAGE)
    assert out.status_code == 200 and out.get_json() == {"signed_out": True}
    cleared = cookie_of(out)
    assert (cleared["name"], cleared["value"], cleared["max-age"]) == (
        "agent_memory_session",
        "",
        "0",
    )
    assert call(client, "GET", "/api/memories").status_code == 401
    replay = app.test_client(use_cookies=False)
    again = call(
        replay, "GET", "/api/memories", headers={"Cookie": f"{signin.COOKIE}={session_id}"}
    )
    assert again.status_code == 401  # the server forgot it, not just the browser


def test_behind_a_tls_proxy_the_cookie_is_secure_with_the_host_prefix(service, tokens):
    app = gated(service, extra_hosts=(PUBLIC,))
    client = app.test_client(use_cookies=False)
    proxied = {"X-Forwarded-Proto": "https"}
    signed = sign_in(client, tokens["rw"], **proxied, Origin=f"https://{PUBLIC}")
    cookie = cookie_of(signed)
    assert cookie["name"] == "__Host-agent_memory_session"
    assert "secure" in cookie and "httponly" in cookie and cookie["samesite"] == "Strict"
    assert cookie["path"] == "/" and "domain" not in cookie
    value = cookie["value"]
    base = f"http://{PUBLIC}"
    secure = {**proxied, "Cookie": f"__Host-agent_memory_session={value}"}
    plain = {**proxied, "Cookie": f"agent_memory_session={value}"}
    assert call(client, "GET", "/api/memories", headers=secure, base_url=base).status_code == 200
    # behind TLS only the prefixed cookie is read (a sibling subdomain cannot plant it)
    assert call(client, "GET", "/api/memories", headers=plain, base_url=base).status_code == 401
    # a daemon told of no proxy does not believe X-Forwarded-Proto
    direct = gated(service).test_client(use_cookies=False)
    assert "secure" not in cookie_of(sign_in(direct, tokens["rw"], **proxied))


def test_sessions_past_the_cap_drop_the_least_recently_used(app, tokens, clock):
    app.extensions[signin.KEY].sessions.cap = 2
    clients = [app.test_client() for _ in range(3)]
    sign_in(clients[0], tokens["rw"])
    sign_in(clients[1], tokens["rw"])
    clock.advance(SEEN_EVERY_SECS)  # "last seen" is written to the minute
    assert call(clients[0], "GET", "/api/stats").status_code == 200  # 0 is now the newer
    sign_in(clients[2], tokens["rw"])
    statuses = [call(c, "GET", "/api/stats").status_code for c in clients]
    assert statuses == [200, 401, 200]
    assert len(app.extensions[signin.KEY].sessions) == 2


def test_a_session_ends_when_idle_and_at_its_maximum_age(app, tokens, clock):
    client = app.test_client()
    sign_in(client, tokens["rw"])
    clock.advance(signin.SESSION_IDLE_SECS - 1)
    assert call(client, "GET", "/api/stats").status_code == 200  # used: idle time restarts
    clock.advance(signin.SESSION_IDLE_SECS - 1)
    assert call(client, "GET", "/api/stats").status_code == 200
    clock.advance(signin.SESSION_IDLE_SECS)
    assert call(client, "GET", "/api/stats").status_code == 401
    sign_in(client, tokens["rw"])
    used_for = 0
    while used_for + signin.SESSION_IDLE_SECS // 2 < signin.SESSION_MAX_AGE_SECS:
        clock.advance(signin.SESSION_IDLE_SECS // 2)
        used_for += signin.SESSION_IDLE_SECS // 2
        assert call(client, "GET", "/api/stats").status_code == 200
    clock.advance(signin.SESSION_MAX_AGE_SECS - used_for)
    assert call(client, "GET", "/api/stats").status_code == 401


def test_a_new_sign_in_replaces_the_old_session(app, tokens):
    client = app.test_client()
    first = cookie_of(sign_in(client, tokens["rw"]))["value"]
    second = cookie_of(sign_in(client, tokens["ro"]))["value"]
    assert first != second and len(app.extensions[signin.KEY].sessions) == 1
    assert call(client, "GET", "/api/session").get_json()["name"] == "ro"
