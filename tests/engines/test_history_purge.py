"""Purging history: ``agent-memory history ID --purge`` and ``DELETE /api/memories/ID/history``
drop every earlier version of a memory and keep the current one, so that a secret an update
removed is gone from the history, from ``as_of`` and from later exports; on both engines."""

from __future__ import annotations

import io
import json
import types

import pytest

from agent_memory.cli import history as history_command
from agent_memory.contract.errors import Forbidden, InvalidArgument, UnknownField
from agent_memory.http.rest import SERVICE, create_app
from agent_memory.service.access import Granted
from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import Grant
from agent_memory.storage import open_store
from tests.support.clock import START
from tests.support.history import purge
from tests.support.rest_client import Client

pytest_plugins = ["tests.support.pg_fixtures"]


# A secret of no shape redaction knows: only a purge takes it out of the history.
PHRASE = "zebraquantumlantern77x"
FIRST = {"content": f"The vault phrase is {PHRASE}.", "type": "CONSTRAINT", "tags": ["vault"]}
FIXED = "The vault phrase is kept in the vault, not here."


def exported(service: MemoryService) -> str:
    out = io.StringIO()
    service.export(out.write)
    return out.getvalue()


def with_a_removed_secret(service: MemoryService, clock) -> int:
    """A memory whose secret an update removed, after a duplicate store that sent it as
    its source: two earlier versions hold it."""
    memory_id = service.store(FIRST)["id"]
    clock.advance(10)
    service.store({**FIRST, "tags": ["vault", "ops"], "source": f"chat {PHRASE}"})
    clock.advance(10)
    service.update({"id": memory_id, "content": FIXED})
    return memory_id


def test_a_purge_takes_the_secret_out_of_history_as_of_and_exports(svc, clock):
    memory_id = with_a_removed_secret(svc, clock)
    other = svc.store({"content": "Another memory, updated too.", "type": "PATTERN"})["id"]
    svc.update({"id": other, "tags": ["kept"]})
    assert PHRASE in exported(svc)
    assert svc.purge_history({"id": memory_id}) == {"id": memory_id, "purged": 2}
    (current,) = svc.history({"id": memory_id})["versions"]
    assert (current["version"], current["content"], current["replaced_at"]) == (1, FIXED, None)
    assert svc.get({"id": memory_id, "as_of": START + 5})["content"] == FIXED
    text = exported(svc)
    assert PHRASE not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert records[0]["exported_versions"] == 1  # the other memory's history is untouched
    assert [r["key"] for r in records if r["record"] == "version"] == [other]
    svc.update({"id": memory_id, "tags": ["after"]})  # history goes on after a purge
    assert len(svc.history({"id": memory_id})["versions"]) == 2


def test_nothing_to_purge_and_no_such_memory_are_said_and_write_nothing(svc):
    memory_id = svc.store({"content": "Never updated.", "type": "PATTERN"})["id"]
    assert svc.purge_history({"id": memory_id}) == {"id": memory_id, "purged": 0}
    missing = svc.purge_history({"id": 999})
    assert missing == {"id": 999, "found": False, "reason": "not_found"}
    with pytest.raises(InvalidArgument) as bad:
        svc.purge_history({"id": "one"})
    assert "id" in str(bad.value) and '"one"' in str(bad.value)
    with pytest.raises(UnknownField):
        svc.purge_history({"id": memory_id, "before": 5})
    assert svc.get({"id": memory_id})["content"] == "Never updated."


def test_the_command_shows_asks_then_purges(location, clock, monkeypatch):
    svc = MemoryService(open_store(location), clock=clock)
    try:
        memory_id = str(with_a_removed_secret(svc, clock))
    finally:
        svc.close()
    unasked = purge(location, memory_id, "--purge")  # no terminal to ask on
    assert unasked.exit_code == 2 and "pass --yes" in unasked.output
    assert "2 earlier versions to purge" in unasked.output
    terminal = types.SimpleNamespace(stdin=types.SimpleNamespace(isatty=lambda: True))
    monkeypatch.setattr(history_command, "sys", terminal)
    declined = purge(location, memory_id, "--purge", input="n\n")
    assert declined.exit_code == 1 and "nothing was purged" in declined.output
    assert "exports and backups made before keep them" in declined.output
    assert PHRASE in purge(location, memory_id).output  # still there
    done = purge(location, memory_id, "--purge", input="y\n")
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[-1] == (
        f"purged 2 earlier versions of memory {memory_id}; its current version is kept"
    )
    assert PHRASE not in purge(location, memory_id).output
    again = purge(location, memory_id, "--purge")
    assert (again.exit_code, again.output) == (
        0,
        f"memory {memory_id} has no earlier versions: nothing to purge\n",
    )


def test_rest_purges_and_answers_404_for_an_unknown_id(svc, clock):
    memory_id = with_a_removed_secret(svc, clock)
    client = Client(create_app(svc))
    assert client("DELETE", f"/api/memories/{memory_id}/history") == (
        200,
        {"id": memory_id, "purged": 2},
    )
    assert len(svc.history({"id": memory_id})["versions"]) == 1
    status, body = client("DELETE", "/api/memories/999/history")
    assert (status, body) == (404, {"id": 999, "found": False, "reason": "not_found"})
    status, _ = client("DELETE", "/api/memories/abc/history")
    assert status == 400


@pytest.mark.parametrize(
    "grant", [Grant("ci", read_only=True), Grant("web", scope="web"), Grant("r", True, "web")]
)
def test_only_a_full_token_may_purge(svc, clock, grant):
    """A purge drops what no other operation can bring back: a read-only or a scope-bound
    token is refused (403 over REST) before the id is even looked at, and nothing goes."""
    memory_id = with_a_removed_secret(svc, clock)
    granted = Granted(svc, grant)
    with pytest.raises(Forbidden, match="only a full token may"):
        granted.purge_history({"id": memory_id})
    http = create_app(svc).test_client()
    for target in (memory_id, 999):
        answer = http.delete(
            f"/api/memories/{target}/history", environ_overrides={SERVICE: granted}
        )
        assert answer.status_code == 403, answer.get_json()
    assert len(svc.history({"id": memory_id})["versions"]) == 3
    assert Granted(svc, Grant("rw")).purge_history({"id": memory_id})["purged"] == 2
