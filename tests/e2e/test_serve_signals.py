"""Ctrl-C and SIGTERM stop a real ``serve`` whose client still holds stdin open (the SDK's
stdin reader cannot be interrupted, so it used to wait for a line forever), and what it
answered is kept, the uses of search results included (they wait in memory for at most
service.uses.BUMP_INTERVAL_SECS). A kill -9 loses at most those uses, never a memory."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time

import pytest

from tests.support.mcp_frames import INITIALIZE
from tests.support.spawned import executable, server_env

STORE = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "memory_store", "arguments": {"content": "kept", "type": "TODO"}},
}


SEARCH = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "memory_search", "arguments": {"query": "kept"}},
}


def send(proc: subprocess.Popen, message: dict) -> dict:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def test_ctrl_c_stops_serve_with_stdin_still_open(tmp_path):
    db = tmp_path / "memory.db"
    proc = subprocess.Popen(
        [executable(), "--db", str(db), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(AGENT_MEMORY_EMBEDDER="none", HOME=str(tmp_path)),
    )
    try:
        assert send(proc, INITIALIZE)["id"] == 1
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        assert "error" not in send(proc, STORE)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT content FROM memories").fetchall() == [("kept",)]


def spawn(db) -> subprocess.Popen:
    proc = subprocess.Popen(
        [executable(), "--db", str(db), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(AGENT_MEMORY_EMBEDDER="none", HOME=str(db.parent)),
    )
    assert send(proc, INITIALIZE)["id"] == 1
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    return proc


def searched(proc: subprocess.Popen) -> None:
    answer = send(proc, SEARCH)["result"]["structuredContent"]
    assert [r["content"] for r in answer["results"]] == ["kept"]


def stopped(proc: subprocess.Popen, how: signal.Signals | None) -> int:
    """The exit status once stopped by ``how`` (None: the client closes stdin)."""
    try:
        if how is None:
            proc.stdin.close()
        else:
            proc.send_signal(how)
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if not proc.stdin.closed:
            proc.stdin.close()
        proc.stdout.close()


def uses(db) -> list[int]:
    with sqlite3.connect(db) as conn:
        return [n for (n,) in conn.execute("SELECT access_count FROM memories ORDER BY id")]


@pytest.mark.parametrize(
    ("how", "status"),
    [(signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGINT, 130), (None, 0)],
    ids=["SIGTERM", "Ctrl-C", "end of input"],
)
def test_a_clean_stop_writes_the_pending_uses(tmp_path, how, status):
    db = tmp_path / "memory.db"
    proc = spawn(db)
    assert "error" not in send(proc, STORE)
    searched(proc)
    searched(proc)
    assert stopped(proc, how) == status
    assert uses(db) == [2]


def test_a_kill_loses_at_most_the_last_interval_of_uses_and_no_memory(tmp_path):
    db = tmp_path / "memory.db"
    proc = spawn(db)
    assert "error" not in send(proc, STORE)
    searched(proc)
    deadline = time.monotonic() + 60
    while uses(db) != [1]:  # written on the interval, with no stop
        assert time.monotonic() < deadline, "the use was never written"
    searched(proc)  # pending when killed: may be lost
    assert stopped(proc, signal.SIGKILL) == -signal.SIGKILL
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT content FROM memories").fetchall() == [("kept",)]
    assert uses(db) in ([1], [2])


def test_two_servers_using_the_same_memory_add_up(tmp_path):
    db = tmp_path / "memory.db"
    first = spawn(db)
    assert "error" not in send(first, STORE)
    second = spawn(db)
    for _ in range(3):
        searched(first)
        searched(second)
    assert stopped(first, signal.SIGTERM) == 128 + signal.SIGTERM
    assert stopped(second, None) == 0
    assert uses(db) == [6]
