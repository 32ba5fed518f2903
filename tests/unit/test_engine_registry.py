"""The engine registry (storage/engines.py): a location picks its engine by URL scheme, a
third engine is one more row, and no engine package imports another."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import agent_memory
from agent_memory import storage
from agent_memory.storage import engines
from agent_memory.storage.engines import Engine, describe, engine_for, is_url

STORAGE = Path(agent_memory.__file__).resolve().parent / "storage"


def test_a_url_picks_its_engine_and_anything_else_is_a_sqlite_file(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_MEMORY_DB", raising=False)
    assert engine_for("PostgreSQL://db/x").name == engine_for("postgres://db/x").name
    assert engine_for("postgresql://db/x").name == "postgresql"
    assert engine_for(tmp_path / "m.db").name == engine_for("m.db").name == "sqlite"
    assert engine_for(None).name == "sqlite"
    monkeypatch.setenv("AGENT_MEMORY_DB", "postgresql://db/from-env")
    assert engine_for(None).name == "postgresql"
    assert is_url("postgres://db/x") and not is_url("postgres.db") and not is_url(None)


def test_a_url_is_described_without_its_password():
    assert describe("postgresql://amy:s3cret@db/team") == "postgresql://amy:***@db/team"
    assert describe("memory.db") == "memory.db"


def test_a_third_engine_is_one_more_row(monkeypatch):
    opened = []
    entry = types.ModuleType("fake_engine")
    entry.open_store = lambda location, mode: opened.append((location, mode)) or "a store"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_engine", entry)
    monkeypatch.setattr(
        engines, "ENGINES", (Engine("fake", ("fake",), "fake_engine"), *engines.ENGINES)
    )
    assert storage.open_store("fake://here", mode=storage.READ) == "a store"
    assert opened == [("fake://here", storage.READ)]


def test_no_engine_imports_another():
    # an engine's package is the one its ENGINES row opens; storage's shared packages are not one
    packages = sorted(e.module.split(".")[2] for e in engines.ENGINES)
    assert packages == ["postgres", "sqlite"]
    for package in packages:
        others = [f"agent_memory.storage.{o}" for o in packages if o != package]
        for path in (STORAGE / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                wrong = [n for n in names if any(n == o or n.startswith(o + ".") for o in others)]
                assert not wrong, f"{path.relative_to(STORAGE)} imports {wrong}"
