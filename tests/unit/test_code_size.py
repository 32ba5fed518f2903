"""Sizes a newcomer can read: no function over 60 lines in the package, the bench or the
generators, a README guide of at most 450 lines. A module's length is not capped: a long
module that holds one concept reads better than short ones that import each other. Each
check reports every offender, so one run names all of them."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ROOT

PACKAGE = ROOT / "agent_memory"
# Where the function limit holds beside the package.
TOOLS = (ROOT / "bench", ROOT / "scripts")
# Functions over the limit in a file another change is rewriting (path and name): the check
# fails once one is short enough, so that its entry goes too.
BEING_REWRITTEN = {"retrieval.py main"}
MAX_FUNCTION_LINES = 60
MAX_README_LINES = 450


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def long_functions(root: Path, limit: int) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {length}")
    return found


def test_no_function_is_over_the_limit():
    assert long_functions(PACKAGE, MAX_FUNCTION_LINES) == []


def test_no_bench_or_generator_function_is_over_the_limit():
    found = [f for root in TOOLS for f in long_functions(root, MAX_FUNCTION_LINES)]
    named = {
        f"{where.split(':')[0]} {name.rstrip(':')}" for where, name, _ in map(str.split, found)
    }
    assert named == BEING_REWRITTEN, found


def test_the_readme_is_a_short_guide():
    assert line_count(ROOT / "README.md") <= MAX_README_LINES


def test_the_checks_see_an_offender(tmp_path):
    body = "\n".join(f"    x = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "big.py").write_text(f"def big():\n{body}\n")
    assert long_functions(tmp_path, MAX_FUNCTION_LINES) == [
        f"big.py:1 big: {MAX_FUNCTION_LINES + 1}"
    ]
