"""Purging history from the command line: bad input is named, and the versions shown before
asking are escaped. tests/engines/test_history_purge.py holds the purge on both engines."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.history import purge


def test_the_command_names_bad_input(tmp_path):
    db = str(tmp_path / "m.db")
    assert CliRunner().invoke(cli, ["--db", db, "store", "--type", "TODO", "x"]).exit_code == 0
    missing = purge(db, "9", "--purge", "--yes")
    assert (missing.exit_code, missing.output) == (1, "memory 9 not found\n")
    bad = purge(db, "x", "--purge", "--yes")
    assert bad.exit_code == 2 and "id" in bad.output
    assert purge(db, "1", "--yes").exit_code == 2  # --yes goes with --purge
    unasked = purge(db, "1", "--purge", "--json")
    assert unasked.exit_code == 2 and "needs --yes" in unasked.output
    answered = purge(db, "1", "--purge", "--yes", "--json")
    assert (answered.exit_code, json.loads(answered.output)) == (0, {"id": 1, "purged": 0})


def test_the_versions_shown_before_asking_are_escaped(tmp_path):
    db = tmp_path / "m.db"
    svc = MemoryService(open_store(db))
    try:
        svc.store({"content": "title\x1b]0;pwned\x07 and more", "type": "TODO"})
        svc.update({"id": 1, "content": "clean"})
    finally:
        svc.close()
    shown = purge(str(db), "1", "--purge")
    assert "title\\x1b]0;pwned\\x07 and more" in shown.output
    assert "\x1b" not in shown.output
