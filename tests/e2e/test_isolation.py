"""A spawned server opens its default database under the session's HOME, never the user's
real data directory (conftest's isolated_home)."""

from __future__ import annotations

from pathlib import Path

from agent_memory.storage.sqlite.database import resolve_path
from tests.support.spawned import run_agent_memory, server_env


def test_a_spawned_server_opens_its_default_database_under_the_session_home(isolated_home):
    """`serve` with no --db creates the default file; it must land in the temp home."""
    result = run_agent_memory("serve", env=server_env())
    assert result.returncode == 0, result.stderr
    created = Path(isolated_home, ".local/share/agent-memory/memory.db")
    assert created.exists()
    assert resolve_path() == created
