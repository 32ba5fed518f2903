"""pytest fixtures for a real PostgreSQL: one server per session, a fresh database per test.

Why a plugin module and not conftest.py: only the PostgreSQL tests load it (``pytest_plugins
= ["tests.support.pg_fixtures"]``), so the rest of the suite neither starts a server nor needs psycopg.

Each test's database is a copy of a session template (``CREATE DATABASE ... TEMPLATE``) that
already holds the extensions, which is much cheaper than creating them per test. Point
``AGENT_MEMORY_TEST_PG_URL`` at a server of your own (a URL to a database on it; the role must
be allowed to create databases, and pgvector and unaccent must be installed) to use it instead
of the embedded one. The variable is read at import: tests/conftest.py clears
``AGENT_MEMORY_*`` around every test.
"""

from __future__ import annotations

import itertools
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from tests.support.postgres_server import PostgresServer

URL_VARIABLE = "AGENT_MEMORY_TEST_PG_URL"
OUTSIDE_URL = os.environ.get(URL_VARIABLE)
TEMPLATE_EXTENSIONS = ("vector", "unaccent")

_names = itertools.count(1)
# Seconds each test database took to create (read by tests that report timings).
CREATE_SECS: list[float] = []


def database_url(url: str, name: str) -> str:
    """``url`` (a postgresql:// URL) with its database replaced by ``name``: still a URL, as
    ``--db`` takes it."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The URL of the server's maintenance database (postgres)."""
    if OUTSIDE_URL:
        yield OUTSIDE_URL
        return
    server = PostgresServer()
    try:
        server.start()
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_template(pg_server: str) -> Iterator[str]:
    """The name of this session's template database, with the extensions in it."""
    name = f"agent_memory_template_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'").format(
                sql.Identifier(name)
            )
        )
    try:
        with psycopg.connect(database_url(pg_server, name), autocommit=True) as conn:
            for extension in TEMPLATE_EXTENSIONS:
                conn.execute(sql.SQL("CREATE EXTENSION {}").format(sql.Identifier(extension)))
        yield name
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def pg_url(pg_server: str, pg_template: str) -> Iterator[str]:
    """A URL to a database of this test's own, a copy of the template, dropped after it."""
    yield from _fresh_database(pg_server, pg_template)


@pytest.fixture
def other_pg_url(pg_server: str, pg_template: str) -> Iterator[str]:
    """A second database of this test's own, on the same server, as pg_url."""
    yield from _fresh_database(pg_server, pg_template)


def _fresh_database(pg_server: str, pg_template: str) -> Iterator[str]:
    name = f"agent_memory_test_{os.getpid()}_{next(_names)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        began = time.perf_counter()
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(pg_template)
            )
        )
        CREATE_SECS.append(time.perf_counter() - began)
    try:
        yield database_url(pg_server, name)
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def pg(pg_url: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to this test's database."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        yield conn


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path) -> str:
    """A fresh database on each engine: a SQLite file, or a PostgreSQL database."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return str(tmp_path / "memory.db")


@pytest.fixture
def fresh_location(request: pytest.FixtureRequest, location: str) -> str:
    """``location`` holding a new, empty database: on SQLite a copy of the session's template
    (tests/support/template.py), on PostgreSQL the test's own database as it is."""
    from agent_memory.storage.engines import engine_for
    from tests.support.template import fresh_copy

    if engine_for(location).name != "sqlite":
        return location

    return str(fresh_copy(request.getfixturevalue("sqlite_template"), Path(location)))


@pytest.fixture
def store(fresh_location: str):
    """A store opened on ``location``, closed after the test."""
    from agent_memory.storage import open_store

    opened = open_store(fresh_location)
    yield opened
    opened.close()


@pytest.fixture
def new_store(location: str):
    """A store the engine itself creates at ``location``: for the tests about creating,
    migrating or identifying a database, which a copy of the template would not put to the
    test."""
    from agent_memory.storage import open_store

    opened = open_store(location)
    yield opened
    opened.close()


@pytest.fixture
def svc(fresh_location: str, clock):
    """The service on ``location``, on the test's clock (tests/conftest.py), no embedder."""
    from agent_memory.service.core import MemoryService
    from agent_memory.storage import open_store

    service = MemoryService(open_store(fresh_location), clock=clock)
    yield service
    service.close()
