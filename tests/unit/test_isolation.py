"""The suite never touches the user's real data directory (conftest's isolated_home)."""

from __future__ import annotations

import os

from agent_memory.storage.sqlite.database import resolve_path
from tests.support.files import REAL_DATA_DIR


def test_the_default_database_is_under_the_session_home(isolated_home):
    default = resolve_path()
    assert default.is_relative_to(isolated_home)
    assert not default.is_relative_to(REAL_DATA_DIR)


def test_no_agent_memory_setting_leaks_in_from_the_developer_environment():
    """Only the embedder choice the fixture makes on purpose is set."""
    settings = {k: v for k, v in os.environ.items() if k.startswith("AGENT_MEMORY_")}
    assert settings == {"AGENT_MEMORY_EMBEDDER": "ollama"}
