"""The distribution's name: `agent-memory-mcp` on the package index is someone else's project,
so no install line, hint or message may name it (ours is agent_memory.DISTRIBUTION)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from agent_memory import DISTRIBUTION
from tests.support.paths import ROOT

OLD_NAME = "agent-memory-mcp"
# Everything a user reads or runs: the package (every message), its metadata, the docs.
SEARCHED = ["README.md", "server.json", "pyproject.toml", "docs", "integrations", "agent_memory"]


def files() -> list[Path]:
    """Every file under SEARCHED (compiled caches aside)."""
    out = []
    for name in SEARCHED:
        path = ROOT / name
        found = sorted(path.rglob("*")) if path.is_dir() else [path]
        out.extend(p for p in found if p.is_file() and "__pycache__" not in p.parts)
    return out


def test_nothing_names_the_package_index_project_that_is_not_ours():
    searched = files()
    assert ROOT / "agent_memory" / "cli" / "main.py" in searched and ROOT / "README.md" in searched
    named = [
        str(p.relative_to(ROOT))
        for p in searched
        if any(
            old in p.read_bytes().decode("utf-8", "replace").lower()
            for old in (OLD_NAME, OLD_NAME.replace("-", "_"))
        )
    ]
    assert named == []


def test_the_distribution_is_named_once_for_code_and_metadata():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["name"] == DISTRIBUTION == "typed-agent-memory"
