"""Decay (formula, half-lives, materialization) and TTL expiry by the sweep."""

from __future__ import annotations

import math
import threading
from unittest.mock import ANY

import pytest

from agent_memory import ranking
from agent_memory.service import lifecycle
from agent_memory.service.core import MemoryService
from agent_memory.service.lifecycle import Sweeper, sweep
from agent_memory.storage import open_store
from agent_memory.storage.sqlite import connections
from agent_memory.storage.sqlite import store as sqlite_store
from tests.support.files import dump

DAY = 86_400


def test_half_lives():
    assert ranking.HALF_LIFE_SECS == 2_592_000
    assert ranking.PINNED_HALF_LIFE_SECS == 15_552_000
    assert [ranking.base_weight(t) for t in ("DECISION", "ARCHITECTURE", "CONSTRAINT")] == [2.0] * 3
    assert [ranking.base_weight(t) for t in ("PATTERN", "ERROR", "TODO")] == [1.0] * 3


@pytest.mark.parametrize(
    "memory_type,age,expected",
    [
        ("TODO", 0, 1.0),
        ("TODO", 30 * DAY, 0.5),
        ("ERROR", 60 * DAY, 0.25),
        ("PATTERN", 15 * DAY, 2**-0.5),
        ("DECISION", 30 * DAY, 2 ** (-1 / 6)),
        ("ARCHITECTURE", 180 * DAY, 0.5),
        ("CONSTRAINT", 360 * DAY, 0.25),
        ("TODO", -5 * DAY, 1.0),  # a clock that went backwards never inflates a score
    ],
)
def test_sweep_materializes_the_formula(service, clock, db_path, memory_type, age, expected):
    service.store({"content": "x", "type": memory_type})
    clock.advance(age)
    report = sweep(service)
    assert report == {
        "expired": 0,
        "decayed": 1,
        "merged": 0,
        "oauth": 0,
        "embedded": 0,
        "longest_hold_ms": ANY,
    }
    assert 0 < report["longest_hold_ms"] < 1000
    assert dump(db_path)[0][7] == pytest.approx(expected, rel=1e-12)
    # search recomputes the same number at query time
    service.store({"content": "unrelated", "type": "TODO"})
    assert service.search({"query": "x"})["results"][0]["decay_score"] == pytest.approx(expected)


def test_pinned_types_fade_slower(service, clock):
    service.store({"content": "kept words", "type": "TODO"})
    service.store({"content": "kept words", "type": "DECISION"})
    clock.advance(60 * DAY)
    results = service.search({"query": "kept"})["results"]
    assert [r["type"] for r in results] == ["DECISION", "TODO"]
    assert results[0]["decay_score"] == pytest.approx(math.exp(-math.log(2) * 60 / 180))


def test_decay_never_deletes(service, clock):
    service.store({"content": "ancient", "type": "TODO"})
    clock.advance(100 * 365 * DAY)
    sweep(service)
    (row,) = service.list({})
    assert row["decay_score"] == 0.0 or row["decay_score"] < 1e-300
    assert service.search({"query": "ancient"})["results"][0]["id"] == 1


def test_decay_materialization_walks_in_batches(service, clock, db_path, monkeypatch):
    monkeypatch.setattr(sqlite_store, "SWEEP_FIRST_BATCH_ROWS", 3)
    for i in range(10):
        service.store({"content": f"m{i}", "type": "TODO"})
    service.forget({"id": 4})
    clock.advance(30 * DAY)
    assert sweep(service)["decayed"] == 9
    assert [row[7] for row in dump(db_path)] == pytest.approx([0.5] * 9)


def expiring(service, clock, monkeypatch, rows: int, *, first: int, most: int, kept=False):
    """``rows`` memories that have just expired (and one that has not, if ``kept``), with
    the sweep's batches from ``first`` rows up to ``most``."""
    monkeypatch.setattr(sqlite_store, "SWEEP_FIRST_BATCH_ROWS", first)
    monkeypatch.setattr(sqlite_store, "SWEEP_MAX_BATCH_ROWS", most)
    for i in range(rows):
        service.store({"content": f"short {i}", "type": "TODO", "ttl_secs": 5})
    if kept:
        service.store({"content": "kept", "type": "TODO"})
    clock.advance(5)


@pytest.mark.parametrize(
    ("target", "first", "sizes"),
    [
        (1000.0, 2, [2, 2, 2, 2, 2, 0]),  # fast batches grow, here up to the maximum of 2
        (1e-9, 4, [4, 1, 1, 1, 1, 1, 1, 0]),  # a batch over the target shrinks the next
    ],
)
def test_expiry_runs_in_batches_sized_by_lock_time(
    service, clock, raw, monkeypatch, target, first, sizes
):
    monkeypatch.setattr(sqlite_store, "SWEEP_HOLD_TARGET_SECS", target)
    expiring(service, clock, monkeypatch, 10, first=first, most=2, kept=True)
    left = []

    def pause() -> bool:  # between two batches: count what is still to expire
        left.append(raw.execute("SELECT count(*) FROM memories").fetchone()[0] - 1)
        return False

    removed, longest = service.db.delete_expired(clock.now, pause)
    assert removed == 10 and longest > 0
    deleted_per_batch = [a - b for a, b in zip([10, *left], [*left, 0], strict=True)]
    assert deleted_per_batch == sizes
    assert [m["content"] for m in service.list({})] == ["kept"]


