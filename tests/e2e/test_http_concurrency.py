"""Sixteen MCP clients over HTTP (both eras) and four REST clients on one real daemon at
once: every acknowledged write is in the database exactly once, with the id its answer gave,
nothing else is, and every answer is a success (no 5xx). Once for a fixed number of writes
each (on both engines), and once as a soak: every client loops until a deadline 60 s on."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.rest_daemon import START_TIMEOUT_SECS, RestDaemon

pytest_plugins = ["tests.support.pg_fixtures"]

MCP_CLIENTS = 16
REST_CLIENTS = 4
WRITES_EACH = 6
SOAK_SECS = 60


@dataclass
class Load:
    """What the clients saw: each acknowledged write's content and id, every REST status,
    every MCP tool error."""

    acknowledged: list[tuple[str, int]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def rest_client(daemon: RestDaemon, n: int, going: Callable[[int], bool], load: Load) -> None:
    with requests.Session() as session:
        i = 0
        while going(i):
            content = f"rest {n} write {i}"
            stored = session.post(
                daemon.url + "/api/memories",
                json={"content": content, "type": "TODO"},
                timeout=START_TIMEOUT_SECS,
            )
            load.statuses.append(stored.status_code)
            if stored.status_code == 201:
                load.acknowledged.append((content, stored.json()["id"]))
            found = session.post(
                daemon.url + "/api/search", json={"query": f"rest {n}"}, timeout=START_TIMEOUT_SECS
            )
            load.statuses.append(found.status_code)
            i += 1


async def mcp_client(daemon: RestDaemon, n: int, going: Callable[[int], bool], load: Load) -> None:
    mode = "legacy" if n % 2 else "2026-07-28"
    async with Client(streamable_http_client(daemon.url + "/mcp"), mode=mode) as mcp:
        i = 0
        while going(i):
            content = f"mcp {n} write {i}"
            stored = await mcp.call_tool("memory_store", {"content": content, "type": "TODO"})
            found = await mcp.call_tool("memory_search", {"query": f"mcp {n}"})
            for result in (stored, found):
                if result.is_error:
                    load.errors.append(result.content[0].text)
            if not stored.is_error:
                load.acknowledged.append((content, stored.structured_content["id"]))
            i += 1


def run_clients(location: str, going: Callable[[int], bool]) -> tuple[Load, list[tuple]]:
    """The clients on one daemon until ``going(i)`` is false for each's i-th write; then,
    the daemon stopped, every memory in the database as (content, id)."""
    load = Load()
    with RestDaemon(location) as daemon:
        daemon.drain_stderr()

        async def all_mcp() -> None:
            async with anyio.create_task_group() as group:
                for n in range(MCP_CLIENTS):
                    group.start_soon(mcp_client, daemon, n, going, load)

        threads = [
            threading.Thread(target=rest_client, args=(daemon, n, going, load))
            for n in range(REST_CLIENTS)
        ]
        for thread in threads:
            thread.start()
        anyio.run(all_mcp)
        for thread in threads:
            thread.join()
        assert daemon.stop() == 0
    assert not any("Traceback" in line for line in daemon.stderr_lines)
    service = MemoryService(open_store(location))
    try:
        stored = [(m["content"], m["id"]) for m in service.iter_list({})]
    finally:
        service.close()
    return load, stored


def check(load: Load, stored: list[tuple]) -> None:
    """Nothing lost, nothing doubled, nothing failed."""
    assert load.errors == []
    assert set(load.statuses) <= {200, 201}
    assert len(load.acknowledged) == len(set(load.acknowledged))
    doubled = [content for content, n in Counter(c for c, _ in stored).items() if n > 1]
    assert doubled == []
    assert sorted(stored) == sorted(load.acknowledged)


def test_sixteen_mcp_and_four_rest_clients_lose_and_double_nothing(location):
    load, stored = run_clients(location, lambda i: i < WRITES_EACH)
    check(load, stored)
    assert len(stored) == (MCP_CLIENTS + REST_CLIENTS) * WRITES_EACH


@pytest.mark.slow
def test_a_minute_of_sixteen_mcp_and_four_rest_clients(db_path):
    """Every client writes and searches until the deadline (a duration, not a count)."""
    deadline = time.monotonic() + SOAK_SECS
    load, stored = run_clients(str(db_path), lambda _i: time.monotonic() < deadline)
    check(load, stored)
    writers = {content.rsplit(" write ", 1)[0] for content, _ in stored}
    assert len(writers) == MCP_CLIENTS + REST_CLIENTS  # every client wrote
