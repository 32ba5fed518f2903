"""The service as a token may use it (service.access), on SQLite and on PostgreSQL: the
attacks a scope-bound token tried (superseding another scope's memory, moving its own out
of its scope), ids of other scopes answered exactly as missing ones, and deny by default."""

from __future__ import annotations

import pytest

from agent_memory.contract.errors import Forbidden, InvalidArgument
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
