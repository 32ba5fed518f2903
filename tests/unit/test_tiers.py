"""The test tiers keep their promises: every test file lives in a tier folder, and the
in-process tiers (tests/unit, the fast one, and tests/slow) run in this process with no
PostgreSQL. Their conftests make a test that starts a process or connects to PostgreSQL fail;
this file checks that they do, and that no file of theirs even imports what spawns or what
serves PostgreSQL."""

from __future__ import annotations

import ast
import os
import subprocess

import psycopg
import pytest

from tests.support import tiers
from tests.support.paths import ROOT
from tests.support.tiers import TIERS

TESTS = ROOT / "tests"
# Modules an in-process test file may not import: they start processes, drive a browser or speak
# to PostgreSQL.
FORBIDDEN_MODULES = {
    "subprocess",
    "multiprocessing",
    "psycopg",
    "playwright",
    "tests.support.pg_fixtures",
    "tests.support.postgres_server",
    "tests.support.browser",
    "tests.support.many_writers",
    "tests.support.team",
}
# Helpers that spawn, from modules whose constants a unit test may take.
FORBIDDEN_NAMES = {"run_agent_memory", "server_env", "RestDaemon"}


def imports(path) -> tuple[set[str], set[str]]:
    """The modules ``path`` imports and the names it takes from them."""
    modules, names = set(), set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets
        ):
            modules |= set(ast.literal_eval(node.value))
    return modules, names


def test_every_test_file_is_in_a_tier():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []
    folders = {p.parent.name for p in TESTS.rglob("test_*.py")}
    assert folders <= set(TIERS), folders - set(TIERS)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ([], set(TIERS)),
        (["tests/unit"], {"unit"}),
        (["tests/unit/test_query.py::test_lexemes_are_fts5s", "tests/unit/"], {"unit"}),
        (["tests/unit", "tests/slow/test_similar.py"], {"unit", "slow"}),
        (["tests"], {"other"}),
        (["-"], {"other"}),
    ],
)
def test_a_command_line_names_its_tiers(args, named):
    assert tiers.tiers_of(args, ROOT) == named


def test_only_the_fast_tier_alone_samples_the_properties(monkeypatch):
    monkeypatch.setattr(tiers, "fast_only", False)
    assert tiers.examples(600) == 600
    monkeypatch.setattr(tiers, "fast_only", True)
    assert tiers.examples(600) == 600 // tiers.FAST_SHARE
    assert tiers.examples(25) == tiers.FAST_MIN_EXAMPLES


@pytest.mark.parametrize("tier", ["unit", "slow"])
def test_no_in_process_test_file_imports_what_spawns_or_serves_postgresql(tier):
    found = {}
    for path in sorted((TESTS / tier).glob("*.py")):
        if path.name == "test_tiers.py":  # it imports them to refuse them
            continue
        modules, names = imports(path)
        bad = (modules & FORBIDDEN_MODULES) | (names & FORBIDDEN_NAMES)
        if bad:
            found[path.name] = sorted(bad)
    assert found == {}


@pytest.mark.parametrize(
    ("start", "home"),
    [
        (lambda: subprocess.run(["true"], check=False), "tests/e2e"),
        (lambda: os.system("true"), "tests/e2e"),
        (lambda: os.posix_spawn("/bin/true", ["true"], {}), "tests/e2e"),
        (lambda: psycopg.connect("postgresql:///nothing?host=/nonexistent"), "tests/engines"),
    ],
    ids=["subprocess", "system", "posix_spawn", "psycopg"],
)
def test_a_unit_test_that_spawns_or_connects_fails(in_process_only, start, home):
    with pytest.raises(BaseException, match=f"it belongs in {home}") as caught:
        start()
    assert type(caught.value).__name__ == "TierBreach"
    in_process_only.clear()  # the breach was the point of this test
