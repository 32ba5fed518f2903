"""Embedders and importers register themselves: a new one is a module of its package, and
nothing else changes (no table in a core module names them)."""

from __future__ import annotations

import sys

from agent_memory import embedders
from agent_memory.embedders import base
from agent_memory.transfer import importers as sources

EMBEDDER = """
from agent_memory.embedders.base import Embedder, Provider


class Fake(Embedder):
    provider = "fake"
    title = "A fake"
    model = "fake-1"
    prefixes = "none"

    def _vectors(self, texts, *, query):
        return [[1.0, 0.0] for _ in texts]


PROVIDER = Provider("fake", lambda settings, model: Fake(), lambda settings, model: "a fake")
"""

IMPORTER = """
def read(path, max_content_bytes):
    raise NotImplementedError
"""


def test_an_embedder_module_with_a_provider_is_offered(tmp_path, monkeypatch):
    (tmp_path / "fake_provider.py").write_text(EMBEDDER)
    monkeypatch.setattr(embedders, "__path__", [*embedders.__path__, str(tmp_path)])
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        found = embedders._discover()
    finally:
        sys.modules.pop("agent_memory.embedders.fake_provider", None)
    assert list(found) == ["ollama", "local", "fake"]
    made = found["fake"].make(None, None)
    assert isinstance(made, base.Embedder) and made.status() == base.READY
    assert made.reembed_command() == "agent-memory --embedder fake reembed"


def test_an_importer_module_is_a_source_by_its_name(tmp_path, monkeypatch):
    (tmp_path / "other_server.py").write_text(IMPORTER)
    monkeypatch.setattr(sources, "__path__", [*sources.__path__, str(tmp_path)])
    assert sources._sources()["other-server"] == "other_server"
    assert "common" not in sources._sources()


def test_the_built_in_providers_and_sources_register_themselves():
    assert embedders.MODES == ("auto", "ollama", "local", "none")
    assert set(sources.SOURCES) == {
        "server-memory",
        "mcp-memory-service",
        "basic-memory",
        "claude-md",
        "engram",
    }
