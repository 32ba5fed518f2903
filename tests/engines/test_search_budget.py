"""A search's budget (``max_chars``) on both engines: the best results that fit whole, each
counted as its JSON text; ``more`` says how many others answered; only what is returned
counts as used."""

from __future__ import annotations

from agent_memory.contract.models import json_chars
from tests.support.budget import LAST, SHORT, SMALL, fill, used

pytest_plugins = ["tests.support.pg_fixtures"]


def test_the_best_results_that_fit_whole_and_how_many_more(svc, clock):
    ids = fill(svc, clock)
    everything = svc.search({"query": "budget"}, record_use=False)["results"]
    assert [r["id"] for r in everything] == [ids[k] for k in ("long", "short", "small", "last")]
    assert "more" not in svc.search({"query": "budget"}, record_use=False)
    costs = [json_chars(r) for r in everything]
    # exactly the sum of the results' JSON fits them all
    answer = svc.search({"query": "budget", "max_chars": sum(costs)}, record_use=False)
    assert (answer["results"], answer["more"]) == (everything, 0)
    # room for all but the long one: it is left out whole, the shorter ones after it come
    answer = svc.search({"query": "budget", "max_chars": sum(costs) - costs[0]})
    assert [r["content"] for r in answer["results"]] == [SHORT, SMALL, LAST]
    assert answer["more"] == 1
    assert used(svc, clock) == {ids["short"], ids["small"], ids["last"]}


def test_what_explain_and_related_add_is_counted(svc, clock):
    ids = fill(svc, clock)
    svc.link({"from_id": ids["short"], "to_id": ids["small"], "kind": "relates_to"})
    for extra in ({"explain": True}, {"expand_links": True}):
        args = {"query": "short", **extra}
        first = svc.search(args, record_use=False)["results"][0]
        assert first["id"] == ids["short"] and set(first) & {"why", "related"}
        bare = {k: v for k, v in first.items() if k not in ("why", "related")}
        cost = json_chars(first)
        assert json_chars(bare) <= cost - 1 and cost - 1 >= 400
        answer = svc.search({**args, "max_chars": cost}, record_use=False)
        assert answer["results"][0] == first, extra
        answer = svc.search({**args, "max_chars": cost - 1}, record_use=False)
        assert ids["short"] not in [r["id"] for r in answer["results"]], extra
        assert answer["more"] >= 1


def test_a_budget_that_holds_nothing_returns_nothing_and_uses_nothing(svc, clock):
    fill(svc, clock)
    answer = svc.search({"query": "explanation", "max_chars": 400})
    assert (answer["results"], answer["more"]) == ([], 1)
    assert used(svc, clock) == set()
