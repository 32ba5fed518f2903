"""Access tokens in process, on SQLite and on PostgreSQL: kept hashed, checked by name and
secret, expiring, revoked at once; and the service as a token may use it (read-only, one
scope, on every read path)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest

from agent_memory.contract.errors import Forbidden, InvalidArgument
from agent_memory.service.access import Granted
from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import DAY_SECS, Grant, Tokens, Unauthorized
from agent_memory.service.validate import MAX_LABEL_CHARS
from agent_memory.storage import open_store
from tests.support.clock import Clock

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture
def service(location, clock):
    """Every test here runs on both engines."""
    svc = MemoryService(open_store(location), clock=clock)
    yield svc
    svc.close()


@pytest.fixture
def tokens(service):
    return Tokens(service)


def stored_bytes(location: str) -> bytes:
    """Everything the database holds: a SQLite file and its WAL, or every meta row."""
    if location.startswith("postgresql"):
        with psycopg.connect(location) as conn:
            rows = conn.execute("SELECT key || '=' || value FROM meta").fetchall()
        return "\n".join(row[0] for row in rows).encode()
    files = (Path(location), Path(location + "-wal"))
    return b"".join(f.read_bytes() for f in files if f.exists())


def test_a_token_is_kept_only_as_its_hash(tokens, location):
    token = tokens.create("ci")
    secret = token.rpartition(".")[2]
    assert token.startswith("amt_ci.") and len(secret) >= 40
    held = stored_bytes(location)
    assert b"token:ci" in held  # the row is there: the check below reads the right place
    assert secret.encode() not in held
    assert tokens.check(token) == Grant("ci", read_only=False, scope=None)
    assert [row["name"] for row in tokens.list()] == ["ci"]
    assert "hash" not in json.dumps(tokens.list())


@pytest.mark.parametrize(
    ("sent", "why"),
    [
        ("amt_ci.wrong", "the token is wrong or was revoked"),
        ("amt_nobody.x", "the token is wrong or was revoked"),
        ("Bearer", "the token is not an agent-memory token"),
        ("amt_ci", "the token is not an agent-memory token"),
    ],
)
def test_a_wrong_token_is_refused(tokens, sent, why):
    tokens.create("ci")
    with pytest.raises(Unauthorized, match=why):
        tokens.check(sent)


def test_expired_and_revoked_tokens_stop_at_once(tokens, clock):
    lasting, short = tokens.create("lasting"), tokens.create("short", days=1)
    tokens.check(short)
    clock.advance(DAY_SECS)
    with pytest.raises(Unauthorized, match="expired"):
        tokens.check(short)
    assert tokens.revoke("lasting") and not tokens.revoke("lasting")
    with pytest.raises(Unauthorized, match="revoked"):
        tokens.check(lasting)


def test_last_used_is_recorded(tokens, clock):
    token = tokens.create("ci")
    assert tokens.list()[0]["last_used_at"] is None
    tokens.check(token)
    assert tokens.list()[0]["last_used_at"] == clock.now


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("b@d", {}, "name must be 1 to 64 letters"),
        ("ok", {"days": 0}, re.escape("expires must be between 1 and 3650 days (got 0)")),
        ("ok", {"scope": "x" * (MAX_LABEL_CHARS + 1)}, "scope must be at most"),
    ],
)
def test_bad_token_options_are_refused(tokens, name, options, message):
    with pytest.raises(InvalidArgument, match=message):
        tokens.create(name, **options)
    assert tokens.list() == []


def test_a_name_is_taken_once(tokens):
    tokens.create("ci")
    with pytest.raises(InvalidArgument, match="exists already"):
        tokens.create("ci")


def test_a_read_only_token_never_writes(service):
    service.store({"content": "kept", "type": "TODO"})
    reader = Granted(service, Grant("reader", read_only=True))
    for call, args in [
        (reader.store, {"content": "x", "type": "TODO"}),
        (reader.update, {"id": 1, "content": "changed"}),
        (reader.forget, {"id": 1}),
        (reader.link, {"from_id": 1, "to_id": 1, "kind": "relates_to"}),
        (reader.unlink, {"from_id": 1, "to_id": 1, "kind": "relates_to"}),
    ]:
        with pytest.raises(Forbidden, match="'reader' is read-only"):
            call(args)
    assert [m["content"] for m in reader.list({})] == ["kept"]


@pytest.fixture
def two_scopes(service):
    """Memories 1 (alpha) and 2 (beta) that link to each other, and 3 (alpha)."""
    service.store({"content": "alpha decision", "type": "DECISION", "scope": "alpha"})
    service.store({"content": "beta decision", "type": "DECISION", "scope": "beta"})
    service.store({"content": "alpha pattern", "type": "PATTERN", "scope": "alpha"})
    service.link({"from_id": 1, "to_id": 2, "kind": "relates_to"})
    service.link({"from_id": 1, "to_id": 3, "kind": "relates_to"})
    return Granted(service, Grant("alpha-team", scope="alpha"))


def test_a_scope_bound_token_reads_only_its_scope(two_scopes, service):
    alpha = two_scopes
    found = alpha.search({"query": "decision", "expand_links": True})
    assert [r["id"] for r in found["results"]] == [1]
    assert [r["id"] for r in found["results"][0]["related"]] == [3]
    assert [m["id"] for m in alpha.list({})] == [3, 1]
    listed = alpha.list({"limit": 10, "expand_links": True})
    assert {r["id"] for m in listed for r in m["related"]} <= {1, 3}
    assert alpha.get({"id": 2}) == {"id": 2, "found": False, "reason": "not_found"}
    assert [r["id"] for r in alpha.get({"id": 1})["related"]] == [3]
    stats = alpha.stats()
    assert (stats["memories"], stats["by_type"]) == (2, {"DECISION": 1, "PATTERN": 1})
    assert stats["by_scope"] == [{"scope": "alpha", "memories": 2}]
    with pytest.raises(Forbidden, match="only in scope 'alpha' \\(got scope 'beta'\\)"):
        alpha.search({"query": "decision", "scope": "beta"})
    assert service.get({"id": 2})["content"] == "beta decision"  # still there for others


def test_a_scope_bound_token_writes_only_in_its_scope(two_scopes, service):
    alpha = two_scopes
    stored = alpha.store({"content": "lands in alpha", "type": "TODO"})
    assert service.get({"id": stored["id"]})["scope"] == "alpha"
    with pytest.raises(Forbidden):
        alpha.store({"content": "elsewhere", "type": "TODO", "scope": "beta"})
    with pytest.raises(Forbidden):
        alpha.update({"id": 1, "scope": "beta"})
    assert alpha.update({"id": 2, "content": "x"})["updated"] is False
    assert alpha.forget({"id": 2})["deleted"] is False
    assert alpha.link({"from_id": 3, "to_id": 2, "kind": "relates_to"})["linked"] is False
    assert alpha.unlink({"from_id": 1, "to_id": 2, "kind": "relates_to"})["unlinked"] is False
    assert service.get({"id": 2})["content"] == "beta decision"
    assert alpha.update({"id": 1, "content": "revised"})["content"] == "revised"


def test_what_a_token_writes_carries_its_name(service):
    writer = Granted(service, Grant("ci-bot"))
    memory_id = writer.store({"content": "stored by the bot", "type": "TODO"})["id"]
    local_id = service.store({"content": "stored locally", "type": "TODO"})["id"]
    stored = service.get({"id": memory_id})
    assert (stored["created_by"], stored["updated_by"]) == ("ci-bot", "ci-bot")
    Granted(service, Grant("editor")).update({"id": local_id, "content": "changed by editor"})
    changed = service.get({"id": local_id})
    assert (changed["created_by"], changed["updated_by"]) == ("local", "editor")


@pytest.mark.parametrize("name", ["local", "LOCAL", "Local"])
def test_the_name_local_is_refused(tokens, name):
    """`local` names the writes made without a token: a token of that name (in any case)
    would make its writes look like those."""
    with pytest.raises(InvalidArgument, match="name must not be 'local'"):
        tokens.create(name)
    assert tokens.list() == []
    assert tokens.create("locals").startswith("amt_locals.")


class RacingClock(Clock):
    """A clock that, asked the time once ``during`` is set, runs it first: what another
    process does between a check's read of the token and its write of the token's use."""

    during = None

    def __call__(self) -> float:
        during, self.during = self.during, None
        if during is not None:
            during()
        return super().__call__()


def test_a_revoke_during_a_check_is_never_undone(location):
    """The check's write of "last used" cannot bring back a token revoked meanwhile, nor
    give a token made again under its name the old secret."""
    clock = RacingClock()
    daemon = MemoryService(open_store(location), clock=clock)
    terminal = MemoryService(open_store(location), clock=Clock())
    try:
        old = Tokens(daemon).create("ci")
        clock.during = lambda: Tokens(terminal).revoke("ci")
        Tokens(daemon).check(old)  # read before the revoke: this request passes
        assert Tokens(terminal).list() == []
        with pytest.raises(Unauthorized):
            Tokens(daemon).check(old)

        old = Tokens(terminal).create("ci")
        made = {}

        def again() -> None:
            Tokens(terminal).revoke("ci")
            made["new"] = Tokens(terminal).create("ci")

        clock.advance(3600)
        clock.during = again
        Tokens(daemon).check(old)
        with pytest.raises(Unauthorized):
            Tokens(daemon).check(old)
        assert Tokens(daemon).check(made["new"]) == Grant("ci")
    finally:
        daemon.close()
        terminal.close()


def test_a_database_that_had_tokens_keeps_requiring_one(tokens, service):
    """Revoking the last token does not open the daemon again; only the explicit reopening
    does, and not while a token exists."""
    assert not tokens.required()
    tokens.create("ci")
    tokens.create("bot")
    assert tokens.revoke("ci") and tokens.revoke("bot")
    assert tokens.list() == [] and tokens.required()
    assert Tokens(MemoryService(service.db)).required()  # what any process reads
    tokens.create("again")
    assert tokens.reopen() == ["again"]  # nothing done while a token exists
    assert tokens.required()
    tokens.revoke("again")
    assert tokens.reopen() == []
    assert not tokens.required()
