"""The PostgreSQL test fixtures: a real server, a fresh database per test, the extensions."""

from __future__ import annotations

import psycopg

pytest_plugins = ["tests.support.pg_fixtures"]


def test_each_test_gets_a_database_with_the_extensions(pg: psycopg.Connection):
    found = {name for (name,) in pg.execute("SELECT extname FROM pg_extension")}
    assert {"vector", "unaccent"} <= found
    assert pg.execute("SELECT '[1,2]'::vector <=> '[2,4]'::vector").fetchone() == (0.0,)
    pg.execute("CREATE TABLE left_behind (id int)")


def test_a_test_sees_nothing_a_previous_test_left(pg: psycopg.Connection):
    assert pg.execute("SELECT to_regclass('left_behind')").fetchone() == (None,)
    assert pg.execute("SHOW server_version_num").fetchone()[0] >= "180000"
