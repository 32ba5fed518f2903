"""bench/ is a package whose scripts import as bench.NAME from the repository root, with their
shared helpers in bench/_common.py; the generators in scripts/ import as scripts.NAME;
tests/support/ is shared by tests and bench and imports neither; a test file imports no other
test file and no conftest; no file patches sys.path."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.support.paths import ROOT

BENCH = sorted(p for p in (ROOT / "bench").glob("*.py") if p.name != "__init__.py")
SCRIPTS = sorted(p for p in (ROOT / "scripts").glob("*.py") if p.name != "__init__.py")
SUPPORT = sorted((ROOT / "tests" / "support").glob("*.py"))
SHARED = {"pct", "timed", "recall_at", "clip"}  # bench/_common.py's, written once


def modules(path: Path) -> set[str]:
    """The full names of the modules ``path`` imports, anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def a_test_module(name: str) -> bool:
    """A test file or a conftest, at the top or in a tier folder (tests.unit.test_x)."""
    return any(part == "conftest" or part.startswith("test_") for part in name.split("."))


@pytest.mark.parametrize("path", [*BENCH, *SCRIPTS], ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_a_script_imports_as_a_module_of_its_package(path):
    importlib.import_module(f"{path.parent.name}.{path.stem}")


def test_no_file_patches_sys_path():
    needle = "sys.path." + "insert"  # spelt apart, or this file would hold it
    files = [*BENCH, *SCRIPTS, *SUPPORT, *(ROOT / "tests").rglob("*.py")]
    patched = [p.name for p in files if needle in p.read_text(encoding="utf-8")]
    assert patched == [], patched


def test_the_shared_test_helpers_import_no_bench_and_no_test_module():
    for path in SUPPORT:
        bad = {n for n in modules(path) if n.split(".")[0] == "bench" or a_test_module(n)}
        assert not bad, (path.name, bad)


def test_the_bench_helpers_are_defined_once():
    for path in BENCH:
        if path.name == "_common.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert not defined & SHARED, (path.name, defined & SHARED)


def test_a_test_file_takes_shared_helpers_from_tests_support_only():
    # conftest holds fixtures, which pytest hands out by name; helpers live in tests/support.
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        bad = {n for n in modules(path) if a_test_module(n)}
        assert not bad, (path.name, bad)
