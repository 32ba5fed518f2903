"""The layers, as the imports show them (docs/design.md).

Every module of the package is read with ``ast``. Requests flow down, answers flow up:
cli → app → http → mcp → service, transfer → storage → ranking → query, embedders →
contract → settings. A module imports its own layer or a lower one (the stdio server's tools
are what MCP over HTTP serves, so http/ may import mcp/, never the other way); no engine
imports another; nothing forms an import circle, counting the imports made for type checking
and inside functions. Database drivers live only under storage/, HTTP clients only in the
Ollama embedder and the ``ui`` command. The command line, the entry point, starts the servers
and imports nothing else of theirs. And a search is one read snapshot plus the recency bump.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

import agent_memory

PACKAGE = Path(agent_memory.__file__).resolve().parent
DRIVERS = {"sqlalchemy", "sqlean", "sqlite_vec", "alembic", "psycopg", "pgvector"}
HTTP_CLIENTS = {"requests", "httpx", "urllib3", "http.client", "urllib.request", "aiohttp"}
# Who may speak HTTP: the Ollama embedder, and `ui` asking a local daemon's /health which
# database it serves.
HTTP_CLIENT_MODULES = {"agent_memory.embedders.ollama", "agent_memory.cli.ui"}
# Lowest first. A module may import its own layer and every layer below it; packages that
# share a layer may import each other (an import circle is caught on its own).
LAYERS = [
    {"agent_memory", "agent_memory.settings"},  # the name, the version, the options
    {"agent_memory.contract"},
    {"agent_memory.query", "agent_memory.embedders"},
    {"agent_memory.ranking"},
    {"agent_memory.storage"},
    {"agent_memory.service", "agent_memory.transfer"},
    {"agent_memory.mcp"},
    {"agent_memory.http"},
    {"agent_memory.app"},  # the wiring: a store and an embedder, handed to the service
    {"agent_memory.cli", "agent_memory.__main__"},
]
ENGINES = {"agent_memory.storage.sqlite", "agent_memory.storage.postgres"}
SERVER_PACKAGES = ("agent_memory.mcp", "agent_memory.http")
# What the command line may import of the servers: what starts them.
SERVERS = {
    "agent_memory.mcp.server",
    "agent_memory.http.daemon",
    "agent_memory.http.workers",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def known_modules() -> set[str]:
    return {module_name(p) for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, *, top_level_only: bool = False) -> set[str]:
    """The modules ``path`` imports: at any depth of its code (lazy imports included), or
    only those that run when it is imported (not in a function, not for type checking)."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = ast.walk(tree) if not top_level_only else _run_on_import(tree.body)
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _run_on_import(body: list[ast.stmt]) -> list[ast.AST]:
    out: list[ast.AST] = []
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.ClassDef):
            out.extend(_run_on_import(node.body))
        elif isinstance(node, (ast.If, ast.Try)):
            out.append(node)
            for block in ("body", "orelse", "finalbody"):
                out.extend(_run_on_import(getattr(node, block, [])))
            for handler in getattr(node, "handlers", []):
                out.extend(_run_on_import(handler.body))
        else:
            out.append(node)
    return out


def layers() -> dict[str, frozenset[str]]:
    """Each module's imports: a copy of one reading of the package, which a test may change."""
    return dict(_read_layers())


