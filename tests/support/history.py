"""What the history tests share: a memory and its newer version, and the history command."""

from __future__ import annotations

from click.testing import CliRunner

from agent_memory.cli.main import cli

OLD = {"content": "The API timeout is 30 seconds.", "type": "CONSTRAINT", "tags": ["api"]}
NEW = {"content": "The API timeout is now 90 seconds.", "type": "CONSTRAINT", "tags": ["api"]}


def purge(location, *args, input=None):
    """``agent-memory history`` in process, with ``--purge`` among ``args`` to purge."""
    return CliRunner().invoke(cli, ["--db", location, "history", *args], input=input)
