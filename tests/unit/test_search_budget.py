"""A search's budget (``max_chars``): what is measured, a bad budget refused, and the same
over MCP, REST and the command line. tests/engines/test_search_budget.py holds what fits on
both engines."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.contract.errors import InvalidArgument, UnknownField
from agent_memory.contract.models import Budget, json_chars
from agent_memory.http.rest import create_app
from tests.support.budget import fill, used
from tests.support.files import dump
from tests.support.mcp_session import run
from tests.support.rest_client import Client


def test_a_memory_whose_content_is_past_the_budget_is_not_measured():
    def unmeasurable() -> int:
        raise AssertionError("measured")

    budget = Budget(10)
    assert not budget.take("x" * 11, unmeasurable)
    assert budget.take("x" * 5, lambda: 10) and not budget.take("", lambda: 1)
    assert (budget.left, budget.more) == (0, 2)


def test_a_bad_budget_is_refused_and_writes_nothing(service, clock, db_path):
    fill(service, clock)
    before = dump(db_path)
    with pytest.raises(
        InvalidArgument, match=r"max_chars must be between 400 and 10000000 \(got 5\)"
    ):
        service.search({"query": "budget", "max_chars": 5})
    with pytest.raises(UnknownField, match="unknown field `max_char`"):
        service.search({"query": "budget", "max_chars": 1000, "max_char": 1000})
    assert dump(db_path) == before


def test_over_mcp(service, clock, db_path):
    ids = fill(service, clock)
    (answer, wrong, unknown) = run(
        service,
        ("memory_search", {"query": "budget", "max_chars": 1000}),
        ("memory_search", {"query": "budget", "max_chars": 100}),
        ("memory_search", {"query": "budget", "max_chars": 1000, "maxchars": 1}),
    )
    found = answer.structured_content  # the SDK's client checked it against the output schema
    assert json.loads(answer.content[0].text) == found
    assert [r["id"] for r in found["results"]] == [ids["short"], ids["small"], ids["last"]]
    assert found["more"] == 1  # the long one
    assert sum(json_chars(r) for r in found["results"]) <= 1000
    assert (wrong.code, wrong.message) == (
        -32602,
        "invalid argument: max_chars must be between 400 and 10000000 (got 100)",
    )
    assert unknown.is_error and "unknown field `maxchars`" in unknown.content[0].text
    assert used(service, clock) == {ids["short"], ids["small"], ids["last"]}


def test_over_rest(service, clock):
    ids = fill(service, clock)
    http = Client(create_app(service))
    status, body = http("POST", "/api/search", body={"query": "budget", "max_chars": 1000})
    assert status == 200
    assert ([r["id"] for r in body["results"]], body["more"]) == (
        [ids["short"], ids["small"], ids["last"]],
        1,
    )
    status, again = http("POST", "/api/search?max_chars=1000", body={"query": "budget"})
    assert (status, [r["id"] for r in again["results"]], again["more"]) == (
        200,
        [r["id"] for r in body["results"]],
        1,
    )
    status, body = http("POST", "/api/search", body={"query": "budget", "max_chars": 10})
    assert (status, body["error"]) == (
        400,
        "invalid argument: max_chars must be between 400 and 10000000 (got 10)",
    )
    status, body = http(
        "POST", "/api/search", body={"query": "budget", "max_chars": 1000, "max_char": 9}
    )
    assert status == 400 and "unknown field `max_char`" in body["error"]


def test_on_the_command_line(service, clock, db_path):
    ids = fill(service, clock)
    service.close()

    def search(*args: str):
        return CliRunner().invoke(
            cli, ["--db", str(db_path), "--embedder", "none", "search", *args]
        )

    result = search("budget", "--max-chars", "1000", "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert ([r["id"] for r in found["results"]], found["more"]) == (
        [ids["short"], ids["small"], ids["last"]],
        1,
    )
    result = search("budget", "--max-chars", "1000")
    assert result.exit_code == 0
    assert result.stderr.startswith("3 found (keyword search")
    assert result.stderr.endswith("; 1 more did not fit in --max-chars\n")
    assert "explanation" not in result.stdout
    result = search("budget", "--max-chars", "99")
    assert result.exit_code == 2
    assert "max_chars must be between 400 and 10000000 (got 99)" in result.stderr
