"""``agent-memory doctor`` on PostgreSQL: a database damaged behind the store's back (with
psycopg), found by doctor, and put right by ``--repair``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agent_memory.cli.main import cli
from tests.support.doctor import counts, doctor, failing, fill

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture
def pg_filled(pg_url, ollama):
    return fill(pg_url, ollama, "postgres")


def test_postgres_doctor_says_what_it_checks(pg_filled, ollama):
    result = doctor(pg_filled, ollama)
    assert result.exit_code == 0, result.output
    assert failing(result) == []
    assert result.stdout.splitlines()[:3] == [
        "ok    PostgreSQL's own pages and indexes: not checked here: the server checks its "
        "pages as it reads them, and pg_amcheck checks them all",
        "ok    keyword totals match the memories (bm25's N and lengths)",
        "ok    each word's row count matches the memories",
    ]
    assert "memories: 3, waiting for a vector: 0" in result.stdout


def test_postgres_a_vector_deleted_behind_the_store_is_made_pending(pg_filled, pg, ollama):
    pg.execute("DELETE FROM memory_vectors WHERE memory_id = 2")
    result = doctor(pg_filled, ollama)
    assert result.exit_code == 1
    assert failing(result) == [
        "FAIL  memories marked embedded have their vector: 1 memory marked embedded without "
        "a vector (doctor --repair rebuilds it)"
    ]
    repaired = doctor(pg_filled, ollama, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: 1 memory marked embedded had no vector: pending again" in repaired.stdout
    assert counts(pg_filled) == (3, 1)


def test_postgres_an_orphan_vector_is_removed(pg_filled, pg, ollama):
    pg.execute("SET session_replication_role = replica")  # foreign keys off, for this session
    pg.execute("INSERT INTO memory_vectors VALUES (99, array_fill(0.5, ARRAY[768])::vector)")
    result = doctor(pg_filled, ollama)
    assert result.exit_code == 1
    assert failing(result)[0].startswith("FAIL  vectors belong to memories: the vectors of 1")
    repaired = doctor(pg_filled, ollama, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: removed the vectors of 1 memory that are gone" in repaired.stdout


def test_postgres_wrong_keyword_totals_are_rebuilt(pg_filled, pg, ollama):
    pg.execute("INSERT INTO keyword_totals (rows, tokens) VALUES (5, 100)")
    pg.execute("INSERT INTO lexeme_rows VALUES ('zzzbogus', 4)")
    result = doctor(pg_filled, ollama)
    assert result.exit_code == 1
    assert failing(result) == [
        "FAIL  keyword totals match the memories (bm25's N and lengths): the totals differ "
        "from the memories' (doctor --repair rebuilds it)",
        "FAIL  each word's row count matches the memories: 1 word counted wrong "
        "(doctor --repair rebuilds it)",
    ]
    repaired = doctor(pg_filled, ollama, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: rebuilt the keyword totals and word counts from the memories" in (
        repaired.stdout
    )
    search = ["--db", pg_filled, "--embedder", "none", "search", "datastore", "--json"]
    assert [r["id"] for r in json.loads(CliRunner().invoke(cli, search).stdout)["results"]] == [1]
