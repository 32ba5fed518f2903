"""``agent-memory import --from`` a peer with the real executable: imported, then found by
keyword in a new process."""

from __future__ import annotations

from tests.support.peers import CASES
from tests.support.spawned import run_agent_memory


def test_the_real_executable_imports_then_finds_by_keyword(tmp_path):
    """End to end: the installed command, a peer's file, then a search in a new process."""
    db = str(tmp_path / "memory.db")
    path = str(CASES["server-memory"][0])
    done = run_agent_memory("--db", db, "import", "--from", "server-memory", path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported: 8,")
    searched = run_agent_memory("--db", db, "search", "double-charge")
    assert "Billing must never double-charge a customer" in searched.stdout
