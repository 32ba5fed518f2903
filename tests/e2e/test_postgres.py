"""The real executables (MCP, REST, ui, export and import) on a PostgreSQL database, several
processes at once; a server without pgvector, and a SQLite server that never imports the
driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.postgres import url as urls
from tests.support.clock import Clock
from tests.support.many_writers import write_at_once
from tests.support.pg_checks import LEXEMES_AGREE, TEAM_A, TEAM_B, TOTALS_AGREE, service_file
from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import executable, run_agent_memory, server_env

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture
def without_pgvector(pg_server: str) -> Iterator[tuple[str, int]]:
    """A URL to a new, empty database on a server that has no pgvector to give it, and the
    server's major version. The session's server, with its extension lookups pointed at an
    empty place for these connections (extension_control_path, PostgreSQL 18)."""
    name = f"agent_memory_no_vector_{os.getpid()}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        major = conn.info.server_version // 10_000
        if major < 18:
            pytest.skip("extension_control_path needs PostgreSQL 18")
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(name)))
    parts = urlsplit(pg_server)
    query = "&".join(
        filter(None, [parts.query, "options=-c%20extension_control_path%3D/nonexistent"])
    )
    try:
        yield urlunsplit(parts._replace(path=f"/{name}", query=query)), major
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_a_server_without_pgvector_says_where_to_get_it(without_pgvector):
    url, major = without_pgvector
    done = run_agent_memory("--db", url, "store", "--type", "TODO", "the first memory")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"cannot open database {urls.redacted(url)}: ")
    assert 'extension "vector" is not available: install pgvector where PostgreSQL runs' in line
    assert f"(Debian/Ubuntu: postgresql-{major}-pgvector; Homebrew: pgvector)" in line
    assert (
        "the embedded PostgreSQL with pgvector as docs/postgresql.md in agent-memory's "
        "repository describes"
    ) in line


def test_a_sqlite_server_never_imports_the_driver(tmp_path):
    code = (
        "import sys; from agent_memory import storage; from agent_memory.cli import main;"
        f" storage.open_store({str(tmp_path / 'm.db')!r}).close();"
        " print('psycopg' in sys.modules)"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=server_env()
    )
    assert done.stdout.strip() == "False"


def test_ui_does_not_take_one_service_for_another(pg_url, other_pg_url, tmp_path):
    """A daemon serving team B's database at --addr: ui --db for team B uses it, ui --db for
    team A refuses it, though both URLs name the same host, port and no database."""
    services = service_file(tmp_path, teama=pg_url, teamb=other_pg_url)
    open_store(pg_url).close()
    env = server_env(PGSERVICEFILE=services, DISPLAY="", WAYLAND_DISPLAY="")
    with RestDaemon(TEAM_B, env={"PGSERVICEFILE": services}) as daemon:
        addr = ("ui", "--no-browser", "--addr", f"127.0.0.1:{daemon.port}")
        run = {"capture_output": True, "text": True, "env": env, "timeout": 60}
        same = subprocess.run([executable(), "--db", TEAM_B, *addr], **run)
        other = subprocess.run([executable(), "--db", TEAM_A, *addr], **run)
        assert daemon.stop() == 0
    assert (same.returncode, same.stdout) == (0, f"http://127.0.0.1:{daemon.port}/\n")
    assert "serves this database" in same.stderr
    assert (other.returncode, other.stdout) == (1, ""), other.stderr
    assert "does not prove it serves this database" in other.stderr


def exported(path) -> tuple[list, list]:
    """(memory records, link records) of an export file, without the header and the
    records' last_accessed (an import counts as a use, on either engine)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    memories = [{k: v for k, v in r.items() if k != "last_accessed"} for r in lines[1:]]
    return [r for r in memories if "content" in r], [r for r in memories if "content" not in r]


def test_a_team_moves_its_memories_from_sqlite_to_postgresql_and_back(tmp_path, pg_url):
    source = tmp_path / "memory.db"
    service = MemoryService(open_store(source), clock=Clock())
    try:
        for i in range(30):
            service.store(
                {
                    "content": f"decision {i}: café and the résumé parser",
                    "type": "DECISION" if i % 3 else "TODO",
                    "tags": [f"t{i % 4}"],
                    "scope": "kore" if i % 2 else None,
                }
            )
        service.link({"from_id": 2, "to_id": 1, "kind": "supersedes"})
        service.link({"from_id": 3, "to_id": 5, "kind": "caused_by"})
    finally:
        service.close()
    first, second, third = (tmp_path / f"{n}.jsonl" for n in ("sqlite", "pg", "back"))
    done = run_agent_memory("--db", str(source), "export", "-o", str(first))
    assert done.returncode == 0, done.stderr
    done = run_agent_memory("--db", pg_url, "import", "--from", "jsonl", str(first))
    assert done.returncode == 0, done.stderr
    done = run_agent_memory("--db", pg_url, "export", "-o", str(second))
    assert done.returncode == 0, done.stderr
    assert exported(second) == exported(first)
    again = run_agent_memory("--db", pg_url, "import", "--from", "jsonl", str(first))
    assert again.returncode == 0 and "30" in again.stdout + again.stderr  # all duplicates
    back = tmp_path / "back.db"
    assert (
        run_agent_memory("--db", str(back), "import", "--from", "jsonl", str(second)).returncode
        == 0
    )
    assert run_agent_memory("--db", str(back), "export", "-o", str(third)).returncode == 0
    assert exported(third) == exported(first)
    found = run_agent_memory("--db", pg_url, "search", "--json", "résumé parser")
    assert found.returncode == 0, found.stderr


def test_six_processes_write_one_database_at_once_and_nothing_is_lost(pg_url):
    done = write_at_once(pg_url)
    expected, forgotten, links = done.contents, done.forgotten, done.links
    with psycopg.connect(pg_url) as conn:
        rows = dict(conn.execute("SELECT id, content FROM memories").fetchall())
        assert rows == expected  # every acknowledged write once, with its last content
        assert not forgotten & set(rows)
        assert links <= set(conn.execute("SELECT from_id, to_id, kind FROM memory_links"))
        assert conn.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)
        assert conn.execute(TOTALS_AGREE).fetchone() == (True,)
        assert conn.execute(LEXEMES_AGREE).fetchone() == (True,)
        for memory_id, content in list(expected.items())[:: max(1, len(expected) // 40)]:
            word = content.split()[0]  # the worker's name: found through the keyword index
            hits = conn.execute(
                "SELECT id FROM memories WHERE terms @@ %s::tsquery", (f"'{word}'",)
            ).fetchall()
            assert (memory_id,) in hits
