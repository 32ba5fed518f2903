"""The real executable takes global options after ``serve`` (what MCP client configs hold),
and ``serve`` started in a terminal says once what it is."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time

from tests.support.spawned import NO_OLLAMA_URL, executable, run_agent_memory, server_env


def test_the_real_executable_takes_db_after_serve(tmp_path):
    db = tmp_path / "after.db"
    done = run_agent_memory("serve", "--db", str(db), "--ollama-url", NO_OLLAMA_URL)
    assert done.returncode == 0, done.stderr
    assert db.exists()
    assert "meant to be started by an MCP client" not in done.stderr  # stdin is no terminal


# -- a terminal -----------------------------------------------------------------------------

NOTICE = "agent-memory serve speaks MCP (JSON-RPC) on stdin/stdout"
DEADLINE_SECS = 60


def _read_until(fd: int, needle: bytes, deadline: float) -> bytes:
    """What ``fd`` gives until ``needle`` appeared (or the stream ended, or time ran out)."""
    seen = b""
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], deadline - time.monotonic())
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        seen += chunk
    return seen


def test_serve_on_a_terminal_says_once_what_it_is(tmp_path):
    """Started by its path from a venv whose bin/ is not on PATH (the quick start), it names
    itself by that path: the bare command would not start it."""
    db = tmp_path / "tty.db"
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [executable(), "serve", "--db", str(db)],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(PATH=str(tmp_path)),
    )
    os.close(slave)
    try:
        deadline = time.monotonic() + DEADLINE_SECS
        said = _read_until(process.stderr.fileno(), NOTICE.encode(), deadline)
        os.write(master, b"\x04")  # Ctrl-D: end of input, the server stops
        out, err = process.communicate(timeout=DEADLINE_SECS)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = (said + err).decode()
    assert process.returncode == 0, stderr
    assert out == b""  # stdout carries JSON-RPC only
    lines = [line for line in stderr.splitlines() if NOTICE in line]
    assert len(lines) == 1
    assert (
        f'{{"command": "{executable()}", "args": ["serve", "--db", "{db.resolve()}"]}}' in lines[0]
    )
    assert (
        f"claude mcp add --scope user agent-memory -- {executable()} serve --db {db.resolve()}"
        in lines[0]
    )
