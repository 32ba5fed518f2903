"""``agent-memory import --from`` a peer with --dry-run, on both engines: what would be
written, and nothing written."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from agent_memory.cli import display
from agent_memory.cli.main import cli
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.peers import run

pytest_plugins = ["tests.support.pg_fixtures"]


GITHUB = "ghp_" + "k3Jx9QmZ2vT8wLp4Rn6Yb1Hc7Fd5Gs0AeUoI"
HOSTILE_ENTITY = {
    "type": "entity",
    "name": "CI\x1b]0;pwned\x07",
    "entityType": "system",
    "observations": [f"Deploys with {GITHUB}\x1b[2K", "Runs on every push"],
}


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_dry_run_shows_what_would_be_written(tmp_path, engine, request):
    """Secrets as the markers stored, how many, and every control character escaped; the
    import then writes what the preview showed."""
    path = tmp_path / "memory.jsonl"
    path.write_text(json.dumps(HOSTILE_ENTITY) + "\n", encoding="utf-8")
    db = request.getfixturevalue("pg_url") if engine == "postgres" else tmp_path / "m.db"
    preview = run(db, "server-memory", path, "--dry-run")
    assert preview.exit_code == 0, preview.output
    assert GITHUB not in preview.stdout
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", preview.stdout)
    shown = preview.stdout.splitlines()
    assert shown[-1] == "secrets that would be redacted: 1 in 1 memory"
    assert run(db, "server-memory", path).exit_code == 0
    svc = MemoryService(open_store(db))
    try:
        for memory in svc.list({}):
            line = f"{memory['type']:<12} {display.printable(memory['content'])}  ["
            line += display.printable(", ".join(memory["tags"])) + "]"
            assert line in shown
    finally:
        svc.close()
    unredacted = CliRunner().invoke(
        cli, ["--db", str(db), "--redact", "off", "import", "--from", "server-memory",
              "--dry-run", str(path)]
    )  # fmt: skip
    assert GITHUB in unredacted.stdout and "would be redacted" not in unredacted.stdout
