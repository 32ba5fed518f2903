"""Importers from other memory servers: each reads a peer's files into common.Found; the
write is the JSONL import's (see common.Records).

An importer registers by being a module of this package: ``import --from NAME`` reads with
the module named NAME with ``-`` for ``_`` (``server-memory``: server_memory.py), which defines
``read(path, max_content_bytes)`` and may define ``default_scope(path)``. Only ``common`` is
not one. Each source's module is loaded only when it is asked for."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # light to import: the command line lists SOURCES at start-up
    from agent_memory.transfer.importers.common import Found

NOT_SOURCES = {"common"}


def _sources() -> dict[str, str]:
    """source name -> its module's name, found without importing any of them."""
    names = sorted(i.name for i in pkgutil.iter_modules(__path__) if i.name not in NOT_SOURCES)
    return {name.replace("_", "-"): name for name in names}


SOURCES = _sources()


def read(source: str, path: Path, max_content_bytes: int) -> Found:
    """What ``source``'s file or folder at ``path`` holds; NotASource when it is not one."""
    return _module(source).read(path, max_content_bytes)


def default_scope(source: str, path: Path) -> str | None:
    """The scope of a source's memories when --scope is not given (None: global)."""
    module = _module(source)
    return module.default_scope(path) if hasattr(module, "default_scope") else None


def _module(source: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{SOURCES[source]}")
