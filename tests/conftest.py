"""Shared fixtures: a temp database per test, a controllable clock, MCP clients.

In-process tests call the service (or the MCP server through the SDK's in-process
client); end-to-end tests spawn the installed ``agent-memory`` executable.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlean
import sqlite_vec
from sqlalchemy import event
from sqlalchemy.engine import Engine

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support import browser, tiers
from tests.support.clock import Clock
from tests.support.fake_ollama import FakeOllama, embedder_for
from tests.support.files import REAL_DATA_DIR, listing
from tests.support.template import fresh_copy, make_template

_REAL_DATA_BEFORE = listing(REAL_DATA_DIR)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """No test may read or write the user's real data: each test gets its own HOME and XDG
    directories (spawned servers inherit them), and AGENT_MEMORY_* is cleared. Commands run
    in process embed with Ollama (which is not there) unless a test chooses otherwise: the
    local model is for the tests about it."""
    home = tmp_path_factory.mktemp("home")
    for name in [k for k in os.environ if k.startswith("AGENT_MEMORY_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AGENT_MEMORY_EMBEDDER", "ollama")
    monkeypatch.setenv("HOME", str(home))
    for name, sub in (
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        monkeypatch.setenv(name, str(home / sub))
    return home


def pytest_configure(config: pytest.Config) -> None:
    """A run of the fast tier alone samples each property (tests/support/tiers.py)."""
    tiers.fast_only = tiers.tiers_of(config.args, config.invocation_params.dir) == {"unit"}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The whole run fails if the real data directory changed while it ran."""
    if listing(REAL_DATA_DIR) != _REAL_DATA_BEFORE:
        print(f"\nthe test run changed the real data directory {REAL_DATA_DIR}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new database at head, made once per test process: the fixtures below copy it
    (tests/support/template.py)."""
    return make_template(tmp_path_factory.mktemp("template") / "memory.db")


@pytest.fixture
def fresh_db(db_path: Path, sqlite_template: Path) -> Path:
    """``db_path`` holding a new, empty database of its own (a copy of the template)."""
    return fresh_copy(sqlite_template, db_path)


@pytest.fixture
def service(fresh_db: Path, clock: Clock):
    svc = MemoryService(open_store(fresh_db), clock=clock)
    yield svc
    svc.close()


@pytest.fixture
def new_service(db_path: Path, clock: Clock):
    """The service on a database the store itself creates at ``db_path``: for the tests about
    creating, migrating or identifying a database, which a copy of the template would not
    put to the test."""
    svc = MemoryService(open_store(db_path), clock=clock)
    yield svc
    svc.close()


@pytest.fixture
def ollama():
    with FakeOllama() as fake:
        yield fake


@pytest.fixture
def hybrid(fresh_db: Path, clock: Clock, ollama: FakeOllama):
    """A service whose embedder is the fake Ollama: searches are hybrid."""
    svc = MemoryService(open_store(fresh_db), clock=clock, embedder=embedder_for(ollama.url))
    yield svc
    svc.close()


@pytest.fixture
def no_cut(monkeypatch):
    """Pages that do not end where relevance drops: for tests of what the legs find."""
    from agent_memory import ranking

    monkeypatch.setattr(ranking, "CUT", False)


@pytest.fixture
def raw(db_path: Path, service: MemoryService):
    """A plain sqlean connection (with sqlite-vec) on the same file, to check what was written."""
    conn = sqlean.connect(str(db_path))
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    yield conn
    conn.close()


class WriteWatch:
    """The write transactions of every SQLite store in this process, seen through
    SQLAlchemy's public connection events: how many are open now, and an action run with the
    driver connection at the start of each (to inject a fault into the writer)."""

    def __init__(self) -> None:
        self.open = 0
        self.action: Callable[[sqlean.Connection], object] | None = None

    @staticmethod
    def _writing(conn) -> bool:
        return bool(conn.get_execution_options().get("sqlite_write"))

    def begin(self, conn) -> None:
        if self._writing(conn):
            self.open += 1
            if self.action is not None:
                self.action(conn.connection.driver_connection)

    def end(self, conn) -> None:
        if self._writing(conn):
            self.open -= 1


@pytest.fixture
def writes():
    watch = WriteWatch()
    hooks = (("begin", watch.begin), ("commit", watch.end), ("rollback", watch.end))
    for name, hook in hooks:
        event.listen(Engine, name, hook)
    yield watch
    for name, hook in hooks:
        event.remove(Engine, name, hook)


@pytest.fixture(scope="module")
def chromium():
    """Debian's Chromium under Playwright, for the browser tests: skipped where it is missing,
    except in CI, where they must run."""
    reason = browser.missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests must run in CI: {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = browser.launch(playwright)
        yield launched
        launched.close()
