"""The seams, as the imports and the transactions show them (docs/design.md).

Every module of the package is read with ``ast``: database drivers only under storage/,
HTTP clients only in the Ollama embedder, no store or embedder importing the service or a
transport, no transport importing another. And a search is one read snapshot plus the
recency bump.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

import agent_memory

PACKAGE = Path(agent_memory.__file__).resolve().parent
DRIVERS = {"sqlalchemy", "sqlean", "sqlite_vec", "alembic", "psycopg", "pgvector"}
HTTP_CLIENTS = {"requests", "httpx", "urllib3", "http.client", "urllib.request", "aiohttp"}
# Each transport's modules: the REST daemon's server (daemon.py) and the web page (web/)
# are part of the REST one, the MCP declarations (mcp_tools.py, mcp_catalog.py) of the MCP one.
TRANSPORT_GROUPS = [
    {"agent_memory.mcp_server", "agent_memory.mcp_tools", "agent_memory.mcp_catalog"},
    {"agent_memory.rest", "agent_memory.daemon", "agent_memory.web"},
]
TRANSPORTS = set().union(*TRANSPORT_GROUPS)
WIRING = "agent_memory.cli"  # the one place that puts the parts together
# Who may speak HTTP: the Ollama embedder, and `ui` asking a local daemon's /health which
# database it serves.
HTTP_CLIENT_MODULES = {"agent_memory.embedders.ollama", "agent_memory.ui"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of its code (lazy imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def layers() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def under(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def violations(modules: dict[str, set[str]]) -> list[str]:
    """Each broken rule, as "module imports name (rule)"."""
    out = []
    for module, imported in modules.items():
        for name in sorted(imported):
            top = name.split(".")[0]
            if top in DRIVERS and not under(module, "agent_memory.storage"):
                out.append(f"{module} imports {name} (drivers only under storage/)")
            if under(name, *HTTP_CLIENTS) and module not in HTTP_CLIENT_MODULES:
                out.append(f"{module} imports {name} (HTTP clients only in the Ollama embedder)")
            if under(module, "agent_memory.storage", "agent_memory.embedders") and under(
                name, "agent_memory.service", WIRING, *TRANSPORTS
            ):
                out.append(f"{module} imports {name} (stores and embedders are below the service)")
            own = next((g for g in TRANSPORT_GROUPS if module in g), set())
            if module in TRANSPORTS | {"agent_memory.service"} and under(
                name, WIRING, *(TRANSPORTS - own)
            ):
                out.append(f"{module} imports {name} (no transport imports another)")
            if module == "agent_memory.service" and under(name, "agent_memory.storage.sqlite"):
                out.append(f"{module} imports {name} (the service knows the Store seam only)")
    return out


def test_every_module_keeps_to_its_layer():
    assert violations(layers()) == []


@pytest.mark.parametrize(
    ("module", "extra", "rule"),
    [
        ("agent_memory.service", "sqlalchemy", "drivers only under storage/"),
        ("agent_memory.service", "requests", "HTTP clients only in the Ollama embedder"),
        ("agent_memory.storage.sqlite.store", "agent_memory.service", "below the service"),
        ("agent_memory.embedders.base", "agent_memory.mcp_server", "below the service"),
        ("agent_memory.rest", "agent_memory.mcp_server", "no transport imports another"),
        ("agent_memory.mcp_server", "agent_memory.cli", "no transport imports another"),
        ("agent_memory.service", "agent_memory.storage.sqlite.store", "the Store seam only"),
    ],
)
def test_the_rule_catches_a_stray_import(module, extra, rule):
    modules = layers()
    assert not [v for v in violations(modules) if v.startswith(f"{module} imports {extra} ")]
    modules[module] = modules[module] | {extra}
    caught = [v for v in violations(modules) if v.startswith(f"{module} imports {extra} ")]
    assert len(caught) == 1 and rule in caught[0]


def test_a_search_is_one_read_snapshot_and_the_bump(service, clock, monkeypatch):
    """With its retry and every shortcut (here past the pruning threshold), a keyword search
    opens one read transaction; its only write is the recency bump."""
    from agent_memory.query import bm25

    monkeypatch.setattr(bm25, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(bm25, "PRUNE_EXACT_ROWS", 10)
    for i in range(60):
        service.store(
            {"content": f"the note {i} about {'zebra' if i < 3 else 'sqlite'}", "type": "TODO"}
        )
    begun = []

    def on_begin(conn):
        begun.append("write" if conn.get_execution_options().get("sqlite_write") else "read")

    event.listen(Engine, "begin", on_begin)
    try:
        found = service.search({"query": "the zebra sqlite note?", "limit": 3})["results"]
    finally:
        event.remove(Engine, "begin", on_begin)
    assert len(found) == 3
    assert begun == ["read", "write"]
