"""OAuth 2.1's rules in the service, on SQLite and PostgreSQL: secrets kept hashed and swept
when expired, replaced refresh tokens ending their grant, a code exchanged twice, the
upgrade of a database that kept one replaced token, the cap on open registration, and what
``token list`` shows of a client."""

from __future__ import annotations

import time

import pytest

from agent_memory.service.core import MemoryService
from agent_memory.service.oauth import OAuth, Request
from agent_memory.service.tokens import Tokens
from tests.support.oauth import (
    CALLBACK,
    pkce,
    with_service,
)
from tests.support.paths import FIXTURES

pytest_plugins = ["tests.support.pg_fixtures"]


def everything_stored(location: str) -> str:
    """Every OAuth row of the database, as text."""
    tables = ("oauth_clients", "oauth_codes", "oauth_grants", "oauth_replaced")
    if location.startswith("postgresql"):
        import psycopg

        with psycopg.connect(location) as conn:
            rows = [conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables]
    else:
        import sqlean

        conn = sqlean.connect(location)
        rows = [conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables]
        conn.close()
    return repr(rows)


def test_secrets_are_kept_hashed_and_the_sweep_deletes_what_expired(svc, clock, location):
    from agent_memory.service import oauth as oauth_rules
    from agent_memory.service.lifecycle import sweep

    token = Tokens(svc).create("alice")
    oauth = OAuth(svc)
    oauth.register("kept", {"client_id": "kept", "redirect_uris": [CALLBACK]})
    oauth.register("idle", {"client_id": "idle", "redirect_uris": [CALLBACK]})
    request = Request(CALLBACK, True, pkce()[1], "http://127.0.0.1:1/mcp", [], "s")
    waiting = oauth.open_request("kept", request)
    consent, _, _ = oauth.sign_in(oauth.open_request("kept", request), token)
    _, code = oauth.decide(consent, True)
    _, unused_code = oauth.decide(
        oauth.sign_in(oauth.open_request("kept", request), token)[0], True
    )
    issued = oauth.exchange(code, "kept")
    approval = oauth.approval("alice")
    stored = everything_stored(location)
    for secret in (waiting, consent, code, unused_code, issued.access_token, issued.refresh_token):
        assert secret.removeprefix("amoa_").removeprefix("amor_") not in stored
    assert approval.replace("-", "") not in stored and token.split(".")[1] not in stored

    assert sweep(svc)["oauth"] == 0  # nothing has expired yet
    clock.advance(oauth_rules.SIGN_IN_SECS)  # requests, consents, codes and approvals
    assert sweep(svc)["oauth"] == 3
    assert oauth.waiting(waiting) is None and oauth.code(unused_code) is None
    assert oauth.check(issued.access_token, request.resource).grant.name == "alice"
    clock.advance(oauth_rules.REFRESH_TOKEN_SECS)  # a grant never refreshed; clients stay
    assert sweep(svc)["oauth"] == 1
    assert oauth.grants() == [] and oauth.client("kept") is not None
    clock.advance(oauth_rules.CLIENT_IDLE_SECS - oauth_rules.REFRESH_TOKEN_SECS)
    assert sweep(svc)["oauth"] == 2  # the clients, unused for so long
    assert everything_stored(location) == repr([[], [], [], []])


def test_every_replaced_refresh_token_presented_again_ends_its_grant(svc, clock, location):
    """Reuse is detected for every refresh token a grant had, not only the last replaced:
    a thief who refreshes twice before the client does is found out all the same."""
    from agent_memory.service import oauth as oauth_rules
    from agent_memory.service.lifecycle import sweep

    token = Tokens(svc).create("alice")
    oauth = OAuth(svc)
    oauth.register("c", {"client_id": "c", "redirect_uris": [CALLBACK]})
    request = Request(CALLBACK, True, pkce()[1], "http://127.0.0.1:1/mcp", [], "s")

    def granted() -> tuple[int, list]:
        consent, _, _ = oauth.sign_in(oauth.open_request("c", request), token)
        issued = [oauth.exchange(oauth.decide(consent, True)[1], "c")]
        grant_id = oauth.refreshable(issued[0].refresh_token).id
        for _ in range(3):
            issued.append(oauth.refresh(grant_id, issued[-1].refresh_token))
        return grant_id, issued

    _, issued = granted()
    assert oauth.check(issued[-1].access_token, request.resource).grant.name == "alice"
    stored = everything_stored(location)  # the replaced ones too, as their SHA-256 only
    assert not [t for t in issued if t.refresh_token.removeprefix("amor_") in stored]
    assert oauth.refreshable(issued[0].refresh_token) is None  # replaced three times over
    assert oauth.holding(issued[-1].access_token) is None  # its grant ended
    assert oauth.grants() == []

    # the replaced tokens are kept no longer than they would have lived
    _, kept = granted()
    clock.advance(oauth_rules.REFRESH_TOKEN_SECS - 1)
    assert oauth.refresh(oauth.refreshable(kept[-1].refresh_token).id, kept[-1].refresh_token)
    clock.advance(1)
    assert sweep(svc)["oauth"] == 4  # the 4 tokens replaced before the last refresh
    assert len(oauth.grants()) == 1


