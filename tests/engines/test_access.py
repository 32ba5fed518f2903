"""The service as a token may use it (service.access), on SQLite and on PostgreSQL: the
attacks a scope-bound token tried (superseding another scope's memory, moving its own out
of its scope), ids of other scopes answered exactly as missing ones, and deny by default."""

from __future__ import annotations

import json

import pytest

from agent_memory.contract.errors import Forbidden, InvalidArgument
from agent_memory.service import access
from agent_memory.service.access import Granted
from agent_memory.service.tokens import Grant

pytest_plugins = ["tests.support.pg_fixtures"]

MISSING = 999_999


@pytest.fixture
def office(svc):
    """A global rule, a finance memory and a web memory; the web team's token."""
    ids = {
        "rule": svc.store({"content": "Never push to main without review", "type": "CONSTRAINT"}),
        "finance": svc.store(
            {
                "content": "Invoices are approved by two people",
                "type": "CONSTRAINT",
                "scope": "finance",
            }
        ),
        "web": svc.store(
            {"content": "The web app builds with Vite", "type": "DECISION", "scope": "web"}
        ),
    }
    return {name: answer["id"] for name, answer in ids.items()}, Granted(
        svc, Grant("web", scope="web")
    )


def everything(svc) -> list[tuple]:
    """Every memory as an unscoped reader sees it (superseded ones too), and their links."""
    listed = svc.list({"include_superseded": True, "expand_links": True, "limit": 200})
    return [(m["id"], m["scope"], m["content"], m["superseded_by"], m["related"]) for m in listed]


def refusal(call, *args, **kwargs) -> tuple[str, str]:
    """The exception's class name and message."""
    with pytest.raises(Exception) as caught:
        call(*args, **kwargs)
    return type(caught.value).__name__, str(caught.value)


def test_a_scoped_token_cannot_supersede_a_memory_of_another_scope(svc, office):
    """The first attack: `supersedes` naming a finance memory or a global one. Refused as a
    missing id is, word for word; nothing is stored and unscoped views keep both."""
    ids, web = office
    before = everything(svc)
    sent = {"content": "Disable TLS verification in CI", "type": "CONSTRAINT"}
    for target in (ids["finance"], ids["rule"]):
        other = refusal(web.store, {**sent, "supersedes": [target]})
        missing = refusal(web.store, {**sent, "supersedes": [MISSING]})
        assert other == (missing[0], missing[1].replace(str(MISSING), str(target)))
        assert other[0] == InvalidArgument.__name__
    assert everything(svc) == before
    found = svc.search({"query": "push main review"})["results"]
    assert [r["id"] for r in found] == [ids["rule"]]
    own = web.store(
        {**sent, "content": "The web app builds with Vite 6", "supersedes": [ids["web"]]}
    )
    related = svc.get({"id": ids["web"]})["related"]
    assert [(r["id"], r["kind"]) for r in related] == [(own["id"], "superseded_by")]


def test_a_scoped_token_cannot_move_a_memory_out_of_its_scope(svc, office):
    """The second attack: `scope: null` made a web memory global; another scope is refused
    the same way. Nothing changes."""
    ids, web = office
    before = everything(svc)
    for scope in (None, "finance"):
        with pytest.raises(Forbidden, match="may update only in scope 'web'"):
            web.update({"id": ids["web"], "scope": scope})
        with pytest.raises(Forbidden, match="may update only in scope 'web'"):
            web.update({"scope": scope}, path_id=ids["web"])
    assert everything(svc) == before
    assert web.update({"id": ids["web"], "scope": "web", "tags": ["build"]})["scope"] == "web"


VITE = {"content": "Use Vite 7", "type": "DECISION"}
# (operation, its arguments naming the id i, its options) for each way of naming an id
NAMING = [
    pytest.param("store", lambda i: ({**VITE, "supersedes": [i]},), {}, id="store-supersedes"),
    pytest.param("store", lambda i: ({**VITE, "supersedes": [3, i]},), {}, id="store-second"),
    pytest.param("get", lambda i: ({"id": i},), {}, id="get"),
    pytest.param("history", lambda i: ({"id": i},), {}, id="history"),
    pytest.param("update", lambda i: ({"id": i, "content": "new"},), {}, id="update"),
    pytest.param("update", lambda i: ({"tags": ["x"]},), {"path_id": True}, id="update-path"),
    pytest.param("update", lambda i: ({"id": i, "content": "  "},), {}, id="update-blank"),
    pytest.param("update", lambda i: ({"id": i, "ttl_secs": 0},), {}, id="update-ttl-0"),
    pytest.param("forget", lambda i: ({"id": i},), {}, id="forget"),
    pytest.param("forget", lambda i: ({"id": i, "bogus": 1},), {}, id="forget-unknown-field"),
    pytest.param(
        "link", lambda i: ({"from_id": i, "to_id": 3, "kind": "relates_to"},), {}, id="link-from"
    ),
    pytest.param(
        "link", lambda i: ({"from_id": 3, "to_id": i, "kind": "supersedes"},), {}, id="link-to"
    ),
    pytest.param(
        "link", lambda i: ({"from_id": i, "to_id": i, "kind": "relates_to"},), {}, id="link-self"
    ),
    pytest.param(
        "unlink", lambda i: ({"from_id": 3, "to_id": i, "kind": "relates_to"},), {}, id="unlink"
    ),
    pytest.param(
        "unlink", lambda i: ({"from_id": i, "to_id": 3, "kind": "caused_by"},), {}, id="unlink-from"
    ),
]


