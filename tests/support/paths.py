"""Where the repository's parts are, for tests that read them: computed once here, so that a
test file's place in its tier folder does not change what it reads."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The committed databases, one per released schema revision (scripts/upgrade_fixture.py).
FIXTURES = ROOT / "tests" / "fixtures"
# The Claude Code plugin: its manifest, hooks and MCP server entry.
PLUGIN = ROOT / "integrations" / "claude-code"
