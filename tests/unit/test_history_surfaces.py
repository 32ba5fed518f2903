"""History and as-of on the other surfaces (issue 36): the REST route and its query
parameter, the terminal's ``history`` and ``--as-of``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.http.rest import create_app
from tests.support.clock import START
from tests.support.rest_client import Client

OLD = {"content": "The API timeout is 30 seconds.", "type": "CONSTRAINT", "tags": ["api"]}
NEW = "The API timeout is 90 seconds."


def updated(service, clock) -> int:
    memory_id = service.store(OLD)["id"]
    clock.advance(100)
    service.update({"id": memory_id, "content": NEW})
    return memory_id


def test_rest_history_and_as_of(service, clock):
    memory_id = updated(service, clock)
    http = Client(create_app(service))
    status, body = http("GET", f"/api/memories/{memory_id}/history")
    assert status == 200
    assert [v["content"] for v in body["versions"]] == [OLD["content"], NEW]
    assert http("GET", "/api/memories/9/history")[0] == 404
    status, body = http("GET", f"/api/memories/{memory_id}?as_of={START + 99}")
    assert (status, body["content"]) == (200, OLD["content"])
    status, body = http("GET", f"/api/memories?as_of={START - 1}")
    assert (status, body) == (200, [])
    status, body = http("POST", "/api/search", body={"query": "30", "as_of": str(START + 50)})
    assert [r["content"] for r in body["results"]] == [OLD["content"]]
    status, body = http("GET", "/api/memories?as_of=soon")
    assert status == 400 and "as_of must be a moment between 0 and now" in body["error"]


def test_cli_history_and_as_of(service, clock, db_path):
    updated(service, clock)
    service.close()

    def run(*args):
        return CliRunner().invoke(cli, ["--db", str(db_path), *args])

    shown = run("history", "1")
    assert shown.exit_code == 0
    assert "version 1" in shown.output and "version 2" in shown.output
    assert shown.output.index(OLD["content"]) < shown.output.index(NEW)
    as_json = json.loads(run("history", "1", "--json").output)
    assert [v["version"] for v in as_json["versions"]] == [1, 2]
    assert run("history", "9").exit_code == 1
    before = json.loads(run("show", "1", "--as-of", str(START + 99), "--json").output)
    assert before["content"] == OLD["content"]
    listed = json.loads(run("list", "--as-of", "2026-01-01T00:00:00Z", "--json").output)
    assert [m["content"] for m in listed["memories"]] == [OLD["content"]]
    refused = run("search", "timeout", "--as-of", "tomorrow")
    assert refused.exit_code != 0 and "as_of" in refused.output


def test_a_hybrid_search_as_of_leaves_out_what_was_stored_later(hybrid, clock, no_cut):
    first = hybrid.store(OLD)["id"]
    clock.advance(100)
    later = hybrid.store({**OLD, "content": "Timeouts for the API are ninety seconds now."})["id"]
    found = hybrid.search({"query": "API timeout"})
    assert found["search_mode"] == "hybrid"
    assert {r["id"] for r in found["results"]} == {first, later}
    then = hybrid.search({"query": "API timeout", "as_of": START + 99})
    assert then["search_mode"] == "hybrid"
    assert [r["id"] for r in then["results"]] == [first]