@functools.cache
def _read_layers() -> dict[str, frozenset[str]]:
    return {module_name(p): frozenset(imports_of(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def under(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def home(name: str) -> str | None:
    """The package of LAYERS that ``name`` belongs to (the most specific one)."""
    homes = [p for layer in LAYERS for p in layer if under(name, p) and p != "agent_memory"]
    if homes:
        return max(homes, key=len)
    return "agent_memory" if name.startswith("agent_memory") else None


def starts_a_server(name: str) -> bool:
    """``name`` is one of SERVERS, or a package on the way to one."""
    return any(under(name, server) or under(server, name) for server in SERVERS)


def level(package: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if package in layer)


def violations(modules: dict[str, set[str]]) -> list[str]:
    """Each broken rule, as "module imports name (rule)"."""
    out = []
    for module, imported in modules.items():
        mine = home(module)
        for name in sorted(imported):
            top = name.split(".")[0]
            if top in DRIVERS and not under(module, "agent_memory.storage"):
                out.append(f"{module} imports {name} (drivers only under storage/)")
            if under(name, *HTTP_CLIENTS) and module not in HTTP_CLIENT_MODULES:
                out.append(f"{module} imports {name} (HTTP clients only in the Ollama embedder)")
            for engine in ENGINES:
                other = ENGINES - {engine}
                if under(module, engine) and under(name, *other):
                    out.append(f"{module} imports {name} (no engine imports another)")
            theirs = home(name)
            if mine is None or theirs is None or theirs == mine:
                continue
            if level(theirs) > level(mine):
                out.append(f"{module} imports {name} (requests flow down: a lower layer)")
            elif (
                mine == "agent_memory.cli"
                and theirs in SERVER_PACKAGES
                and not starts_a_server(name)
            ):
                out.append(f"{module} imports {name} (the command line only starts servers)")
            if under(module, "agent_memory.service") and under(name, *ENGINES):
                out.append(f"{module} imports {name} (the service knows the Store seam only)")
    return out


def circles() -> list[list[str]]:
    """Every import circle among the modules, as its path: imports for type checking and
    inside functions count, since each still ties one module to the other."""
    known = known_modules()
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        wanted = imports_of(path)
        graph[module_name(path)] = {n for n in wanted if n in known} - {module_name(path)}
    found, state = [], {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = "done"

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    # a package's __init__ that imports its own modules is not a circle of ours
    return [c for c in found if not all(under(m, c[0]) or under(c[0], m) for m in c)]


def test_every_module_keeps_to_its_layer():
    assert violations(layers()) == []


def test_every_module_has_a_layer():
    assert [m for m in known_modules() if home(m) == "agent_memory" and m != "agent_memory"] == []


def test_no_import_circle():
    assert circles() == []


@pytest.mark.parametrize(
    ("module", "extra", "rule"),
    [
        ("agent_memory.service.core", "sqlalchemy", "drivers only under storage/"),
        ("agent_memory.service.core", "requests", "HTTP clients only"),
        ("agent_memory.storage.sqlite.store", "agent_memory.service.core", "a lower layer"),
        ("agent_memory.embedders.base", "agent_memory.mcp.server", "a lower layer"),
        ("agent_memory.contract.models", "agent_memory.ranking", "a lower layer"),
        ("agent_memory.service.core", "agent_memory.app", "a lower layer"),
        ("agent_memory.mcp.server", "agent_memory.app", "a lower layer"),
        ("agent_memory.mcp.server", "agent_memory.http.rest", "a lower layer"),
        ("agent_memory.query.bm25", "agent_memory.ranking", "a lower layer"),
        (
            "agent_memory.storage.postgres.store",
            "agent_memory.storage.sqlite.database",
            "no engine imports another",
        ),
        ("agent_memory.service.core", "agent_memory.storage.sqlite.store", "the Store seam only"),
        ("agent_memory.cli.commands", "agent_memory.http.rest", "only starts servers"),
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


def test_the_design_map_names_every_top_level_part_and_only_those():
    """docs/design.md's map of the package is the package: each folder and top-level module
    of agent_memory/ has its line, and each line names one that exists."""
    design = (PACKAGE.parent / "docs" / "design.md").read_text()
    block = design.split("```\n", 2)[1]
    named = {line.split()[0].rstrip("/") for line in block.splitlines() if line[:1].isalpha()}
    parts = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    parts |= {p.name for p in PACKAGE.glob("*.py") if not p.name.startswith("__")}
    assert named == parts


def test_the_design_map_lists_the_layers_in_their_order():
    """The map reads top to bottom as the layers go, highest first."""
    design = (PACKAGE.parent / "docs" / "design.md").read_text()
    block = design.split("```\n", 2)[1]
    order = [line.split()[0].rstrip("/") for line in block.splitlines() if line[:1].isalpha()]
    levels = [level(home(f"agent_memory.{name.removesuffix('.py')}")) for name in order]
    assert levels == sorted(levels, reverse=True)
