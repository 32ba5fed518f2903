"""A server's uses of search results, written behind the answers (service/uses.py): nothing
written during the search, all of it on the interval or on a clean stop, the reads that
show uses writing them first, and rankings the same as when each use is written at once."""

from __future__ import annotations

import threading

import pytest

from agent_memory.contract.errors import StorageFault
from agent_memory.service.core import MemoryService
from agent_memory.service.uses import MAX_PENDING_IDS, Uses
from agent_memory.storage import open_store
from tests.support.clock import Clock
from tests.support.files import dump
from tests.support.stores import T0

DAY = 86_400
NEVER = 3600.0  # an interval no test outlives: only close() and the reads write


@pytest.fixture
def deferred(db_path, clock):
    svc = MemoryService(open_store(db_path), clock=clock, uses_every=NEVER)
    yield svc
    svc.close()


def counts(raw) -> dict[int, tuple[int, int]]:
    rows = raw.execute("SELECT id, access_count, last_accessed FROM memories").fetchall()
    return {memory_id: (count, last) for memory_id, count, last in rows}


def stored(svc: MemoryService, n: int, clock) -> list[int]:
    ids = [svc.store({"content": f"match {i}", "type": "TODO"})["id"] for i in range(n)]
    clock.advance(DAY)
    return ids


def test_a_search_writes_nothing_and_a_clean_stop_writes_every_use(db_path, clock):
    svc = MemoryService(open_store(db_path), clock=clock, uses_every=NEVER)
    ids = stored(svc, 3, clock)
    before = dump(db_path)
    returned = {r["id"] for r in svc.search({"query": "match", "limit": 2})["results"]}
    svc.search({"query": "match 0"})
    assert dump(db_path) == before
    svc.close()
    reopened = MemoryService(open_store(db_path), clock=clock)
    try:
        found = {i: reopened.get({"id": i})["access_count"] for i in ids}
    finally:
        reopened.close()
    assert found[ids[0]] == (2 if ids[0] in returned else 1)
    assert sum(found.values()) == len(returned) + 1


@pytest.mark.parametrize("read", ["get", "list", "export", "history", "tidy"])
def test_the_reads_that_show_uses_write_the_pending_ones_first(deferred, clock, raw, read):
    (memory_id,) = stored(deferred, 1, clock)
    deferred.search({"query": "match"})
    assert counts(raw)[memory_id] == (0, clock.now - DAY)
    if read == "get":
        assert deferred.get({"id": memory_id})["access_count"] == 1
    elif read == "list":
        assert deferred.list({})[0]["last_accessed"] == clock.now
    elif read == "export":
        deferred.export(lambda line: None)
    elif read == "history":
        deferred.history({"id": memory_id})
    else:
        deferred.tidy({})
    assert counts(raw)[memory_id] == (1, clock.now)


def test_uses_of_one_memory_add_up_and_keep_the_latest_time(deferred, clock, raw):
    (memory_id,) = stored(deferred, 1, clock)
    for _ in range(3):
        deferred.search({"query": "match"})
        clock.advance(5)
    deferred.uses.flush()
    assert counts(raw)[memory_id] == (3, clock.now - 5)


def test_the_thread_writes_on_its_interval_without_a_stop(db_path, clock, raw):
    svc = MemoryService(open_store(db_path), clock=clock, uses_every=0.01)
    try:
        (memory_id,) = stored(svc, 1, clock)
        written = threading.Event()
        original = svc.db.bump

        def bump(uses):
            original(uses)
            written.set()

        svc.uses._write = bump  # the real store's write, observed
        svc.search({"query": "match"})
        assert written.wait(30)
        assert counts(raw)[memory_id] == (1, clock.now)
    finally:
        svc.close()


def test_rankings_are_those_of_uses_written_at_once(tmp_path):
    """Decay order unchanged: the same searches, uses deferred or not, rank alike once the
    deferred ones are written (every interval, here at each step)."""
    pages = []
    for every in (None, NEVER):
        clock = Clock()
        svc = MemoryService(open_store(tmp_path / f"{every}.db"), clock=clock, uses_every=every)
        for i in range(12):
            kind = ("TODO", "DECISION", "ERROR")[i % 3]
            svc.store({"content": f"cache layer note {i} " + "word " * i, "type": kind})
        seen = []
        for step, query in enumerate(["cache note 3", "layer 7", "note", "cache", "note layer"]):
            clock.advance(DAY * (step + 1))
            seen.append([r["id"] for r in svc.search({"query": query, "limit": 4})["results"]])
            svc.uses.flush()
        seen.append([(m["id"], m["last_accessed"]) for m in svc.list({})])
        pages.append(seen)
        svc.close()
    assert pages[0] == pages[1]


def test_a_failed_write_keeps_its_uses_for_the_next(caplog):
    calls: list[dict] = []

    def write(uses):
        calls.append(dict(uses))
        if len(calls) == 1:
            raise StorageFault("disk I/O error")

    uses = Uses(write, NEVER)
    uses.record([1, 2], T0)
    uses.flush()
    uses.record([2], T0 + 5)
    uses.close()
    assert calls == [{1: (1, T0), 2: (1, T0)}, {1: (1, T0), 2: (2, T0 + 5)}]
    assert "could not record the use of 2 search results: disk I/O error" in caplog.text


def test_pending_uses_are_bounded_and_the_overflow_is_logged(caplog):
    written: list[dict] = []
    uses = Uses(written.append, NEVER)
    uses.record(range(MAX_PENDING_IDS + 5), T0)
    uses.record([0], T0 + 1)  # an id already waiting still counts
    uses.close()
    assert len(written[0]) == MAX_PENDING_IDS and written[0][0] == (2, T0 + 1)
    assert caplog.text.count("later uses are not counted") == 1


def test_one_shot_commands_write_each_use_at_once(service, clock, raw):
    (memory_id,) = stored(service, 1, clock)
    service.search({"query": "match"})
    assert counts(raw)[memory_id] == (1, clock.now)
