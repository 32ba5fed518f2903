"""``agent-memory tidy`` from the command line: the report, then --apply, and --keep.
tests/engines/test_tidy.py holds the clusters and merges on both engines."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agent_memory.cli.main import cli
from tests.support.tidy import AGAIN, FIRST, SHORT, WITH_OPS, WITH_OWNER


def test_the_command_shows_then_applies(tmp_path):
    db = str(tmp_path / "memory.db")
    runner = CliRunner()
    for content in (FIRST, AGAIN):
        args = ["--db", db, "store", "--type", "DECISION", content]
        assert runner.invoke(cli, args).exit_code == 0
    dry = runner.invoke(cli, ["--db", db, "--embedder", "none", "tidy"])
    assert dry.exit_code == 0, dry.output
    assert "near-duplicates by keyword overlap" in dry.output
    assert "keep #2" in dry.output and "merge #1" in dry.output
    assert "dry run: nothing was written" in dry.output
    refused = runner.invoke(cli, ["--db", db, "tidy", "--unused-days", "0"])
    assert refused.exit_code == 2
    assert "unused_days must be between 1 and 36500 (got 0)" in refused.output
    unasked = runner.invoke(cli, ["--db", db, "tidy", "--apply"])  # no terminal to ask on
    assert unasked.exit_code == 2 and "pass --yes" in unasked.output
    assert "merge #1" in unasked.output  # shown first all the same
    done = runner.invoke(cli, ["--db", db, "tidy", "--apply", "--yes", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["applied"] == [{"keep": 2, "merge": [1], "tags": []}]


def test_the_command_keeps_the_member_named_and_refuses_an_id_in_no_cluster(tmp_path):
    db = str(tmp_path / "memory.db")
    runner = CliRunner()
    for content in (WITH_OPS, WITH_OWNER, SHORT):
        args = ["--db", db, "store", "--type", "DECISION", content]
        assert runner.invoke(cli, args).exit_code == 0
    dry = runner.invoke(cli, ["--db", db, "--embedder", "none", "tidy"])
    assert dry.exit_code == 0, dry.output
    assert "no member holds every word of the others (merged only with --keep ID)" in dry.output
    assert "lacks: notify, ops" in dry.output or "lacks: page, owner" in dry.output
    assert "1 cluster not merged: no member holds every word of the others" in dry.output
    assert "dry run" not in dry.output  # nothing a bare --apply would merge
    wrong = runner.invoke(cli, ["--db", db, "--embedder", "none", "tidy", "--keep", "9"])
    assert wrong.exit_code == 2
    assert "keep names memory 9, which is in no cluster of this report" in wrong.output
    done = runner.invoke(
        cli, ["--db", db, "--embedder", "none", "tidy", "--keep", "1", "--apply", "--yes"]
    )
    assert done.exit_code == 0, done.output
    assert "keep #1 DECISION" in done.output and "(named by --keep)" in done.output
    assert "merged #2, #3 into #1" in done.output or "merged #3, #2 into #1" in done.output