def test_a_code_exchanged_twice_at_once_ends_the_grant_it_made(svc):
    """Two token requests with one code, both past the check that it is there: the one that
    finds it taken is refused and ends the grant the other made, as a later reuse does."""
    from agent_memory.service.oauth import Refused

    token = Tokens(svc).create("alice")
    oauth = OAuth(svc)
    oauth.register("c", {"client_id": "c", "redirect_uris": [CALLBACK]})
    request = Request(CALLBACK, True, pkce()[1], "http://127.0.0.1:1/mcp", [], "s")
    consent, _, _ = oauth.sign_in(oauth.open_request("c", request), token)
    _, code = oauth.decide(consent, True)
    assert oauth.code(code) is not None  # each request found it
    issued = oauth.exchange(code, "c")
    with pytest.raises(Refused) as refused:
        oauth.exchange(code, "c")
    assert refused.value.error == "invalid_grant"
    assert oauth.holding(issued.access_token) is None and oauth.grants() == []


def test_the_refresh_token_a_grant_replaced_before_the_upgrade_still_ends_it(location):
    """A database of SQLite's 0013 or PostgreSQL's 0015 kept one replaced refresh token per
    grant: the upgrade keeps it among the replaced ones, so presenting it still ends its
    grant."""
    from agent_memory.service import oauth as oauth_rules

    now = int(time.time())
    keys = [oauth_rules._key(t) for t in ("amoa_now", "amor_now", "amor_before")]
    client = (now, now)
    grant = (keys[0], now + 3600, keys[1], now + oauth_rules.REFRESH_TOKEN_SECS, keys[2], now, now)
    add_client = "INSERT INTO oauth_clients VALUES ('c', '{}', ?, ?)"
    add_grant = (
        "INSERT INTO oauth_grants (client_id, token_name, token_digest, resource, scopes,"
        " code_key, access_key, access_expires_at, refresh_key, refresh_expires_at,"
        " previous_refresh_key, created_at, used_at)"
        " VALUES ('c', 'alice', 'd', 'r', '[]', 'k', ?, ?, ?, ?, ?, ?, ?)"
    )
    if location.startswith("postgresql"):
        import psycopg

        from agent_memory.storage.postgres import database

        engine = database.create_engine(location)
        with engine.connect() as conn, conn.begin():
            database._upgrade(conn, 15)
        engine.dispose()
        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(add_client.replace("?", "%s"), client)
            conn.execute(add_grant.replace("?", "%s"), grant)
    else:
        import shutil

        import sqlean

        shutil.copyfile(FIXTURES / "memory-0013.db", location)
        conn = sqlean.connect(location)
        with conn:
            conn.execute(add_client, client)
            conn.execute(add_grant, grant)
        conn.close()

    def presented(service: MemoryService) -> tuple:
        oauth = OAuth(service)
        return oauth.refreshable("amor_before"), oauth.holding("amoa_now")

    assert with_service(location, presented) == (None, None)


def test_open_registration_keeps_at_most_the_cap(svc, clock, monkeypatch):
    from agent_memory.service import oauth as oauth_rules

    monkeypatch.setattr(oauth_rules, "MAX_CLIENTS", 2)
    oauth = OAuth(svc)
    for name in ("first", "second", "third"):
        oauth.register(name, {"client_id": name})
        clock.advance(1)
    assert [oauth.client(n) is not None for n in ("first", "second", "third")] == [
        False,
        True,
        True,
    ]
