"""Ctrl-C stops a real ``serve`` whose client still holds stdin open (the SDK's stdin reader
cannot be interrupted, so it used to wait for a line forever), and what it answered is kept."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess

from tests.support.mcp_frames import INITIALIZE
from tests.support.spawned import executable, server_env

STORE = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "memory_store", "arguments": {"content": "kept", "type": "TODO"}},
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