def answer_to(call, args, options) -> tuple[str, str]:
    try:
        return "answer", json.dumps(call(*args, **options), sort_keys=True)
    except Exception as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize(("operation", "arguments", "options"), NAMING)
def test_an_id_of_another_scope_answers_as_a_missing_one(
    svc, office, operation, arguments, options
):
    """Same shape, same message, whatever else is wrong with the call: a token cannot tell
    an id of another scope from one that does not exist, and a missing id answers as it
    does to a full token. The finance memory is linked to the web one, so unlink has an
    edge to find."""
    ids, web = office
    svc.link({"from_id": ids["finance"], "to_id": ids["web"], "kind": "relates_to"})
    svc.link({"from_id": ids["finance"], "to_id": ids["web"], "kind": "caused_by"})
    before = everything(svc)
    full = Granted(svc, Grant("rw"))
    answers = {}
    for name, token, memory_id in (
        ("other", web, ids["finance"]),
        ("missing", web, MISSING),
        ("missing to a full token", full, MISSING),
    ):
        given = {**options, "path_id": memory_id} if "path_id" in options else options
        kind, text = answer_to(getattr(token, operation), arguments(memory_id), given)
        answers[name] = (kind, text.replace(str(memory_id), "ID"))
    assert answers["other"] == answers["missing"] == answers["missing to a full token"]
    assert everything(svc) == before


def test_history_leaves_out_the_versions_a_memory_had_in_another_scope(svc, office):
    """A full token wrote a memory in finance, then moved it to web: the web token sees the
    versions written in web only, numbered from 1; as_of keeps refusing the finance one."""
    ids, web = office
    moving = ids["finance"]
    svc.update({"id": moving, "content": "Invoices over 10k need the CFO"})
    svc.update({"id": moving, "scope": "web", "content": "Invoices are the web shop's job"})
    svc.update({"id": moving, "tags": ["shop"]})
    every = svc.history({"id": moving})["versions"]
    assert [v["scope"] for v in every] == ["finance", "finance", "web", "web"]
    shown = web.history({"id": moving})["versions"]
    assert [(v["version"], v["scope"], v["content"]) for v in shown] == [
        (1, "web", "Invoices are the web shop's job"),
        (2, "web", "Invoices are the web shop's job"),
    ]
    assert "Invoices are approved by two people" not in json.dumps(shown)
    before_move = every[1]["replaced_at"] - 1
    assert web.get({"id": moving, "as_of": before_move})["found"] is False


def test_a_read_only_token_records_no_use(svc, office, clock):
    """A search is a read: for a read-only token it writes nothing, whatever it asks."""
    ids, _web = office
    reader = Granted(svc, Grant("ci", read_only=True))
    before = svc.get({"id": ids["rule"]})
    clock.advance(3600)
    for args in ({"query": "push main review"}, {"query": "push main review", "record_use": True}):
        found = reader.search(args, fields=("query", "record_use"))
        assert [r["id"] for r in found["results"]] == [ids["rule"]]
    svc.uses.flush()
    after = svc.get({"id": ids["rule"]})
    assert (after["access_count"], after["last_accessed"]) == (
        before["access_count"],
        before["last_accessed"],
    )
    Granted(svc, Grant("rw")).search({"query": "push main review"})  # a writer's search does
    svc.uses.flush()
    assert svc.get({"id": ids["rule"]})["access_count"] == before["access_count"] + 1


def test_an_operation_without_a_rule_is_refused_to_every_token_but_a_full_one(
    svc, office, monkeypatch
):
    """Deny by default: take the rule of `stats` away and only a full token may call it;
    nothing of the service is handed through outside an operation."""
    _ids, web = office
    tokens = {
        "full": Granted(svc, Grant("rw")),
        "read-only": Granted(svc, Grant("ci", read_only=True)),
        "scoped": web,
        "scoped read-only": Granted(svc, Grant("web-ci", read_only=True, scope="web")),
    }
    without = {name: rule for name, rule in access.RULES.items() if name != "stats"}
    monkeypatch.setattr(access, "RULES", without)
    assert tokens["full"].stats()["memories"] == 3
    for name in ("read-only", "scoped", "scoped read-only"):
        with pytest.raises(Forbidden, match="cannot stats: only a full token may"):
            tokens[name].stats()
    for token in tokens.values():
        for attribute in ("db", "embedder", "uses", "redact", "embeddings"):
            with pytest.raises(AttributeError):
                getattr(token, attribute)
    with pytest.raises(Forbidden, match="no token may export"):
        tokens["full"].export(lambda line: None)


def test_a_scoped_list_refuses_bad_arguments_when_asked_not_when_read(svc, office):
    """As the service's own: a transport that streams the list learns of a refusal before
    it answers anything."""
    _ids, web = office
    with pytest.raises(Forbidden, match="only in scope 'web'"):
        web.iter_list({"scope": "finance"})
    with pytest.raises(InvalidArgument, match="limit must be between"):
        web.iter_list({"limit": 0})
    assert [m["scope"] for m in web.iter_list({})] == ["web"]
