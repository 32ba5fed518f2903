"""The Claude Code plugin in integrations/claude-code: its manifest and the files it names."""

from __future__ import annotations

import json
import re

from agent_memory import __version__
from tests.support.paths import PLUGIN


def test_the_plugin_manifest_and_its_files():
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "agent-memory"
    assert manifest["version"] == __version__
    assert re.fullmatch(r"[a-z0-9-]+", manifest["name"])
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart"}
    servers = json.loads((PLUGIN / ".mcp.json").read_text())
    assert servers == {"agent-memory": {"command": "agent-memory", "args": ["serve"]}}