def test_each_batch_is_checkpointed_outside_the_write_lock(service, clock, monkeypatch, writes):
    # Else the WAL reached the inline checkpoint every few batches on a large file, and
    # that checkpoint held the write lock inside a batch's commit (about 200 ms at 1M).
    expiring(service, clock, monkeypatch, 6, first=2, most=2)
    locked = []
    original = connections.Connections.checkpoint_now

    def spy(self):
        if threading.current_thread() is threading.main_thread():  # not the background one
            locked.append(writes.open > 0)
        original(self)

    monkeypatch.setattr(connections.Connections, "checkpoint_now", spy)
    batches = []
    pause = lambda: batches.append(1) is None and False  # noqa: E731
    assert service.db.delete_expired(clock.now, pause)[0] == 6
    # A checkpoint after every batch that deleted rows (the pause follows every batch but
    # the last, whose size depends on how long the others held the lock), none inside one.
    assert len(locked) >= len(batches) > 0 and not any(locked)


def test_a_sweep_told_to_stop_leaves_the_rest_to_the_next(service, clock, monkeypatch):
    expiring(service, clock, monkeypatch, 7, first=3, most=3)
    assert sweep(service, pause=lambda: True)["expired"] == 3
    assert len(service.list({})) == 4
    assert sweep(service)["expired"] == 4


def test_ttl_expiry_removes_only_expired_rows(service, clock, raw):
    service.store({"content": "short lived", "type": "TODO", "ttl_secs": 60})
    service.store({"content": "long lived", "type": "TODO", "ttl_secs": 3600})
    service.store({"content": "forever", "type": "TODO"})
    clock.advance(59)
    assert sweep(service)["expired"] == 0
    clock.advance(1)  # expires_at <= now is expired
    assert sweep(service)["expired"] == 1
    assert [m["content"] for m in service.list({})] == ["forever", "long lived"]
    assert service.search({"query": "short"})["results"] == []
    raw.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")


def test_expired_rows_stay_visible_until_the_sweep(service, clock):
    service.store({"content": "short lived", "type": "TODO", "ttl_secs": 1})
    clock.advance(10)
    assert [m["id"] for m in service.list({})] == [1]
    assert [m["id"] for m in service.search({"query": "short"})["results"]] == [1]
    sweep(service)
    assert service.list({}) == []


def test_sweeper_ticks_at_start_and_stops(service, clock):
    service.store({"content": "gone at start", "type": "TODO", "ttl_secs": 5})
    clock.advance(5)
    sweeper = Sweeper(service, interval=3600)
    sweeper.start()
    assert sweeper.ticked.wait(timeout=30)
    sweeper.stop()
    assert sweeper.ticks == 1
    assert service.list({}) == []


def test_sweeper_survives_a_failing_tick(service, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(lifecycle, "sweep", broken)
    sweeper = Sweeper(service)
    sweeper.tick()
    assert sweeper.ticks == 1
    assert "sweep failed" in caplog.text


def test_stored_decay_changes_only_with_the_sweep(service, clock):
    """list shows the decay the last sweep wrote; a search or an update bumps only
    last_accessed and the access count."""
    service.store({"content": "aging memory", "type": "TODO"})
    clock.advance(30 * DAY)
    sweep(service)
    assert service.list({})[0]["decay_score"] == pytest.approx(0.5)
    service.search({"query": "aging"})
    assert service.list({})[0]["decay_score"] == pytest.approx(0.5)
    updated = service.update({"id": 1, "tags": ["x"]})
    assert updated["decay_score"] == pytest.approx(0.5)
    assert updated["last_accessed"] == clock.now
    sweep(service)
    assert service.list({})[0]["decay_score"] == 1.0


def test_decay_is_rewritten_once_per_interval_across_processes(service, clock, db_path):
    for i in range(3):
        service.store({"content": f"m{i}", "type": "TODO"})
    assert sweep(service, decay_every=3600)["decayed"] == 3
    assert service.db.decay_refreshed_at() == clock.now
    other = MemoryService(open_store(db_path), clock=clock)  # another process's server
    try:
        clock.advance(3599)
        assert sweep(other, decay_every=3600)["decayed"] == 0  # done recently: left alone
        assert sweep(other)["decayed"] == 3  # an explicit sweep always rewrites
        clock.advance(3600)
        assert sweep(other, decay_every=3600)["decayed"] == 3
    finally:
        other.close()
