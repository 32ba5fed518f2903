"""Opening a database in a fresh interpreter: the fast path imports neither Alembic (unless
there is work) nor the daemon identity."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_memory.storage import open_store


def _imports_after_open(path: Path) -> bool:
    code = (
        "import sys; from agent_memory.storage import open_store; "
        f"open_store({str(path)!r}).close(); print('alembic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


def test_opening_a_file_leaves_the_daemon_identity_unimported(db_path):
    """Its key (hmac) is made when a daemon's health asks for it; secrets only for ui."""
    open_store(db_path).close()
    code = (
        "import sys; from agent_memory.storage import open_store; "
        f"open_store({str(db_path)!r}).close(); "
        "print([m for m in ('secrets', 'hmac', 'agent_memory.contract.identity') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_alembic_is_imported_only_when_there_is_work(db_path):
    assert _imports_after_open(db_path) is True  # new file: migrate
    assert _imports_after_open(db_path) is False  # at head: the fast path
