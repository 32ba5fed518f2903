"""End to end: ``serve-rest --workers 2``, real processes and real HTTP. Both workers answer
(each /health names its worker), over fresh connections so that consecutive requests reach
either: both MCP eras with the SDK's client, REST, the page's sign-in and sign-out, an OAuth
grant ended in every worker by its token's revocation; SIGTERM stops every worker with no
answered write lost; a killed worker is replaced."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from contextlib import AsyncExitStack, ExitStack

import anyio
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agent_memory.http import signin
from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import Tokens
from agent_memory.storage import open_store
from tests.support.mcp_frames import INITIALIZE
from tests.support.oauth import mcp_answers, register, tokens_for
from tests.support.rest_daemon import START_TIMEOUT_SECS, RestDaemon
from tests.support.spawned import executable, server_env

WORKERS = 2
# Fresh connections until every worker has answered: with two processes accepting on one
# socket, missing one this many times in a row is a broken daemon, not bad luck.
MAX_TRIES = 200
CLOSE = {"Connection": "close"}  # a new connection per request: the next may reach another
PAGE = {signin.CSRF_HEADER: "1"}
pytest_plugins = ["tests.support.pg_fixtures"]
SERVING = re.compile(r"worker (\d+) \(pid (\d+)\) serving")


@pytest.fixture
def daemon(db_path):
    with RestDaemon(db_path, "--workers", str(WORKERS)) as running:
        running.drain_stderr()
        yield running


def worker_of(daemon: RestDaemon, session: requests.Session | None = None) -> int:
    """Which worker answered a /health (on ``session``'s connection, else a fresh one)."""
    caller = session or requests
    answer = caller.get(daemon.url + "/health", headers=None if session else CLOSE, timeout=60)
    assert answer.status_code == 200
    return answer.json()["worker"]


def sessions_on_every_worker(daemon: RestDaemon, held: ExitStack) -> dict[int, requests.Session]:
    """Connections kept open (in ``held``) until every worker has answered one, the first
    session of each worker by its number (the least busy worker takes each new connection,
    so a worker holding one does not take the next)."""
    seen: dict[int, requests.Session] = {}
    for _ in range(MAX_TRIES):
        session = held.enter_context(requests.Session())
        seen.setdefault(worker_of(daemon, session), session)
        if len(seen) == WORKERS:
            return seen
    raise AssertionError(f"only workers {set(seen)} answered {MAX_TRIES} connections")


def every_worker_answers(daemon: RestDaemon) -> None:
    with ExitStack() as held:
        sessions_on_every_worker(daemon, held)


def logged(daemon: RestDaemon, pattern: re.Pattern[str], count: int = 1) -> list[re.Match]:
    """The first ``count`` matches of ``pattern`` in the daemon's log, once it has logged
    them (polled between /health requests, which the serving workers answer meanwhile)."""
    deadline = time.monotonic() + START_TIMEOUT_SECS
    while time.monotonic() < deadline:
        found = [m for line in list(daemon.stderr_lines) if (m := pattern.search(line))]
        if len(found) >= count:
            return found
        worker_of(daemon)
    raise AssertionError("".join(daemon.stderr_lines))


def serving_pids(daemon: RestDaemon, count: int) -> dict[int, int]:
    """Worker number -> pid, from the first ``count`` "serving" lines of the log (a later
    line for a number is the worker that replaced it)."""
    return {int(m.group(1)): int(m.group(2)) for m in logged(daemon, SERVING, count)}


def test_kept_connections_spread_over_the_workers(daemon):
    """Clients keep their connection, so the worker that accepts one serves it for good: the
    least busy worker takes each new one (not whichever wakes first)."""
    every_worker_answers(daemon)
    connections = [requests.Session() for _ in range(4 * WORKERS)]
    try:
        taken = [worker_of(daemon, connection) for connection in connections]
    finally:
        for connection in connections:
            connection.close()
    assert sorted(taken.count(n) for n in range(1, WORKERS + 1)) == [4] * WORKERS


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_both_mcp_eras_across_workers(daemon, mode):
    every_worker_answers(daemon)

    async def session() -> list:
        http = create_mcp_http_client(headers=CLOSE)
        async with AsyncExitStack() as stack:
            client = Client(
                streamable_http_client(daemon.url + "/mcp", http_client=http), mode=mode
            )
            mcp = await stack.enter_async_context(client)
            results = []
            for n in range(6):
                stored = await mcp.call_tool(
                    "memory_store", {"content": f"{mode} note {n}", "type": "TODO"}
                )
                results.append(stored.structured_content["id"])
            found = await mcp.call_tool("memory_search", {"query": f"{mode} note"})
            results.append(len(found.structured_content["results"]))
            return results

    results = anyio.run(session)
    assert results[-1] == 6 and len(set(results[:-1])) == 6


def test_the_2025_era_needs_no_session_with_workers(daemon):
    answer = requests.post(
        daemon.url + "/mcp",
        json=INITIALIZE,
        headers={
            "Accept": "application/json, text/event-stream",
            **CLOSE,
        },
        timeout=60,
    )
    assert answer.status_code == 200 and "Mcp-Session-Id" not in answer.headers
    assert answer.json()["result"]["protocolVersion"]


def test_rest_and_the_page_sign_in_across_workers(location):
    service = MemoryService(open_store(location))
    try:
        token = Tokens(service).create("page")
    finally:
        service.close()
    # the option from the environment, as the other options take it
    with RestDaemon(location, env={"AGENT_MEMORY_WORKERS": str(WORKERS)}) as daemon:
        daemon.drain_stderr()
        signed = requests.post(
            daemon.url + "/api/session", json={"token": token}, headers={**PAGE, **CLOSE}
        )
        assert signed.status_code == 200
        cookie = {"Cookie": f"{signin.COOKIE}={signed.cookies[signin.COOKIE]}"}
        # each worker, known by its /health on the same connection, takes the session
        answered: dict[int, int] = {}
        held = ExitStack()  # connections kept open: the next one goes to another worker
        for n in range(MAX_TRIES):
            connection = held.enter_context(requests.Session())
            worker = worker_of(daemon, connection)
            stored = connection.post(
                daemon.url + "/api/memories",
                json={"content": f"page note {n}", "type": "TODO"},
                headers={**PAGE, **cookie},
            )
            assert stored.status_code == 201, stored.text
            answered[worker] = stored.json()["id"]
            if len(answered) == WORKERS:
                break
        assert sorted(answered) == [1, 2]
        # signed out on one worker, ended on every one
        out = requests.delete(daemon.url + "/api/session", headers={**PAGE, **cookie, **CLOSE})
        assert out.status_code == 200
        ended = set()
        for _ in range(MAX_TRIES):
            connection = held.enter_context(requests.Session())
            worker = worker_of(daemon, connection)
            listed = connection.get(daemon.url + "/api/memories", headers=cookie)
            assert listed.status_code == 401
            ended.add(worker)
            if len(ended) == WORKERS:
                break
        held.close()
        assert ended == {1, 2}


def test_an_oauth_grant_ends_in_every_worker_when_its_token_is_revoked(daemon, db_path):
    """Signed in and consented across workers (the flow's requests reach either); the
    access token opens /mcp on both; revoking the token that approved it ends it on both at
    their next request."""
    service = MemoryService(open_store(db_path))
    try:
        token = Tokens(service).create("connector")
    finally:
        service.close()
    access = tokens_for(daemon, register(daemon), token)["access_token"]
    with ExitStack() as held:
        sessions = sessions_on_every_worker(daemon, held)
        assert [mcp_answers(daemon, access, http=s) for s in sessions.values()] == [200, 200]
        service = MemoryService(open_store(db_path))
        try:
            assert Tokens(service).revoke("connector")
        finally:
            service.close()
        assert [mcp_answers(daemon, access, http=s) for s in sessions.values()] == [401, 401]
        assert sorted(worker_of(daemon, s) for s in sessions.values()) == [1, 2]


def test_sigterm_stops_every_worker_and_loses_no_answered_write(daemon, db_path):
    pids = serving_pids(daemon, WORKERS)
    answered: list[int] = []
    started = threading.Event()

    def write() -> None:
        for n in range(10_000):
            try:
                done = requests.post(
                    daemon.url + "/api/memories",
                    json={"content": f"written {n} in {threading.get_ident()}", "type": "TODO"},
                    headers=CLOSE,
                    timeout=60,
                )
            except requests.ConnectionError:
                return  # the daemon stopped listening
            if done.status_code != 201:
                return
            answered.append(done.json()["id"])
            if len(answered) >= 20:
                started.set()

    writers = [threading.Thread(target=write) for _ in range(4)]
    for writer in writers:
        writer.start()
    assert started.wait(60)
    daemon.terminate()
    for writer in writers:
        writer.join(60)
    assert daemon.stop() == 0
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert len(answered) == len(set(answered))
    service = MemoryService(open_store(db_path))
    try:
        kept = {memory["id"] for memory in service.iter_list({})}
    finally:
        service.close()
    assert set(answered) <= kept  # every write answered 201 is there


def test_every_worker_writes_its_pending_uses_when_stopped(daemon, db_path):
    """Each worker holds the uses of its searches (service/uses.py) and writes them as it
    stops: two kept connections reach the two workers, and every use is counted."""
    memory = requests.post(
        daemon.url + "/api/memories", json={"content": "used", "type": "TODO"}, timeout=60
    ).json()["id"]
    with ExitStack() as held:
        sessions = sessions_on_every_worker(daemon, held)
        for session in list(sessions.values()) * 3:
            found = session.post(daemon.url + "/api/search", json={"query": "used"}, timeout=60)
            assert [r["id"] for r in found.json()["results"]] == [memory]
        daemon.terminate()
        assert daemon.stop() == 0
    service = MemoryService(open_store(db_path))
    try:
        assert service.get({"id": memory})["access_count"] == 6
    finally:
        service.close()


def test_a_killed_worker_is_replaced(daemon):
    pids = serving_pids(daemon, WORKERS)
    os.kill(pids[2], signal.SIGKILL)
    reported = f"worker 2 (pid {pids[2]}) was killed by SIGKILL: starting another"
    logged(daemon, re.compile(re.escape(reported)))  # worker 1 serves meanwhile
    replaced = serving_pids(daemon, WORKERS + 1)
    assert replaced[2] != pids[2] and replaced[1] == pids[1]
    every_worker_answers(daemon)
    assert daemon.stop() == 0


@pytest.mark.parametrize("given", ["0", "65", "two", "1.5"])
def test_a_bad_worker_count_is_a_usage_error(db_path, given):
    ran = subprocess.run(
        [executable(), "--db", str(db_path), "serve-rest", "--workers", given],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
    )
    assert ran.returncode == 2
    assert f"expected 1 to 64 or auto (got {given!r})" in ran.stderr


def test_a_stop_while_the_workers_start_ends_them_all(db_path):
    """SIGTERM as soon as the port is bound, while the workers still open their service and
    event loop: each ends when it is ready, and the parent (which waits for every worker)
    exits 0."""
    with RestDaemon(db_path, "--workers", str(WORKERS)) as daemon:
        daemon.terminate()
        assert daemon.stop() == 0
