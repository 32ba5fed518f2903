"""The page's sign-in sessions in the database (service.sessions), on both engines: what one
process opens another finds, a sign-out or an ended session is gone for every process, a
session's last use is written to the minute and never brings back a closed one, and the cap
drops the least recently used."""

from __future__ import annotations

from agent_memory.service.core import MemoryService
from agent_memory.service.sessions import SEEN_EVERY_SECS, Sessions
from agent_memory.storage import open_store
from tests.support.clock import Clock

pytest_plugins = ["tests.support.pg_fixtures"]


def two_processes(location: str, clock: Clock) -> tuple[MemoryService, MemoryService]:
    """Two services on one database, as two workers of a daemon hold it."""
    return (
        MemoryService(open_store(location), clock=clock),
        MemoryService(open_store(location), clock=clock),
    )


def test_sessions_are_shared_by_every_process_of_the_database(location):
    clock = Clock()
    one, other = two_processes(location, clock)
    try:
        mine, theirs = Sessions(one), Sessions(other)
        opened = mine.open("rw", "d" * 64)
        found = theirs.find(opened)
        assert (found.name, found.digest) == ("rw", "d" * 64)
        assert theirs.find("no such id") is None
        clock.advance(SEEN_EVERY_SECS)
        assert theirs.find(opened).seen == clock.now  # the use is written, for both
        theirs.close(opened)
        assert mine.find(opened) is None and len(mine) == 0
        # ended while idle: gone from the table at its next lookup
        idle = mine.open("rw", "d" * 64)
        clock.advance(mine.idle_secs)
        assert theirs.find(idle) is None and len(mine) == 0
    finally:
        one.close()
        other.close()


def test_a_use_never_brings_back_a_closed_session(location):
    clock = Clock()
    one, other = two_processes(location, clock)
    try:
        mine = Sessions(one)
        opened = mine.open("rw", "d" * 64)
        key, row = one.db.sessions()[0]
        Sessions(other).close(opened)
        one.db.touch_session(key, {**row, "seen": clock.now})  # a lookup that read it before
        assert mine.find(opened) is None
    finally:
        one.close()
        other.close()


def test_past_the_cap_the_least_recently_used_ends(location):
    clock = Clock()
    one, other = two_processes(location, clock)
    try:
        mine, theirs = Sessions(one, cap=2), Sessions(other, cap=2)
        first = mine.open("a", "1" * 64)
        second = theirs.open("b", "2" * 64)
        clock.advance(SEEN_EVERY_SECS)
        assert theirs.find(first) is not None
        third = theirs.open("c", "3" * 64)
        assert [mine.find(s) is not None for s in (first, second, third)] == [True, False, True]
    finally:
        one.close()
        other.close()


def test_a_sign_in_drops_the_sessions_that_ended(location):
    clock = Clock()
    service = MemoryService(open_store(location), clock=clock)
    try:
        sessions = Sessions(service)
        sessions.open("a", "1" * 64)
        clock.advance(sessions.idle_secs)
        kept = sessions.open("b", "2" * 64)
        assert len(sessions) == 1 and sessions.find(kept).name == "b"
    finally:
        service.close()


def test_a_token_past_its_own_cap_ends_its_own_least_recently_used(location):
    """One token signing in again and again ends only its own sessions: every other token's
    stays, whatever the count."""
    clock = Clock()
    service = MemoryService(open_store(location), clock=clock)
    try:
        sessions = Sessions(service, cap=100, per_token=3)
        others = [sessions.open(name, name[0] * 64) for name in ("alice", "bob")]
        mine = []
        for _ in range(10):
            clock.advance(SEEN_EVERY_SECS)
            mine.append(sessions.open("mallory", "m" * 64))
        assert [sessions.find(s) is not None for s in others] == [True, True]
        assert [sessions.find(s) is not None for s in mine] == [False] * 7 + [True] * 3
        assert len(sessions) == 5
    finally:
        service.close()
