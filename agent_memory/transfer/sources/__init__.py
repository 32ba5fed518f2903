"""Importers from other memory servers: each reads a peer's files into common.Found; the
write is the JSONL import's (see common.Records). Each source's module is loaded only when
it is asked for."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # light to import: the command line lists SOURCES at start-up
    from agent_memory.transfer.sources.common import Found

# source name -> its module under agent_memory.transfer.sources
SOURCES = {
    "server-memory": "server_memory",
    "mcp-memory-service": "mcp_memory_service",
    "basic-memory": "basic_memory",
    "claude-md": "claude_md",
    "engram": "engram",
}


def read(source: str, path: Path, max_content_bytes: int) -> Found:
    """What ``source``'s file or folder at ``path`` holds; NotASource when it is not one."""
    return _module(source).read(path, max_content_bytes)


def default_scope(source: str, path: Path) -> str | None:
    """The scope of a source's memories when --scope is not given (None: global)."""
    module = _module(source)
    return module.default_scope(path) if hasattr(module, "default_scope") else None


def _module(source: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{SOURCES[source]}")
