"""``agent-memory context`` in a fresh interpreter: what the session brief imports (it runs
at every agent's start)."""

from __future__ import annotations

import subprocess
import sys

pytest_plugins = ["tests.support.brief"]


def test_context_imports_nothing_it_does_not_need(project):
    """It runs at every agent's start: no MCP SDK, Flask, SQLAlchemy, HTTP client, Alembic,
    nor the daemon identity's secrets and hmac (only ``ui`` and a daemon's health need them)."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from agent_memory.cli.main import cli\n"
        f"result = CliRunner().invoke(cli, ['--db', {str(project)!r}, 'context'])\n"
        "assert result.exit_code == 0, result.output\n"
        "heavy = ('mcp', 'flask', 'waitress', 'sqlalchemy', 'alembic', 'requests', 'secrets',"
        " 'hmac')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_keyword_brief_by_query_does_not_load_numpy(project):
    """--query runs the search pipeline; with no vectors to search, the vector index (and
    numpy's 0.1-0.3 s import) stays out of it."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from agent_memory.cli.main import cli\n"
        f"args = ['--db', {str(project)!r}, '--embedder', 'none', 'context', '--query', 'wal']\n"
        "result = CliRunner().invoke(cli, args)\n"
        "assert result.exit_code == 0, result.output\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
