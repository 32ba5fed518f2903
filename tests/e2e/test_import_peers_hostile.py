"""``agent-memory import --from basic-memory`` spawned on a folder holding a FIFO named like
a note: skipped, never waited on."""

from __future__ import annotations

import os

import pytest

from tests.support.peers import NOT_REGULAR
from tests.support.spawned import run_agent_memory


@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)], ids=["import", "dry run"])
def test_a_fifo_named_like_a_note_is_skipped_not_waited_on(tmp_path, dry_run):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "note.md").write_text("- [fact] the one real note\n", encoding="utf-8")
    os.mkfifo(folder / "pipe.md")
    (folder / "to-pipe.md").symlink_to(folder / "pipe.md")
    db = tmp_path / "memory.db"
    args = ["--db", str(db), "import", "--from", "basic-memory", *dry_run, str(folder)]
    done = run_agent_memory(*args, timeout=60)  # a read of the FIFO would wait for ever
    assert done.returncode == 0, done.stderr
    assert f"{NOT_REGULAR}: 2" in done.stdout
    assert ("would import 1 memory" in done.stdout) == bool(dry_run)
    assert done.stdout.startswith("imported: 1,") != bool(dry_run)
