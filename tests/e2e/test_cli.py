"""The click front end as the real executable runs it: what the serve path imports."""

from __future__ import annotations


def test_the_serve_path_imports_nothing_it_does_not_need():
    """Start-up speed: Flask, waitress, Alembic and requests stay off `agent-memory serve`."""
    import subprocess
    import sys

    code = (
        "import sys, agent_memory.cli.main, agent_memory.mcp.server, agent_memory.service.lifecycle; "
        "print(sorted(m for m in ('flask', 'waitress', 'alembic', 'requests') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
