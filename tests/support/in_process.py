"""The rule of the in-process tiers (tests/unit, tests/slow): a test that starts a process (a
spawned server, a fresh interpreter, a fork) belongs in tests/e2e, one that connects to
PostgreSQL in tests/engines. Their conftests take the fixture and the hook below, so either
fails the test, naming what it did and where it belongs, rather than only slowing the tier
down.
"""

from __future__ import annotations

import _posixsubprocess
import os
import subprocess

import psycopg
import pytest

# What starts a process, whatever the route (subprocess, multiprocessing, os, pty).
SPAWNERS = (
    (subprocess, "_fork_exec"),
    (_posixsubprocess, "fork_exec"),
    (os, "fork"),
    (os, "forkpty"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "system"),
)
# What opens a PostgreSQL connection (SQLAlchemy's dialect calls the module's connect).
CONNECTORS = ((psycopg, "connect"), (psycopg.Connection, "connect"))


# Whether the test body failed: a breach it raised is reported once, not again at teardown.
CALL_FAILED = pytest.StashKey[bool]()


class TierBreach(BaseException):
    """Raised where an in-process test spawns or connects: a BaseException, so that no ``except
    Exception`` in the code under test can swallow it."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


@pytest.fixture(autouse=True)
def in_process_only(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Starting a process or connecting to PostgreSQL fails the test (also when it happens
    in a thread whose error the test never sees). Yields the breaches so far: a test of this
    rule clears them."""
    breaches: list[str] = []

    def refuse(what: str, home: str):
        def refused(*args, **kwargs):
            breaches.append(f"{what}: it belongs in {home}")
            raise TierBreach(f"an in-process test may not {what}; it belongs in {home}")

        return refused

    for owner, name in SPAWNERS:
        if hasattr(owner, name):
            monkeypatch.setattr(owner, name, refuse("start a process", "tests/e2e"))
    for owner, name in CONNECTORS:
        monkeypatch.setattr(owner, name, refuse("connect to PostgreSQL", "tests/engines"))
    yield breaches
    if breaches and not request.node.stash.get(CALL_FAILED, False):
        pytest.fail(f"an in-process test may not {breaches[0]}", pytrace=False)
